//! Remaining nn kernels: `embedding`, `dropout`, `one_hot`, `pad`
//! (constant, reflect, replicate, circular), `interpolate` (nearest,
//! bilinear) and `scaled_dot_product_attention`. All are compositions of
//! gathers and pointwise ops.

use crate::dispatch::Registry;
use crate::dtype::DType;
use crate::error::Result;
use crate::native::random::Generator;
use crate::tensor::Tensor;

fn idx(v: Vec<i64>) -> Tensor {
    let n = v.len();
    Tensor::from_vec(v, &[n]).expect("a vector always fits its own length")
}

crate::ops! {
    register = register_ops;
    /// `F.embedding(indices, weight)`: rows of `self` (the weight) picked
    /// by `indices`, shaped `indices.shape + [dim]`.
    pub fn embedding(&self, indices: &Tensor) -> Result<Tensor> {
        crate::enter_op!("embedding", self, indices, -1i64, false, false);
        crate::ensure!(
            self.dim() == 2,
            Runtime,
            "embedding: 'weight' must be 2-D, got {:?}",
            self.shape()
        );
        crate::ensure!(
            matches!(indices.dtype(), DType::I64 | DType::I32),
            Runtime,
            "embedding: Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got {} instead",
            indices.dtype().name_title()
        );
        let rows = self.shape()[0] as i64;
        let bad = indices.lt(0)?.logical_or(&indices.ge(rows)?)?.any()?;
        crate::ensure!(!bad.item()?.to_bool(), Index, "index out of range in self");
        let mut shape: Vec<i64> = indices.shape().iter().map(|&s| s as i64).collect();
        shape.push(self.shape()[1] as i64);
        self.index_select(0, &indices.reshape(&[-1])?)?
            .reshape(&shape)
    }

    /// `F.dropout`: zero each element with probability `p` and scale the
    /// rest by `1/(1-p)` when `train`; identity otherwise.
    pub fn dropout(&self, p: f64, train: bool, generator: Option<&Generator>) -> Result<Tensor> {
        if generator.is_none() {
            crate::enter_op!("dropout", self, p, train);
        }
        crate::ensure!(
            (0.0..=1.0).contains(&p),
            Value,
            "dropout probability has to be between 0 and 1, but got {p}"
        );
        if !train || p == 0.0 {
            return Ok(self.clone());
        }
        if p == 1.0 {
            return self.mul(0.0);
        }
        // PyTorch's _dropout_impl: a Bernoulli(1-p) mask of the input's
        // dtype drawn in place, scaled by 1/(1-p), then one multiply.
        let noise = Tensor::empty(self.shape(), self.dtype())?;
        noise.bernoulli_(1.0 - p, generator)?;
        noise.div_(1.0 - p)?;
        self.mul(&noise)
    }

    /// `F.one_hot(num_classes)` of an int64 tensor (`-1` infers the count).
    #[op = "one_hot(Tensor self, int num_classes=-1) -> Tensor"]
    pub fn one_hot(&self, num_classes: i64) -> Result<Tensor> {
        crate::ensure!(
            self.dtype() == DType::I64,
            Runtime,
            "one_hot is only applicable to index tensor of type LongTensor."
        );
        let v = self.to_vec::<i64>()?;
        crate::ensure!(
            v.iter().all(|&x| x >= 0),
            Runtime,
            "Class values must be non-negative."
        );
        let n = if num_classes < 0 {
            v.iter().copied().max().map_or(0, |m| m + 1)
        } else {
            num_classes
        };
        crate::ensure!(
            v.iter().all(|&x| x < n),
            Runtime,
            "Class values must be smaller than num_classes."
        );
        let classes = Tensor::arange(0, n, 1, DType::I64)?;
        self.unsqueeze(-1)?.eq(&classes)?.to_dtype(DType::I64)
    }

    /// `F.pad(pad, mode, value)`: `pad` lists (left, right) pairs starting
    /// from the last dim; negative amounts crop (constant mode).
    pub fn pad(&self, pad: &[i64], mode: &str, value: f64) -> Result<Tensor> {
        crate::enter_op!("pad", self, pad, mode, Some(value));
        if mode != "constant" {
            // reflect / replicate / circular are index_selects: recorded as such.
            return self.pad_impl(pad, mode, value);
        }
        let y = crate::autograd::raw(&[self], || self.pad_impl(pad, mode, value))?;
        crate::autograd::derivatives::shape::constant_pad(self, pad, y)
    }

    fn pad_impl(&self, pad: &[i64], mode: &str, value: f64) -> Result<Tensor> {
        crate::ensure!(
            pad.len().is_multiple_of(2),
            Runtime,
            "Padding length must be divisible by 2"
        );
        crate::ensure!(pad.len() / 2 <= self.dim(), Runtime, "Padding length should be less than or equal to two times the input dimension but got padding length {} and input of dimension {}", pad.len(), self.dim());
        let mut out = self.clone();
        for (i, lr) in pad.chunks(2).enumerate() {
            let d = self.dim() - 1 - i;
            let (l, r) = (lr[0], lr[1]);
            let n = out.shape()[d] as i64;
            let src: Vec<i64> = match mode {
                "constant" => {
                    let new_n = n + l + r;
                    crate::ensure!(
                        new_n >= 0,
                        Runtime,
                        "pad: the padded size of dim {d} would be negative ({new_n})"
                    );
                    let mut shape = out.shape().to_vec();
                    shape[d] = new_n as usize;
                    let t = Tensor::full(&shape, value, out.dtype())?;
                    let (s0, d0) = (l.min(0).abs(), l.max(0));
                    let len = (n - s0 - r.min(0).abs()).max(0) as usize;
                    if len > 0 {
                        t.narrow(d as i64, d0, len)?
                            .copy_(&out.narrow(d as i64, s0, len)?)?;
                    }
                    out = t;
                    continue;
                }
                "reflect" => {
                    crate::ensure!(
                        l < n && r < n && l + r > -n,
                        Runtime,
                        "pad: Argument #4: Padding size should be less than the corresponding input dimension, but got: padding ({l}, {r}) at dimension {d} of input {:?}",
                        self.shape()
                    );
                    (-l..n + r)
                        .map(|j| {
                            if j < 0 {
                                -j
                            } else if j >= n {
                                2 * (n - 1) - j
                            } else {
                                j
                            }
                        })
                        .collect()
                }
                "replicate" => {
                    // negative amounts crop (the range starts or ends inside)
                    crate::ensure!(
                        n > 0 && l + r > -n,
                        Runtime,
                        "pad: replicate padding of dim {d} (size {n}) by ({l}, {r}) needs a non-empty result"
                    );
                    (-l..n + r).map(|j| j.clamp(0, n - 1)).collect()
                }
                "circular" => {
                    crate::ensure!(
                        l <= n && r <= n && l + r > -n,
                        Runtime,
                        "pad: Padding value causes wrapping around more than once."
                    );
                    // negative amounts crop first; the wrap-around comes from what is left
                    let (cl, cr) = ((-l).max(0), (-r).max(0));
                    let m = n - cl - cr;
                    (-l.max(0)..m + r.max(0))
                        .map(|j| cl + j.rem_euclid(m))
                        .collect()
                }
                m => crate::bail!(NotImplemented, "pad: Unrecognised padding mode {m}"),
            };
            out = out.index_select(d as i64, &idx(src))?;
        }
        Ok(out)
    }

    /// `F.interpolate` over the trailing spatial dims of `[N, C, *]`, to
    /// `size`: `mode` is `"nearest"` or (for 2 spatial dims) `"bilinear"`
    /// (`align_corners` as in PyTorch).
    pub fn interpolate(&self, size: &[usize], mode: &str, align_corners: bool) -> Result<Tensor> {
        self.interpolate_scaled(size, mode, align_corners, &[])
    }

    /// [`Tensor::interpolate`] with the user's scale factors per spatial
    /// dim (`scales[i]`, as `F.interpolate(scale_factor=...)` passes them):
    /// a given factor `s` maps output index `j` from `j / s` rather than
    /// `j · in / out`, as torch's kernels do.
    pub fn interpolate_scaled(
        &self,
        size: &[usize],
        mode: &str,
        align_corners: bool,
        scales: &[Option<f64>],
    ) -> Result<Tensor> {
        // the 2-d modes have torch's schemas
        match (mode, self.dim()) {
            ("nearest", 4) => {
                crate::enter_op!("upsample_nearest2d", self, size, None::<f64>, None::<f64>)
            }
            ("bilinear", 4) => crate::enter_op!(
                "upsample_bilinear2d",
                self,
                size,
                align_corners,
                None::<f64>,
                None::<f64>
            ),
            _ => {}
        }
        let sp = self.dim().saturating_sub(2);
        crate::ensure!(
            sp >= 1 && size.len() == sp,
            Runtime,
            "interpolate: expected {} output sizes for input of shape {:?}, got {size:?}",
            sp,
            self.shape()
        );
        match mode {
            "nearest" | "nearest-exact" => {
                // nearest-exact samples pixel centres: floor((j + ½) · scale)
                let half = if mode == "nearest-exact" { 0.5 } else { 0.0 };
                let mut out = self.clone();
                for (i, &o) in size.iter().enumerate() {
                    let d = 2 + i;
                    let n = self.shape()[d];
                    let scale = match scales.get(i).copied().flatten() {
                        Some(f) if f > 0.0 => 1.0 / f,
                        _ => n as f64 / o as f64,
                    };
                    let src: Vec<i64> = (0..o)
                        .map(|j| (((j as f64 + half) * scale).floor() as i64).min(n as i64 - 1))
                        .collect();
                    out = out.index_select(d as i64, &idx(src))?;
                }
                Ok(out)
            }
            "bilinear" | "linear" => {
                crate::ensure!(
                    mode == "linear" || sp == 2,
                    Runtime,
                    "interpolate: bilinear needs a 4-D input, got {:?}",
                    self.shape()
                );
                crate::ensure!(
                    self.is_floating_point(),
                    Runtime,
                    "interpolate: bilinear needs a floating input"
                );
                let mut out = self.clone();
                for (i, &o) in size.iter().enumerate() {
                    let d = (2 + i) as i64;
                    let n = self.shape()[2 + i];
                    let scale = if align_corners {
                        if o > 1 {
                            (n as f64 - 1.0) / (o as f64 - 1.0)
                        } else {
                            0.0
                        }
                    } else {
                        match scales.get(i).copied().flatten() {
                            Some(f) if f > 0.0 => 1.0 / f,
                            _ => n as f64 / o as f64,
                        }
                    };
                    let (mut lo, mut hi, mut w) = (Vec::new(), Vec::new(), Vec::new());
                    for j in 0..o {
                        let x = if align_corners {
                            j as f64 * scale
                        } else {
                            ((j as f64 + 0.5) * scale - 0.5).max(0.0)
                        };
                        let x0 = (x.floor() as usize).min(n - 1);
                        let x1 = (x0 + 1).min(n - 1);
                        lo.push(x0 as i64);
                        hi.push(x1 as i64);
                        w.push(x - x0 as f64);
                    }
                    let mut wshape = vec![1i64; self.dim()];
                    wshape[d as usize] = o as i64;
                    let wt = Tensor::from_vec(w, &[o])?
                        .to_dtype(self.dtype())?
                        .reshape(&wshape)?;
                    let a = out.index_select(d, &idx(lo))?;
                    let b = out.index_select(d, &idx(hi))?;
                    out = a.add(&b.sub(&a)?.mul(&wt)?)?;
                }
                Ok(out)
            }
            m => crate::bail!(
                NotImplemented,
                "interpolate: mode '{m}' is not supported (nearest, bilinear)"
            ),
        }
    }

    /// `F.scaled_dot_product_attention(q, k, v, attn_mask, dropout_p,
    /// is_causal, scale)`: `softmax(q kᵀ · scale + mask) v`. A bool mask
    /// keeps positions where it is true; a float mask is added.
    #[allow(clippy::too_many_arguments)]
    #[op = "scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, float dropout_p=0.0, bool is_causal=False, *, float? scale=None) -> Tensor"]
    pub fn scaled_dot_product_attention(
        &self,
        key: &Tensor,
        value: &Tensor,
        attn_mask: Option<&Tensor>,
        dropout_p: f64,
        is_causal: bool,
        scale: Option<f64>,
    ) -> Result<Tensor> {
        let scores = self.attention_scores(key, value, attn_mask, is_causal, scale)?;
        let p = scores
            .softmax(-1, None)?
            .dropout(dropout_p, dropout_p > 0.0, None)?;
        p.matmul(value)
    }

    /// `torch.ops.aten._scaled_dot_product_flash_attention_for_cpu`: the
    /// attention output and the `logsumexp` of each query's scaled, masked
    /// scores (`[..., L]`), which torch's backward reuses; only the output
    /// is differentiable, as torch's.
    #[allow(clippy::too_many_arguments)]
    #[op = "_scaled_dot_product_flash_attention_for_cpu(Tensor query, Tensor key, Tensor value, float dropout_p=0.0, bool is_causal=False, *, Tensor? attn_mask=None, float? scale=None) -> (Tensor output, Tensor logsumexp)"]
    pub fn scaled_dot_product_flash_attention_for_cpu(
        &self,
        key: &Tensor,
        value: &Tensor,
        dropout_p: f64,
        is_causal: bool,
        attn_mask: Option<&Tensor>,
        scale: Option<f64>,
    ) -> Result<(Tensor, Tensor)> {
        let scores = self.attention_scores(key, value, attn_mask, is_causal, scale)?;
        let lse = {
            let _g = crate::autograd::no_grad();
            scores.logsumexp(&[-1], false)?
        };
        let p = scores
            .softmax(-1, None)?
            .dropout(dropout_p, dropout_p > 0.0, None)?;
        Ok((p.matmul(value)?, lse))
    }

    /// `q kᵀ · scale`, causal positions and the mask applied: a bool mask
    /// keeps positions where it is true, a float mask is added (`value` is
    /// only checked).
    fn attention_scores(
        &self,
        key: &Tensor,
        value: &Tensor,
        attn_mask: Option<&Tensor>,
        is_causal: bool,
        scale: Option<f64>,
    ) -> Result<Tensor> {
        crate::ensure!(
            self.dim() >= 2 && key.dim() >= 2 && value.dim() >= 2,
            Runtime,
            "scaled_dot_product_attention: expected q, k, v with at least 2 dims"
        );
        crate::ensure!(!(is_causal && attn_mask.is_some()), Runtime, "_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True");
        let e = *self.shape().last().unwrap_or(&1) as f64;
        let s = scale.unwrap_or(1.0 / e.sqrt());
        let mut scores = self.matmul(&key.transpose(-2, -1)?)?.mul(s)?;
        let (l, sl) = (self.shape()[self.dim() - 2], key.shape()[key.dim() - 2]);
        if is_causal {
            let keep = Tensor::ones(&[l, sl], DType::Bool)?.tril(0)?;
            scores = scores.masked_fill(&keep.logical_not()?, f64::NEG_INFINITY)?;
        }
        if let Some(m) = attn_mask {
            scores = if m.dtype() == DType::Bool {
                scores.masked_fill(&m.logical_not()?, f64::NEG_INFINITY)?
            } else {
                scores.add(m)?
            };
        }
        Ok(scores)
    }
}

pub(crate) fn register(r: &mut Registry) {
    register_ops(r);
    // ops whose arguments are not their methods' (Note [Typed kernels])
    r.def_typed(
        "embedding(Tensor weight, Tensor indices, SymInt padding_idx=-1, bool scale_grad_by_freq=False, bool sparse=False) -> Tensor",
        // padding_idx and the rest shape the gradient, which `nn.Embedding` handles
        |w: Tensor, idx: Tensor, _padding_idx: i64, _scale: bool, _sparse: bool| w.embedding(&idx),
    );
    r.def_typed(
        "dropout(Tensor input, float p, bool train) -> Tensor",
        |x: Tensor, p: f64, train: bool| x.dropout(p, train, None),
    );
    r.def_typed(
        "pad(Tensor self, SymInt[] pad, str mode=\"constant\", float? value=None) -> Tensor",
        |x: Tensor, pad: Vec<i64>, mode: String, value: Option<f64>| {
            x.pad(&pad, &mode, value.unwrap_or(0.0))
        },
    );
    r.def_typed(
        "upsample_nearest2d(Tensor self, SymInt[2] output_size, float? scales_h=None, float? scales_w=None) -> Tensor",
        |x: Tensor, size: Vec<usize>, sh: Option<f64>, sw: Option<f64>| {
            x.interpolate_scaled(&size, "nearest", false, &[sh, sw])
        },
    );
    r.def_typed(
        "upsample_nearest3d(Tensor self, SymInt[3] output_size, float? scales_d=None, float? scales_h=None, float? scales_w=None) -> Tensor",
        |x: Tensor, size: Vec<usize>, sd: Option<f64>, sh: Option<f64>, sw: Option<f64>| {
            x.interpolate_scaled(&size, "nearest", false, &[sd, sh, sw])
        },
    );
    r.def_typed(
        "_upsample_nearest_exact2d(Tensor self, SymInt[2] output_size, float? scales_h=None, float? scales_w=None) -> Tensor",
        |x: Tensor, size: Vec<usize>, sh: Option<f64>, sw: Option<f64>| {
            x.interpolate_scaled(&size, "nearest-exact", false, &[sh, sw])
        },
    );
    r.def_typed(
        "_upsample_nearest_exact3d(Tensor self, SymInt[3] output_size, float? scales_d=None, float? scales_h=None, float? scales_w=None) -> Tensor",
        |x: Tensor, size: Vec<usize>, sd: Option<f64>, sh: Option<f64>, sw: Option<f64>| {
            x.interpolate_scaled(&size, "nearest-exact", false, &[sd, sh, sw])
        },
    );
    r.def_typed(
        "upsample_trilinear3d(Tensor self, SymInt[3] output_size, bool align_corners, float? scales_d=None, float? scales_h=None, float? scales_w=None) -> Tensor",
        |x: Tensor, size: Vec<usize>, align: bool, sd: Option<f64>, sh: Option<f64>, sw: Option<f64>| {
            x.interpolate_scaled(&size, "linear", align, &[sd, sh, sw])
        },
    );
    r.def_typed(
        "upsample_bilinear2d(Tensor self, SymInt[2] output_size, bool align_corners, float? scales_h=None, float? scales_w=None) -> Tensor",
        |x: Tensor, size: Vec<usize>, align: bool, sh: Option<f64>, sw: Option<f64>| {
            x.interpolate_scaled(&size, "bilinear", align, &[sh, sw])
        },
    );
}

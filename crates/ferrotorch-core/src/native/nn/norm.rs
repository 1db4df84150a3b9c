//! Normalisation: `batch_norm` (training statistics and running-stat
//! updates, or eval with running stats), `layer_norm`, `group_norm`.
//! Written as compositions of reductions and broadcasting ops, computed in
//! at least f32.

use crate::dispatch::Registry;
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;

/// Reshape a per-channel `[C]` tensor to broadcast over `[N, C, *]`.
fn per_channel(t: &Tensor, nd: usize) -> Result<Tensor> {
    let mut shape = vec![1i64; nd];
    shape[1] = -1;
    t.reshape(&shape)
}

/// `y[n, c, ..] = x[n, c, ..]·scale[c] + shift[c]` for a contiguous `x`
/// (`[N, C, *]`) and per-channel `scale`/`shift` (`C` elements each, any
/// layout): one vectorised loop per `(n, c)` plane, planes shared over the
/// threads. Batch norm in eval is this map.
fn affine_planes<T>(x: &Tensor, scale: &Tensor, shift: &Tensor) -> Result<Tensor>
where
    T: crate::dtype::Element + std::ops::Mul<Output = T> + std::ops::Add<Output = T>,
{
    let c = x.shape()[1];
    let plane = x.shape()[2..].iter().product::<usize>();
    let planes = x.numel() / plane.max(1);
    let (a, b) = (scale.to_vec::<T>()?, shift.to_vec::<T>()?);
    let out = Tensor::empty(x.shape(), T::DTYPE)?;
    if out.numel() == 0 {
        return Ok(out);
    }
    let guard = crate::storage::lock_storages(&[x.storage()], &[out.storage()]);
    let (xp, op) = (x.data_ptr() as usize, out.data_ptr() as usize);
    ferrotorch_kernels::parallel::parallel_for(planes, (32768 / plane.max(1)).max(1), |r| {
        for p in r {
            let (ai, bi) = (a[p % c], b[p % c]);
            // SAFETY: x is contiguous and locked, out is fresh and of the
            // same shape; plane p of out is written by this task only.
            unsafe {
                ferrotorch_kernels::simd::map1(
                    plane,
                    (xp as *const T).add(p * plane),
                    1,
                    (op as *mut T).add(p * plane),
                    1,
                    move |v: T| v * ai + bi,
                )
            };
        }
    });
    drop(guard);
    Ok(out)
}

fn work(x: &Tensor) -> Result<Tensor> {
    match x.dtype() {
        DType::F16 | DType::BF16 => x.to_dtype(DType::F32),
        _ => Ok(x.clone()),
    }
}

impl Tensor {
    /// The per-channel `(scale, shift)` of batch norm in eval mode with
    /// running statistics, `y = x·scale + shift`: `scale = weight /
    /// sqrt(running_var + eps)`, `shift = bias - running_mean·scale`, in
    /// `dtype` (as `batch_norm` computes them; fused eval convolutions
    /// reuse them, Note [Fused eval convolutions]).
    pub fn batch_norm_eval_affine(
        running_mean: &Tensor,
        running_var: &Tensor,
        weight: Option<&Tensor>,
        bias: Option<&Tensor>,
        eps: f64,
        dtype: DType,
    ) -> Result<(Tensor, Tensor)> {
        let (mean, var) = (running_mean.to_dtype(dtype)?, running_var.to_dtype(dtype)?);
        let inv = var.add(eps)?.rsqrt()?;
        let scale = match weight {
            Some(w) => inv.mul(w)?,
            None => inv,
        };
        let shift = match bias {
            Some(b) => b.sub(&mean.mul(&scale)?)?,
            None => mean.mul(&scale)?.neg()?,
        };
        Ok((scale.to_dtype(dtype)?, shift.to_dtype(dtype)?))
    }

    /// `F.batch_norm`. In training (or without running stats) the batch
    /// statistics normalise, and given running stats are updated in place
    /// with `momentum` (the variance with Bessel's correction), as PyTorch.
    #[allow(clippy::too_many_arguments)]
    pub fn batch_norm(
        &self,
        running_mean: Option<&Tensor>,
        running_var: Option<&Tensor>,
        weight: Option<&Tensor>,
        bias: Option<&Tensor>,
        training: bool,
        momentum: f64,
        eps: f64,
    ) -> Result<Tensor> {
        crate::enter_op!(
            "batch_norm",
            self,
            weight,
            bias,
            running_mean,
            running_var,
            training,
            momentum,
            eps,
            true
        );
        crate::ensure!(
            self.dim() >= 2,
            Runtime,
            "batch_norm: expected at least 2D input (got {}D input)",
            self.dim()
        );
        crate::ensure!(
            self.is_floating_point(),
            NotImplemented,
            "batch_norm: not implemented for '{}'",
            self.dtype().name_title()
        );
        let c = self.shape()[1];
        for (name, t) in [
            ("running_mean", running_mean),
            ("running_var", running_var),
            ("weight", weight),
            ("bias", bias),
        ] {
            if let Some(t) = t {
                crate::ensure!(
                    t.numel() == c,
                    Runtime,
                    "batch_norm: {name} should contain {c} elements not {}",
                    t.numel()
                );
            }
        }
        let x = work(self)?;
        let nd = x.dim();
        let dims: Vec<i64> = (0..nd as i64).filter(|&d| d != 1).collect();
        let running = match (running_mean, running_var) {
            (Some(m), Some(v)) => Some((m, v)),
            _ => None,
        };
        if let (false, Some((rm, rv))) = (training, running) {
            // Eval with running statistics: an affine map per channel,
            // folded into one pass, y = x·scale + (bias - mean·scale).
            let (scale, shift) =
                Tensor::batch_norm_eval_affine(rm, rv, weight, bias, eps, x.dtype())?;
            let (scale, shift) = (per_channel(&scale, nd)?, per_channel(&shift, nd)?);
            let grads = [Some(&x), weight, bias];
            let ins: Vec<&Tensor> = grads.into_iter().flatten().collect();
            let y = if crate::autograd::needs_grad(&ins) {
                x.mul(&scale)?.add(&shift)?
            } else {
                // scale and shift are already in x's dtype
                match x.dtype() {
                    DType::F64 => affine_planes::<f64>(&x.contiguous()?, &scale, &shift)?,
                    _ => affine_planes::<f32>(&x.contiguous()?, &scale, &shift)?,
                }
            };
            return y.to_dtype(self.dtype());
        }
        // Batch statistics (training, or no running statistics).
        let count = x.numel() / c.max(1);
        // torch refuses exactly one value per channel (an empty batch is
        // an empty result)
        crate::ensure!(
            !training || count != 1,
            Value,
            "Expected more than 1 value per channel when training, got input size {:?}",
            self.shape()
        );
        let (var, mean) = x.var_mean(Some(&dims), Some(0.0), false)?;
        if let (true, Some((rm, rv))) = (training, running) {
            // Running statistics are buffers: updated outside the graph.
            let _g = crate::autograd::no_grad();
            let unbiased = var.mul(count as f64 / (count as f64 - 1.0).max(1.0))?;
            rm.copy_(&rm.mul(1.0 - momentum)?.add(&mean.mul(momentum)?)?)?;
            rv.copy_(&rv.mul(1.0 - momentum)?.add(&unbiased.mul(momentum)?)?)?;
        }
        let inv = var.add(eps)?.rsqrt()?;
        let mut y = x
            .sub(&per_channel(&mean, nd)?)?
            .mul(&per_channel(&inv, nd)?)?;
        if let Some(w) = weight {
            y = y.mul(&per_channel(w, nd)?)?;
        }
        if let Some(b) = bias {
            y = y.add(&per_channel(b, nd)?)?;
        }
        y.to_dtype(self.dtype())
    }

    /// `F.layer_norm` over the trailing `normalized_shape` dims.
    pub fn layer_norm(
        &self,
        normalized_shape: &[usize],
        weight: Option<&Tensor>,
        bias: Option<&Tensor>,
        eps: f64,
    ) -> Result<Tensor> {
        crate::enter_op!(
            "layer_norm",
            self,
            normalized_shape,
            weight,
            bias,
            eps,
            true
        );
        let k = normalized_shape.len();
        crate::ensure!(
            k >= 1 && self.dim() >= k && self.shape()[self.dim() - k..] == *normalized_shape,
            Runtime,
            "layer_norm: Given normalized_shape={normalized_shape:?}, expected input with shape [*, {}], but got input of size {:?}",
            normalized_shape.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(", "),
            self.shape()
        );
        for (name, t) in [("weight", weight), ("bias", bias)] {
            if let Some(t) = t {
                crate::ensure!(t.shape() == normalized_shape, Runtime, "layer_norm: {name} of shape {:?} does not match normalized_shape {normalized_shape:?}", t.shape());
            }
        }
        if let Some(y) = self.layer_norm_f32(k, weight, bias, eps)? {
            return Ok(y);
        }
        let x = work(self)?;
        let dims: Vec<i64> = (-(k as i64)..0).collect();
        let (var, mean) = x.var_mean(Some(&dims), Some(0.0), true)?;
        let mut y = x.sub(&mean)?.mul(&var.add(eps)?.rsqrt()?)?;
        if let Some(w) = weight {
            y = y.mul(w)?;
        }
        if let Some(b) = bias {
            y = y.add(b)?;
        }
        y.to_dtype(self.dtype())
    }

    /// The native float32 layer norm (`ferrotorch_kernels::norm`) for a
    /// contiguous input with contiguous float32 weight and bias, recorded
    /// as one node (`autograd::derivatives::layer_norm`): the composed form
    /// made five tensors forward and nine nodes backward. `None` for other
    /// cases, which take the composed form.
    fn layer_norm_f32(
        &self,
        k: usize,
        weight: Option<&Tensor>,
        bias: Option<&Tensor>,
        eps: f64,
    ) -> Result<Option<Tensor>> {
        let ok = |t: &Tensor| t.dtype() == DType::F32 && t.is_contiguous();
        if !ok(self) || !weight.is_none_or(ok) || !bias.is_none_or(ok) || self.numel() == 0 {
            return Ok(None);
        }
        let n: usize = self.shape()[self.dim() - k..].iter().product();
        let rows = self.numel() / n;
        let y = Tensor::empty(self.shape(), DType::F32)?;
        let mean = Tensor::empty(&[rows], DType::F32)?;
        let rstd = Tensor::empty(&[rows], DType::F32)?;
        let mut reads = vec![self];
        reads.extend(weight);
        reads.extend(bias);
        crate::tensor::access::contiguous_slices_mut::<f32>(
            "layer_norm",
            &[&y, &mean, &rstd],
            &reads,
            |w, r| {
                let (y, st) = w.split_at_mut(1);
                let (m, rs) = st.split_at_mut(1);
                let (wt, bs) = (weight.map(|_| r[1]), bias.map(|_| r[reads.len() - 1]));
                ferrotorch_kernels::norm::forward(r[0], y[0], m[0], rs[0], n, wt, bs, eps as f32);
            },
        )?;
        crate::autograd::derivatives::layer_norm::layer_norm(
            self,
            weight,
            bias,
            (mean, rstd),
            k,
            eps,
            y,
        )
        .map(Some)
    }

    /// `F.group_norm`: channels split into `num_groups` groups, each
    /// normalised over its channels and spatial positions.
    pub fn group_norm(
        &self,
        num_groups: usize,
        weight: Option<&Tensor>,
        bias: Option<&Tensor>,
        eps: f64,
    ) -> Result<Tensor> {
        crate::enter_op!(
            "group_norm",
            self,
            num_groups as i64,
            weight,
            bias,
            eps,
            true
        );
        crate::ensure!(
            self.dim() >= 2,
            Runtime,
            "group_norm: Expected at least 2 dimensions for input tensor but received {}",
            self.dim()
        );
        let (n, c) = (self.shape()[0], self.shape()[1]);
        crate::ensure!(
            num_groups > 0 && c % num_groups == 0,
            Runtime,
            "group_norm: Expected number of channels in input to be divisible by num_groups, but got input of shape {:?} and num_groups={num_groups}",
            self.shape()
        );
        let x = work(self)?;
        let g = x.reshape(&[n as i64, num_groups as i64, -1])?;
        let (var, mean) = g.var_mean(Some(&[-1]), Some(0.0), true)?;
        let y = g.sub(&mean)?.mul(&var.add(eps)?.rsqrt()?)?;
        let mut y = y.reshape(&self.shape().iter().map(|&s| s as i64).collect::<Vec<_>>())?;
        let nd = self.dim();
        if let Some(w) = weight {
            y = y.mul(&per_channel(w, nd)?)?;
        }
        if let Some(b) = bias {
            y = y.add(&per_channel(b, nd)?)?;
        }
        y.to_dtype(self.dtype())
    }
}

pub(crate) fn register(r: &mut Registry) {
    // typed kernels: adapters generated from the schemas (Note [Typed kernels])
    r.def_typed(
        "batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, bool training, float momentum, float eps, bool cudnn_enabled) -> Tensor",
        |x: Tensor, w: Option<Tensor>, b: Option<Tensor>, rm: Option<Tensor>, rv: Option<Tensor>, training: bool, momentum: f64, eps: f64, _cudnn: bool| {
            x.batch_norm(rm.as_ref(), rv.as_ref(), w.as_ref(), b.as_ref(), training, momentum, eps)
        },
    );
    r.def_typed(
        "layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, Tensor? bias=None, float eps=1e-05, bool cudnn_enable=True) -> Tensor",
        |x: Tensor, shape: Vec<usize>, w: Option<Tensor>, b: Option<Tensor>, eps: f64, _cudnn: bool| {
            x.layer_norm(&shape, w.as_ref(), b.as_ref(), eps)
        },
    );
    r.def_typed(
        "group_norm(Tensor input, int num_groups, Tensor? weight=None, Tensor? bias=None, float eps=1e-05, bool cudnn_enabled=True) -> Tensor",
        |x: Tensor, groups: usize, w: Option<Tensor>, b: Option<Tensor>, eps: f64, _cudnn: bool| {
            x.group_norm(groups, w.as_ref(), b.as_ref(), eps)
        },
    );
}

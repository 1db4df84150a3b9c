//! Convolutions: `conv1d`, `conv2d`, `conv_transpose2d` (stride, padding,
//! dilation, groups), by im2col/col2im around the GEMM, or in f32 by the
//! direct kernel (`conv_direct`), for 3×3 stride-1 filters on maps of
//! 14×14 and up by Winograd F(2×2, 3×3) (`conv_winograd`), or for other
//! small maps by one im2col GEMM over the whole batch (`conv_batched`).
//!
//! Half types compute in f32. Unbatched inputs (`[C, H, W]`) are accepted
//! as in PyTorch.

use super::conv_transpose::{conv_transpose_images, TransposedGeometry};
use crate::dispatch::Registry;
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;
use ferrotorch_kernels::gemm::{GemmElem, MatMut, MatRef};
use ferrotorch_kernels::parallel;

/// Convolution geometry for one spatial dim.
#[derive(Clone, Copy)]
pub(crate) struct Dim {
    pub(super) input: usize,
    pub(super) kernel: usize,
    pub(super) stride: usize,
    pub(super) pad: usize,
    pub(super) dil: usize,
}

impl Dim {
    fn out(&self) -> Option<usize> {
        let span = self.dil * (self.kernel - 1) + 1;
        (self.input + 2 * self.pad)
            .checked_sub(span)
            .map(|v| v / self.stride + 1)
    }
}

fn pair(op: &str, name: &str, v: &[usize]) -> Result<[usize; 2]> {
    match v {
        [a] => Ok([*a, *a]),
        [a, b] => Ok([*a, *b]),
        _ => crate::bail!(Runtime, "{op}: expected {name} to be a single integer value or a list of 2 values, but got {v:?}"),
    }
}

/// im2col of output rows `rows` of one image `[C, H, W]` (contiguous
/// slice) into `cols`: row `(c, ki, kj)` of the `[C·kh·kw, rows·Wo]`
/// matrix starts at `cols + row·ld`.
///
/// # Safety
/// `cols` must be valid for writes of `C·kh·kw` rows of `rows.len()·wo`
/// elements, `ld` apart, that nothing else accesses meanwhile.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn im2col<T: Copy + Default>(
    x: &[T],
    c: usize,
    h: Dim,
    w: Dim,
    rows: std::ops::Range<usize>,
    wo: usize,
    cols: *mut T,
    ld: usize,
) {
    let (hh, ww) = (h.input, w.input);
    let nrows = c * h.kernel * w.kernel;
    for row in 0..nrows {
        // SAFETY: per the contract, this row is ours to write.
        let out = unsafe { std::slice::from_raw_parts_mut(cols.add(row * ld), rows.len() * wo) };
        let ci = row / (h.kernel * w.kernel);
        let ki = (row / w.kernel) % h.kernel;
        let kj = row % w.kernel;
        // Output columns whose input column is inside the image:
        // iw = ow*stride + kj*dil - pad in [0, ww).
        let shift = (kj * w.dil) as isize - w.pad as isize;
        let lo = if shift >= 0 {
            0
        } else {
            ((-shift) as usize).div_ceil(w.stride)
        };
        let hi = if (ww as isize) <= shift {
            0
        } else {
            ((ww as isize - shift - 1) as usize / w.stride + 1).min(wo)
        };
        let lo = lo.min(hi);
        if h.stride == 1 && w.stride == 1 && wo == ww && hi > lo {
            // Output rows match input rows: the rows whose input row exists
            // are one shifted copy of the plane (not a short copy per row),
            // then the columns that read padding are zeroed.
            let first = rows.start as isize + (ki * h.dil) as isize - h.pad as isize;
            // output rows a..b (of this band) read input rows inside the image
            let len = rows.len() as isize;
            let a = (-first).clamp(0, len) as usize;
            let b = (hh as isize - first).clamp(0, len) as usize;
            out[..a * wo].fill(T::default());
            if b > a {
                let s0 = ci * hh * ww + (first + a as isize) as usize * ww;
                let (from, to) = (a * wo + lo, (b - 1) * wo + hi);
                let s0 = (s0 as isize + lo as isize + shift) as usize;
                out[from..to].copy_from_slice(&x[s0..s0 + (to - from)]);
                for r in a..b {
                    out[r * wo..r * wo + lo].fill(T::default());
                    out[r * wo + hi..(r + 1) * wo].fill(T::default());
                }
            }
            out[b * wo..].fill(T::default());
            continue;
        }
        for (oh, dst) in rows.clone().zip(out.chunks_exact_mut(wo.max(1))) {
            let ih = (oh * h.stride + ki * h.dil) as isize - h.pad as isize;
            if ih < 0 || ih >= hh as isize {
                dst.fill(T::default());
                continue;
            }
            let src = &x[ci * hh * ww + ih as usize * ww..][..ww];
            dst[..lo].fill(T::default());
            dst[hi..].fill(T::default());
            if w.stride == 1 {
                let s0 = (lo as isize + shift) as usize;
                dst[lo..hi].copy_from_slice(&src[s0..s0 + (hi - lo)]);
            } else {
                for (ow, d) in dst[lo..hi].iter_mut().enumerate() {
                    *d = src[(((lo + ow) * w.stride) as isize + shift) as usize];
                }
            }
        }
    }
}

/// Shape of a 2-D convolution once its arguments are checked.
#[derive(Clone, Copy)]
pub(super) struct Geometry {
    pub(super) groups: usize,
    pub(super) cg: usize,
    pub(super) og: usize,
    pub(super) hd: Dim,
    pub(super) wd: Dim,
    pub(super) ho: usize,
    pub(super) wo: usize,
}

/// # Note [Convolution tiles]
/// A convolution is a GEMM of the weights `[og, C·kh·kw]` with the im2col
/// matrix `[C·kh·kw, Ho·Wo]`. Building that matrix for a whole image (7 MB
/// for a 64-channel 56×56 3×3 layer) sends it through main memory twice;
/// instead each task builds it for a band of output rows small enough to
/// stay in the core's L2 (`COL_TILE` elements: half of a 1 MiB L2, so the
/// GEMM's packed weights fit beside it) and multiplies it at
/// once, writing the band's `[og, rows·Wo]` block straight into the NCHW
/// output. Bands are at least `2·og` columns wide, so that re-reading the
/// weights for each band stays cheap. Tasks are (image, group, band) triples shared out over the
/// threads, so batch 1 uses every core too; the GEMM inside a task runs on
/// its own thread. Measured on W4: 0.68× PyTorch with whole images per
/// thread, about 0.95× with bands.
const COL_TILE: usize = 128 * 1024;

/// Lock a convolution's operands (reads `x`, `wt`, `bias` and a fused
/// epilogue's `residual`; writes `out`) in one call, so the locks are taken
/// in address order (Note [Storage access locks]), and view the inputs as
/// slices of `T` (the residual is read through its pointer).
pub(super) fn locked_operands<'a, T: crate::dtype::Element>(
    x: &'a Tensor,
    wt: &'a Tensor,
    bias: Option<&'a Tensor>,
    residual: Option<&'a Tensor>,
    out: &'a Tensor,
) -> (
    crate::storage::AccessGuard<'a>,
    &'a [T],
    &'a [T],
    Option<&'a [T]>,
) {
    let reads: smallvec::SmallVec<[_; 4]> = [Some(x), Some(wt), bias, residual]
        .into_iter()
        .flatten()
        .map(|t| t.storage())
        .collect();
    let guard = crate::storage::lock_storages(&reads, &[out.storage()]);
    // SAFETY: callers pass contiguous tensors of dtype `T` (x, wt, bias),
    // now locked, and a fresh output buffer disjoint from them.
    let slice =
        |t: &'a Tensor| unsafe { std::slice::from_raw_parts(t.data_ptr() as *const T, t.numel()) };
    (guard, slice(x), slice(wt), bias.map(slice))
}

/// Convolution of a contiguous batch, in tiles (Note [Convolution tiles]).
/// With a bias the output rows are pre-filled with it and the GEMM
/// accumulates.
fn conv_images<T: crate::dtype::Element + GemmElem>(
    x: &Tensor,
    wt: &Tensor,
    bias: Option<&Tensor>,
    out: &Tensor,
    geo: Geometry,
) -> Result<()> {
    let Geometry {
        groups,
        cg,
        og,
        hd,
        wd,
        ho,
        wo,
    } = geo;
    let n = x.shape()[0];
    let (img_len, out_len) = (x.numel() / n.max(1), out.numel() / n.max(1));
    let (k, plane) = (cg * hd.kernel * wd.kernel, ho * wo);
    // Each band re-reads the weights (`og·k`) against its `k·rows·Wo`
    // columns: keep at least 2·og columns per band so the weights do not
    // dominate (deep layers, with many filters and small images, then run
    // whole images).
    let rows_for_cache = COL_TILE / (k * wo).max(1);
    let rows_for_weights = (2 * og).div_ceil(wo.max(1));
    let band = rows_for_cache.max(rows_for_weights).clamp(1, ho.max(1));
    let bands = ho.div_ceil(band);
    let tasks = n * groups * bands;
    let (_l, xs, ws, bs) = locked_operands::<T>(x, wt, bias, None, out);
    let out_ptr = out.data_ptr() as usize;
    let run = |range: std::ops::Range<usize>| -> Result<()> {
        let col_len = k * band * wo;
        let cols = Tensor::empty(&[col_len], T::DTYPE)?;
        // SAFETY: `cols` is this task's own fresh buffer.
        let cs = unsafe { std::slice::from_raw_parts_mut(cols.data_ptr() as *mut T, col_len) };
        for task in range {
            let (b, g, bi) = (
                task / (groups * bands),
                (task / bands) % groups,
                task % bands,
            );
            let rows = bi * band..((bi + 1) * band).min(ho);
            let src = &xs[b * img_len + g * cg * hd.input * wd.input..][..cg * hd.input * wd.input];
            let nb = rows.len() * wo;
            // SAFETY: `cs` holds `k` rows of `nb` for this task alone.
            unsafe { im2col(src, cg, hd, wd, rows.clone(), wo, cs.as_mut_ptr(), nb) };
            // SAFETY: the band's rows of this image and group are written
            // by this task only.
            let dst =
                unsafe { (out_ptr as *mut T).add(b * out_len + g * og * plane + rows.start * wo) };
            let beta = match bs {
                Some(bv) => {
                    for (o, &v) in bv[g * og..][..og].iter().enumerate() {
                        unsafe { std::slice::from_raw_parts_mut(dst.add(o * plane), nb) }.fill(v);
                    }
                    T::one()
                }
                None => T::zero(),
            };
            // SAFETY: weights `[og, k]`, cols `[k, nb]` and the output block
            // `[og, nb]` (row stride `plane`) are disjoint and in bounds.
            unsafe {
                T::gemm(
                    og,
                    nb,
                    k,
                    MatMut {
                        ptr: dst,
                        rs: plane as isize,
                        cs: 1,
                    },
                    MatRef {
                        ptr: ws[g * og * k..].as_ptr(),
                        rs: k as isize,
                        cs: 1,
                    },
                    MatRef {
                        ptr: cs.as_ptr(),
                        rs: nb as isize,
                        cs: 1,
                    },
                    T::one(),
                    beta,
                );
            }
        }
        Ok(())
    };
    if tasks == 0 {
        return Ok(());
    }
    parallel::parallel_map(tasks, 1, run).into_iter().collect()
}

/// The input's dtype, the dtype the convolution computes in (f64 for f64,
/// else f32: half types compute in f32), and input and weights converted
/// to it, contiguous.
fn work_operands(x: &Tensor, w: &Tensor) -> Result<(DType, DType, Tensor, Tensor)> {
    let dt = x.dtype();
    let work = if dt == DType::F64 {
        DType::F64
    } else {
        DType::F32
    };
    Ok((
        dt,
        work,
        x.to_dtype(work)?.contiguous()?,
        w.to_dtype(work)?.contiguous()?,
    ))
}

/// The parsed geometry the derivatives need.
fn params(
    op: &str,
    stride: &[usize],
    padding: &[usize],
    dilation: &[usize],
    groups: usize,
) -> Result<crate::autograd::derivatives::conv::ConvParams> {
    Ok(crate::autograd::derivatives::conv::ConvParams {
        stride: pair(op, "stride", stride)?,
        padding: pair(op, "padding", padding)?,
        dilation: pair(op, "dilation", dilation)?,
        groups,
    })
}

pub(super) fn check_conv(
    op: &str,
    input: &Tensor,
    weight: &Tensor,
    groups: usize,
    spatial: usize,
) -> Result<()> {
    let nd = spatial + 2;
    crate::ensure!(
        input.dim() == nd || input.dim() == nd - 1,
        Runtime,
        "{op}: Expected {}D (unbatched) or {nd}D (batched) input to {op}, but got input of size: {:?}",
        nd - 1,
        input.shape()
    );
    crate::ensure!(
        weight.dim() == nd,
        Runtime,
        "{op}: weight should have {nd} dimensions, got {:?}",
        weight.shape()
    );
    crate::ensure!(
        groups > 0,
        Runtime,
        "{op}: non-positive groups is not supported"
    );
    crate::ensure!(
        input.dtype() == weight.dtype(),
        Runtime,
        "{op}: Input type ({}) and weight type ({}) should be the same",
        input.dtype().name_title(),
        weight.dtype().name_title()
    );
    crate::ensure!(
        input.is_floating_point(),
        NotImplemented,
        "{op}: \"slow_conv2d_cpu\" not implemented for '{}'",
        input.dtype().name_title()
    );
    Ok(())
}

crate::ops! {
    register = register_ops;
    /// 2-D convolution (`F.conv2d`): input `[N, C, H, W]` (or `[C, H, W]`),
    /// weight `[O, C/groups, kH, kW]`.
    #[allow(clippy::too_many_arguments)]
    #[op = "conv2d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=1, SymInt[2] padding=0, SymInt[2] dilation=1, SymInt groups=1) -> Tensor"]
    pub fn conv2d(
        &self,
        weight: &Tensor,
        bias: Option<&Tensor>,
        stride: &[usize],
        padding: &[usize],
        dilation: &[usize],
        groups: usize,
    ) -> Result<Tensor> {
        check_conv("conv2d", self, weight, groups, 2)?;
        if self.dim() == 3 {
            return self
                .unsqueeze(0)?
                .conv2d(weight, bias, stride, padding, dilation, groups)?
                .squeeze_dims(&[0]);
        }
        let ins = crate::autograd::derivatives::conv::inputs(self, weight, bias);
        let y = crate::autograd::raw(&ins, || {
            self.conv2d_impl(weight, bias, stride, padding, dilation, groups, None)?
                .ok_or_else(|| {
                    crate::Error::new(crate::ErrorKind::Runtime, "conv2d: no kernel ran")
                })
        })?;
        crate::autograd::derivatives::conv::conv2d(
            self,
            weight,
            bias,
            params("conv2d", stride, padding, dilation, groups)?,
            y,
        )
    }

    /// The convolution itself, checked. With `fused` it runs only on the
    /// direct f32 kernel, applying the epilogue, and gives `None` where
    /// that kernel does not apply.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn conv2d_impl(
        &self,
        weight: &Tensor,
        bias: Option<&Tensor>,
        stride: &[usize],
        padding: &[usize],
        dilation: &[usize],
        groups: usize,
        fused: Option<&super::conv_fused::Fused>,
    ) -> Result<Option<Tensor>> {
        let [sh, sw] = pair("conv2d", "stride", stride)?;
        let [ph, pw] = pair("conv2d", "padding", padding)?;
        let [dh, dw] = pair("conv2d", "dilation", dilation)?;
        crate::ensure!(
            sh > 0 && sw > 0,
            Runtime,
            "conv2d: non-positive stride is not supported"
        );
        crate::ensure!(
            dh > 0 && dw > 0,
            Runtime,
            "conv2d: dilation should be greater than zero"
        );
        let (n, c, hh, ww) = (
            self.shape()[0],
            self.shape()[1],
            self.shape()[2],
            self.shape()[3],
        );
        let (o, cg, kh, kw) = (
            weight.shape()[0],
            weight.shape()[1],
            weight.shape()[2],
            weight.shape()[3],
        );
        crate::ensure!(
            c == cg * groups && o % groups == 0,
            Runtime,
            "conv2d: Given groups={groups}, weight of size {:?}, expected input{:?} to have {} channels, but got {c} channels instead",
            weight.shape(),
            self.shape(),
            cg * groups
        );
        if let Some(b) = bias {
            crate::ensure!(
                b.shape() == [o],
                Runtime,
                "conv2d: bias should have shape [{o}], got {:?}",
                b.shape()
            );
        }
        let hd = Dim {
            input: hh,
            kernel: kh,
            stride: sh,
            pad: ph,
            dil: dh,
        };
        let wd = Dim {
            input: ww,
            kernel: kw,
            stride: sw,
            pad: pw,
            dil: dw,
        };
        let (Some(ho), Some(wo)) = (hd.out(), wd.out()) else {
            crate::bail!(
                Runtime,
                "conv2d: Calculated padded input size per channel: ({} x {}). Kernel size: ({} x {}). Kernel size can't be greater than actual input size",
                hh + 2 * ph,
                ww + 2 * pw,
                dh * (kh - 1) + 1,
                dw * (kw - 1) + 1
            );
        };
        let (dt, work, x, wt) = work_operands(self, weight)?;
        let b = bias.map(|b| b.to_dtype(work)?.contiguous()).transpose()?;
        let out = Tensor::empty(&[n, o, ho, wo], work)?;
        let geo = Geometry {
            groups,
            cg,
            og: o / groups,
            hd,
            wd,
            ho,
            wo,
        };
        if let Some(r) = fused.and_then(|f| f.residual.as_ref()) {
            crate::ensure!(
                r.shape() == out.shape(),
                Runtime,
                "conv2d_affine_eval: residual of shape {:?} does not match the output {:?}",
                r.shape(),
                out.shape()
            );
        }
        let winograd = work == DType::F32
            && super::conv_winograd::wanted(&geo, n, weight)
            && super::conv_batched::forced() != Some(true);
        let batched = work == DType::F32 && !winograd && super::conv_batched::wanted(&geo, n);
        let direct = if work == DType::F32 && !batched && !winograd {
            super::conv_direct::plan(&geo, n)
        } else {
            None
        };
        if fused.is_some() && ((direct.is_none() && !batched && !winograd) || dt != DType::F32) {
            return Ok(None);
        }
        match (work, &direct) {
            (DType::F64, _) => conv_images::<f64>(&x, &wt, b.as_ref(), &out, geo)?,
            _ if winograd => {
                super::conv_winograd::conv_images(&x, &wt, b.as_ref(), &out, geo, fused)?
            }
            _ if batched => {
                super::conv_batched::conv_images(&x, &wt, b.as_ref(), &out, geo, fused)?
            }
            (_, Some(plan)) => {
                super::conv_direct::conv_images(&x, &wt, b.as_ref(), &out, geo, plan, fused)?
            }
            _ => conv_images::<f32>(&x, &wt, b.as_ref(), &out, geo)?,
        }
        out.to_dtype(dt).map(Some)
    }

    /// 1-D convolution (`F.conv1d`): input `[N, C, L]` (or `[C, L]`).
    #[allow(clippy::too_many_arguments)]
    pub fn conv1d(
        &self,
        weight: &Tensor,
        bias: Option<&Tensor>,
        stride: usize,
        padding: usize,
        dilation: usize,
        groups: usize,
    ) -> Result<Tensor> {
        crate::enter_op!(
            "conv1d",
            self,
            weight,
            bias,
            vec![stride as i64],
            vec![padding as i64],
            vec![dilation as i64],
            groups as i64
        );
        check_conv("conv1d", self, weight, groups, 1)?;
        let x = self.unsqueeze(-2)?;
        let w = weight.unsqueeze(-2)?;
        x.conv2d(
            &w,
            bias,
            &[1, stride],
            &[0, padding],
            &[1, dilation],
            groups,
        )?
        .squeeze_dims(&[-2])
    }

    /// Transposed 2-D convolution (`F.conv_transpose2d`): input
    /// `[N, Cin, H, W]`, weight `[Cin, Cout/groups, kH, kW]`.
    #[allow(clippy::too_many_arguments)]
    #[op = "conv_transpose2d.input(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=1, SymInt[2] padding=0, SymInt[2] output_padding=0, SymInt groups=1, SymInt[2] dilation=1) -> Tensor"]
    pub fn conv_transpose2d(
        &self,
        weight: &Tensor,
        bias: Option<&Tensor>,
        stride: &[usize],
        padding: &[usize],
        output_padding: &[usize],
        groups: usize,
        dilation: &[usize],
    ) -> Result<Tensor> {
        check_conv("conv_transpose2d", self, weight, groups, 2)?;
        if self.dim() == 3 {
            return self
                .unsqueeze(0)?
                .conv_transpose2d(
                    weight,
                    bias,
                    stride,
                    padding,
                    output_padding,
                    groups,
                    dilation,
                )?
                .squeeze_dims(&[0]);
        }
        let ins = crate::autograd::derivatives::conv::inputs(self, weight, bias);
        let y = crate::autograd::raw(&ins, || {
            self.conv_transpose2d_impl(
                weight,
                bias,
                stride,
                padding,
                output_padding,
                groups,
                dilation,
            )
        })?;
        crate::autograd::derivatives::conv::conv_transpose2d(
            self,
            weight,
            bias,
            params("conv_transpose2d", stride, padding, dilation, groups)?,
            y,
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn conv_transpose2d_impl(
        &self,
        weight: &Tensor,
        bias: Option<&Tensor>,
        stride: &[usize],
        padding: &[usize],
        output_padding: &[usize],
        groups: usize,
        dilation: &[usize],
    ) -> Result<Tensor> {
        let [sh, sw] = pair("conv_transpose2d", "stride", stride)?;
        let [ph, pw] = pair("conv_transpose2d", "padding", padding)?;
        let [oph, opw] = pair("conv_transpose2d", "output_padding", output_padding)?;
        let [dh, dw] = pair("conv_transpose2d", "dilation", dilation)?;
        crate::ensure!(
            sh > 0 && sw > 0 && dh > 0 && dw > 0,
            Runtime,
            "conv_transpose2d: stride and dilation must be positive"
        );
        crate::ensure!(
            oph < sh.max(dh) && opw < sw.max(dw),
            Runtime,
            "conv_transpose2d: output padding must be smaller than either stride or dilation"
        );
        let (n, cin, hh, ww) = (
            self.shape()[0],
            self.shape()[1],
            self.shape()[2],
            self.shape()[3],
        );
        let (wcin, cog, kh, kw) = (
            weight.shape()[0],
            weight.shape()[1],
            weight.shape()[2],
            weight.shape()[3],
        );
        crate::ensure!(
            wcin == cin && cin % groups == 0,
            Runtime,
            "conv_transpose2d: Given transposed=1, weight of size {:?}, expected input{:?} to have {wcin} channels, but got {cin} channels instead",
            weight.shape(),
            self.shape()
        );
        let cout = cog * groups;
        let ho = ((hh - 1) * sh + dh * (kh - 1) + oph + 1).checked_sub(2 * ph);
        let wo = ((ww - 1) * sw + dw * (kw - 1) + opw + 1).checked_sub(2 * pw);
        let (Some(ho), Some(wo)) = (ho, wo) else {
            crate::bail!(
                Runtime,
                "conv_transpose2d: padding is too large for the input size {:?}",
                self.shape()
            );
        };
        let (dt, work, x, wt) = work_operands(self, weight)?;
        let out = Tensor::zeros(&[n, cout, ho, wo], work)?;
        let geo = TransposedGeometry {
            groups,
            cg: cin / groups,
            cog,
            kernel: [kh, kw],
            stride: [sh, sw],
            pad: [ph, pw],
            dil: [dh, dw],
            input: [hh, ww],
            output: [ho, wo],
        };
        match work {
            DType::F64 => conv_transpose_images::<f64>(&x, &wt, &out, geo)?,
            _ => conv_transpose_images::<f32>(&x, &wt, &out, geo)?,
        }
        let out = match bias {
            Some(b) => out.add(&b.to_dtype(work)?.reshape(&[1, cout as i64, 1, 1])?)?,
            None => out,
        };
        out.to_dtype(dt)
    }
}

use crate::dispatch::typed::single;

pub(crate) fn register(r: &mut Registry) {
    register_ops(r);
    super::conv_fused::register_fused(r);
    // ops whose arguments are not their methods' (Note [Typed kernels])
    r.def_typed(
        "conv1d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=1, SymInt[1] padding=0, SymInt[1] dilation=1, SymInt groups=1) -> Tensor",
        |x: Tensor, w: Tensor, b: Option<Tensor>, s: Vec<usize>, p: Vec<usize>, d: Vec<usize>, g: usize| {
            let (s, p, d) = (
                single("conv1d", "stride", &s)?,
                single("conv1d", "padding", &p)?,
                single("conv1d", "dilation", &d)?,
            );
            x.conv1d(&w, b.as_ref(), s, p, d, g)
        },
    );
}

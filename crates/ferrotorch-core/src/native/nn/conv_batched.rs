//! f32 convolutions of small feature maps as one GEMM over the batch.
//!
//! # Note [Batched im2col]
//! On the 7×7 maps of a ResNet's last stage the direct kernel
//! (Note [Direct convolution]) computes a padding column per row and a
//! padding row per image, a quarter of its work wasted, and ran at 0.8× of
//! oneDNN; strided layers also pay for its stride-phase planes. Here the
//! im2col matrix of the whole batch, `[C·kh·kw, N·Ho·Wo]` (7 MB for a
//! 512-channel 3×3 layer at batch 8, inside the L3), goes through one
//! GEMM with the weights, which wastes nothing (about 80 % of the FMA peak
//! on that layer, against 65 % for the direct kernel); a last pass moves each `[O, Ho·Wo]` slice of the
//! product into the NCHW output through the bias or the fused epilogue
//! (Note [Fused eval convolutions]). Batches whose matrix would outgrow
//! `COLS_BYTES` run in chunks of images.

use super::conv::{im2col, Geometry};
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;
use ferrotorch_kernels::gemm::{GemmElem, MatMut, MatRef};
use ferrotorch_kernels::parallel;

/// Largest im2col matrix per GEMM: half of a 32 MiB L3.
const COLS_BYTES: usize = 16 << 20;

/// Whether a convolution takes this path (the caller has checked f32):
/// one group, at least 16 filters, output maps up to 14×14, and either
/// strided (the direct kernel then also lays out a plane per stride phase)
/// or at least 96 outputs per channel over the batch. Measured on
/// ResNet-18's layers at batch 8 (Zen 3, both paths in one process): 1.19×
/// the direct kernel at 7×7, 1.04× at 14×14, 1.07-1.38× strided; the
/// direct kernel stays ahead on 28×28 maps (0.9×) and on a 7×7 map at
/// batch 1 (0.96×). The caller asks Winograd first (`conv_winograd`),
/// which takes the 3×3 stride-1 layers of 14×14 maps.
///
/// `FERROTORCH_CONV_BATCHED=1` sends every one-group convolution here and
/// `=0` none ([`forced`]).
pub(super) fn wanted(geo: &Geometry, n: usize) -> bool {
    if let Some(on) = forced() {
        return on && geo.groups == 1;
    }
    let plane = geo.ho * geo.wo;
    let strided = geo.hd.stride > 1 || geo.wd.stride > 1;
    geo.groups == 1 && geo.og >= 16 && plane <= 196 && (strided || n * plane >= 96)
}

/// `FERROTORCH_CONV_BATCHED`: `1` sends every one-group convolution here
/// (before the Winograd path), `0` none; read once, for testing and
/// measuring the paths.
pub(super) fn forced() -> Option<bool> {
    static FORCED: std::sync::OnceLock<Option<bool>> = std::sync::OnceLock::new();
    *FORCED.get_or_init(
        || match std::env::var("FERROTORCH_CONV_BATCHED").as_deref() {
            Ok("1") => Some(true),
            Ok("0") => Some(false),
            _ => None,
        },
    )
}

/// The convolution of a contiguous f32 batch `x` into `out`
/// (Note [Batched im2col]); every output starts from the bias, if any.
pub(super) fn conv_images(
    x: &Tensor,
    wt: &Tensor,
    bias: Option<&Tensor>,
    out: &Tensor,
    geo: Geometry,
    fused: Option<&super::conv_fused::Fused>,
) -> Result<()> {
    let Geometry {
        cg,
        og,
        hd,
        wd,
        ho,
        wo,
        ..
    } = geo;
    let n = x.shape()[0];
    let (plane, k) = (ho * wo, cg * hd.kernel * wd.kernel);
    let img = cg * hd.input * wd.input;
    if n * plane * og == 0 {
        return Ok(());
    }
    let residual = fused.and_then(|f| f.residual.as_ref());
    let (_l, xs, ws, bs) = super::conv::locked_operands::<f32>(x, wt, bias, residual, out);
    let res_ptr = residual.map(|r| r.data_ptr() as usize);
    let per = (COLS_BYTES / 4 / (k * plane).max(1)).clamp(1, n);
    let cols = Tensor::empty(&[k * per * plane], DType::F32)?;
    let prod = Tensor::empty(&[og * per * plane], DType::F32)?;
    let (cp, pp) = (cols.data_ptr() as usize, prod.data_ptr() as usize);
    let out_ptr = out.data_ptr() as usize;
    for i0 in (0..n).step_by(per) {
        let m = per.min(n - i0);
        let ld = m * plane;
        parallel::parallel_for(m, 1, |r| {
            for i in r {
                let src = &xs[(i0 + i) * img..][..img];
                let dst = (cp as *mut f32).wrapping_add(i * plane);
                // SAFETY: image i writes columns i·plane.. of every row of
                // `cols` (ld apart), disjoint from the other images'.
                unsafe { im2col(src, cg, hd, wd, 0..ho, wo, dst, ld) };
            }
        });
        // SAFETY: weights [og, k], cols [k, ld] and the product [og, ld]
        // are disjoint buffers of those sizes.
        unsafe {
            f32::gemm(
                og,
                ld,
                k,
                MatMut {
                    ptr: pp as *mut f32,
                    rs: ld as isize,
                    cs: 1,
                },
                MatRef {
                    ptr: ws.as_ptr(),
                    rs: k as isize,
                    cs: 1,
                },
                MatRef {
                    ptr: cp as *const f32,
                    rs: ld as isize,
                    cs: 1,
                },
                1.0,
                0.0,
            );
        }
        // Move row c, image i of the product to out[i0 + i, c].
        parallel::parallel_for(m * og, 16, |r| {
            for t in r {
                let (i, c) = (t / og, t % og);
                // SAFETY: (image, channel) pairs are disjoint slices of
                // `out` (and of the residual, read only).
                unsafe {
                    let src = std::slice::from_raw_parts(
                        (pp as *const f32).add(c * ld + i * plane),
                        plane,
                    );
                    let at = ((i0 + i) * og + c) * plane;
                    let dst = std::slice::from_raw_parts_mut((out_ptr as *mut f32).add(at), plane);
                    match (fused, bs) {
                        (Some(f), _) => {
                            let res = res_ptr.map(|p| {
                                std::slice::from_raw_parts((p as *const f32).add(at), plane)
                            });
                            ferrotorch_kernels::conv::epilogue(
                                f.scale[c], f.shift[c], src, res, f.relu, dst,
                            )
                        }
                        (None, Some(b)) => {
                            dst.iter_mut().zip(src).for_each(|(d, &v)| *d = b[c] + v)
                        }
                        (None, None) => dst.copy_from_slice(src),
                    }
                }
            }
        });
    }
    Ok(())
}

//! The weight gradient of a one-group f32 `conv2d` as one GEMM.
//!
//! # Note [Convolution weight gradient]
//! `dw[o, (c, i, j)] = Σ_{n, l} g[n, o, l] · cols[(c, i, j), (n, l)]`: the
//! gradient over the output positions `l` of every image, times the
//! im2col matrix of the batch (Note [Batched im2col]), one GEMM of
//! `[O, N·L]` by `[N·L, C·kh·kw]`. The general formula (a convolution of
//! the transposed input with the transposed gradient, which stays
//! differentiable for double backward) ran that reduction as a
//! convolution with a kernel the size of the output map: 2.6× slower than
//! torch on the real-program CNN's first layer. This path runs when no
//! graph of the backward is being recorded (no `create_graph`).

use super::conv::{im2col, Dim};
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;
use ferrotorch_kernels::gemm::{GemmElem, MatMut, MatRef};
use ferrotorch_kernels::parallel;

/// Largest im2col matrix per GEMM (as the batched forward's).
const COLS_BYTES: usize = 16 << 20;

/// Whether `g`'s maps are exactly the convolution of `x`'s under this
/// geometry (what [`weight_grad_f32`] needs; a transposed convolution's
/// output padding can make `x` larger).
pub(crate) fn applies(
    x: &Tensor,
    g: &Tensor,
    kernel: [usize; 2],
    stride: [usize; 2],
    padding: [usize; 2],
    dilation: [usize; 2],
) -> bool {
    (0..2).all(|d| {
        let span = dilation[d] * (kernel[d] - 1) + 1;
        (x.shape()[2 + d] + 2 * padding[d])
            .checked_sub(span)
            .is_some_and(|r| r / stride[d] + 1 == g.shape()[2 + d])
    })
}

/// `dw` of `[O, C, kh, kw]` for input `x` `[N, C, H, W]` and output
/// gradient `g` `[N, O, Ho, Wo]` (both f32), with the forward's stride,
/// padding and dilation (Note [Convolution weight gradient]).
pub(crate) fn weight_grad_f32(
    x: &Tensor,
    g: &Tensor,
    kernel: [usize; 2],
    stride: [usize; 2],
    padding: [usize; 2],
    dilation: [usize; 2],
) -> Result<Tensor> {
    let x = x.contiguous()?;
    let (n, c, h, w) = (x.shape()[0], x.shape()[1], x.shape()[2], x.shape()[3]);
    let (o, ho, wo) = (g.shape()[1], g.shape()[2], g.shape()[3]);
    let hd = Dim {
        input: h,
        kernel: kernel[0],
        stride: stride[0],
        pad: padding[0],
        dil: dilation[0],
    };
    let wd = Dim {
        input: w,
        kernel: kernel[1],
        stride: stride[1],
        pad: padding[1],
        dil: dilation[1],
    };
    let (plane, k) = (ho * wo, c * kernel[0] * kernel[1]);
    let dw = Tensor::zeros(&[o, c, kernel[0], kernel[1]], DType::F32)?;
    if n * plane * o * k == 0 {
        return Ok(dw);
    }
    // the gradient as [O, N·L]: row o holds every image's map o
    let gt = g.transpose(0, 1)?.contiguous()?;
    let img = c * h * w;
    let per = (COLS_BYTES / 4 / (k * plane).max(1)).clamp(1, n);
    let cols = Tensor::empty(&[k * per * plane], DType::F32)?;
    let guard = crate::storage::lock_storages(
        &[x.storage(), gt.storage()],
        &[dw.storage(), cols.storage()],
    );
    let (xp, gp) = (x.data_ptr() as usize, gt.data_ptr() as usize);
    let (cp, dp) = (cols.data_ptr() as usize, dw.data_ptr() as usize);
    for (chunk, i0) in (0..n).step_by(per).enumerate() {
        let m = per.min(n - i0);
        let ld = m * plane;
        parallel::parallel_for(m, 1, |r| {
            for i in r {
                // SAFETY: x is contiguous and locked; image i of the chunk
                // writes columns i·plane.. of every row of `cols`.
                unsafe {
                    let src =
                        std::slice::from_raw_parts((xp as *const f32).add((i0 + i) * img), img);
                    im2col(
                        src,
                        c,
                        hd,
                        wd,
                        0..ho,
                        wo,
                        (cp as *mut f32).add(i * plane),
                        ld,
                    );
                }
            }
        });
        // SAFETY: dw [O, k], the gradient's columns of this chunk
        // [O, ld] (row stride N·L) and cols [k, ld] are valid, disjoint.
        unsafe {
            f32::gemm(
                o,
                k,
                ld,
                MatMut {
                    ptr: dp as *mut f32,
                    rs: k as isize,
                    cs: 1,
                },
                MatRef {
                    ptr: (gp as *const f32).add(i0 * plane),
                    rs: (n * plane) as isize,
                    cs: 1,
                },
                MatRef {
                    ptr: cp as *const f32,
                    rs: 1,
                    cs: ld as isize,
                },
                1.0,
                if chunk == 0 { 0.0 } else { 1.0 },
            );
        }
    }
    drop(guard);
    Ok(dw)
}

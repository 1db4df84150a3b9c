//! The compute of `conv_transpose2d`: per image and group one GEMM of the
//! transposed weights with the input, `cols = Wᵍᵀ · xᵍ`, then col2im adds
//! each column into the output positions it reaches. Images are shared out
//! over the threads (each owns its output block); with one image the GEMM
//! parallelises inside. This is also conv2d's input gradient.

use crate::error::Result;
use crate::tensor::Tensor;
use ferrotorch_kernels::gemm::{GemmElem, MatMut, MatRef};
use ferrotorch_kernels::parallel;

/// Shape of a transposed convolution once its arguments are checked.
#[derive(Clone, Copy)]
pub(super) struct TransposedGeometry {
    pub groups: usize,
    /// Input channels per group.
    pub cg: usize,
    /// Output channels per group.
    pub cog: usize,
    /// Kernel, stride, padding, dilation: `[h, w]`.
    pub kernel: [usize; 2],
    pub stride: [usize; 2],
    pub pad: [usize; 2],
    pub dil: [usize; 2],
    /// Input and output spatial sizes: `[h, w]`.
    pub input: [usize; 2],
    pub output: [usize; 2],
}

/// Add `cols` (`[cog·kh·kw, H·W]`) into one group's output block
/// `[cog, Ho, Wo]`.
fn col2im<T: crate::dtype::Element + std::ops::AddAssign>(
    cols: &[T],
    out: &mut [T],
    g: &TransposedGeometry,
) {
    let ([kh, kw], [sh, sw], [ph, pw], [dh, dw]) = (g.kernel, g.stride, g.pad, g.dil);
    let ([hh, ww], [ho, wo]) = (g.input, g.output);
    for (row, src) in cols.chunks_exact(hh * ww).enumerate() {
        let (co, ki, kj) = (row / (kh * kw), (row / kw) % kh, row % kw);
        let plane = &mut out[co * ho * wo..][..ho * wo];
        // Input columns j whose output column ow = j*sw + kj*dw - pw is
        // inside [0, wo).
        let shift = (kj * dw) as isize - pw as isize;
        let lo = if shift >= 0 {
            0
        } else {
            ((-shift) as usize).div_ceil(sw)
        };
        let hi = if (wo as isize) <= shift {
            0
        } else {
            ((wo as isize - shift - 1) as usize / sw + 1).min(ww)
        };
        if lo >= hi {
            continue;
        }
        for i in 0..hh {
            let oh = (i * sh + ki * dh) as isize - ph as isize;
            if oh < 0 || oh >= ho as isize {
                continue;
            }
            let dst = &mut plane[oh as usize * wo..][..wo];
            let s = &src[i * ww..][..ww];
            if sw == 1 {
                let o0 = (lo as isize + shift) as usize;
                for (d, &v) in dst[o0..o0 + (hi - lo)].iter_mut().zip(&s[lo..hi]) {
                    *d += v;
                }
            } else {
                for (j, &v) in s.iter().enumerate().take(hi).skip(lo) {
                    dst[((j * sw) as isize + shift) as usize] += v;
                }
            }
        }
    }
}

/// `out` (zeroed, contiguous `[N, groups·cog, Ho, Wo]`) gets the transposed
/// convolution of contiguous `x` `[N, groups·cg, H, W]` with contiguous
/// weights `[groups·cg, cog, kh, kw]`.
pub(super) fn conv_transpose_images<T>(
    x: &Tensor,
    wt: &Tensor,
    out: &Tensor,
    geo: TransposedGeometry,
) -> Result<()>
where
    T: crate::dtype::Element + GemmElem + std::ops::AddAssign,
{
    let n = x.shape()[0];
    let TransposedGeometry {
        groups, cg, cog, ..
    } = geo;
    let ([kh, kw], [hh, ww], [ho, wo]) = (geo.kernel, geo.input, geo.output);
    let (rows, npos) = (cog * kh * kw, hh * ww);
    let (img_len, out_len) = (groups * cg * npos, groups * cog * ho * wo);
    if n == 0 || out_len == 0 {
        return Ok(());
    }
    let _l = crate::storage::lock_storages(&[x.storage(), wt.storage()], &[out.storage()]);
    // SAFETY: x and wt are contiguous tensors of these sizes; out is a
    // fresh buffer disjoint from them.
    let (xs, ws) = unsafe {
        (
            std::slice::from_raw_parts(x.data_ptr() as *const T, x.numel()),
            std::slice::from_raw_parts(wt.data_ptr() as *const T, wt.numel()),
        )
    };
    let out_ptr = out.data_ptr() as usize;
    let run = |images: std::ops::Range<usize>| -> Result<()> {
        let cols_t = Tensor::empty(&[rows * npos], T::DTYPE)?;
        // SAFETY: this task's own fresh buffer.
        let cols =
            unsafe { std::slice::from_raw_parts_mut(cols_t.data_ptr() as *mut T, rows * npos) };
        for b in images {
            // SAFETY: image b's output block is written by this task only.
            let o = unsafe {
                std::slice::from_raw_parts_mut((out_ptr as *mut T).add(b * out_len), out_len)
            };
            for g in 0..groups {
                if npos > 0 && cg > 0 {
                    // SAFETY: Wᵍᵀ is `[rows, cg]` read through strides
                    // (1, rows) of the contiguous `[cg, rows]` block; xᵍ is
                    // `[cg, npos]`; cols is `[rows, npos]`.
                    unsafe {
                        T::gemm(
                            rows,
                            npos,
                            cg,
                            MatMut {
                                ptr: cols.as_mut_ptr(),
                                rs: npos as isize,
                                cs: 1,
                            },
                            MatRef {
                                ptr: ws[g * cg * rows..].as_ptr(),
                                rs: 1,
                                cs: rows as isize,
                            },
                            MatRef {
                                ptr: xs[b * img_len + g * cg * npos..].as_ptr(),
                                rs: npos as isize,
                                cs: 1,
                            },
                            T::one(),
                            T::zero(),
                        );
                    }
                } else {
                    cols.fill(T::zero());
                }
                col2im(cols, &mut o[g * cog * ho * wo..][..cog * ho * wo], &geo);
            }
        }
        Ok(())
    };
    if n >= parallel::get_num_threads() && n > 1 {
        parallel::parallel_map(n, 1, run).into_iter().collect()
    } else {
        run(0..n)
    }
}

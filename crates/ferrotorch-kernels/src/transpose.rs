//! Transposing copies of 4-byte elements, for elementwise ops whose operand
//! is walked across its contiguous direction (`m.t() + m`).
//!
//! `transpose32(src, col_stride, rows, cols, dst)` writes
//! `dst[r·cols + c] = src[r + c·col_stride]`: each source column is a run of
//! `rows` contiguous elements. With AVX2, full 8×8 blocks are loaded as
//! eight column runs, transposed in registers and stored as eight row
//! pieces; the edges are copied one element at a time.

#[cfg(target_arch = "x86_64")]
use crate::cpu::{level, Level};

/// See the module docs.
///
/// # Safety
/// `src[r + c·col_stride]` must be readable for every `r < rows`,
/// `c < cols`, and `dst` must hold `rows·cols` elements.
pub unsafe fn transpose32(
    src: *const u32,
    col_stride: isize,
    rows: usize,
    cols: usize,
    dst: *mut u32,
) {
    #[allow(unused_mut)]
    let (mut r8, mut c8) = (0, 0);
    #[cfg(target_arch = "x86_64")]
    if level() >= Level::Avx2 {
        (r8, c8) = (rows / 8 * 8, cols / 8 * 8);
        for r in (0..r8).step_by(8) {
            for c in (0..c8).step_by(8) {
                // SAFETY: the 8×8 block at (r, c) is inside both tiles.
                unsafe {
                    avx2::block8(
                        src.offset(r as isize + c as isize * col_stride),
                        col_stride,
                        dst.add(r * cols + c),
                        cols,
                    )
                };
            }
        }
    }
    // Scalar edges: the columns right of the blocks, then the rows below.
    for r in 0..rows {
        let from = if r < r8 { c8 } else { 0 };
        for c in from..cols {
            // SAFETY: (r, c) is inside both tiles, per the contract.
            unsafe { *dst.add(r * cols + c) = *src.offset(r as isize + c as isize * col_stride) };
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    /// Transpose the 8×8 block whose column `k` is the 8 contiguous
    /// elements at `src + k·col_stride` into 8 rows of `dst`, `ld` apart.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn block8(src: *const u32, col_stride: isize, dst: *mut u32, ld: usize) {
        unsafe {
            let col = |k: isize| _mm256_loadu_ps(src.offset(k * col_stride) as *const f32);
            let (a0, a1, a2, a3) = (col(0), col(1), col(2), col(3));
            let (a4, a5, a6, a7) = (col(4), col(5), col(6), col(7));
            let t0 = _mm256_unpacklo_ps(a0, a1);
            let t1 = _mm256_unpackhi_ps(a0, a1);
            let t2 = _mm256_unpacklo_ps(a2, a3);
            let t3 = _mm256_unpackhi_ps(a2, a3);
            let t4 = _mm256_unpacklo_ps(a4, a5);
            let t5 = _mm256_unpackhi_ps(a4, a5);
            let t6 = _mm256_unpacklo_ps(a6, a7);
            let t7 = _mm256_unpackhi_ps(a6, a7);
            let s0 = _mm256_shuffle_ps::<0x44>(t0, t2);
            let s1 = _mm256_shuffle_ps::<0xEE>(t0, t2);
            let s2 = _mm256_shuffle_ps::<0x44>(t1, t3);
            let s3 = _mm256_shuffle_ps::<0xEE>(t1, t3);
            let s4 = _mm256_shuffle_ps::<0x44>(t4, t6);
            let s5 = _mm256_shuffle_ps::<0xEE>(t4, t6);
            let s6 = _mm256_shuffle_ps::<0x44>(t5, t7);
            let s7 = _mm256_shuffle_ps::<0xEE>(t5, t7);
            let rows = [
                _mm256_permute2f128_ps::<0x20>(s0, s4),
                _mm256_permute2f128_ps::<0x20>(s1, s5),
                _mm256_permute2f128_ps::<0x20>(s2, s6),
                _mm256_permute2f128_ps::<0x20>(s3, s7),
                _mm256_permute2f128_ps::<0x31>(s0, s4),
                _mm256_permute2f128_ps::<0x31>(s1, s5),
                _mm256_permute2f128_ps::<0x31>(s2, s6),
                _mm256_permute2f128_ps::<0x31>(s3, s7),
            ];
            for (k, v) in rows.into_iter().enumerate() {
                _mm256_storeu_ps(dst.add(k * ld) as *mut f32, v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn transposes_blocks_and_edges() {
        for (rows, cols) in [(16, 24), (13, 19), (8, 8), (3, 5), (16, 256)] {
            let stride = rows + 3;
            let src: Vec<u32> = (0..(stride * cols) as u32).collect();
            let mut dst = vec![0u32; rows * cols];
            unsafe {
                super::transpose32(src.as_ptr(), stride as isize, rows, cols, dst.as_mut_ptr())
            };
            for r in 0..rows {
                for c in 0..cols {
                    assert_eq!(
                        dst[r * cols + c],
                        src[r + c * stride],
                        "({r}, {c}) of {rows}x{cols}"
                    );
                }
            }
        }
    }
}

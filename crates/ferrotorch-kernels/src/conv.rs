//! Direct stride-1 convolution of f32 images, without an im2col matrix.
//!
//! # Note [Direct convolution]
//! With stride 1, output `(oh, ow)` reads input `(oh + kh·dh, ow + kw·dw)`
//! of a zero-padded image. Number the outputs in the *padded* row width
//! `wp` (`p = oh·wp + ow`, the columns `ow >= wo` being scratch): then tap
//! `k = (ci, kh, kw)` reads `xpad[p + off[k]]` with one offset
//! `off[k] = ci·plane + kh·dh·wp + kw·dw` for every output, so a run of
//! outputs reads a contiguous run of the padded input. The convolution is
//! then a GEMM whose right-hand matrix is never built: the kernel keeps an
//! `MR × NR` block of outputs (8 channels × 48 positions, 24 AVX-512
//! registers) and, for every tap, loads 3 vectors at `p + off[k]` and
//! broadcasts 8 packed weights. This skips im2col's write and re-read of
//! `C·kh·kw` times the image (7 MB per 64-channel 56×56 image for 3×3)
//! that made the GEMM path memory-bound. The cost is the scratch columns
//! (`wp/wo - 1`, 4 % at 56×56 with padding 1) and the tile tail, so callers
//! use it where that waste is small.

/// Output channels per tile.
pub const MR: usize = 8;
/// Output positions per tile (three 16-lane vectors).
pub const NR: usize = 48;

/// Whether this CPU runs the direct kernel (AVX-512F).
pub fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        crate::cpu::level() >= crate::cpu::Level::Avx512
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Pack weights `[og, k]` (row-major) into `ceil(og/MR)` blocks of
/// `[k][MR]`, zero-filled past `og`.
pub fn pack_weights(w: &[f32], og: usize, k: usize) -> Vec<f32> {
    let blocks = og.div_ceil(MR);
    let mut out = vec![0.0f32; blocks * k * MR];
    for (o, row) in w.chunks_exact(k).take(og).enumerate() {
        let (b, i) = (o / MR, o % MR);
        let block = &mut out[b * k * MR..][..k * MR];
        for (kk, &v) in row.iter().enumerate() {
            block[kk * MR + i] = v;
        }
    }
    out
}

/// One image (one group) of a stride-1 convolution, prepared by the caller
/// (Note [Direct convolution]).
pub struct Image<'a> {
    /// The zero-padded input, channel planes `plane` elements apart, rows
    /// `wp` apart, followed by at least [`tail`] readable elements.
    pub xpad: &'a [f32],
    /// `off[k]` for every tap, in the weights' `(ci, kh, kw)` order.
    pub offsets: &'a [usize],
    /// [`pack_weights`] of this group's weights.
    pub wpack: &'a [f32],
    /// Output channels.
    pub og: usize,
    /// Padded row width.
    pub wp: usize,
    /// Output rows and columns.
    pub ho: usize,
    pub wo: usize,
}

/// Elements that must be readable after `cin` padded planes: the last tile
/// may run `NR - 1` positions past the image, plus the widest column tap.
pub fn tail(kw_span: usize) -> usize {
    NR + kw_span
}

impl Image<'_> {
    /// Tiles of `NR` positions covering the image.
    pub fn tiles(&self) -> usize {
        (self.ho * self.wp).div_ceil(NR)
    }

    /// Channel blocks of `MR` output channels.
    pub fn blocks(&self) -> usize {
        self.og.div_ceil(MR)
    }

    /// Compute tiles `tiles` of channel blocks `blocks` into `out`
    /// (`[og, ho, wo]`, rows `wo` apart, channels `ho·wo` apart), starting
    /// every output channel from `bias` (zeros when `None`).
    ///
    /// # Safety
    /// `out` must be valid for writes of `og·ho·wo` elements, and no other
    /// thread may write these tiles of these channels. `xpad` must satisfy
    /// the contract of [`Image::xpad`] for `offsets`.
    pub unsafe fn run(
        &self,
        tiles: std::ops::Range<usize>,
        blocks: std::ops::Range<usize>,
        bias: Option<&[f32]>,
        out: *mut f32,
    ) {
        assert!(available(), "direct convolution needs AVX-512F");
        let k = self.offsets.len();
        let max_off = self.offsets.iter().copied().max().unwrap_or(0);
        // the last tile reads up to `end·NR + max_off - 1`
        assert!(tiles.end * NR + max_off <= self.xpad.len());
        assert!(self.wpack.len() >= self.og.div_ceil(MR) * k * MR);
        assert!(blocks.end <= self.blocks());
        #[cfg(target_arch = "x86_64")]
        for b in blocks {
            for t in tiles.clone() {
                let p0 = t * NR;
                let mut init = [0.0f32; MR];
                let rows = MR.min(self.og - b * MR);
                if let Some(bv) = bias {
                    init[..rows].copy_from_slice(&bv[b * MR..][..rows]);
                }
                let mut acc = [0.0f32; MR * NR];
                // SAFETY: the assertions above keep every load in `xpad`
                // and `wpack`.
                unsafe {
                    avx512::tile(
                        self.xpad.as_ptr().add(p0),
                        self.offsets,
                        self.wpack.as_ptr().add(b * k * MR),
                        &init,
                        &mut acc,
                    )
                };
                // SAFETY: per the contract on `out`.
                unsafe { self.store(p0, b * MR, rows, &acc, out) };
            }
        }
    }

    /// Write the valid positions of a tile (`acc`: `[MR][NR]`) for output
    /// channels `c0..c0+rows`.
    unsafe fn store(&self, p0: usize, c0: usize, rows: usize, acc: &[f32], out: *mut f32) {
        let plane = self.ho * self.wo;
        let mut p = p0;
        while p < p0 + NR {
            let (oh, ow) = (p / self.wp, p % self.wp);
            if oh >= self.ho {
                break;
            }
            if ow >= self.wo {
                p = (oh + 1) * self.wp;
                continue;
            }
            let end = (p0 + NR).min(oh * self.wp + self.wo);
            for r in 0..rows {
                let src = &acc[r * NR + (p - p0)..r * NR + (end - p0)];
                // SAFETY: (c0 + r, oh, ow..ow + len) is inside `out`.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        src.as_ptr(),
                        out.add((c0 + r) * plane + oh * self.wo + ow),
                        src.len(),
                    )
                };
            }
            p = end;
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::{MR, NR};
    use std::arch::x86_64::*;

    /// `acc[r][j] = init[r] + Σ_k w[k][r] · x[off[k] + j]` for one tile.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn tile(
        x: *const f32,
        offsets: &[usize],
        w: *const f32,
        init: &[f32; MR],
        acc_out: &mut [f32; MR * NR],
    ) {
        let mut acc = [[_mm512_setzero_ps(); 3]; MR];
        for (a, &v) in acc.iter_mut().zip(init) {
            *a = [_mm512_set1_ps(v); 3];
        }
        let mut wk = w;
        for &off in offsets {
            // SAFETY: the caller keeps `x + off .. + NR` and `wk .. + MR`
            // in bounds.
            unsafe {
                let src = x.add(off);
                let b0 = _mm512_loadu_ps(src);
                let b1 = _mm512_loadu_ps(src.add(16));
                let b2 = _mm512_loadu_ps(src.add(32));
                for (r, a) in acc.iter_mut().enumerate() {
                    let wr = _mm512_set1_ps(*wk.add(r));
                    a[0] = _mm512_fmadd_ps(wr, b0, a[0]);
                    a[1] = _mm512_fmadd_ps(wr, b1, a[1]);
                    a[2] = _mm512_fmadd_ps(wr, b2, a[2]);
                }
                wk = wk.add(MR);
            }
        }
        for (row, a) in acc_out.chunks_exact_mut(NR).zip(&acc) {
            for (dst, v) in row.chunks_exact_mut(16).zip(a) {
                // SAFETY: each chunk holds 16 elements.
                unsafe { _mm512_storeu_ps(dst.as_mut_ptr(), *v) };
            }
        }
    }
}

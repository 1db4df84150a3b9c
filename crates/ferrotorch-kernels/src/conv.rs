//! Direct f32 convolution, without an im2col matrix.
//!
//! # Note [Direct convolution]
//! With stride 1, output `(oh, ow)` reads input `(oh + kh·dh, ow + kw·dw)`
//! of a zero-padded image. Number the outputs in the row width `wq` of the
//! padded buffer (`p = oh·wq + ow`, the columns `ow >= wo` being scratch):
//! then tap `k = (ci, kh, kw)` reads `x[p + off[k]]` with one offset
//! `off[k] = ci·plane + kh·dh·wq + kw·dw` for every output, so a run of
//! outputs reads a contiguous run of the buffer. The convolution is then a
//! GEMM whose right-hand matrix is never built: the kernel keeps an
//! `MR × NR` block of outputs (8 channels × 48 positions, 24 AVX-512
//! registers) and, for every tap, loads 3 vectors at `p + off[k]` and
//! broadcasts 8 weights, read straight from the `[og, k]` weight rows (no
//! packing pass: a 512-channel 3×3 layer's 9 MB of weights would cost as
//! much to pack as to use once). This skips im2col's write and re-read of
//! `C·kh·kw` times the image (7 MB per 64-channel 56×56 image for 3×3)
//! that made the GEMM path memory-bound.
//!
//! Stride `s` becomes stride 1 by splitting the padded image into its `s²`
//! phases (`phase (a, b)[i, j] = xpad[s·i + a, s·j + b]`): tap
//! `kh·dh = s·qh + a` of output row `oh` reads row `oh + qh` of phase `a`,
//! so each tap is again one offset. The caller lays out the buffer
//! (`conv_direct` in ferrotorch-core), may stack several small images in
//! it (image `i` starting at position `i·hq·wq`), and lets rows share their
//! zero padding; this module only needs the offsets and the numbering of
//! outputs, `p = (img·hq + oh)·wq + ow`, valid for `oh < ho`, `ow < wo`.

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

/// What happens to each output value `v` of channel `c` as it is stored:
/// `v·scale[c] + shift[c]`, plus the value at the same place of `residual`,
/// then `max(v, 0)` with NaN kept (`relu`): an eval-mode batch norm, a
/// residual connection and a ReLU folded into the convolution's store.
#[derive(Clone, Copy)]
pub struct Epilogue<'a> {
    /// Per output channel of this group.
    pub scale: &'a [f32],
    pub shift: &'a [f32],
    /// Laid out like the output, from the same base address.
    pub residual: Option<*const f32>,
    pub relu: bool,
}

/// A stack of images (one group) prepared by the caller, and where its
/// outputs go (Note [Direct convolution]).
pub struct Images<'a> {
    /// The input buffer the offsets index.
    pub x: &'a [f32],
    /// `off[k]` for every tap, in the weights' `(ci, kh, kw)` order.
    pub offsets: &'a [usize],
    /// This group's weights, `[og, offsets.len()]` row-major.
    pub weights: &'a [f32],
    /// Output channels.
    pub og: usize,
    /// Images in the stack.
    pub imgs: usize,
    /// Buffer rows per image and row width (positions numbered in them).
    pub hq: usize,
    pub wq: usize,
    /// Output rows and columns.
    pub ho: usize,
    pub wo: usize,
    /// Output elements from one image to the next.
    pub out_image: usize,
    /// Tiles computed for every channel block before moving on: as many as
    /// keep the input they read in the core's L2 while the weights cycle.
    pub tile_group: usize,
    /// Applied to every output as it is stored (instead of a bias).
    pub epilogue: Option<Epilogue<'a>>,
}

impl Images<'_> {
    /// Tiles of `NR` positions covering the stack.
    pub fn tiles(&self) -> usize {
        (self.imgs * self.hq * self.wq).div_ceil(NR)
    }

    /// Channel blocks of `MR` output channels.
    pub fn blocks(&self) -> usize {
        self.og.div_ceil(MR)
    }

    /// Buffer elements the tiles read: every tile's `NR` positions past
    /// the largest offset.
    pub fn needed_len(&self) -> usize {
        self.tiles() * NR + self.offsets.iter().copied().max().unwrap_or(0)
    }

    /// Compute tiles `tiles` of channel blocks `blocks` into `out` (`[og,
    /// ho, wo]` per image, images `out_image` apart), starting every output
    /// channel from `bias` (zeros when `None`).
    ///
    /// # Safety
    /// `out` must be valid for writes of every output of these channels of
    /// every image, and no other thread may write these tiles of these
    /// channels; an epilogue's `residual` must be valid for reads at the
    /// same places.
    pub unsafe fn run(
        &self,
        tiles: std::ops::Range<usize>,
        blocks: std::ops::Range<usize>,
        bias: Option<&[f32]>,
        out: *mut f32,
    ) {
        assert!(available(), "direct convolution needs AVX-512F");
        let k = self.offsets.len();
        assert!(self.needed_len() <= self.x.len());
        assert!(self.weights.len() >= self.og * k && self.og > 0);
        assert!(blocks.end <= self.blocks() && tiles.end <= self.tiles());
        assert!(self.wo <= self.wq && self.ho <= self.hq);
        #[cfg(target_arch = "x86_64")]
        for group in tiles.clone().step_by(self.tile_group.max(1)) {
            let group = group..(group + self.tile_group.max(1)).min(tiles.end);
            for b in blocks.clone() {
                let rows = MR.min(self.og - b * MR);
                let mut init = [0.0f32; MR];
                if let Some(bv) = bias {
                    init[..rows].copy_from_slice(&bv[b * MR..][..rows]);
                }
                // Rows past `og` repeat the last one (their results are dropped).
                let w: [*const f32; MR] = std::array::from_fn(|r| {
                    // SAFETY: row `min(b·MR + r, og - 1)` is inside `weights`.
                    unsafe { self.weights.as_ptr().add((b * MR + r).min(self.og - 1) * k) }
                });
                for t in group.clone() {
                    let p0 = t * NR;
                    let mut acc = [0.0f32; MR * NR];
                    // SAFETY: the assertions above keep every load in `x`
                    // and in the weight rows.
                    unsafe {
                        avx512::tile(self.x.as_ptr().add(p0), self.offsets, &w, &init, &mut acc)
                    };
                    // SAFETY: per the contract on `out`.
                    unsafe { self.store(p0, b * MR, rows, &acc, out) };
                }
            }
        }
    }

    /// Write the valid positions of a tile (`acc`: `[MR][NR]`) for output
    /// channels `c0..c0+rows`.
    unsafe fn store(&self, p0: usize, c0: usize, rows: usize, acc: &[f32], out: *mut f32) {
        let plane = self.ho * self.wo;
        let per_image = self.hq * self.wq;
        let end_all = (p0 + NR).min(self.imgs * per_image);
        let mut p = p0;
        while p < end_all {
            let (img, q) = (p / per_image, p % per_image);
            let (oh, ow) = (q / self.wq, q % self.wq);
            if oh >= self.ho {
                p = (img + 1) * per_image;
                continue;
            }
            if ow >= self.wo {
                p += self.wq - ow;
                continue;
            }
            let end = end_all.min(p + self.wo - ow);
            let dst = img * self.out_image + oh * self.wo + ow;
            for r in 0..rows {
                let src = &acc[r * NR + (p - p0)..r * NR + (end - p0)];
                let at = dst + (c0 + r) * plane;
                // SAFETY: (img, c0 + r, oh, ow..ow + len) is inside `out`
                // (and `residual`, per the contract of `run`).
                unsafe {
                    match &self.epilogue {
                        None => std::ptr::copy_nonoverlapping(src.as_ptr(), out.add(at), src.len()),
                        Some(e) => e.apply(c0 + r, src, at, out),
                    }
                };
            }
            p = end;
        }
    }
}

impl Epilogue<'_> {
    /// Store `src` (channel `c`) at `out + at` through the epilogue
    /// (vectorised for AVX-512, which `Images::run` has checked).
    #[cfg_attr(target_arch = "x86_64", target_feature(enable = "avx512f"))]
    unsafe fn apply(&self, c: usize, src: &[f32], at: usize, out: *mut f32) {
        let (a, b) = (self.scale[c], self.shift[c]);
        // SAFETY: per the contract of `Images::run`.
        let dst = unsafe { std::slice::from_raw_parts_mut(out.add(at), src.len()) };
        let res = self
            .residual
            .map(|r| unsafe { std::slice::from_raw_parts(r.add(at), src.len()) });
        let relu = |v: f32| {
            if v.is_nan() || v > 0.0 {
                v
            } else {
                0.0
            }
        };
        match (res, self.relu) {
            (None, false) => dst.iter_mut().zip(src).for_each(|(d, &v)| *d = v * a + b),
            (None, true) => dst
                .iter_mut()
                .zip(src)
                .for_each(|(d, &v)| *d = relu(v * a + b)),
            (Some(res), relu_on) => {
                for ((d, &v), &q) in dst.iter_mut().zip(src).zip(res) {
                    let y = v * a + b + q;
                    *d = if relu_on { relu(y) } else { y };
                }
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::{MR, NR};
    use std::arch::x86_64::*;

    /// `acc[r][j] = init[r] + Σ_k w[r][k] · x[off[k] + j]` for one tile.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn tile(
        x: *const f32,
        offsets: &[usize],
        w: &[*const f32; MR],
        init: &[f32; MR],
        acc_out: &mut [f32; MR * NR],
    ) {
        let mut acc = [[_mm512_setzero_ps(); 3]; MR];
        for (a, &v) in acc.iter_mut().zip(init) {
            *a = [_mm512_set1_ps(v); 3];
        }
        for (kk, &off) in offsets.iter().enumerate() {
            // SAFETY: the caller keeps `x + off .. + NR` and `w[r] + kk`
            // in bounds.
            unsafe {
                let src = x.add(off);
                let b0 = _mm512_loadu_ps(src);
                let b1 = _mm512_loadu_ps(src.add(16));
                let b2 = _mm512_loadu_ps(src.add(32));
                for (a, wr) in acc.iter_mut().zip(w) {
                    let wv = _mm512_set1_ps(*wr.add(kk));
                    a[0] = _mm512_fmadd_ps(wv, b0, a[0]);
                    a[1] = _mm512_fmadd_ps(wv, b1, a[1]);
                    a[2] = _mm512_fmadd_ps(wv, b2, a[2]);
                }
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

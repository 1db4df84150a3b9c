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
//! `mr × nr` block of outputs (8 channels × 48 positions in 24 AVX-512
//! registers, or 6 × 16 in 12 AVX2 registers: [`shape`]) and, for every
//! tap, loads the `nr` inputs at `p + off[k]` (3 or 2 vectors) and
//! broadcasts `mr` weights, read straight from the `[og, k]` weight rows (no
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

/// The tile a kernel computes: `mr` output channels × `nr` positions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Output channels per tile.
    pub mr: usize,
    /// Output positions per tile.
    pub nr: usize,
}

/// AVX-512: 8 channels × 48 positions, 24 of the 32 zmm registers.
const AVX512: Shape = Shape { mr: 8, nr: 48 };
/// AVX2: 6 channels × 16 positions, 12 of the 16 ymm registers; three
/// more hold the tap's two input vectors and the broadcast weight (AVX2
/// has no FMA with a broadcast memory operand). A 4 × 24 tile needs all
/// 16 and LLVM then spills an accumulator, which costs half the speed.
const AVX2: Shape = Shape { mr: 6, nr: 16 };

/// # Note [Tap chunks]
/// On AVX2 the taps are taken in chunks of `AVX2_TAP_CHUNK`: every tile of
/// a group accumulates the first chunk (its partial sums kept in a
/// per-group buffer), then the next. One chunk's input rows and weights
/// (about 12 KiB for 3×3 taps) stay in a 32 KiB L1 from one tile to the
/// next, where all of a 64-channel layer's (38 KiB) would not: 8-9 %
/// faster on Zen 3 (64- and 128-channel 3×3 layers). On AVX-512 the tiles
/// are three times larger and chunking measured slower there, so it takes
/// all taps at once.
const AVX2_TAP_CHUNK: usize = 192;

/// The tile shape of this CPU's direct kernel, or `None` where there is
/// none (no AVX2 with FMA).
pub fn shape() -> Option<Shape> {
    #[cfg(target_arch = "x86_64")]
    {
        use crate::cpu::{level, Level};
        match level() {
            Level::Avx512 => Some(AVX512),
            Level::Avx2 => Some(AVX2),
            Level::Baseline => None,
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None
    }
}

/// Whether this CPU runs the direct kernel (AVX2 with FMA, or AVX-512F).
pub fn available() -> bool {
    shape().is_some()
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
    /// The tile shape (this CPU's; `Images` are only built where
    /// [`available`]).
    fn shape(&self) -> Shape {
        shape().unwrap_or(AVX2)
    }

    /// Tiles of `nr` positions covering the stack.
    pub fn tiles(&self) -> usize {
        (self.imgs * self.hq * self.wq).div_ceil(self.shape().nr)
    }

    /// Channel blocks of `mr` output channels.
    pub fn blocks(&self) -> usize {
        self.og.div_ceil(self.shape().mr)
    }

    /// Buffer elements the tiles read: every tile's `nr` positions past
    /// the largest offset.
    pub fn needed_len(&self) -> usize {
        self.tiles() * self.shape().nr + self.offsets.iter().copied().max().unwrap_or(0)
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
        let sh = shape().expect("direct convolution needs AVX2 with FMA");
        let k = self.offsets.len();
        assert!(self.needed_len() <= self.x.len());
        assert!(self.weights.len() >= self.og * k && self.og > 0);
        assert!(blocks.end <= self.blocks() && tiles.end <= self.tiles());
        assert!(self.wo <= self.wq && self.ho <= self.hq);
        // Taps per pass over a group's tiles (Note [Tap chunks]).
        let kc = if sh == AVX512 { k } else { AVX2_TAP_CHUNK }.max(1);
        let mut accs = Vec::new();
        #[cfg(target_arch = "x86_64")]
        for group in tiles.clone().step_by(self.tile_group.max(1)) {
            let group = group..(group + self.tile_group.max(1)).min(tiles.end);
            for b in blocks.clone() {
                let c0 = b * sh.mr;
                let rows = sh.mr.min(self.og - c0);
                let mut init = [0.0f32; 8];
                if let Some(bv) = bias {
                    init[..rows].copy_from_slice(&bv[c0..][..rows]);
                }
                // Rows past `og` repeat the last one (their results are dropped).
                let w: [*const f32; 8] = std::array::from_fn(|r| {
                    // SAFETY: row `min(c0 + r, og - 1)` is inside `weights`.
                    unsafe { self.weights.as_ptr().add((c0 + r).min(self.og - 1) * k) }
                });
                // Partial sums of every tile of the group when the taps
                // come in several chunks, else of one tile at a time.
                let tile = sh.mr * sh.nr;
                let slots = if kc >= k { 1 } else { group.len() };
                accs.resize(slots * tile, 0.0);
                let x = self.x.as_ptr();
                for k0 in (0..k).step_by(kc) {
                    let k1 = (k0 + kc).min(k);
                    let offs = &self.offsets[k0..k1];
                    // SAFETY: `k0 < k`: inside every weight row.
                    let wk: [*const f32; 8] = std::array::from_fn(|r| unsafe { w[r].add(k0) });
                    for (i, t) in group.clone().enumerate() {
                        let p0 = t * sh.nr;
                        let acc = &mut accs[(i % slots) * tile..][..tile];
                        // SAFETY: the assertions above keep every load in
                        // `x` and in the weight rows; `shape` chose the
                        // kernel this CPU runs.
                        unsafe {
                            if sh == AVX512 {
                                avx512::tile(x.add(p0), offs, &wk, &init, k0 > 0, acc, sh.nr)
                            } else {
                                let w6 = [wk[0], wk[1], wk[2], wk[3], wk[4], wk[5]];
                                let i6 = [init[0], init[1], init[2], init[3], init[4], init[5]];
                                avx2::tile(x.add(p0), offs, &w6, &i6, k0 > 0, acc, sh.nr)
                            }
                        };
                        if k1 == k {
                            // SAFETY: per the contract on `out`.
                            unsafe { self.store(sh, p0, c0, rows, acc, out) };
                        }
                    }
                }
            }
        }
    }

    /// Write the valid positions of a tile (`acc`: `[mr][nr]`) for output
    /// channels `c0..c0+rows`. Compiled for AVX2, which every CPU with a
    /// direct kernel has, with the epilogue inlined: a tile's rows are
    /// short (16 or 48 values), too short for a dispatched call per row.
    #[cfg_attr(target_arch = "x86_64", target_feature(enable = "avx2,fma"))]
    unsafe fn store(
        &self,
        sh: Shape,
        p0: usize,
        c0: usize,
        rows: usize,
        acc: &[f32],
        out: *mut f32,
    ) {
        let nr = sh.nr;
        let plane = self.ho * self.wo;
        let per_image = self.hq * self.wq;
        let end_all = (p0 + nr).min(self.imgs * per_image);
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
                let src = &acc[r * nr + (p - p0)..r * nr + (end - p0)];
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
    /// Store `src` (channel `c`) at `out + at` through the epilogue.
    #[inline(always)]
    unsafe fn apply(&self, c: usize, src: &[f32], at: usize, out: *mut f32) {
        // SAFETY: per the contract of `Images::run`.
        let dst = unsafe { std::slice::from_raw_parts_mut(out.add(at), src.len()) };
        let res = self
            .residual
            .map(|r| unsafe { std::slice::from_raw_parts(r.add(at), src.len()) });
        epilogue(self.scale[c], self.shift[c], src, res, self.relu, dst)
    }
}

/// `dst = src·a + b (+ res)`, then ReLU with NaN kept when `relu`: the
/// fused epilogue, also for convolutions computed by other means.
#[inline(always)]
pub fn epilogue(a: f32, b: f32, src: &[f32], res: Option<&[f32]>, relu: bool, dst: &mut [f32]) {
    let relu_f = |v: f32| {
        if v.is_nan() || v > 0.0 {
            v
        } else {
            0.0
        }
    };
    match (res, relu) {
        (None, false) => dst.iter_mut().zip(src).for_each(|(d, &v)| *d = v * a + b),
        (None, true) => dst
            .iter_mut()
            .zip(src)
            .for_each(|(d, &v)| *d = relu_f(v * a + b)),
        (Some(res), relu_on) => {
            for ((d, &v), &q) in dst.iter_mut().zip(src).zip(res) {
                let y = v * a + b + q;
                *d = if relu_on { relu_f(y) } else { y };
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
pub(crate) mod avx512 {
    use std::arch::x86_64::*;

    const MR: usize = super::AVX512.mr;
    const NR: usize = super::AVX512.nr;

    /// `acc[r][j] = init[r] + Σ_k w[r][k] · x[off[k] + j]` for one tile,
    /// row `r` of `acc_out` starting at `r·ld` (`ld >= NR`).
    #[target_feature(enable = "avx512f")]
    pub(crate) unsafe fn tile(
        x: *const f32,
        offsets: &[usize],
        w: &[*const f32; MR],
        init: &[f32; MR],
        load: bool,
        acc_out: &mut [f32],
        ld: usize,
    ) {
        assert!(ld >= NR);
        let acc_out = &mut acc_out[..(MR - 1) * ld + NR];
        let mut acc = [[_mm512_setzero_ps(); 3]; MR];
        for (r, (a, &v)) in acc.iter_mut().zip(init).enumerate() {
            *a = if load {
                // SAFETY: row `r` of `acc_out` holds NR = 48 values.
                unsafe {
                    std::array::from_fn(|j| _mm512_loadu_ps(acc_out.as_ptr().add(r * ld + 16 * j)))
                }
            } else {
                [_mm512_set1_ps(v); 3]
            };
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
        for (r, a) in acc.iter().enumerate() {
            let row = &mut acc_out[r * ld..][..NR];
            for (dst, v) in row.chunks_exact_mut(16).zip(a) {
                // SAFETY: each chunk holds 16 elements.
                unsafe { _mm512_storeu_ps(dst.as_mut_ptr(), *v) };
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
pub(crate) mod avx2 {
    use std::arch::x86_64::*;

    const MR: usize = super::AVX2.mr;
    const NR: usize = super::AVX2.nr;

    /// `acc[r][j] = init[r] + Σ_k w[r][k] · x[off[k] + j]` for one tile,
    /// row `r` of `acc_out` starting at `r·ld` (`ld >= NR`).
    #[target_feature(enable = "avx2,fma")]
    pub(crate) unsafe fn tile(
        x: *const f32,
        offsets: &[usize],
        w: &[*const f32; MR],
        init: &[f32; MR],
        load: bool,
        acc_out: &mut [f32],
        ld: usize,
    ) {
        assert!(ld >= NR);
        let acc_out = &mut acc_out[..(MR - 1) * ld + NR];
        // Twelve named accumulators: an array of them makes LLVM rotate
        // registers through moves and spill.
        let i: [[__m256; 2]; MR] = std::array::from_fn(|r| {
            if load {
                // SAFETY: row `r` of `acc_out` holds NR = 16 values.
                unsafe {
                    std::array::from_fn(|j| _mm256_loadu_ps(acc_out.as_ptr().add(r * ld + 8 * j)))
                }
            } else {
                [_mm256_set1_ps(init[r]); 2]
            }
        });
        let ([mut a00, mut a01], [mut a10, mut a11]) = (i[0], i[1]);
        let ([mut a20, mut a21], [mut a30, mut a31]) = (i[2], i[3]);
        let ([mut a40, mut a41], [mut a50, mut a51]) = (i[4], i[5]);
        let [w0, w1, w2, w3, w4, w5] = *w;
        // One tap: two input vectors times six broadcast weights.
        macro_rules! tap {
            ($kk:expr, $off:expr) => {{
                let (kk, src) = ($kk, x.add($off));
                let b0 = _mm256_loadu_ps(src);
                let b1 = _mm256_loadu_ps(src.add(8));
                let v = _mm256_broadcast_ss(&*w0.add(kk));
                a00 = _mm256_fmadd_ps(v, b0, a00);
                a01 = _mm256_fmadd_ps(v, b1, a01);
                let v = _mm256_broadcast_ss(&*w1.add(kk));
                a10 = _mm256_fmadd_ps(v, b0, a10);
                a11 = _mm256_fmadd_ps(v, b1, a11);
                let v = _mm256_broadcast_ss(&*w2.add(kk));
                a20 = _mm256_fmadd_ps(v, b0, a20);
                a21 = _mm256_fmadd_ps(v, b1, a21);
                let v = _mm256_broadcast_ss(&*w3.add(kk));
                a30 = _mm256_fmadd_ps(v, b0, a30);
                a31 = _mm256_fmadd_ps(v, b1, a31);
                let v = _mm256_broadcast_ss(&*w4.add(kk));
                a40 = _mm256_fmadd_ps(v, b0, a40);
                a41 = _mm256_fmadd_ps(v, b1, a41);
                let v = _mm256_broadcast_ss(&*w5.add(kk));
                a50 = _mm256_fmadd_ps(v, b0, a50);
                a51 = _mm256_fmadd_ps(v, b1, a51);
            }};
        }
        // Two taps per iteration: fewer loop instructions per FMA.
        let pairs = offsets.chunks_exact(2);
        let rest = pairs.remainder();
        for (j, o) in pairs.enumerate() {
            // SAFETY: the caller keeps `x + off .. + NR` and `w[r] + kk`
            // in bounds.
            unsafe {
                tap!(2 * j, o[0]);
                tap!(2 * j + 1, o[1]);
            }
        }
        if let [off] = rest {
            // SAFETY: as above.
            unsafe { tap!(offsets.len() - 1, *off) };
        }
        let acc = [
            [a00, a01],
            [a10, a11],
            [a20, a21],
            [a30, a31],
            [a40, a41],
            [a50, a51],
        ];
        for (r, a) in acc.iter().enumerate() {
            let row = &mut acc_out[r * ld..][..NR];
            for (dst, v) in row.chunks_exact_mut(8).zip(a) {
                // SAFETY: each chunk holds 8 elements.
                unsafe { _mm256_storeu_ps(dst.as_mut_ptr(), *v) };
            }
        }
    }
}

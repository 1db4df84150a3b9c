//! Winograd F(2×2, 3×3) convolution: 3×3 filters, stride 1, f32.
//!
//! # Note [Winograd convolution]
//! Each 2×2 block of outputs ("tile") of one channel needs a 4×4 patch of
//! every input channel. With `V = Bᵀ·d·B` (the patch transformed, sums and
//! differences only), `U = G·g·Gᵀ` (the 3×3 filter transformed to 4×4,
//! halves and sums) and `Y = Aᵀ·M·A` (sums and differences of `M`), the
//! 2×2 outputs are `Y` with `M = U ⊙ V` summed over input channels. That
//! sum is, for each of the 16 positions of the 4×4 transform, a GEMM
//! `M[pos] = U[pos]·V[pos]` over `[O, C] × [C, tiles]`: 16 multiplies per
//! tile per channel pair instead of the direct convolution's 36, 2.25×
//! fewer FMAs. The transforms cost a few adds per value, the transformed
//! input and product are four times the image, so the tiles go in blocks
//! whose `V` and `M` stay in the core's L2 between the three steps.
//!
//! The GEMMs run on the direct convolution's tile kernel
//! (Note [Direct convolution]) as a 1×1 convolution: `V[pos]` is `[C,
//! block]` row-major, so tap `ci` is offset `ci·block`, and the kernel
//! stores its `mr × nr` accumulators straight into `M[pos]` (`[O', block]`,
//! `O'` rounded up to `mr`). Transforms vectorise across 8 neighbouring
//! tiles of one tile row: even and odd input columns are split with two
//! shuffles, and the two output columns interleaved back.
//!
//! The values differ from a direct convolution's by rounding only: the
//! transform matrices hold 0, ±1 and ±½, all exact in binary.

use crate::conv::{Epilogue, Shape};
use std::ops::Range;

/// Positions of a transformed 4×4 tile.
pub(crate) const POS: usize = 16;
/// Values of padding between a block's transform positions (a cache line:
/// Note [Winograd position strides]).
const POS_PAD: usize = 16;
/// Tiles a transform handles at once (one AVX2 vector).
pub(crate) const LANES: usize = 8;

/// Transform the 3×3 filters of output channels `ocs` (`w`: `[oc, c, 3,
/// 3]` contiguous) into `u` (`[16, oc, c]`): `U = G·g·Gᵀ` with `G = [[1,
/// 0, 0], [½, ½, ½], [½, -½, ½], [0, 0, 1]]`.
///
/// Filters go 16 input channels at a time (one vector per transform
/// value), and each of the 16 results is stored as 16 neighbouring values:
/// one filter at a time, its 16 values went to 16 places `oc·c` apart, the
/// same cache sets for every power-of-two layer, and the transform of a
/// 512×512 layer took 12 ms, as long as the Winograd GEMMs themselves
/// (now 2.8 ms, memory-bound).
///
/// # Safety
/// `u` must be valid for writes of `16·oc·c` values; no other thread may
/// write the rows of channels `ocs` meanwhile.
pub unsafe fn transform_weights(w: &[f32], oc: usize, c: usize, ocs: Range<usize>, u: *mut f32) {
    // SAFETY: forwarded from the caller.
    unsafe { transform_tile_weights(w, oc, c, ocs, u, Tile::F2) }
}

/// [`transform_weights`] for either tile: `u` is `[tile.positions(), oc,
/// c]`.
///
/// # Safety
/// `u` must be valid for writes of `tile.positions()·oc·c` values; no
/// other thread may write the rows of channels `ocs` meanwhile.
pub(crate) unsafe fn transform_tile_weights(
    w: &[f32],
    oc: usize,
    c: usize,
    ocs: Range<usize>,
    u: *mut f32,
    tile: Tile,
) {
    assert!(w.len() >= oc * c * 9 && ocs.end <= oc);
    // SAFETY: forwarded from the caller.
    unsafe { transform_weights_blocked(w, oc, c, ocs.start, ocs.end, u, tile == Tile::F4) }
}

crate::multiversion! {
    /// [`transform_tile_weights`]'s loop, compiled for each CPU level.
    ///
    /// # Safety
    /// As [`transform_tile_weights`], with `ocs = o0..o1`, 4×4 tiles if `f4`.
    unsafe fn transform_weights_blocked[](w: &[f32], oc: usize, c: usize, o0: usize, o1: usize, u: *mut f32, f4: bool) {
        let mut out = [[0.0f32; 16]; crate::winograd4::POS];
        let npos = if f4 { crate::winograd4::POS } else { POS };
        for o in o0..o1 {
            for cb in (0..c).step_by(16) {
                let len = 16.min(c - cb);
                let g = &w[(o * c + cb) * 9..][..len * 9];
                if f4 {
                    crate::winograd4::filters16(g, &mut out);
                } else {
                    let out2: &mut [[f32; 16]; POS] = (&mut out[..POS]).try_into().expect("16 positions");
                    filters16(g, out2);
                }
                for (pos, vals) in out[..npos].iter().enumerate() {
                    // SAFETY: (pos, o, cb..cb + len) is inside `[npos, oc, c]`.
                    unsafe {
                        std::ptr::copy_nonoverlapping(vals.as_ptr(), u.add((pos * oc + o) * c + cb), len)
                    };
                }
            }
        }
    }
}

/// Up to 16 consecutive 3×3 filters (`g`: their 9 values each, one after
/// the other) as 9 vectors: lane `l` of `v[k]` is value `k` of filter `l`
/// (zero past the last filter).
#[inline(always)]
pub(crate) fn filter_lanes(g: &[f32]) -> [[f32; 16]; 9] {
    let mut v = [[0.0f32; 16]; 9];
    for (l, f) in g.chunks_exact(9).enumerate() {
        for (k, &x) in f.iter().enumerate() {
            v[k][l] = x;
        }
    }
    v
}

/// `U = G·g·Gᵀ` of up to 16 consecutive 3×3 filters (`g`: their 9 values
/// each, one after the other), lane `l` of `out[pos]` for filter `l`.
#[inline(always)]
pub(crate) fn filters16(g: &[f32], out: &mut [[f32; 16]; POS]) {
    let v = filter_lanes(g);
    // t = G·g: 4 rows of 3, then each row times Gᵀ
    let mut t = [[[0.0f32; 16]; 3]; 4];
    for j in 0..3 {
        for l in 0..16 {
            let (a, b, d) = (v[j][l], v[3 + j][l], v[6 + j][l]);
            t[0][j][l] = a;
            t[1][j][l] = 0.5 * (a + b + d);
            t[2][j][l] = 0.5 * (a - b + d);
            t[3][j][l] = d;
        }
    }
    for (i, r) in t.iter().enumerate() {
        for l in 0..16 {
            out[i * 4][l] = r[0][l];
            out[i * 4 + 1][l] = 0.5 * (r[0][l] + r[1][l] + r[2][l]);
            out[i * 4 + 2][l] = 0.5 * (r[0][l] - r[1][l] + r[2][l]);
            out[i * 4 + 3][l] = r[2][l];
        }
    }
}

/// Up to `LANES` neighbouring tiles `(img, ti, tj..tj + len)` of one tile
/// row, at `tt..tt + len` of their block.
pub(crate) struct Run {
    pub(crate) img: usize,
    pub(crate) ti: usize,
    pub(crate) tj: usize,
    pub(crate) len: usize,
    pub(crate) tt: usize,
}

/// The output tile of a Winograd convolution: F(2×2, 3×3) (this file) or
/// F(4×4, 3×3) (Note [Winograd F(4×4, 3×3)]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tile {
    /// 2×2 outputs from 4×4 patches: 16 transform positions.
    F2,
    /// 4×4 outputs from 6×6 patches: 36 transform positions.
    F4,
}

impl Tile {
    /// Outputs along each side of a tile.
    pub fn side(self) -> usize {
        match self {
            Tile::F2 => 2,
            Tile::F4 => 4,
        }
    }

    /// Positions of a transformed patch (the GEMMs per block).
    pub fn positions(self) -> usize {
        match self {
            Tile::F2 => POS,
            Tile::F4 => crate::winograd4::POS,
        }
    }
}

/// A 3×3, stride-1, one-group convolution of a contiguous NCHW batch,
/// with its filters already transformed ([`transform_weights`]).
pub struct Winograd<'a> {
    /// The input, `[n, c, h, w]`.
    pub x: &'a [f32],
    pub n: usize,
    pub c: usize,
    pub h: usize,
    pub w: usize,
    /// Zero padding on the top/bottom and left/right.
    pub pad: (usize, usize),
    /// Output rows and columns (`h + 2·pad.0 - 2`, `w + 2·pad.1 - 2`).
    pub ho: usize,
    pub wo: usize,
    /// Transformed filters, `[positions, oc, c]`
    /// ([`transform_weights`] or [`crate::winograd4::transform_weights`]).
    pub u: &'a [f32],
    pub oc: usize,
    /// Added to every output of a channel (ignored with an epilogue).
    pub bias: Option<&'a [f32]>,
    /// Applied to every output as it is stored.
    pub epilogue: Option<Epilogue<'a>>,
    /// Tiles per block, a multiple of the kernel's `nr`.
    pub block: usize,
    /// The tile size, which `u` was transformed for.
    pub tile: Tile,
}

impl Winograd<'_> {
    /// The direct kernel's tile (`Winograd` is only built where it
    /// exists, see [`crate::conv::available`]).
    fn shape(&self) -> Shape {
        crate::conv::shape().expect("Winograd convolution needs AVX2 with FMA")
    }

    /// Tile rows and columns per image.
    fn grid(&self) -> (usize, usize) {
        let m = self.tile.side();
        (self.ho.div_ceil(m), self.wo.div_ceil(m))
    }

    /// Tiles over the batch.
    pub fn tiles(&self) -> usize {
        let (th, tw) = self.grid();
        self.n * th * tw
    }

    /// Blocks of `block` tiles.
    pub fn blocks(&self) -> usize {
        self.tiles().div_ceil(self.block.max(1))
    }

    /// Output channels rounded up to the kernel's `mr`.
    pub(crate) fn oc_rows(&self) -> usize {
        self.oc.div_ceil(self.shape().mr) * self.shape().mr
    }

    /// Values from one position of a block's `V` to the next: `c` rows of
    /// `block` tiles and a cache line more (Note [Winograd position
    /// strides]).
    pub(crate) fn v_step(&self) -> usize {
        self.c * self.block + POS_PAD
    }

    /// The same for `M`, whose rows are the output channels.
    pub(crate) fn m_step(&self) -> usize {
        self.oc_rows() * self.block + POS_PAD
    }

    /// Scratch values one thread needs for [`Winograd::run`]: `V` and `M`
    /// of one block, and a vector of slack past `M`.
    pub fn scratch_len(&self) -> usize {
        self.tile.positions() * (self.v_step() + self.m_step()) + LANES
    }

    /// Compute the outputs of blocks `blocks` into `out` (`[n, oc, ho,
    /// wo]`).
    ///
    /// # Safety
    /// `out` must be valid for writes of the whole output, and no other
    /// thread may write these blocks' tiles meanwhile; an epilogue's
    /// `residual` must be valid for reads at the same places.
    pub unsafe fn run(&self, blocks: Range<usize>, scratch: &mut [f32], out: *mut f32) {
        let sh = self.shape();
        let (c, oc, bl, npos) = (self.c, self.oc, self.block, self.tile.positions());
        assert!(bl > 0 && bl % sh.nr == 0 && oc > 0 && c > 0);
        assert!(self.x.len() >= self.n * c * self.h * self.w);
        assert!(self.u.len() >= npos * oc * c);
        assert!(self.ho + 2 == self.h + 2 * self.pad.0 && self.wo + 2 == self.w + 2 * self.pad.1);
        assert!(scratch.len() >= self.scratch_len() && blocks.end <= self.blocks());
        let ocr = self.oc_rows();
        let (vs, ms) = (self.v_step(), self.m_step());
        let (v, m) = scratch.split_at_mut(npos * vs);
        // The scratch may come uninitialised: everything read from it is
        // written first, but for M's slack and, in a last block of fewer
        // tiles, V's columns past them (the GEMM reads whole tiles of
        // columns; what it computes there is dropped).
        m[npos * ms..].fill(0.0);
        let offsets: Vec<usize> = (0..c).map(|ci| ci * bl).collect();
        let total = self.tiles();
        let mut runs = Vec::with_capacity(bl);
        for b in blocks {
            let (t0, t1) = (b * bl, ((b + 1) * bl).min(total));
            if t1 - t0 < bl {
                for row in v.chunks_exact_mut(bl) {
                    row[t1 - t0..].fill(0.0);
                }
            }
            self.runs(t0, t1, &mut runs);
            // One channel at a time, so that the 16 rows of `V` it writes
            // fill in order (the other way round every store lands on a
            // line evicted since the last).
            for ci in 0..c {
                for r in &runs {
                    // SAFETY: `V` holds npos positions `vs` apart, each of
                    // c·bl values (the scratch's length is asserted above).
                    unsafe {
                        match self.tile {
                            Tile::F2 => self.input(ci, r, v.as_mut_ptr()),
                            Tile::F4 => crate::winograd4::input(self, ci, r, v.as_mut_ptr()),
                        }
                    }
                }
            }
            for pos in 0..npos {
                let vp = &v[pos * vs..][..c * bl];
                let up = &self.u[pos * oc * c..][..oc * c];
                let mp = &mut m[pos * ms..][..ocr * bl];
                for tb in 0..bl / sh.nr {
                    for ob in 0..ocr / sh.mr {
                        // Rows past `oc` repeat the last filter (dropped).
                        let w: [*const f32; 8] = std::array::from_fn(|r| {
                            up[(ob * sh.mr + r).min(oc - 1) * c..].as_ptr()
                        });
                        let acc = &mut mp[ob * sh.mr * bl + tb * sh.nr..];
                        // SAFETY: tap `ci` reads V[pos][ci][tb·nr ..
                        // + nr], inside `vp`; the weight rows hold `c`
                        // values; `shape` chose the kernel this CPU runs.
                        #[cfg(target_arch = "x86_64")]
                        unsafe {
                            let x = vp.as_ptr().add(tb * sh.nr);
                            if sh.mr == 8 {
                                let zero = [0.0; 8];
                                crate::conv::avx512::tile(x, &offsets, &w, &zero, false, acc, bl)
                            } else {
                                let w6 = [w[0], w[1], w[2], w[3], w[4], w[5]];
                                let zero = [0.0; 6];
                                crate::conv::avx2::tile(x, &offsets, &w6, &zero, false, acc, bl)
                            }
                        }
                    }
                }
            }
            for o in 0..oc {
                for r in &runs {
                    // SAFETY: per the contract on `out`; `M` is followed
                    // by LANES values of slack for the vector loads of a
                    // block's last tiles.
                    unsafe {
                        match self.tile {
                            Tile::F2 => self.output(o, r, m.as_ptr(), out),
                            Tile::F4 => crate::winograd4::output(self, o, r, m.as_ptr(), out),
                        }
                    }
                }
            }
        }
    }

    /// Cut tiles `t0..t1` into runs of at most `LANES` tiles of one tile
    /// row.
    pub(crate) fn runs(&self, t0: usize, t1: usize, runs: &mut Vec<Run>) {
        runs.clear();
        let (th, tw) = self.grid();
        let mut t = t0;
        while t < t1 {
            let (img, q) = (t / (th * tw), t % (th * tw));
            let (ti, tj) = (q / tw, q % tw);
            let len = LANES.min(tw - tj).min(t1 - t);
            runs.push(Run {
                img,
                ti,
                tj,
                len,
                tt: t - t0,
            });
            t += len;
        }
    }

    /// Transform channel `ci`'s input patches of the tiles of `run` into
    /// `V[pos][ci][tt..tt + len]`.
    #[cfg_attr(target_arch = "x86_64", target_feature(enable = "avx2,fma"))]
    pub(crate) unsafe fn input(&self, ci: usize, run: &Run, v: *mut f32) {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::*;
            let &Run {
                img,
                ti,
                tj,
                len,
                tt,
            } = run;
            let (c, h, w, bl) = (self.c, self.h, self.w, self.block);
            let x0 = (2 * tj) as isize - self.pad.1 as isize;
            let y0 = (2 * ti) as isize - self.pad.0 as isize;
            // The run reads columns x0..x0 + span; those in lo..hi (of
            // that span) are inside the image, the rest are padding.
            let span = 2 * len + 2;
            let lo = (-x0).clamp(0, span as isize) as usize;
            let hi = (w as isize - x0).clamp(lo as isize, span as isize) as usize;
            // Tile order of Note [Winograd lane order].
            let full = len == LANES;
            let plane = (img * c + ci) * h * w;
            // Row r of the patches times B: columns (2j, 2j+1, 2j+2, 2j+3)
            // combined as (0-2, 1+2, 2-1, 1-3) ...
            let mut d = [[_mm256_setzero_ps(); 4]; 4];
            for (r, dr) in d.iter_mut().enumerate() {
                let y = y0 + r as isize;
                if y < 0 || y >= h as isize || lo == hi {
                    continue; // a padding row: zeros
                }
                let at = (plane + y as usize * w) as isize + x0;
                let p = self.x.as_ptr().wrapping_offset(at);
                // SAFETY: columns lo..hi of the run are inside this row of
                // `x`; the plain loads read 18 values from `at`, checked
                // to lie inside `x`.
                *dr = unsafe {
                    if lo == 0 && hi == span && at as usize + 18 <= self.x.len() {
                        avx2::row(p, 0, 18, full)
                    } else {
                        avx2::row(p, lo, hi, full)
                    }
                };
            }
            // ... then Bᵀ down the rows: (0-2, 1+2, 2-1, 1-3).
            let keep = avx2::lanes_below(len);
            let [r0, r1, r2, r3] = d;
            for k in 0..4 {
                for s in 0..4 {
                    let (d0, d1, d2, d3) = (r0[s], r1[s], r2[s], r3[s]);
                    let val = match k {
                        0 => _mm256_sub_ps(d0, d2),
                        1 => _mm256_add_ps(d1, d2),
                        2 => _mm256_sub_ps(d2, d1),
                        _ => _mm256_sub_ps(d1, d3),
                    };
                    // SAFETY: V[pos][ci][tt..tt + len] is inside the
                    // block's V; a full vector is stored only when it stays
                    // in row `ci` (later runs overwrite the rest).
                    unsafe {
                        let dst = v.add((k * 4 + s) * self.v_step() + ci * bl + tt);
                        if full || tt + LANES <= bl {
                            _mm256_storeu_ps(dst, val);
                        } else {
                            _mm256_maskstore_ps(dst, keep, val);
                        }
                    }
                }
            }
        }
    }

    /// Transform `M[pos][o][tt..tt + len]` back into channel `o`'s 2×2
    /// outputs of the tiles of `run`, through the bias or the epilogue.
    #[cfg_attr(target_arch = "x86_64", target_feature(enable = "avx2,fma"))]
    pub(crate) unsafe fn output(&self, o: usize, run: &Run, m: *const f32, out: *mut f32) {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::*;
            let &Run {
                img,
                ti,
                tj,
                len,
                tt,
            } = run;
            let (oc, bl, ms) = (self.oc, self.block, self.m_step());
            let plane = self.ho * self.wo;
            let (oy, ox) = (2 * ti, 2 * tj);
            let cols = (2 * len).min(self.wo - ox);
            let rows = 2.min(self.ho - oy);
            // Aᵀ·M: rows 0+1+2 and 1-2-3 of each column (plain loops, not
            // closures: a closure's body would not be compiled for AVX2).
            let mut t = [[_mm256_setzero_ps(); 4]; 2];
            let [top, bottom] = &mut t;
            for (b, (t0, t1)) in top.iter_mut().zip(bottom.iter_mut()).enumerate() {
                let at = |pos: usize| m.wrapping_add(pos * ms + o * bl + tt);
                // SAFETY: M[pos][o][tt..tt + 8] is inside M or its slack.
                let (m0, m1, m2, m3) = unsafe {
                    (
                        _mm256_loadu_ps(at(b)),
                        _mm256_loadu_ps(at(4 + b)),
                        _mm256_loadu_ps(at(8 + b)),
                        _mm256_loadu_ps(at(12 + b)),
                    )
                };
                *t0 = _mm256_add_ps(_mm256_add_ps(m0, m1), m2);
                *t1 = _mm256_sub_ps(_mm256_sub_ps(m1, m2), m3);
            }
            let (a, sh) = match (&self.epilogue, self.bias) {
                (Some(e), _) => (e.scale[o], e.shift[o]),
                (None, Some(b)) => (1.0, b[o]),
                (None, None) => (1.0, 0.0),
            };
            let res = self.epilogue.and_then(|e| e.residual);
            let relu = self.epilogue.is_some_and(|e| e.relu);
            for (r, t) in t.iter().enumerate().take(rows) {
                // ... then ·A: the tile's two output columns.
                let y0 = _mm256_add_ps(_mm256_add_ps(t[0], t[1]), t[2]);
                let y1 = _mm256_sub_ps(_mm256_sub_ps(t[1], t[2]), t[3]);
                // The row's 16 values in order (Note [Winograd lane order]).
                let lo = _mm256_unpacklo_ps(y0, y1);
                let hi = _mm256_unpackhi_ps(y0, y1);
                let line = if len == LANES {
                    [lo, hi]
                } else {
                    [
                        _mm256_permute2f128_ps::<0x20>(lo, hi),
                        _mm256_permute2f128_ps::<0x31>(lo, hi),
                    ]
                };
                let at = (img * oc + o) * plane + (oy + r) * self.wo + ox;
                // SAFETY: (img, o, oy + r, ox..ox + cols) is inside
                // `out` (and the residual), per the contract of `run`.
                unsafe {
                    avx2::store(line, cols, a, sh, res.map(|p| p.add(at)), relu, out.add(at))
                };
            }
        }
    }
}

/// # Note [Winograd position strides]
/// A block's `V` holds one `[c, block]` matrix per transform position,
/// and the input transform writes one vector into each of them in turn
/// (`M` the same, read by the output transform). With 64 channels and
/// blocks of 48 tiles the matrices are 12 KB apart, a multiple of 4 KB:
/// every position's vector falls in the same set of the 8-way L1, and the
/// 36 positions of a 4×4 tile (16 of a 2×2 one) evicted each other on
/// every run. Consecutive positions are a cache line further apart (16
/// values of padding), so they fall in different sets.
///
/// # Note [Winograd lane order]
/// A full run of 8 tiles keeps its tiles in the order the in-lane
/// shuffle that splits even from odd columns leaves them, `0, 1, 4, 5 | 2,
/// 3, 6, 7` (each 128-bit half holds 4 tiles): the GEMM treats the tiles
/// as independent columns, and on the way back the in-lane interleave of
/// the two output columns puts that order straight back into row order.
/// This saves a lane-crossing permute per vector in both transforms. A
/// shorter run (end of a tile row or block) is stored in tile order, since
/// only its first `len` lanes are kept.
#[cfg(target_arch = "x86_64")]
pub(crate) mod avx2 {
    use std::arch::x86_64::*;

    /// A mask of the lanes below `n`.
    #[inline(always)]
    pub(crate) fn lanes_below(n: usize) -> __m256i {
        // SAFETY: AVX2 is available wherever a Winograd layer runs.
        unsafe {
            let idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
            _mm256_cmpgt_epi32(_mm256_set1_epi32(n as i32), idx)
        }
    }

    /// The 8 values at `p + off`, those outside `lo..hi` zero and not
    /// accessed.
    ///
    /// # Safety
    /// `p + lo .. p + hi` must be valid for reads; AVX2 must be available.
    #[inline(always)]
    pub(crate) unsafe fn load(p: *const f32, off: usize, lo: usize, hi: usize) -> __m256 {
        // SAFETY: per the contract; masked-off lanes are not accessed.
        unsafe {
            if lo == 0 && hi >= off + 8 {
                return _mm256_loadu_ps(p.wrapping_add(off));
            }
            let idx = _mm256_add_epi32(
                _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                _mm256_set1_epi32(off as i32),
            );
            let ge_lo = _mm256_cmpgt_epi32(idx, _mm256_set1_epi32(lo as i32 - 1));
            let lt_hi = _mm256_cmpgt_epi32(_mm256_set1_epi32(hi as i32), idx);
            _mm256_maskload_ps(p.wrapping_add(off), _mm256_and_si256(ge_lo, lt_hi))
        }
    }

    /// The even (`odd = false`) or odd values of `a` then `b`, in order
    /// or (`shuffled`) in the order of Note [Winograd lane order].
    #[inline(always)]
    unsafe fn pick(a: __m256, b: __m256, odd: bool, shuffled: bool) -> __m256 {
        // SAFETY: AVX2 is available (the caller's contract).
        unsafe {
            let v = if odd {
                _mm256_shuffle_ps::<0b11_01_11_01>(a, b)
            } else {
                _mm256_shuffle_ps::<0b10_00_10_00>(a, b)
            };
            if shuffled {
                v
            } else {
                _mm256_castpd_ps(_mm256_permute4x64_pd::<0b11_01_10_00>(_mm256_castps_pd(v)))
            }
        }
    }

    /// One input row of 8 tiles times `B`: with `e`, `o`, `e1`, `o1`
    /// columns `2j`, `2j + 1`, `2j + 2`, `2j + 3` of the 18 values at `p`
    /// (those outside `lo..hi` zero and not accessed), `(e - e1, o + e1,
    /// e1 - o, o - o1)`, the tiles in order or (`shuffled`) in the order of
    /// Note [Winograd lane order].
    ///
    /// # Safety
    /// `p + lo .. p + hi` must be valid for reads; AVX2 must be available.
    #[inline(always)]
    pub(super) unsafe fn row(p: *const f32, lo: usize, hi: usize, shuffled: bool) -> [__m256; 4] {
        // SAFETY: per the contract.
        unsafe {
            let (a, b) = (load(p, 0, lo, hi), load(p, 8, lo, hi));
            let (c, d) = (load(p, 2, lo, hi), load(p, 10, lo, hi));
            let (e, o) = (pick(a, b, false, shuffled), pick(a, b, true, shuffled));
            let (e1, o1) = (pick(c, d, false, shuffled), pick(c, d, true, shuffled));
            [
                _mm256_sub_ps(e, e1),
                _mm256_add_ps(o, e1),
                _mm256_sub_ps(e1, o),
                _mm256_sub_ps(o, o1),
            ]
        }
    }

    /// Store the first `cols` (at most 16) of the outputs `line` at
    /// `dst` as `v·a + b`, plus the residual at `res`, then ReLU with NaN
    /// kept: `crate::conv::epilogue`, vectorised, the same operations in
    /// the same order.
    ///
    /// # Safety
    /// `dst` (and `res`) must be valid for `cols` values; AVX2 must be
    /// available.
    #[inline(always)]
    pub(crate) unsafe fn store(
        line: [__m256; 2],
        cols: usize,
        a: f32,
        b: f32,
        res: Option<*const f32>,
        relu: bool,
        dst: *mut f32,
    ) {
        // SAFETY: per the contract; masked-off lanes are not accessed.
        unsafe {
            let (av, bv) = (_mm256_set1_ps(a), _mm256_set1_ps(b));
            for (k, v) in line.into_iter().enumerate() {
                let n = cols.saturating_sub(8 * k).min(8);
                if n == 0 {
                    break;
                }
                let mask = lanes_below(n);
                let mut y = _mm256_add_ps(_mm256_mul_ps(v, av), bv);
                if let Some(r) = res {
                    let q = if n == 8 {
                        _mm256_loadu_ps(r.add(8 * k))
                    } else {
                        _mm256_maskload_ps(r.add(8 * k), mask)
                    };
                    y = _mm256_add_ps(y, q);
                }
                if relu {
                    // keeps y > 0 and NaN (unordered), else +0
                    let keep = _mm256_cmp_ps::<_CMP_NLE_UQ>(y, _mm256_setzero_ps());
                    y = _mm256_and_ps(y, keep);
                }
                if n == 8 {
                    _mm256_storeu_ps(dst.add(8 * k), y);
                } else {
                    _mm256_maskstore_ps(dst.add(8 * k), mask, y);
                }
            }
        }
    }
}

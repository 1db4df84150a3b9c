//! Winograd F(4×4, 3×3): the transforms of a [`Winograd`] layer whose
//! tile is [`Tile::F4`](crate::winograd::Tile::F4).
//!
//! # Note [Winograd F(4×4, 3×3)]
//! Each 4×4 block of outputs needs a 6×6 patch of every input channel.
//! With the interpolation points 0, ±1, ±2 (Lavin and Gray):
//!
//! ```text
//! Bᵀ = [4  0 -5  0 1 0]   G = [ 1/4     0     0]   Aᵀ = [1 1  1 1  1 0]
//!      [0 -4 -4  1 1 0]       [-1/6  -1/6  -1/6]        [0 1 -1 2 -2 0]
//!      [0  4 -4 -1 1 0]       [-1/6   1/6  -1/6]        [0 1  1 4  4 0]
//!      [0 -2 -1  2 1 0]       [1/24  1/12   1/6]        [0 1 -1 8 -8 1]
//!      [0  2 -1 -2 1 0]       [1/24 -1/12   1/6]
//!      [0  4  0 -5 0 1]       [ 0     0      1 ]
//! ```
//!
//! `V = Bᵀ·d·B`, `U = G·g·Gᵀ`, `Y = Aᵀ·(Σ_c U ⊙ V)·A`: 36 multiplies per
//! 16 outputs per channel pair, against F(2×2)'s 16 per 4 (Note [Winograd
//! convolution]): 1.78× fewer FMAs in the GEMMs, which are the same 1×1
//! convolutions on the direct kernel's tile, 36 of them per block. The
//! transforms cost more per tile (a 6×6 patch, multiplies by 2, 4, 5, 8)
//! but less per output, and a block's `V` and `M` hold four times the
//! outputs for 2.25 times the values. The price is rounding: `G` is not
//! exact in binary and `Aᵀ` scales by up to 8, so results differ from a
//! direct convolution by more than F(2×2)'s: up to about 1.2e-6 of the sum
//! of the products' magnitudes `Σ|x·w|` in the test below (a float32 sum
//! of `9·c` products is bounded by `9·c·2⁻²⁴` of it, and typically errs by
//! about `√(9·c)·2⁻²⁴`, 1e-6 at 64 channels). `FERROTORCH_CONV_WINOGRAD=2`
//! keeps 2×2 tiles everywhere.
//!
//! Transforms run across 8 neighbouring tiles of one tile row (one AVX2
//! vector): each input row of the run (34 values, zero padding included)
//! is read as four vectors and transposed in-lane into its four columns
//! modulo 4, so column `4t + j` of tile `t` is lane `t` of one vector; the
//! output interleaves the four columns of each output row back the same
//! way.

use crate::winograd::{avx2, Run, Tile, Winograd, LANES};
use std::ops::Range;

/// Positions of a transformed 6×6 tile.
pub(crate) const POS: usize = 36;

/// `G` of Note [Winograd F(4×4, 3×3)].
const G: [[f32; 3]; 6] = [
    [0.25, 0.0, 0.0],
    [-1.0 / 6.0, -1.0 / 6.0, -1.0 / 6.0],
    [-1.0 / 6.0, 1.0 / 6.0, -1.0 / 6.0],
    [1.0 / 24.0, 1.0 / 12.0, 1.0 / 6.0],
    [1.0 / 24.0, -1.0 / 12.0, 1.0 / 6.0],
    [0.0, 0.0, 1.0],
];

/// Transform the 3×3 filters of output channels `ocs` (`w`: `[oc, c, 3,
/// 3]` contiguous) into `u` (`[36, oc, c]`): `U = G·g·Gᵀ`, 16 input
/// channels at a time (as [`crate::winograd::transform_weights`]).
///
/// # Safety
/// `u` must be valid for writes of `36·oc·c` values; no other thread may
/// write the rows of channels `ocs` meanwhile.
pub unsafe fn transform_weights(w: &[f32], oc: usize, c: usize, ocs: Range<usize>, u: *mut f32) {
    // SAFETY: forwarded from the caller.
    unsafe { crate::winograd::transform_tile_weights(w, oc, c, ocs, u, Tile::F4) }
}

/// `U = G·g·Gᵀ` of up to 16 consecutive 3×3 filters (`g`: their 9 values
/// each), lane `l` of `out[pos]` for filter `l`.
#[inline(always)]
pub(crate) fn filters16(g: &[f32], out: &mut [[f32; 16]; POS]) {
    let v = crate::winograd::filter_lanes(g);
    // t = G·g (6 rows of 3), then each row times Gᵀ.
    let mut t = [[[0.0f32; 16]; 3]; 6];
    for (i, gi) in G.iter().enumerate() {
        for j in 0..3 {
            for l in 0..16 {
                t[i][j][l] = gi[0] * v[j][l] + gi[1] * v[3 + j][l] + gi[2] * v[6 + j][l];
            }
        }
    }
    for (i, r) in t.iter().enumerate() {
        for (k, gk) in G.iter().enumerate() {
            for l in 0..16 {
                out[i * 6 + k][l] = gk[0] * r[0][l] + gk[1] * r[1][l] + gk[2] * r[2][l];
            }
        }
    }
}

/// Transform channel `ci`'s 6×6 input patches of the tiles of `run` into
/// `V[pos][ci][tt..tt + len]` of layer `l` (whose tile is F4).
///
/// # Safety
/// `v` must hold the block's `36·c·block` values; AVX2 and FMA must be
/// available (they are wherever the direct kernel is).
#[cfg_attr(target_arch = "x86_64", target_feature(enable = "avx2,fma"))]
pub(crate) unsafe fn input(l: &Winograd, ci: usize, run: &Run, v: *mut f32) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        let (img, ti, tj, len, tt) = (run.img, run.ti, run.tj, run.len, run.tt);
        let (c, h, w, bl, vs) = (l.c, l.h, l.w, l.block, l.v_step());
        let x0 = (4 * tj) as isize - l.pad.1 as isize;
        let y0 = (4 * ti) as isize - l.pad.0 as isize;
        // The run reads columns x0..x0 + span; those in lo..hi (of that
        // span) are inside the image, the rest are padding.
        let span = 4 * len + 2;
        let lo = (-x0).clamp(0, span as isize) as usize;
        let hi = (w as isize - x0).clamp(lo as isize, span as isize) as usize;
        let plane = (img * c + ci) * h * w;
        // Each row times B: the 6 columns of every tile, combined (an
        // array built whole: one filled in place is zeroed by a memset).
        let at0 = (plane as isize + y0 * w as isize) + x0;
        let rows = (y0, h as isize, w, lo, hi, span);
        // SAFETY: per `patch_row`'s contract, from this run's geometry.
        let d = unsafe {
            [
                patch_row(l.x, at0, 0, rows),
                patch_row(l.x, at0, 1, rows),
                patch_row(l.x, at0, 2, rows),
                patch_row(l.x, at0, 3, rows),
                patch_row(l.x, at0, 4, rows),
                patch_row(l.x, at0, 5, rows),
            ]
        };
        // ... then Bᵀ down the rows.
        let keep = avx2::lanes_below(len);
        let full = tt + LANES <= bl;
        #[allow(clippy::needless_range_loop)] // column `s` of every row
        for s in 0..6 {
            let col = bt([d[0][s], d[1][s], d[2][s], d[3][s], d[4][s], d[5][s]]);
            for (k, val) in col.into_iter().enumerate() {
                // SAFETY: V[pos][ci][tt..tt + len] is inside the block's V;
                // a full vector is stored only when it stays in row `ci`
                // (later runs overwrite the rest).
                unsafe {
                    let dst = v.add((k * 6 + s) * vs + ci * bl + tt);
                    if full {
                        _mm256_storeu_ps(dst, val);
                    } else {
                        _mm256_maskstore_ps(dst, keep, val);
                    }
                }
            }
        }
    }
}

/// Row `r` of the run's patches times `B` (zeros for a padding row): the
/// row starts at `x[at0 + r·w]`, is image row `y0 + r` of `h`, and
/// columns `lo..hi` of its `span` lie inside the image.
///
/// # Safety
/// Columns `lo..hi` of the row must lie inside `x` when the row does;
/// AVX2 and FMA must be available.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn patch_row(
    x: &[f32],
    at0: isize,
    r: usize,
    (y0, h, w, lo, hi, span): (isize, isize, usize, usize, usize, usize),
) -> [std::arch::x86_64::__m256; 6] {
    use std::arch::x86_64::*;
    let y = y0 + r as isize;
    // SAFETY: per the contract.
    unsafe {
        if y < 0 || y >= h || lo == hi {
            return [_mm256_setzero_ps(); 6];
        }
        let at = at0 + (r * w) as isize;
        let p = x.as_ptr().wrapping_offset(at);
        // The plain loads read 36 values from `at`, checked to lie inside
        // `x` (values past the run's span feed unused lanes).
        let cols = if lo == 0 && hi == span && at as usize + 36 <= x.len() {
            columns(p, 0, 36)
        } else {
            columns(p, lo, hi)
        };
        bt(cols)
    }
}

/// Columns `4t + j` (`j` in 0..6) of the 8 tiles `t` whose patches start
/// at `p`, 4 apart: lane `t` of vector `j`; the values at `p + i` for `i`
/// outside `lo..hi` are zero and not accessed.
///
/// # Safety
/// `p + lo .. p + hi` must be valid for reads; AVX2 must be available.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn columns(p: *const f32, lo: usize, hi: usize) -> [std::arch::x86_64::__m256; 6] {
    use std::arch::x86_64::*;
    // SAFETY: per the contract.
    unsafe {
        // In-lane 4×4 transposes leave tiles in the order 0 2 4 6 1 3 5 7;
        // one permute puts them back.
        let order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
        let (a, b) = (avx2::load(p, 0, lo, hi), avx2::load(p, 8, lo, hi));
        let (c, d) = (avx2::load(p, 16, lo, hi), avx2::load(p, 24, lo, hi));
        let (t0, t1) = (_mm256_unpacklo_ps(a, b), _mm256_unpackhi_ps(a, b));
        let (t2, t3) = (_mm256_unpacklo_ps(c, d), _mm256_unpackhi_ps(c, d));
        let c0 = _mm256_permutevar8x32_ps(_mm256_shuffle_ps::<0x44>(t0, t2), order);
        let c1 = _mm256_permutevar8x32_ps(_mm256_shuffle_ps::<0xEE>(t0, t2), order);
        let c2 = _mm256_permutevar8x32_ps(_mm256_shuffle_ps::<0x44>(t1, t3), order);
        let c3 = _mm256_permutevar8x32_ps(_mm256_shuffle_ps::<0xEE>(t1, t3), order);
        // Columns 4 and 5 are the next tile's 0 and 1.
        let (a, b) = (avx2::load(p, 4, lo, hi), avx2::load(p, 12, lo, hi));
        let (c, d) = (avx2::load(p, 20, lo, hi), avx2::load(p, 28, lo, hi));
        let (t0, t2) = (_mm256_unpacklo_ps(a, b), _mm256_unpacklo_ps(c, d));
        let c4 = _mm256_permutevar8x32_ps(_mm256_shuffle_ps::<0x44>(t0, t2), order);
        let c5 = _mm256_permutevar8x32_ps(_mm256_shuffle_ps::<0xEE>(t0, t2), order);
        [c0, c1, c2, c3, c4, c5]
    }
}

/// `Bᵀ·d` for six vectors `d` (Note [Winograd F(4×4, 3×3)]).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn bt(d: [std::arch::x86_64::__m256; 6]) -> [std::arch::x86_64::__m256; 6] {
    use std::arch::x86_64::*;
    // SAFETY: only reached from `input`, compiled for AVX2 and FMA.
    unsafe {
        let (k4, k5, k2) = (
            _mm256_set1_ps(4.0),
            _mm256_set1_ps(5.0),
            _mm256_set1_ps(2.0),
        );
        // 4·d0 - 5·d2 + d4 and 4·d1 - 5·d3 + d5
        let e0 = _mm256_fnmadd_ps(k5, d[2], _mm256_fmadd_ps(k4, d[0], d[4]));
        let e5 = _mm256_fnmadd_ps(k5, d[3], _mm256_fmadd_ps(k4, d[1], d[5]));
        // (d4 - 4·d2) ± (d3 - 4·d1)
        let a = _mm256_fnmadd_ps(k4, d[2], d[4]);
        let b = _mm256_fnmadd_ps(k4, d[1], d[3]);
        // (d4 - d2) ± 2·(d3 - d1)
        let p = _mm256_sub_ps(d[4], d[2]);
        let q = _mm256_mul_ps(k2, _mm256_sub_ps(d[3], d[1]));
        [
            e0,
            _mm256_add_ps(a, b),
            _mm256_sub_ps(a, b),
            _mm256_add_ps(p, q),
            _mm256_sub_ps(p, q),
            e5,
        ]
    }
}

/// `Aᵀ·m` for six vectors `m`: four.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn at(m: [std::arch::x86_64::__m256; 6]) -> [std::arch::x86_64::__m256; 4] {
    use std::arch::x86_64::*;
    // SAFETY: only reached from `output`, compiled for AVX2 and FMA.
    unsafe {
        let (p, q) = (_mm256_add_ps(m[1], m[2]), _mm256_sub_ps(m[1], m[2]));
        let (r, s) = (_mm256_add_ps(m[3], m[4]), _mm256_sub_ps(m[3], m[4]));
        [
            _mm256_add_ps(_mm256_add_ps(m[0], p), r),
            _mm256_fmadd_ps(_mm256_set1_ps(2.0), s, q),
            _mm256_fmadd_ps(_mm256_set1_ps(4.0), r, p),
            _mm256_add_ps(_mm256_fmadd_ps(_mm256_set1_ps(8.0), s, q), m[5]),
        ]
    }
}

/// `Aᵀ·M` of column `s` of the product's 6×6 positions, whose position
/// `pos` is the vector at `base + pos·step`.
///
/// # Safety
/// The six vectors must be valid for reads; AVX2 and FMA must be available.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn m_column(base: *const f32, step: usize, s: usize) -> [std::arch::x86_64::__m256; 4] {
    use std::arch::x86_64::*;
    // SAFETY: per the contract.
    unsafe {
        let p = base.add(s * step);
        let six = 6 * step;
        at([
            _mm256_loadu_ps(p),
            _mm256_loadu_ps(p.add(six)),
            _mm256_loadu_ps(p.add(2 * six)),
            _mm256_loadu_ps(p.add(3 * six)),
            _mm256_loadu_ps(p.add(4 * six)),
            _mm256_loadu_ps(p.add(5 * six)),
        ])
    }
}

/// Transform `M[pos][o][tt..tt + len]` of layer `l` (whose tile is F4)
/// back into channel `o`'s 4×4 outputs of the tiles of `run`, through the
/// bias or the epilogue.
///
/// # Safety
/// As [`Winograd::run`]'s output step: `out` (and an epilogue's residual)
/// valid at these tiles' outputs; `M` followed by `LANES` values of slack;
/// AVX2 and FMA available.
#[cfg_attr(target_arch = "x86_64", target_feature(enable = "avx2,fma"))]
pub(crate) unsafe fn output(l: &Winograd, o: usize, run: &Run, m: *const f32, out: *mut f32) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        let (img, ti, tj, len, tt) = (run.img, run.ti, run.tj, run.len, run.tt);
        let (oc, bl) = (l.oc, l.block);
        let plane = l.ho * l.wo;
        let (oy, ox) = (4 * ti, 4 * tj);
        let cols = (4 * len).min(l.wo - ox);
        let rows = 4.min(l.ho - oy);
        // Aᵀ·M down each of the 6 columns (4 rows each) ...
        let base = m.wrapping_add(o * bl + tt);
        let step = l.m_step();
        // SAFETY: M[pos][o][tt..tt + 8] is inside M or its slack.
        let c = unsafe {
            [
                m_column(base, step, 0),
                m_column(base, step, 1),
                m_column(base, step, 2),
                m_column(base, step, 3),
                m_column(base, step, 4),
                m_column(base, step, 5),
            ]
        };
        let (a, sh) = match (&l.epilogue, l.bias) {
            (Some(e), _) => (e.scale[o], e.shift[o]),
            (None, Some(b)) => (1.0, b[o]),
            (None, None) => (1.0, 0.0),
        };
        let res = l.epilogue.and_then(|e| e.residual);
        let relu = l.epilogue.is_some_and(|e| e.relu);
        #[allow(clippy::needless_range_loop)] // row `r` of every column
        for r in 0..rows {
            // ... then ·A: the row's 4 output columns of every tile,
            let [y0, y1, y2, y3] = at([c[0][r], c[1][r], c[2][r], c[3][r], c[4][r], c[5][r]]);
            // interleaved: in-lane transposes give tiles (0|4), (1|5),
            // (2|6), (3|7), and the halves are paired in order.
            let (u0, u1) = (_mm256_unpacklo_ps(y0, y1), _mm256_unpackhi_ps(y0, y1));
            let (u2, u3) = (_mm256_unpacklo_ps(y2, y3), _mm256_unpackhi_ps(y2, y3));
            let q0 = _mm256_shuffle_ps::<0x44>(u0, u2);
            let q1 = _mm256_shuffle_ps::<0xEE>(u0, u2);
            let q2 = _mm256_shuffle_ps::<0x44>(u1, u3);
            let q3 = _mm256_shuffle_ps::<0xEE>(u1, u3);
            let first = [
                _mm256_permute2f128_ps::<0x20>(q0, q1),
                _mm256_permute2f128_ps::<0x20>(q2, q3),
            ];
            let second = [
                _mm256_permute2f128_ps::<0x31>(q0, q1),
                _mm256_permute2f128_ps::<0x31>(q2, q3),
            ];
            let at = (img * oc + o) * plane + (oy + r) * l.wo + ox;
            // SAFETY: (img, o, oy + r, ox..ox + cols) is inside `out` (and
            // the residual), per the contract.
            unsafe {
                avx2::store(
                    first,
                    cols.min(16),
                    a,
                    sh,
                    res.map(|p| p.add(at)),
                    relu,
                    out.add(at),
                );
                if cols > 16 {
                    let at = at + 16;
                    avx2::store(
                        second,
                        cols - 16,
                        a,
                        sh,
                        res.map(|p| p.add(at)),
                        relu,
                        out.add(at),
                    );
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::winograd_few::tests::{naive, Case};

    /// F(4×4) layers against an f64 convolution, with a bias and with the
    /// fused epilogue, over channel counts that are not multiples of the
    /// kernel's tile, map sizes that are not multiples of 4, paddings 0-2,
    /// two images and blocks that end inside a tile row.
    #[test]
    fn f4_tiles_match_naive() {
        let Some(sh) = crate::conv::shape() else {
            return;
        };
        for &(n, c, oc, h, w, pad, block) in &[
            (1usize, 20usize, 19usize, 7usize, 7usize, 1usize, 1usize),
            (1, 16, 50, 14, 14, 1, 1),
            (2, 17, 33, 5, 6, 0, 1),
            (1, 24, 16, 9, 7, 2, 2),
            (2, 16, 24, 37, 35, 1, 1),
            (1, 32, 64, 56, 56, 1, 2),
        ] {
            let case = Case::new(n, c, oc, h, w, pad);
            let (ho, wo) = case.out_hw();
            let (x, wt) = (&case.x, &case.wt);
            // The sum of the products' magnitudes bounds the rounding.
            let abs_x: Vec<f32> = x.iter().map(|v| v.abs()).collect();
            let abs_w: Vec<f32> = wt.iter().map(|v| v.abs()).collect();
            let mag = naive(&abs_x, n, c, h, w, &abs_w, oc, pad);
            let want = naive(x, n, c, h, w, wt, oc, pad);
            let mut u = vec![f32::NAN; POS * oc * c];
            // in two halves, as two threads would
            unsafe {
                transform_weights(wt, oc, c, 0..oc / 2, u.as_mut_ptr());
                transform_weights(wt, oc, c, oc / 2..oc, u.as_mut_ptr());
            }
            for fused in [false, true] {
                let layer = case.layer(&u, fused, block * sh.nr, Tile::F4);
                let mut y = vec![f32::NAN; n * oc * ho * wo];
                let mut scratch = vec![f32::NAN; layer.scratch_len()];
                let k = layer.blocks();
                for r in [0..k / 2, k / 2..k] {
                    unsafe { layer.run(r, &mut scratch, y.as_mut_ptr()) };
                }
                for (i, (&got, &conv)) in y.iter().zip(&want).enumerate() {
                    let expect = case.expect(i, conv, fused);
                    let scale = case.scale[i / (ho * wo) % oc] as f64;
                    let tol = 4e-6 * (mag[i] * scale + 4.0);
                    assert!(
                        (got as f64 - expect).abs() <= tol,
                        "n={n} c={c} oc={oc} {h}x{w} pad={pad} fused={fused} at {i}: {got} vs {expect}"
                    );
                }
            }
        }
    }
}

//! Softmax and log-softmax over contiguous rows (f32, vectorised).

use crate::math;
use crate::multiversion;

multiversion! {
    /// `dst = softmax(src)` (or `log_softmax` when `log`) over one row of
    /// `n` contiguous values, subtracting the row maximum first. A NaN
    /// anywhere makes the whole row NaN, as in PyTorch.
    ///
    /// Passes over a row that stays in L1: maximum (with a NaN flag, both
    /// as selects so they vectorise), `exp(x - max)` (with
    /// [`math::exp_nonpos`], exact for the `x - max <= 0` it sees) stored,
    /// the stored row summed, then the scaling; log-softmax sums the exps
    /// without storing them and writes `x - logsumexp`. On AVX-512 CPUs
    /// softmax stores and sums in one pass with `vscalefps` (Note [Softmax
    /// exp with vscalefps]).
    ///
    /// # Safety
    /// `src` and `dst` must each hold `n` values; they may be the same row.
    pub unsafe fn softmax_row_f32[](src: *const f32, dst: *mut f32, n: usize, log: bool) {
        unsafe {
            let x = std::slice::from_raw_parts(src, n);
            let m = row_max(x);
            let out = std::slice::from_raw_parts_mut(dst, n);
            let Some(m) = m else {
                out.fill(f32::NAN);
                return;
            };
            if !log && crate::softmax_avx512::try_exp_sum_scale(src, dst, n, m) {
                return;
            }
            let s = if log {
                sum_exp(src, n, m)
            } else {
                // Store first, then sum what was stored: summing as it goes
                // keeps one register too many live beside exp's constants,
                // and LLVM spills the accumulators, a store-to-load chain
                // through the stack on every iteration (1.6x slower).
                for (i, o) in out.iter_mut().enumerate() {
                    *o = math::exp_nonpos(*src.add(i) - m);
                }
                sum_row(out)
            };
            if log {
                // (x - max) - ln(sum), as PyTorch: max + ln(sum) first
                // would round ln(sum) away next to a huge max
                let ls = math::ln(s);
                for i in 0..n {
                    *dst.add(i) = (*src.add(i) - m) - ls;
                }
            } else {
                let inv = 1.0 / s;
                for v in out.iter_mut() {
                    *v *= inv;
                }
            }
        }
    }
}

multiversion! {
    /// [`softmax_row_f32`] over one row in place: the same passes and
    /// results, with the row as the only pointer (so each pass vectorises
    /// with no overlap check). Compiled row kernels call it after writing
    /// their expression's values into the output row (Note [Row kernels]
    /// in `ferrotorch-codegen`).
    ///
    /// # Safety
    /// `row` must hold `n` values.
    pub unsafe fn softmax_row_in_place_f32[](row: *mut f32, n: usize, log: bool) {
        unsafe {
            let row = std::slice::from_raw_parts_mut(row, n);
            let Some(m) = row_max(row) else {
                row.fill(f32::NAN);
                return;
            };
            if log {
                let ls = math::ln(sum_exp(row.as_ptr(), n, m));
                for v in row.iter_mut() {
                    *v = (*v - m) - ls;
                }
            } else {
                if crate::softmax_avx512::try_exp_sum_scale(row.as_ptr(), row.as_mut_ptr(), n, m) {
                    return;
                }
                for v in row.iter_mut() {
                    *v = math::exp_nonpos(*v - m);
                }
                let inv = 1.0 / sum_row(row);
                for v in row.iter_mut() {
                    *v *= inv;
                }
            }
        }
    }
}

/// The row's maximum, or `None` where softmax is NaN throughout (as in
/// PyTorch): a NaN anywhere, a +inf (inf - inf), or a row of -inf (every
/// `x - max` NaN). The maximum and a NaN flag are both selects, so they
/// vectorise.
#[inline(always)]
fn row_max(x: &[f32]) -> Option<f32> {
    let mut mx = [f32::NEG_INFINITY; 16];
    let mut nan = [0.0f32; 16];
    let mut it = x.chunks_exact(16);
    for c in &mut it {
        for j in 0..16 {
            let v = c[j];
            mx[j] = if v > mx[j] { v } else { mx[j] };
            #[allow(clippy::eq_op)]
            let is_nan = v != v;
            nan[j] = if is_nan { 1.0 } else { nan[j] };
        }
    }
    let mut m = f32::NEG_INFINITY;
    let mut any_nan = nan.iter().any(|&f| f != 0.0);
    for &v in mx.iter().chain(it.remainder()) {
        m = if v > m { v } else { m };
        any_nan |= v.is_nan();
    }
    (!(any_nan || m == f32::INFINITY || m == f32::NEG_INFINITY)).then_some(m)
}

multiversion! {
    /// Rows `r0..r1` of [`softmax_backward`].
    ///
    /// # Safety
    /// `g`, `y`, `dx` hold `r1 * n` values.
    unsafe fn softmax_backward_rows[](
        g: *const f32, y: *const f32, dx: *mut f32, r0: usize, r1: usize, n: usize, log: bool
    ) {
        unsafe {
            for r in r0..r1 {
                let g = std::slice::from_raw_parts(g.add(r * n), n);
                let y = std::slice::from_raw_parts(y.add(r * n), n);
                let dx = std::slice::from_raw_parts_mut(dx.add(r * n), n);
                if log {
                    // dx = g - exp(y)·Σg; a NaN row (y NaN) stays NaN, as
                    // torch's
                    let s = sum_row(g);
                    for j in 0..n {
                        dx[j] = (-math::exp_nonpos_keep_nan(y[j])).mul_add(s, g[j]);
                    }
                } else {
                    // dx = y·(g - Σ g·y)
                    let mut acc = [0.0f32; 16];
                    let (mut ig, mut iy) = (g.chunks_exact(16), y.chunks_exact(16));
                    for (cg, cy) in (&mut ig).zip(&mut iy) {
                        for k in 0..16 {
                            acc[k] = cg[k].mul_add(cy[k], acc[k]);
                        }
                    }
                    let mut s: f32 = acc.iter().sum();
                    for (a, b) in ig.remainder().iter().zip(iy.remainder()) {
                        s = a.mul_add(*b, s);
                    }
                    for j in 0..n {
                        dx[j] = y[j] * (g[j] - s);
                    }
                }
            }
        }
    }
}

/// The input gradient of softmax (`log`: log-softmax) over contiguous rows
/// of `n` from the output gradient `g` and the output `y`: `y·(g - Σg·y)`
/// (`g - exp(y)·Σg`), one pass per row instead of four tensor ops; rows
/// are split over the intra-op threads.
///
/// # Panics
/// If the slices differ in length or are not whole rows.
pub fn softmax_backward(g: &[f32], y: &[f32], dx: &mut [f32], n: usize, log: bool) {
    assert!(
        g.len() == y.len() && y.len() == dx.len() && n > 0 && g.len().is_multiple_of(n),
        "softmax_backward: lengths differ"
    );
    let rows = g.len() / n;
    let (gp, yp, dp) = (
        g.as_ptr() as usize,
        y.as_ptr() as usize,
        dx.as_mut_ptr() as usize,
    );
    crate::parallel::parallel_for(rows, (1usize << 14).div_ceil(n).max(1), |r| {
        // SAFETY: the lengths were checked; row ranges are disjoint.
        unsafe {
            softmax_backward_rows(
                gp as *const f32,
                yp as *const f32,
                dp as *mut f32,
                r.start,
                r.end,
                n,
                log,
            )
        }
    });
}

/// The sum of `exp(x - m)` over a row of `n` values at `src`.
///
/// # Safety
/// `src` must hold `n` values.
#[inline(always)]
unsafe fn sum_exp(src: *const f32, n: usize, m: f32) -> f32 {
    let mut acc = [0.0f32; 16];
    let mut base = 0;
    while base + 16 <= n {
        for (j, a) in acc.iter_mut().enumerate() {
            // SAFETY: base + j < n.
            *a += math::exp_nonpos(unsafe { *src.add(base + j) } - m);
        }
        base += 16;
    }
    let mut s: f32 = acc.iter().sum();
    for i in base..n {
        // SAFETY: i < n.
        s += math::exp_nonpos(unsafe { *src.add(i) } - m);
    }
    s
}

/// The sum of a row, in 32 lanes (then added in order): four vectors of
/// independent adds on AVX2, two on AVX-512.
#[inline(always)]
fn sum_row(x: &[f32]) -> f32 {
    let mut acc = [0.0f32; 32];
    let mut it = x.chunks_exact(32);
    for c in &mut it {
        for (a, &v) in acc.iter_mut().zip(c) {
            *a += v;
        }
    }
    let mut s: f32 = acc.iter().sum();
    for &v in it.remainder() {
        s += v;
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(clippy::needless_range_loop)]
    fn softmax_backward_matches_f64() {
        let n = 37;
        let x: Vec<f32> = (0..2 * n).map(|i| (i as f32 * 0.37).sin() * 3.0).collect();
        let g: Vec<f32> = (0..2 * n).map(|i| (i as f32 * 0.91).cos()).collect();
        for log in [false, true] {
            let mut y = vec![0.0f32; 2 * n];
            for r in 0..2 {
                unsafe { softmax_row_f32(x[r * n..].as_ptr(), y[r * n..].as_mut_ptr(), n, log) };
            }
            let mut dx = vec![0.0f32; 2 * n];
            softmax_backward(&g, &y, &mut dx, n, log);
            for r in 0..2 {
                let row = |v: &[f32]| {
                    v[r * n..(r + 1) * n]
                        .iter()
                        .map(|&a| a as f64)
                        .collect::<Vec<_>>()
                };
                let (gr, yr) = (row(&g), row(&y));
                let p: Vec<f64> = if log {
                    yr.iter().map(|v| v.exp()).collect()
                } else {
                    yr.clone()
                };
                let dot: f64 = gr.iter().zip(&p).map(|(a, b)| a * b).sum();
                let sum: f64 = gr.iter().sum();
                for j in 0..n {
                    let want = if log {
                        gr[j] - p[j] * sum
                    } else {
                        p[j] * (gr[j] - dot)
                    };
                    assert!(
                        (dx[r * n + j] as f64 - want).abs() < 1e-5,
                        "log={log} [{r}, {j}]"
                    );
                }
            }
        }
    }

    #[test]
    fn softmax_backward_of_a_nan_row_is_nan() {
        // a row holding a NaN softmaxes to NaN throughout; its gradient is
        // NaN too, as torch's, for softmax and log-softmax alike (the
        // log form's exp once clamped NaN to 0 and returned g)
        for n in [5, 16, 37] {
            let mut x = vec![0.5f32; n];
            x[n / 2] = f32::NAN;
            let g: Vec<f32> = (0..n).map(|i| i as f32 + 1.0).collect();
            for log in [false, true] {
                let mut y = vec![0.0f32; n];
                unsafe { softmax_row_f32(x.as_ptr(), y.as_mut_ptr(), n, log) };
                assert!(y.iter().all(|v| v.is_nan()));
                let mut dx = vec![0.0f32; n];
                softmax_backward(&g, &y, &mut dx, n, log);
                assert!(dx.iter().all(|v| v.is_nan()), "n={n} log={log}: {dx:?}");
            }
        }
    }

    #[test]
    fn log_softmax_of_huge_values_keeps_the_log_sum() {
        // [1e30, 1e30, -1e30, 2]: (x - max) - ln 2, as PyTorch; with
        // max + ln 2 rounded first the result was 0 (apart and in place)
        let x = [1e30f32, 1e30, -1e30, 2.0];
        let mut apart = [0.0f32; 4];
        let mut inplace = x;
        unsafe {
            softmax_row_f32(x.as_ptr(), apart.as_mut_ptr(), 4, true);
            softmax_row_in_place_f32(inplace.as_mut_ptr(), 4, true);
        }
        let ln2 = std::f32::consts::LN_2;
        for y in [apart, inplace] {
            assert_eq!(y[..2], [-ln2, -ln2]);
            assert_eq!(y[2..], [-2e30, -1e30]);
        }
    }

    #[test]
    fn softmax_rows_match_f64() {
        let x: Vec<f32> = (0..37).map(|i| (i as f32 * 0.37).sin() * 5.0).collect();
        let m = x
            .iter()
            .cloned()
            .fold(f64::NEG_INFINITY, |a, b| a.max(b as f64));
        let z: f64 = x.iter().map(|&v| (v as f64 - m).exp()).sum();
        let mut y = vec![0.0f32; 37];
        let mut l = vec![0.0f32; 37];
        unsafe {
            softmax_row_f32(x.as_ptr(), y.as_mut_ptr(), 37, false);
            softmax_row_f32(x.as_ptr(), l.as_mut_ptr(), 37, true);
        }
        for i in 0..37 {
            let want = (x[i] as f64 - m).exp() / z;
            assert!((y[i] as f64 - want).abs() < 1e-6 * want.max(1e-3));
            assert!((l[i] as f64 - want.ln()).abs() < 1e-5);
        }
    }
}

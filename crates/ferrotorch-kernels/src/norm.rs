//! Layer normalisation over contiguous rows: the forward pass with its
//! per-row statistics, and the input gradient of the backward pass.
//!
//! Row sums keep 16 independent f32 lanes (LLVM vectorises them), the
//! variance is taken around the mean in a second pass (no cancellation),
//! and rows are split over the intra-op threads.

use crate::parallel::parallel_for;

/// Sum of a row in 16 lanes.
#[inline(always)]
fn lanes_sum(x: &[f32], f: impl Fn(f32) -> f32) -> f32 {
    let mut acc = [0.0f32; 16];
    let mut it = x.chunks_exact(16);
    for c in &mut it {
        for j in 0..16 {
            acc[j] += f(c[j]);
        }
    }
    let mut s = 0.0f32;
    for &v in it.remainder() {
        s += f(v);
    }
    acc.iter().sum::<f32>() + s
}

/// Sum of `a[j] * b[j]` over a row in 16 lanes.
#[inline(always)]
fn lanes_dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0.0f32; 16];
    let (mut ia, mut ib) = (a.chunks_exact(16), b.chunks_exact(16));
    for (ca, cb) in (&mut ia).zip(&mut ib) {
        for j in 0..16 {
            acc[j] = ca[j].mul_add(cb[j], acc[j]);
        }
    }
    let mut s = 0.0f32;
    for (x, y) in ia.remainder().iter().zip(ib.remainder()) {
        s = x.mul_add(*y, s);
    }
    acc.iter().sum::<f32>() + s
}

crate::multiversion! {
    /// Rows `r0..r1` of layer norm: `y = (x - mean)·rstd·w + b` per row of
    /// `n`, with `mean` and `rstd = 1/√(var + eps)` stored per row (`w`,
    /// `b` may be null).
    ///
    /// # Safety
    /// `x`, `y` hold `r1 * n` values, `mean`/`rstd` `r1`, `w`/`b` `n` or null.
    pub unsafe fn forward_rows[](
        x: *const f32, y: *mut f32, mean: *mut f32, rstd: *mut f32, r0: usize, r1: usize,
        n: usize, w: *const f32, b: *const f32, eps: f32
    ) {
        unsafe {
            for r in r0..r1 {
                let xr = std::slice::from_raw_parts(x.add(r * n), n);
                let yr = std::slice::from_raw_parts_mut(y.add(r * n), n);
                let m = lanes_sum(xr, |v| v) / n as f32;
                let var = lanes_sum(xr, |v| (v - m) * (v - m)) / n as f32;
                let rs = 1.0 / (var + eps).sqrt();
                *mean.add(r) = m;
                *rstd.add(r) = rs;
                match (w.is_null(), b.is_null()) {
                    (false, false) => {
                        let (w, b) = (std::slice::from_raw_parts(w, n), std::slice::from_raw_parts(b, n));
                        for j in 0..n {
                            yr[j] = ((xr[j] - m) * rs).mul_add(w[j], b[j]);
                        }
                    }
                    (false, true) => {
                        let w = std::slice::from_raw_parts(w, n);
                        for j in 0..n {
                            yr[j] = (xr[j] - m) * rs * w[j];
                        }
                    }
                    (true, false) => {
                        let b = std::slice::from_raw_parts(b, n);
                        for j in 0..n {
                            yr[j] = (xr[j] - m) * rs + b[j];
                        }
                    }
                    (true, true) => {
                        for j in 0..n {
                            yr[j] = (xr[j] - m) * rs;
                        }
                    }
                }
            }
        }
    }
}

crate::multiversion! {
    /// Rows `r0..r1` of layer norm's backward: with `x̂ = (x - mean)·rstd`
    /// and `gw = g·w` (`g` where `w` is null),
    /// `dx = rstd·(gw - mean(gw) - x̂·mean(gw·x̂))`; `gxhat = g·x̂` is written
    /// too (its column sums are the weight's gradient).
    ///
    /// # Safety
    /// `g`, `x`, `dx`, `gxhat` hold `r1 * n` values, `mean`/`rstd` `r1`,
    /// `w` `n` or null; `scratch` `n`.
    pub unsafe fn backward_rows[](
        g: *const f32, x: *const f32, mean: *const f32, rstd: *const f32, w: *const f32,
        dx: *mut f32, gxhat: *mut f32, r0: usize, r1: usize, n: usize, scratch: *mut f32
    ) {
        unsafe {
            let gw = std::slice::from_raw_parts_mut(scratch, n);
            for r in r0..r1 {
                let gr = std::slice::from_raw_parts(g.add(r * n), n);
                let xr = std::slice::from_raw_parts(x.add(r * n), n);
                let gx = std::slice::from_raw_parts_mut(gxhat.add(r * n), n);
                let dr = std::slice::from_raw_parts_mut(dx.add(r * n), n);
                let (m, rs) = (*mean.add(r), *rstd.add(r));
                if w.is_null() {
                    gw.copy_from_slice(gr);
                } else {
                    let wr = std::slice::from_raw_parts(w, n);
                    for j in 0..n {
                        gw[j] = gr[j] * wr[j];
                    }
                }
                // x̂ into dx for now
                for j in 0..n {
                    dr[j] = (xr[j] - m) * rs;
                    gx[j] = gr[j] * dr[j];
                }
                let a = lanes_sum(gw, |v| v) / n as f32;
                let c = lanes_dot(gw, dr) / n as f32;
                for j in 0..n {
                    dr[j] = rs * (gw[j] - a - dr[j] * c);
                }
            }
        }
    }
}

/// Layer norm of `rows` rows of `n` contiguous f32 (see [`forward_rows`]).
///
/// # Panics
/// If the slices' lengths do not match `rows` and `n`.
#[allow(clippy::too_many_arguments)]
pub fn forward(
    x: &[f32],
    y: &mut [f32],
    mean: &mut [f32],
    rstd: &mut [f32],
    n: usize,
    w: Option<&[f32]>,
    b: Option<&[f32]>,
    eps: f32,
) {
    let rows = mean.len();
    assert!(x.len() == rows * n && y.len() == x.len() && rstd.len() == rows);
    assert!(w.is_none_or(|w| w.len() == n) && b.is_none_or(|b| b.len() == n));
    let p = [
        x.as_ptr() as usize,
        y.as_mut_ptr() as usize,
        mean.as_mut_ptr() as usize,
        rstd.as_mut_ptr() as usize,
        w.map_or(0, |w| w.as_ptr() as usize),
        b.map_or(0, |b| b.as_ptr() as usize),
    ];
    let grain = (16384 / n.max(1)).max(1);
    parallel_for(rows, grain, |r| {
        // SAFETY: sizes checked above; tasks own disjoint row ranges.
        unsafe {
            forward_rows(
                p[0] as *const f32,
                p[1] as *mut f32,
                p[2] as *mut f32,
                p[3] as *mut f32,
                r.start,
                r.end,
                n,
                p[4] as *const f32,
                p[5] as *const f32,
                eps,
            )
        }
    });
}

/// The input gradient of layer norm (see [`backward_rows`]), and `g·x̂`.
///
/// # Panics
/// If the slices' lengths do not match `rows` and `n`.
#[allow(clippy::too_many_arguments)]
pub fn backward(
    g: &[f32],
    x: &[f32],
    mean: &[f32],
    rstd: &[f32],
    w: Option<&[f32]>,
    dx: &mut [f32],
    gxhat: &mut [f32],
    n: usize,
) {
    let rows = mean.len();
    assert!(g.len() == rows * n && x.len() == g.len() && dx.len() == g.len());
    assert!(gxhat.len() == g.len() && rstd.len() == rows && w.is_none_or(|w| w.len() == n));
    let p = [
        g.as_ptr() as usize,
        x.as_ptr() as usize,
        mean.as_ptr() as usize,
        rstd.as_ptr() as usize,
        w.map_or(0, |w| w.as_ptr() as usize),
        dx.as_mut_ptr() as usize,
        gxhat.as_mut_ptr() as usize,
    ];
    let grain = (16384 / n.max(1)).max(1);
    parallel_for(rows, grain, |r| {
        let mut scratch = vec![0.0f32; n];
        // SAFETY: sizes checked above; tasks own disjoint row ranges and
        // their own scratch.
        unsafe {
            backward_rows(
                p[0] as *const f32,
                p[1] as *const f32,
                p[2] as *const f32,
                p[3] as *const f32,
                p[4] as *const f32,
                p[5] as *mut f32,
                p[6] as *mut f32,
                r.start,
                r.end,
                n,
                scratch.as_mut_ptr(),
            )
        }
    });
}

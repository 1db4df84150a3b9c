//! The pointwise part of one GRU or LSTM step, forward and backward, as
//! one pass over each row instead of a dozen tensor ops (Note [Fused
//! recurrent cells] in `ferrotorch-core`'s `native/nn/rnn.rs`).
//!
//! Rows are batch entries; gates are laid out as PyTorch's: `[r, z, n]`
//! for the GRU and `[i, f, g, o]` for the LSTM, each `hidden` wide. The
//! forward passes keep the activated gates in a workspace for backward.

use crate::math::{sigmoid, tanh};
use crate::parallel::parallel_for;

/// Elements per task when rows are split over the intra-op threads.
const GRAIN: usize = 1 << 14;

/// Run `f` over row ranges, split over the threads for large batches.
fn rows(batch: usize, hidden: usize, f: impl Fn(usize, usize) + Sync + Send) {
    let grain = GRAIN.div_ceil(hidden.max(1)).max(1);
    parallel_for(batch, grain, |r| f(r.start, r.end));
}

// Note: each row's body is a function of slices, one argument per output
// row: `&mut` arguments are `noalias`, which survives inlining as alias
// scopes, so LLVM vectorises the loop. Written inline over slices made
// from raw pointers it cannot tell the outputs apart and stays scalar
// (the fused GRU step ran at 5 ns per element).

/// One GRU row; see [`gru_forward`].
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn gru_forward_row(
    gi: &[f32],
    gh: &[f32],
    h: &[f32],
    out: &mut [f32],
    wr: &mut [f32],
    wz: &mut [f32],
    wn: &mut [f32],
    n: usize,
) {
    let (gir, giz, gin) = (&gi[..n], &gi[n..2 * n], &gi[2 * n..3 * n]);
    let (ghr, ghz, ghn) = (&gh[..n], &gh[n..2 * n], &gh[2 * n..3 * n]);
    let (h, out, wr, wz, wn) = (
        &h[..n],
        &mut out[..n],
        &mut wr[..n],
        &mut wz[..n],
        &mut wn[..n],
    );
    for j in 0..n {
        let r = sigmoid(gir[j] + ghr[j]);
        let z = sigmoid(giz[j] + ghz[j]);
        let nn = tanh(r.mul_add(ghn[j], gin[j]));
        out[j] = z.mul_add(h[j] - nn, nn);
        wr[j] = r;
        wz[j] = z;
        wn[j] = nn;
    }
}

/// One GRU row's gradients; see [`gru_backward`].
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn gru_backward_row(
    g: &[f32],
    ghn: &[f32],
    h: &[f32],
    ws: &[f32],
    [dgir, dgiz, dgin]: [&mut [f32]; 3],
    [dghr, dghz, dghn]: [&mut [f32]; 3],
    dh: &mut [f32],
    n: usize,
) {
    let (g, ghn, h, dh) = (&g[..n], &ghn[..n], &h[..n], &mut dh[..n]);
    let (wr, wz, wn) = (&ws[..n], &ws[n..2 * n], &ws[2 * n..3 * n]);
    let (dgir, dgiz, dgin) = (&mut dgir[..n], &mut dgiz[..n], &mut dgin[..n]);
    let (dghr, dghz, dghn) = (&mut dghr[..n], &mut dghz[..n], &mut dghn[..n]);
    for j in 0..n {
        let (r, z, nn, gj) = (wr[j], wz[j], wn[j], g[j]);
        // h' = n + z·(h - n)
        let da = gj * (1.0 - z) * (1.0 - nn * nn);
        let dpr = da * ghn[j] * r * (1.0 - r);
        let dpz = gj * (h[j] - nn) * z * (1.0 - z);
        dgir[j] = dpr;
        dghr[j] = dpr;
        dgiz[j] = dpz;
        dghz[j] = dpz;
        dgin[j] = da;
        dghn[j] = da * r;
        dh[j] = gj * z;
    }
}

/// One LSTM row; see [`lstm_forward`].
#[inline(always)]
fn lstm_forward_row(
    x: &[f32],
    c: &[f32],
    ho: &mut [f32],
    co: &mut [f32],
    [wi, wf, wg, wo, wt]: [&mut [f32]; 5],
    n: usize,
) {
    let (xi, xf, xg, xo) = (&x[..n], &x[n..2 * n], &x[2 * n..3 * n], &x[3 * n..4 * n]);
    let (c, ho, co) = (&c[..n], &mut ho[..n], &mut co[..n]);
    let (wi, wf, wg, wo, wt) = (
        &mut wi[..n],
        &mut wf[..n],
        &mut wg[..n],
        &mut wo[..n],
        &mut wt[..n],
    );
    for j in 0..n {
        let i = sigmoid(xi[j]);
        let f = sigmoid(xf[j]);
        let g = tanh(xg[j]);
        let o = sigmoid(xo[j]);
        let cn = f.mul_add(c[j], i * g);
        let tc = tanh(cn);
        co[j] = cn;
        ho[j] = o * tc;
        wi[j] = i;
        wf[j] = f;
        wg[j] = g;
        wo[j] = o;
        wt[j] = tc;
    }
}

/// One LSTM row's gradients; see [`lstm_backward`].
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn lstm_backward_row(
    gh: &[f32],
    gc: &[f32],
    c: &[f32],
    ws: &[f32],
    [di, df, dg, do_]: [&mut [f32]; 4],
    dc: &mut [f32],
    n: usize,
) {
    let (gh, gc, c, dc) = (&gh[..n], &gc[..n], &c[..n], &mut dc[..n]);
    let (wi, wf, wg, wo, wt) = (
        &ws[..n],
        &ws[n..2 * n],
        &ws[2 * n..3 * n],
        &ws[3 * n..4 * n],
        &ws[4 * n..5 * n],
    );
    let (di, df, dg, do_) = (&mut di[..n], &mut df[..n], &mut dg[..n], &mut do_[..n]);
    for j in 0..n {
        let (i, f, g, o, tc) = (wi[j], wf[j], wg[j], wo[j], wt[j]);
        // h' = o·tanh(c'), c' = f·c + i·g
        let dcn = (gh[j] * o).mul_add(1.0 - tc * tc, gc[j]);
        di[j] = dcn * g * i * (1.0 - i);
        df[j] = dcn * c[j] * f * (1.0 - f);
        dg[j] = dcn * i * (1.0 - g * g);
        do_[j] = gh[j] * tc * o * (1.0 - o);
        dc[j] = dcn * f;
    }
}

crate::multiversion! {
    /// Rows `r0..r1` of [`gru_forward`].
    ///
    /// # Safety
    /// The pointers hold the lengths [`gru_forward`] checks.
    unsafe fn gru_forward_rows[](
        gi: *const f32, gh: *const f32, h: *const f32, out: *mut f32, ws: *mut f32,
        r0: usize, r1: usize, n: usize
    ) {
        unsafe {
            use std::slice::{from_raw_parts as rd, from_raw_parts_mut as wr};
            for b in r0..r1 {
                let w = ws.add(b * 3 * n);
                gru_forward_row(
                    rd(gi.add(b * 3 * n), 3 * n), rd(gh.add(b * 3 * n), 3 * n), rd(h.add(b * n), n),
                    wr(out.add(b * n), n), wr(w, n), wr(w.add(n), n), wr(w.add(2 * n), n), n,
                );
            }
        }
    }
}

crate::multiversion! {
    /// Rows `r0..r1` of [`gru_backward`].
    ///
    /// # Safety
    /// The pointers hold the lengths [`gru_backward`] checks.
    unsafe fn gru_backward_rows[](
        g: *const f32, gh: *const f32, h: *const f32, ws: *const f32, dgi: *mut f32,
        dgh: *mut f32, dh: *mut f32, r0: usize, r1: usize, n: usize
    ) {
        unsafe {
            use std::slice::{from_raw_parts as rd, from_raw_parts_mut as wr};
            for b in r0..r1 {
                gru_backward_row(
                    rd(g.add(b * n), n), rd(gh.add(b * 3 * n + 2 * n), n), rd(h.add(b * n), n),
                    rd(ws.add(b * 3 * n), 3 * n),
                    [wr(dgi.add(b * 3 * n), n), wr(dgi.add(b * 3 * n + n), n), wr(dgi.add(b * 3 * n + 2 * n), n)],
                    [wr(dgh.add(b * 3 * n), n), wr(dgh.add(b * 3 * n + n), n), wr(dgh.add(b * 3 * n + 2 * n), n)],
                    wr(dh.add(b * n), n), n,
                );
            }
        }
    }
}

crate::multiversion! {
    /// Rows `r0..r1` of [`lstm_forward`].
    ///
    /// # Safety
    /// The pointers hold the lengths [`lstm_forward`] checks.
    unsafe fn lstm_forward_rows[](
        gates: *const f32, c: *const f32, h_out: *mut f32, c_out: *mut f32, ws: *mut f32,
        r0: usize, r1: usize, n: usize
    ) {
        unsafe {
            use std::slice::{from_raw_parts as rd, from_raw_parts_mut as wr};
            for b in r0..r1 {
                lstm_forward_row(
                    rd(gates.add(b * 4 * n), 4 * n), rd(c.add(b * n), n), wr(h_out.add(b * n), n),
                    wr(c_out.add(b * n), n),
                    std::array::from_fn(|k| wr(ws.add(b * 5 * n + k * n), n)), n,
                );
            }
        }
    }
}

crate::multiversion! {
    /// Rows `r0..r1` of [`lstm_backward`].
    ///
    /// # Safety
    /// The pointers hold the lengths [`lstm_backward`] checks.
    unsafe fn lstm_backward_rows[](
        gh: *const f32, gc: *const f32, c: *const f32, ws: *const f32, dgates: *mut f32,
        dc: *mut f32, r0: usize, r1: usize, n: usize
    ) {
        unsafe {
            use std::slice::{from_raw_parts as rd, from_raw_parts_mut as wr};
            for b in r0..r1 {
                lstm_backward_row(
                    rd(gh.add(b * n), n), rd(gc.add(b * n), n), rd(c.add(b * n), n),
                    rd(ws.add(b * 5 * n), 5 * n),
                    std::array::from_fn(|k| wr(dgates.add(b * 4 * n + k * n), n)),
                    wr(dc.add(b * n), n), n,
                );
            }
        }
    }
}

/// Raw pointers as integers, to move into the threads' closures.
fn addr<T>(p: *const T) -> usize {
    p as usize
}

/// GRU step over `batch` rows of `hidden` features: from the input
/// projection `gi` and hidden projection `gh` (`[batch, 3·hidden]`, biases
/// included) and the state `h` (`[batch, hidden]`), `out = (1-z)·n + z·h`
/// with `r = σ(gi_r + gh_r)`, `z = σ(gi_z + gh_z)`,
/// `n = tanh(gi_n + r·gh_n)`; `ws` (`[batch, 3·hidden]`) receives `r, z, n`.
///
/// # Panics
/// If a slice's length does not match `batch` and `hidden`.
pub fn gru_forward(
    gi: &[f32],
    gh: &[f32],
    h: &[f32],
    out: &mut [f32],
    ws: &mut [f32],
    hidden: usize,
) {
    let batch = h.len() / hidden.max(1);
    assert!(
        h.len() == batch * hidden
            && out.len() == h.len()
            && gi.len() == 3 * h.len()
            && gh.len() == gi.len()
            && ws.len() == gi.len(),
        "gru_forward: lengths differ"
    );
    let p = [addr(gi.as_ptr()), addr(gh.as_ptr()), addr(h.as_ptr())];
    let (o, w) = (addr(out.as_mut_ptr()), addr(ws.as_mut_ptr()));
    rows(batch, hidden, |r0, r1| {
        // SAFETY: the lengths were checked above; row ranges are disjoint,
        // so no two tasks write the same element.
        unsafe {
            gru_forward_rows(
                p[0] as *const f32,
                p[1] as *const f32,
                p[2] as *const f32,
                o as *mut f32,
                w as *mut f32,
                r0,
                r1,
                hidden,
            )
        }
    });
}

/// Gradients of [`gru_forward`] from the output gradient `g`, with `gh`,
/// `h` and the workspace `ws` it filled: `dgi`, `dgh` (`[batch,
/// 3·hidden]`) and `dh` (`[batch, hidden]`).
///
/// # Panics
/// If a slice's length does not match `batch` and `hidden`.
#[allow(clippy::too_many_arguments)]
pub fn gru_backward(
    g: &[f32],
    gh: &[f32],
    h: &[f32],
    ws: &[f32],
    dgi: &mut [f32],
    dgh: &mut [f32],
    dh: &mut [f32],
    hidden: usize,
) {
    let batch = h.len() / hidden.max(1);
    assert!(
        h.len() == batch * hidden
            && g.len() == h.len()
            && dh.len() == h.len()
            && gh.len() == 3 * h.len()
            && ws.len() == gh.len()
            && dgi.len() == gh.len()
            && dgh.len() == gh.len(),
        "gru_backward: lengths differ"
    );
    let p = [
        addr(g.as_ptr()),
        addr(gh.as_ptr()),
        addr(h.as_ptr()),
        addr(ws.as_ptr()),
    ];
    let o = [
        addr(dgi.as_mut_ptr()),
        addr(dgh.as_mut_ptr()),
        addr(dh.as_mut_ptr()),
    ];
    rows(batch, hidden, |r0, r1| {
        // SAFETY: as in gru_forward.
        unsafe {
            gru_backward_rows(
                p[0] as *const f32,
                p[1] as *const f32,
                p[2] as *const f32,
                p[3] as *const f32,
                o[0] as *mut f32,
                o[1] as *mut f32,
                o[2] as *mut f32,
                r0,
                r1,
                hidden,
            )
        }
    });
}

/// LSTM step over `batch` rows of `hidden` features: from the summed gate
/// pre-activations `gates` (`[batch, 4·hidden]`, order i, f, g, o) and the
/// cell state `c`, `c_out = σ(f)·c + σ(i)·tanh(g)` and
/// `h_out = σ(o)·tanh(c_out)`; `ws` (`[batch, 5·hidden]`) receives the four
/// activated gates and `tanh(c_out)`.
///
/// # Panics
/// If a slice's length does not match `batch` and `hidden`.
pub fn lstm_forward(
    gates: &[f32],
    c: &[f32],
    h_out: &mut [f32],
    c_out: &mut [f32],
    ws: &mut [f32],
    hidden: usize,
) {
    let batch = c.len() / hidden.max(1);
    assert!(
        c.len() == batch * hidden
            && h_out.len() == c.len()
            && c_out.len() == c.len()
            && gates.len() == 4 * c.len()
            && ws.len() == 5 * c.len(),
        "lstm_forward: lengths differ"
    );
    let p = [addr(gates.as_ptr()), addr(c.as_ptr())];
    let o = [
        addr(h_out.as_mut_ptr()),
        addr(c_out.as_mut_ptr()),
        addr(ws.as_mut_ptr()),
    ];
    rows(batch, hidden, |r0, r1| {
        // SAFETY: as in gru_forward.
        unsafe {
            lstm_forward_rows(
                p[0] as *const f32,
                p[1] as *const f32,
                o[0] as *mut f32,
                o[1] as *mut f32,
                o[2] as *mut f32,
                r0,
                r1,
                hidden,
            )
        }
    });
}

/// Gradients of [`lstm_forward`] from the gradients of `h_out` (`gh`) and
/// `c_out` (`gc`), with `c` and the workspace `ws` it filled: `dgates`
/// (`[batch, 4·hidden]`) and `dc` (`[batch, hidden]`).
///
/// # Panics
/// If a slice's length does not match `batch` and `hidden`.
pub fn lstm_backward(
    gh: &[f32],
    gc: &[f32],
    c: &[f32],
    ws: &[f32],
    dgates: &mut [f32],
    dc: &mut [f32],
    hidden: usize,
) {
    let batch = c.len() / hidden.max(1);
    assert!(
        c.len() == batch * hidden
            && gh.len() == c.len()
            && gc.len() == c.len()
            && dc.len() == c.len()
            && ws.len() == 5 * c.len()
            && dgates.len() == 4 * c.len(),
        "lstm_backward: lengths differ"
    );
    let p = [
        addr(gh.as_ptr()),
        addr(gc.as_ptr()),
        addr(c.as_ptr()),
        addr(ws.as_ptr()),
    ];
    let o = [addr(dgates.as_mut_ptr()), addr(dc.as_mut_ptr())];
    rows(batch, hidden, |r0, r1| {
        // SAFETY: as in gru_forward.
        unsafe {
            lstm_backward_rows(
                p[0] as *const f32,
                p[1] as *const f32,
                p[2] as *const f32,
                p[3] as *const f32,
                o[0] as *mut f32,
                o[1] as *mut f32,
                r0,
                r1,
                hidden,
            )
        }
    });
}

#[cfg(test)]
#[allow(clippy::needless_range_loop)]
mod tests {
    use super::*;

    fn sig(x: f64) -> f64 {
        1.0 / (1.0 + (-x).exp())
    }

    fn data(n: usize, seed: u32) -> Vec<f32> {
        (0..n)
            .map(|i| {
                (((i as u32).wrapping_mul(2_654_435_761).wrapping_add(seed) >> 8) as f32
                    / (1u32 << 24) as f32)
                    * 4.0
                    - 2.0
            })
            .collect()
    }

    /// The GRU step and its gradients against the formulas in f64, with the
    /// gradients also checked by central differences of the f64 step.
    #[test]
    fn gru_matches_f64_formula() {
        let (b, n) = (3, 5);
        let (gi, gh, h, g) = (
            data(b * 3 * n, 1),
            data(b * 3 * n, 2),
            data(b * n, 3),
            data(b * n, 4),
        );
        let step = |gi: &[f64], gh: &[f64], h: &[f64]| -> Vec<f64> {
            (0..b * n)
                .map(|k| {
                    let (row, j) = (k / n, k % n);
                    let at = |v: &[f64], s: usize| v[row * 3 * n + s * n + j];
                    let r = sig(at(gi, 0) + at(gh, 0));
                    let z = sig(at(gi, 1) + at(gh, 1));
                    let nn = (at(gi, 2) + r * at(gh, 2)).tanh();
                    (1.0 - z) * nn + z * h[k]
                })
                .collect()
        };
        let f64s = |v: &[f32]| v.iter().map(|&x| x as f64).collect::<Vec<_>>();
        let (gi64, gh64, h64) = (f64s(&gi), f64s(&gh), f64s(&h));
        let want = step(&gi64, &gh64, &h64);
        let (mut out, mut ws) = (vec![0.0; b * n], vec![0.0; b * 3 * n]);
        gru_forward(&gi, &gh, &h, &mut out, &mut ws, n);
        for (a, w) in out.iter().zip(&want) {
            assert!((*a as f64 - w).abs() < 1e-6, "{a} vs {w}");
        }
        let (mut dgi, mut dgh, mut dh) =
            (vec![0.0; b * 3 * n], vec![0.0; b * 3 * n], vec![0.0; b * n]);
        gru_backward(&g, &gh, &h, &ws, &mut dgi, &mut dgh, &mut dh, n);
        let loss = |gi: &[f64], gh: &[f64], h: &[f64]| -> f64 {
            step(gi, gh, h)
                .iter()
                .zip(&g)
                .map(|(y, &g)| y * g as f64)
                .sum()
        };
        let eps = 1e-6;
        let num = |which: usize, k: usize| -> f64 {
            let mut v = [gi64.clone(), gh64.clone(), h64.clone()];
            v[which][k] += eps;
            let up = loss(&v[0], &v[1], &v[2]);
            v[which][k] -= 2.0 * eps;
            (up - loss(&v[0], &v[1], &v[2])) / (2.0 * eps)
        };
        for k in 0..b * 3 * n {
            assert!((dgi[k] as f64 - num(0, k)).abs() < 1e-4, "dgi[{k}]");
            assert!((dgh[k] as f64 - num(1, k)).abs() < 1e-4, "dgh[{k}]");
        }
        for k in 0..b * n {
            assert!((dh[k] as f64 - num(2, k)).abs() < 1e-4, "dh[{k}]");
        }
    }

    /// The LSTM step and its gradients by central differences in f64.
    #[test]
    fn lstm_matches_f64_formula() {
        let (b, n) = (2, 7);
        let (x, c, gh, gc) = (
            data(b * 4 * n, 5),
            data(b * n, 6),
            data(b * n, 7),
            data(b * n, 8),
        );
        let step = |x: &[f64], c: &[f64]| -> (Vec<f64>, Vec<f64>) {
            (0..b * n)
                .map(|k| {
                    let (row, j) = (k / n, k % n);
                    let at = |s: usize| x[row * 4 * n + s * n + j];
                    let cn = sig(at(1)) * c[k] + sig(at(0)) * at(2).tanh();
                    (sig(at(3)) * cn.tanh(), cn)
                })
                .unzip()
        };
        let f64s = |v: &[f32]| v.iter().map(|&x| x as f64).collect::<Vec<_>>();
        let (x64, c64) = (f64s(&x), f64s(&c));
        let (hw, cw) = step(&x64, &c64);
        let (mut ho, mut co, mut ws) = (vec![0.0; b * n], vec![0.0; b * n], vec![0.0; b * 5 * n]);
        lstm_forward(&x, &c, &mut ho, &mut co, &mut ws, n);
        for k in 0..b * n {
            assert!((ho[k] as f64 - hw[k]).abs() < 1e-6 && (co[k] as f64 - cw[k]).abs() < 1e-6);
        }
        let (mut dx, mut dc) = (vec![0.0; b * 4 * n], vec![0.0; b * n]);
        lstm_backward(&gh, &gc, &c, &ws, &mut dx, &mut dc, n);
        let loss = |x: &[f64], c: &[f64]| -> f64 {
            let (h, cn) = step(x, c);
            (0..b * n)
                .map(|k| h[k] * gh[k] as f64 + cn[k] * gc[k] as f64)
                .sum()
        };
        let eps = 1e-6;
        for k in 0..b * 4 * n {
            let mut v = x64.clone();
            v[k] += eps;
            let up = loss(&v, &c64);
            v[k] -= 2.0 * eps;
            let d = (up - loss(&v, &c64)) / (2.0 * eps);
            assert!((dx[k] as f64 - d).abs() < 1e-4, "dgates[{k}]");
        }
        for k in 0..b * n {
            let mut v = c64.clone();
            v[k] += eps;
            let up = loss(&x64, &v);
            v[k] -= 2.0 * eps;
            let d = (up - loss(&x64, &v)) / (2.0 * eps);
            assert!((dc[k] as f64 - d).abs() < 1e-4, "dc[{k}]");
        }
    }
}

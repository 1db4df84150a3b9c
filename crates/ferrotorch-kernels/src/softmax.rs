//! Softmax and log-softmax over contiguous rows (f32, vectorised).

use crate::math;
use crate::multiversion;

multiversion! {
    /// `dst = softmax(src)` (or `log_softmax` when `log`) over one row of
    /// `n` contiguous values, subtracting the row maximum first.
    ///
    /// # Safety
    /// `src` and `dst` must each hold `n` values; they may be the same row.
    pub unsafe fn softmax_row_f32[](src: *const f32, dst: *mut f32, n: usize, log: bool) {
        unsafe {
            let x = std::slice::from_raw_parts(src, n);
            // NaN-propagating maximum in 16 lanes (a NaN lane stays NaN).
            let mut mx = [f32::NEG_INFINITY; 16];
            let mut it = x.chunks_exact(16);
            for c in &mut it {
                for j in 0..16 {
                    let v = c[j];
                    #[allow(clippy::eq_op)]
                    let nan = v != v;
                    mx[j] = if v > mx[j] || nan { v } else { mx[j] };
                }
            }
            let mut m = f32::NEG_INFINITY;
            for &v in mx.iter().chain(it.remainder()) {
                if v > m || v.is_nan() || m.is_nan() {
                    m = if m.is_nan() { m } else { v };
                }
            }
            if m.is_nan() {
                for i in 0..n {
                    *dst.add(i) = f32::NAN;
                }
                return;
            }
            // a row of -inf: exp(x - m) would be NaN; PyTorch gives NaN too.
            let shift = if m == f32::NEG_INFINITY { 0.0 } else { m };
            let mut acc = [0.0f32; 16];
            let out = std::slice::from_raw_parts_mut(dst, n);
            if log {
                for i in 0..n {
                    acc[i % 16] += math::exp(*src.add(i) - shift);
                }
                let lse = math::ln(acc.iter().sum::<f32>()) + shift;
                for (i, o) in out.iter_mut().enumerate() {
                    *o = *src.add(i) - lse;
                }
            } else {
                let mut chunks = out.chunks_exact_mut(16);
                let mut base = 0;
                for c in &mut chunks {
                    for j in 0..16 {
                        let e = math::exp(*src.add(base + j) - shift);
                        c[j] = e;
                        acc[j] += e;
                    }
                    base += 16;
                }
                let mut s: f32 = acc.iter().sum();
                for (j, c) in chunks.into_remainder().iter_mut().enumerate() {
                    let e = math::exp(*src.add(base + j) - shift);
                    *c = e;
                    s += e;
                }
                let inv = 1.0 / s;
                for v in out.iter_mut() {
                    *v *= inv;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

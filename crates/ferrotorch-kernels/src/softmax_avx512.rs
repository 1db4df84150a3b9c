//! The AVX-512 form of softmax's finishing passes (`exp(x - max)` stored
//! and summed, then scaled), used by both softmax row functions on CPUs at
//! [`Level::Avx512`](crate::cpu::Level::Avx512).
//!
//! # Note [Softmax exp with vscalefps]
//! `e^x = 2^n · e^r` with `n = round(x·log₂e)`: the portable
//! [`math::exp_nonpos`](crate::math::exp_nonpos) builds `2^n` from the
//! integer bits and scales with an FMA (three integer operations and a
//! clamp at -88 so the bits stay a normal float); `vscalefps` scales
//! `1 + m` by `2^n` in one instruction and rounds a subnormal result
//! once, so the clamp can sit at -110, below where every result is 0.
//! With the sum kept in two registers in the same loop (AVX-512 has the
//! registers for it, where AVX2 spills), the row takes 0.33 ns an element
//! instead of 0.38 (one thread, L1, Zen 4). The results are the portable
//! path's to 1 ulp in the normal range (`n` comes from a product rounded
//! before it is rounded to an integer), and correctly rounded subnormals
//! where the portable path flushes below 2^-126 · e^-0.3. Both softmax row
//! functions use it, so compiled row kernels still give eager's values.

#[cfg(target_arch = "x86_64")]
use crate::avx512::{expm1_reduced, lanes};
#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

/// `e^(x - m)` on 16 lanes for `x - m <= 0` or -inf (Note [Softmax exp
/// with vscalefps]).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,fma")]
unsafe fn exp_shifted(x: __m512, m: __m512) -> __m512 {
    let x = _mm512_max_ps(_mm512_sub_ps(x, m), _mm512_set1_ps(-110.0));
    let n = _mm512_roundscale_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(
        _mm512_mul_ps(x, _mm512_set1_ps(std::f32::consts::LOG2_E)),
    );
    let r = _mm512_fmadd_ps(n, _mm512_set1_ps(-crate::math::LN2_HI), x);
    let r = _mm512_fmadd_ps(n, _mm512_set1_ps(-crate::math::LN2_LO), r);
    let p = _mm512_add_ps(expm1_reduced(r), _mm512_set1_ps(1.0));
    _mm512_scalef_ps(p, n)
}

/// `dst = softmax` of a row whose maximum `m` is finite: `exp(src - m)`
/// stored in `dst` and summed, then `dst` scaled by the sum's reciprocal.
///
/// # Safety
/// The CPU has AVX-512F; `src` and `dst` hold `n` values each and are
/// the same row or do not overlap.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,fma")]
pub(crate) unsafe fn exp_sum_scale(src: *const f32, dst: *mut f32, n: usize, m: f32) {
    unsafe {
        let vm = _mm512_set1_ps(m);
        let (mut a0, mut a1) = (_mm512_setzero_ps(), _mm512_setzero_ps());
        let mut i = 0;
        while i + 32 <= n {
            // each block is read before it is written: in place is fine
            let y0 = exp_shifted(_mm512_loadu_ps(src.add(i)), vm);
            let y1 = exp_shifted(_mm512_loadu_ps(src.add(i + 16)), vm);
            _mm512_storeu_ps(dst.add(i), y0);
            _mm512_storeu_ps(dst.add(i + 16), y1);
            a0 = _mm512_add_ps(a0, y0);
            a1 = _mm512_add_ps(a1, y1);
            i += 32;
        }
        while i < n {
            let k = lanes(n - i);
            let y = exp_shifted(_mm512_maskz_loadu_ps(k, src.add(i)), vm);
            _mm512_mask_storeu_ps(dst.add(i), k, y);
            a0 = _mm512_mask_add_ps(a0, k, a0, y);
            i += 16;
        }
        let inv = _mm512_set1_ps(1.0 / _mm512_reduce_add_ps(_mm512_add_ps(a0, a1)));
        let mut i = 0;
        while i < n {
            let k = lanes(n - i);
            let v = _mm512_maskz_loadu_ps(k, dst.add(i));
            _mm512_mask_storeu_ps(dst.add(i), k, _mm512_mul_ps(v, inv));
            i += 16;
        }
    }
}

/// [`exp_sum_scale`] where the CPU runs AVX-512 loops (`true`), else
/// nothing (`false`: the caller runs its portable passes).
///
/// # Safety
/// As [`exp_sum_scale`]'s, less the CPU requirement.
pub(crate) unsafe fn try_exp_sum_scale(src: *const f32, dst: *mut f32, n: usize, m: f32) -> bool {
    #[cfg(target_arch = "x86_64")]
    if crate::cpu::level() == crate::cpu::Level::Avx512 {
        // SAFETY: the level says the CPU has AVX-512F; the rest is the caller's.
        unsafe { exp_sum_scale(src, dst, n, m) };
        return true;
    }
    let _ = (src, dst, n, m);
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Softmax in f64 of `x` (finite maximum), from the f32 differences
    /// `x - max` both paths start from.
    fn reference(x: &[f32]) -> Vec<f64> {
        let m = x.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b));
        let e: Vec<f64> = x.iter().map(|&v| ((v - m) as f64).exp()).collect();
        let s: f64 = e.iter().sum();
        e.iter().map(|v| v / s).collect()
    }

    #[test]
    fn rows_match_f64_in_place_and_apart() {
        let mut row = vec![0.0f32; 0];
        // SAFETY (all calls): the vectors hold n values.
        assert!(
            !unsafe { try_exp_sum_scale(row.as_ptr(), row.as_mut_ptr(), 0, 0.0) } || row.is_empty()
        );
        for n in 1..80usize {
            let x: Vec<f32> = (0..n)
                .map(|i| match i % 11 {
                    3 => f32::NEG_INFINITY,
                    7 => -95.0, // a subnormal result
                    _ => ((i * 7919) % 997) as f32 * 0.05 - 25.0,
                })
                .collect();
            let m = x.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b));
            let want = reference(&x);
            let mut apart = vec![7.0f32; n];
            let mut inplace = x.clone();
            let ran = unsafe { try_exp_sum_scale(x.as_ptr(), apart.as_mut_ptr(), n, m) };
            if !ran {
                return; // not an AVX-512 CPU (or a forced lower level)
            }
            unsafe { try_exp_sum_scale(inplace.as_ptr(), inplace.as_mut_ptr(), n, m) };
            assert_eq!(apart, inplace, "n = {n}");
            for (j, (&g, &w)) in apart.iter().zip(&want).enumerate() {
                if x[j] == f32::NEG_INFINITY {
                    assert_eq!(g, 0.0);
                } else if w >= f32::MIN_POSITIVE as f64 {
                    assert!(
                        ((g as f64) - w).abs() <= 4.0 * f32::EPSILON as f64 * w,
                        "n={n} j={j}: {g} vs {w}"
                    );
                } else {
                    // subnormal: within a few of its steps
                    assert!(
                        ((g as f64) - w).abs() <= 4.0 * f32::from_bits(1) as f64,
                        "n={n} j={j}"
                    );
                }
            }
        }
    }

    #[test]
    fn exp_is_within_an_ulp_of_the_portable_one() {
        let n = 4096;
        let x: Vec<f32> = (0..n).map(|i| -87.0 * i as f32 / n as f32).collect();
        let mut y = vec![0.0f32; n];
        // the row maximum is 0: the stored values before scaling are e^x
        #[cfg(target_arch = "x86_64")]
        if crate::cpu::level() == crate::cpu::Level::Avx512 {
            unsafe {
                let m = _mm512_set1_ps(0.0);
                for i in (0..n).step_by(16) {
                    _mm512_storeu_ps(
                        y.as_mut_ptr().add(i),
                        exp_shifted(_mm512_loadu_ps(x.as_ptr().add(i)), m),
                    );
                }
            }
            for (&v, &e) in x.iter().zip(&y) {
                let p = crate::math::exp_nonpos(v);
                assert!(
                    (e.to_bits() as i64 - p.to_bits() as i64).abs() <= 1,
                    "x = {v}: {e} vs {p}"
                );
            }
        }
    }
}

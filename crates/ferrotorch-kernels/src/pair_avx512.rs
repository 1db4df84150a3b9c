//! Sigmoid and tanh of one slice together ([`math::sigmoid_tanh`] over
//! every element), as AVX-512 code written out.
//!
//! # Note [The paired sigmoid/tanh in intrinsics]
//! LLVM vectorises [`math::sigmoid_tanh`] well, but as written it takes 36
//! instructions per 16 lanes where 30 do: the clamp at -88 becomes a
//! compare and a masked load instead of one `vmaxps` (NaN must survive it,
//! and `vmaxps` returns its second operand for a NaN), the tanh's
//! numerator is negated before its product, copysign needs the magnitude
//! mask and the scale's exponent bias is a second integer add. This loop
//! is the same operations in the same order otherwise — the same
//! roundings, so the same bits as the scalar function for every input
//! (tested over the special values and a dense sweep) — and 11 % faster
//! (Zen 4, one thread, L1: 0.43 → 0.385 ns an element). Removing a
//! division entirely saved only 0.02 ns more: the pair is bound by its
//! count of floating-point operations, not by the divider.

use crate::math;

#[cfg(target_arch = "x86_64")]
use crate::avx512::{expm1_reduced, lanes};
#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

/// 16 lanes of `math::sigmoid_tanh`.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx512f,avx512dq,fma")]
fn pair(x: __m512) -> (__m512, __m512) {
    let k = _mm512_set1_ps;
    let sign = _mm512_set1_epi32(i32::MIN);
    // -|x|, clamped at -88 (a NaN stays: vmaxps returns its second operand)
    let a = _mm512_or_ps(x, _mm512_castsi512_ps(sign));
    let a = _mm512_max_ps(k(-88.0), a);
    // math::nonpos_parts: n = round(a·log2 e), r = a - n·ln 2 in two parts
    let t = _mm512_fmadd_ps(a, k(math::LOG2E), k(math::ROUND_MAGIC));
    let n = _mm512_sub_ps(t, k(math::ROUND_MAGIC));
    let r = _mm512_fnmadd_ps(n, k(math::LN2_HI), a);
    let r = _mm512_fnmadd_ps(n, k(math::LN2_LO), r);
    // math::expm1_reduced, the same operations in the same order
    let m = expm1_reduced(r);
    // 2^n: (bits(t) - bits(magic) + 127) << 23, the two integer steps one
    let bias = math::ROUND_MAGIC.to_bits() as i32 - 127;
    let biased = _mm512_sub_epi32(_mm512_castps_si512(t), _mm512_set1_epi32(bias));
    let s = _mm512_castsi512_ps(_mm512_slli_epi32::<23>(biased));
    let e = _mm512_fmadd_ps(m, s, s);
    let e_m1 = _mm512_fmadd_ps(m, s, _mm512_sub_ps(s, k(1.0)));
    let one_e = _mm512_add_ps(e, k(1.0));
    let pos = _mm512_cmp_ps_mask::<_CMP_GE_OQ>(x, _mm512_setzero_ps());
    let sg = _mm512_div_ps(_mm512_mask_blend_ps(pos, e, k(1.0)), one_e);
    // (e - 1)(1 + e) / (e² + 1) is -tanh|x| exactly: copysign takes only
    // its magnitude, so the negation is not needed
    let th = _mm512_div_ps(_mm512_mul_ps(e_m1, one_e), _mm512_fmadd_ps(e, e, k(1.0)));
    // copysign(th, x): bits of x where the sign mask is set, else th's
    let th =
        _mm512_ternarylogic_epi32::<0xd8>(_mm512_castps_si512(th), _mm512_castps_si512(x), sign);
    (sg, _mm512_castsi512_ps(th))
}

/// The AVX-512 loop: full vectors with plain loads and stores, then the
/// tail with masks (masked stores on every block cost Zen 4 the whole
/// gain over LLVM's loop: 0.43 against 0.385 ns an element).
///
/// # Safety
/// `n` elements at each pointer; the CPU has AVX-512 (`cpu::Level::Avx512`).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,fma")]
unsafe fn slice_avx512(n: usize, src: *const f32, sig: *mut f32, tanh: *mut f32) {
    let mut i = 0;
    // SAFETY: lanes i..i+16 lie within the n elements the caller passes
    unsafe {
        while i + 16 <= n {
            let (s, t) = pair(_mm512_loadu_ps(src.add(i)));
            _mm512_storeu_ps(sig.add(i), s);
            _mm512_storeu_ps(tanh.add(i), t);
            i += 16;
        }
        if i < n {
            let k = lanes(n - i);
            let (s, t) = pair(_mm512_maskz_loadu_ps(k, src.add(i)));
            _mm512_mask_storeu_ps(sig.add(i), k, s);
            _mm512_mask_storeu_ps(tanh.add(i), k, t);
        }
    }
}

/// `sig[i], tanh[i] = math::sigmoid_tanh(src[i])` for `i < n`: the
/// written-out AVX-512 loop where the CPU has it (Note [The paired
/// sigmoid/tanh in intrinsics]), the vectorised scalar function elsewhere;
/// the same bits either way.
///
/// # Safety
/// `n` readable elements at `src`, `n` writable at `sig` and `tanh`; the
/// outputs do not overlap each other (either may be `src`).
pub unsafe fn sigmoid_tanh_slice(n: usize, src: *const f32, sig: *mut f32, tanh: *mut f32) {
    #[cfg(target_arch = "x86_64")]
    if crate::cpu::level() == crate::cpu::Level::Avx512 {
        // SAFETY: the CPU has AVX-512; the caller's pointers
        unsafe { slice_avx512(n, src, sig, tanh) };
        return;
    }
    // SAFETY: the caller's pointers
    unsafe { crate::simd::map1x2(n, src, sig, tanh, math::sigmoid_tanh) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_bits_as_the_scalar_pair() {
        let mut x = vec![
            f32::NAN,
            -f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            0.0,
            -0.0,
            1e-30,
            -1e-30,
            f32::from_bits(1),
            -f32::from_bits(1),
            88.0,
            -88.0,
            -87.5,
            87.5,
            -100.0,
            100.0,
            9.0,
            -9.0,
            f32::MAX,
            f32::MIN,
        ];
        for i in 0..100_003 {
            x.push((i as f32 * 0.00137).sin() * 30.0 + i as f32 * 1e-7);
        }
        // every tail length too
        for n in [0, 1, 7, 15, 16, 17, 31, 33, x.len()] {
            let (mut s, mut t) = (vec![7.0f32; n], vec![7.0f32; n]);
            unsafe { sigmoid_tanh_slice(n, x.as_ptr(), s.as_mut_ptr(), t.as_mut_ptr()) };
            for i in 0..n {
                let (ws, wt) = math::sigmoid_tanh(x[i]);
                let same =
                    |a: f32, b: f32| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
                assert!(same(s[i], ws), "sigmoid({}) = {} not {}", x[i], s[i], ws);
                assert!(same(t[i], wt), "tanh({}) = {} not {}", x[i], t[i], wt);
            }
        }
    }

    #[test]
    fn in_place_over_the_input() {
        let x: Vec<f32> = (0..50).map(|i| i as f32 * 0.3 - 7.0).collect();
        let (mut s, mut t) = (x.clone(), vec![0.0f32; 50]);
        unsafe { sigmoid_tanh_slice(50, s.as_ptr(), s.as_mut_ptr(), t.as_mut_ptr()) };
        for i in 0..50 {
            let (ws, wt) = math::sigmoid_tanh(x[i]);
            assert_eq!((s[i], t[i]), (ws, wt));
        }
    }
}

//! Pieces shared by the AVX-512 loops written in intrinsics
//! (`softmax_avx512`, `pair_avx512`): `math`'s exp polynomial on 16 lanes
//! (the same operations in the same order, so the same bits) and the mask
//! of a row's last, partial block.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

/// The reduced polynomial of [`crate::math`]'s `expm1_reduced`, on 16
/// lanes: `e^r - 1` for `|r| <= ln2 / 2`, in Estrin's form.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx512f,fma")]
pub(crate) fn expm1_reduced(r: __m512) -> __m512 {
    let r2 = _mm512_mul_ps(r, r);
    let r4 = _mm512_mul_ps(r2, r2);
    let c = crate::math::EXPM1_REDUCED;
    let k = |v: f32| _mm512_set1_ps(v);
    let q0 = _mm512_fmadd_ps(r, k(c[1]), k(c[0]));
    let q1 = _mm512_fmadd_ps(r, k(c[3]), k(c[2]));
    let p = _mm512_fmadd_ps(r4, k(c[4]), _mm512_fmadd_ps(r2, q1, q0));
    _mm512_fmadd_ps(p, r2, r)
}

/// The lanes of a 16-wide block holding `left` (> 0) remaining values.
#[cfg(target_arch = "x86_64")]
#[inline]
pub(crate) fn lanes(left: usize) -> __mmask16 {
    if left >= 16 {
        0xffff
    } else {
        (1u16 << left) - 1
    }
}

//! Branch-free f32 approximations that vectorise when inlined into a loop.
//!
//! Every function here is `#[inline(always)]`, uses only arithmetic, bit
//! casts and selects (no table look-ups, no calls), and handles NaN, ±inf,
//! overflow and underflow with selects at the end. Accuracy is a few ulp over
//! the whole range; the tests compare against f64 `std` on dense grids.
//! See Note [Multiversioned loops] in `simd.rs` for how they get vectorised.

pub(crate) const LOG2E: f32 = std::f32::consts::LOG2_E;
pub(crate) const LN2_HI: f32 = 0.693_359_4;
pub(crate) const LN2_LO: f32 = -2.121_944_4e-4;
/// 1.5 * 2^23: adding it rounds an f32 in (-2^22, 2^22) to an integer, which
/// can then be read back from the low mantissa bits.
pub(crate) const ROUND_MAGIC: f32 = 12_582_912.0;

#[inline(always)]
fn select(c: bool, a: f32, b: f32) -> f32 {
    if c {
        a
    } else {
        b
    }
}

/// 2^n for an integer n in [-252, 254] given as i32, via two exact scalings
/// so subnormal results are produced correctly.
#[inline(always)]
fn pow2i(n: i32) -> (f32, f32) {
    let n1 = n >> 1;
    let n2 = n - n1;
    (
        f32::from_bits(((n1 + 127) as u32) << 23),
        f32::from_bits(((n2 + 127) as u32) << 23),
    )
}

/// e^x with about 1 ulp error; NaN → NaN, overflow → inf, underflow → 0
/// (through the subnormal range).
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    // exp_split(x, 0.0) without the correction: `+ 0.0` does not fold
    // (it turns -0.0 into +0.0), so the split form costs three more adds.
    let xc = x.clamp(-104.0, 89.0);
    let t = xc.mul_add(LOG2E, ROUND_MAGIC);
    let n = t - ROUND_MAGIC;
    let ni = (t.to_bits() as i32).wrapping_sub(ROUND_MAGIC.to_bits() as i32);
    let r = n.mul_add(-LN2_HI, xc);
    let r = n.mul_add(-LN2_LO, r);
    let (s1, s2) = pow2i(ni);
    let y = scale(expm1_reduced(r), s1) * s2;
    // NaN needs no select of its own: it stays NaN through the clamp, the
    // polynomial and the scaling, and fails both comparisons.
    let y = select(x > 88.722_84, f32::INFINITY, y);
    select(x < -103.972_08, 0.0, y)
}

/// e^r - 1 for |r| <= ln(2)/2: the polynomial the exps share. They finish
/// with [`scale`], which adds the 1 and scales in one rounding (and one
/// step of the dependency chain instead of an add then a multiply).
///
/// `r + r²·Q(r)` with Q of degree 4, a weighted minimax fit
/// (`tools/fit_expm1.py`: 2^-28 relative to e^r, far below f32's
/// rounding). It was Cephes' degree 5 until session 31: one FMA fewer of
/// the exps' twelve, 5–8 % off the exp, `exp_nonpos` and sigmoid loops
/// (AVX-512, L1), and no less accurate (`exp` 0.703 ulp at most over
/// 2M points of [-87, 88.7], against 0.717).
#[inline(always)]
fn expm1_reduced(r: f32) -> f32 {
    // Estrin's scheme: two independent pairs, then r² and r⁴, so the
    // chain of dependent operations is 4 deep instead of Horner's 5.
    let c = EXPM1_REDUCED;
    let r2 = r * r;
    let r4 = r2 * r2;
    let q0 = r.mul_add(c[1], c[0]);
    let q1 = r.mul_add(c[3], c[2]);
    let p = r4.mul_add(c[4], r2.mul_add(q1, q0));
    p.mul_add(r2, r)
}

/// The coefficients of [`expm1_reduced`]'s `(e^r - 1 - r) / r²` in powers
/// of `r`, shared with the AVX-512 softmax (`softmax_avx512`).
pub(crate) const EXPM1_REDUCED: [f32; 5] = [
    0.499_999_94,
    0.166_665_21,
    0.041_668_39,
    0.008_368_745,
    0.001_381_453_9,
];

/// `s·(1 + m)` for `m` = [`expm1_reduced`] and a power of two `s`: one FMA.
#[inline(always)]
fn scale(m: f32, s: f32) -> f32 {
    m.mul_add(s, s)
}

/// e^x for x <= 0 (not NaN). About half the work of [`exp`]: no overflow
/// or NaN handling and one exact power-of-two scaling. Softmax and
/// logsumexp use it on `x - max`, where those cases cannot occur. Below
/// f32's normal range (x < -87.34) the scaling's FMA gives the subnormal
/// down to x = -126.5·ln 2 (-87.68), and 0 below: there, and for every
/// input clamped to -88, n = -127 and the scale 2^n's bits are all zero,
/// so no select is needed.
#[inline(always)]
pub fn exp_nonpos(x: f32) -> f32 {
    exp_nonpos_clamped(x.max(-88.0))
}

/// [`exp_nonpos`] that keeps a NaN argument NaN (the clamp is a compare
/// a NaN fails, where `f32::max` would turn it into -88 and the result 0).
#[inline(always)]
pub fn exp_nonpos_keep_nan(x: f32) -> f32 {
    exp_nonpos_clamped(if x < -88.0 { -88.0 } else { x })
}

/// [`exp_nonpos`] of an argument already clamped to [-88, 0].
#[inline(always)]
pub fn exp_nonpos_clamped(xc: f32) -> f32 {
    let (m, s) = nonpos_parts(xc);
    scale(m, s)
}

/// e^xc for `xc` in [-88, 0] as `s·(1 + m)`: `m` the reduced polynomial
/// ([`expm1_reduced`]) and `s` its power of two (0 below 2^-126).
#[inline(always)]
fn nonpos_parts(xc: f32) -> (f32, f32) {
    let t = xc.mul_add(LOG2E, ROUND_MAGIC);
    let n = t - ROUND_MAGIC;
    let ni = (t.to_bits() as i32).wrapping_sub(ROUND_MAGIC.to_bits() as i32);
    let r = n.mul_add(-LN2_HI, xc);
    let r = n.mul_add(-LN2_LO, r);
    (expm1_reduced(r), f32::from_bits(((ni + 127) as u32) << 23))
}

/// e^(a+b) for a small correction `b` (|b| well below 1), without first
/// rounding `a + b`: lets callers pass an exact hi/lo split of the exponent.
#[inline(always)]
fn exp_split(a: f32, b: f32) -> f32 {
    let x = a + b;
    let ac = a.clamp(-104.0, 89.0);
    let t = (ac + b).mul_add(LOG2E, ROUND_MAGIC);
    let n = t - ROUND_MAGIC;
    let ni = (t.to_bits() as i32).wrapping_sub(ROUND_MAGIC.to_bits() as i32);
    let r = n.mul_add(-LN2_HI, ac);
    let r = n.mul_add(-LN2_LO, r) + b;
    let (s1, s2) = pow2i(ni);
    let y = scale(expm1_reduced(r), s1) * s2;
    let y = select(x > 88.722_84, f32::INFINITY, y);
    let y = select(x < -103.972_08, 0.0, y);
    select(x.is_nan(), x, y)
}

/// e^x - 1, accurate near zero (Taylor series below |x| < 0.5, `exp` above).
#[inline(always)]
pub fn expm1(x: f32) -> f32 {
    // Taylor to x^9/9!: relative error < 1e-8 for |x| < 0.5.
    let mut p = 1.0 / 362_880.0_f32;
    p = p.mul_add(x, 1.0 / 40_320.0);
    p = p.mul_add(x, 1.0 / 5_040.0);
    p = p.mul_add(x, 1.0 / 720.0);
    p = p.mul_add(x, 1.0 / 120.0);
    p = p.mul_add(x, 1.0 / 24.0);
    p = p.mul_add(x, 1.0 / 6.0);
    p = p.mul_add(x, 0.5);
    let small = (p * x).mul_add(x, x);
    let big = exp(x) - 1.0;
    select(x.abs() < 0.5, small, big)
}

/// tanh(x) as `x·P(x²)/Q(x²)` on |x| ≤ 7.905 (a rational fit, degree 5/3
/// in x², found by iteratively reweighted least squares on relative error;
/// ≤ 6 ulp), ±1 beyond, where tanh rounds to ±1 in f32 anyway. One
/// division and nine FMAs, no exp.
#[inline(always)]
pub fn tanh(x: f32) -> f32 {
    const LIM: f32 = 7.905_311;
    let c = x.clamp(-LIM, LIM);
    let z = c * c;
    let mut p = 2.429_206_3e-11_f32;
    p = p.mul_add(z, -1.497_951_6e-8);
    p = p.mul_add(z, 9.964_016e-6);
    p = p.mul_add(z, 2.994_869e-3);
    p = p.mul_add(z, 1.298_751_4e-1);
    p = p.mul_add(z, 1.0);
    let mut q = 2.384_665_9e-4_f32;
    q = q.mul_add(z, 2.406_451_5e-2);
    q = q.mul_add(z, 4.632_083_8e-1);
    q = q.mul_add(z, 1.0);
    let y = c * p / q;
    let y = select(x.abs() > 9.0, 1.0f32.copysign(x), y);
    select(x.is_nan(), x, y)
}

/// 1 / (1 + e^{-x}), from `e = e^{-|x|}`: `1 / (1 + e)` for x ≥ 0 and
/// `e / (1 + e)` below, one division either way. As `e` is at most 1 it
/// needs [`exp_nonpos`]'s work only (no overflow handling, one scaling
/// instead of two): 11 % faster than `1 / (1 + exp(-x))` (AVX-512, L1),
/// and closer: at most 2.3 ulp over the normal range, against 2.5.
/// Subnormal results go to 0 by x = -87.7, as [`exp_nonpos`]'s do (the
/// old form kept them to -88.7, and gave 0 below); NaN stays NaN.
#[inline(always)]
pub fn sigmoid(x: f32) -> f32 {
    let a = -x.abs();
    let e = exp_nonpos_keep_nan(a);
    select(x >= 0.0, 1.0, e) / (1.0 + e)
}

/// `(sigmoid(x), tanh(x))` from one exponential, for fused kernels that
/// need both of one value (W9's `x·sigmoid(x)·0.5 + tanh(x)`); see Note
/// [Paired transcendentals] in `ferrotorch-codegen`'s `blocked.rs`.
///
/// With `e = e^{-|x|} = s·(1 + m)` as [`sigmoid`] makes it, the sigmoid
/// is [`sigmoid`]'s, bit for bit. `tanh|x| = (1 - e²)/(1 + e²)`, with the
/// numerator as `-(e - 1)·(1 + e)` and `e - 1 = s·m + (s - 1)` from the
/// same polynomial (one rounding; `s - 1` is exact), so it keeps its
/// relative accuracy near 0 where `1 - e²` would cancel. At most 3.3 ulp
/// from f64 over every f32 (the rational [`tanh`] is 5.4), ±1 and ±0
/// where tanh is, NaN kept. 23–29 % cheaper than the two functions
/// (AVX-512, L1): the tanh costs three multiply-class operations and a
/// division over the sigmoid instead of ten and a division.
#[inline(always)]
pub fn sigmoid_tanh(x: f32) -> (f32, f32) {
    let a = -x.abs();
    let (m, s) = nonpos_parts(if a < -88.0 { -88.0 } else { a });
    let e = scale(m, s);
    let e_m1 = m.mul_add(s, s - 1.0);
    let one_e = 1.0 + e;
    let sg = select(x >= 0.0, 1.0, e) / one_e;
    let th = (-e_m1 * one_e) / e.mul_add(e, 1.0);
    (sg, th.copysign(x))
}

pub use crate::pair_avx512::sigmoid_tanh_slice;

/// erfc for z >= 0 with relative error below 1.2e-7 (Chebyshev fit, as in
/// Numerical Recipes' `erfcc`).
#[inline(always)]
fn erfc_pos(z: f32) -> f32 {
    // erfc is 0 in f32 from z = 10.06 on; the cap keeps z = inf from
    // making inf - inf in the split below (callers select NaN themselves)
    let z = z.min(12.0);
    // z*z split exactly into hi + lo so that large z keep full precision.
    let hi = z * z;
    erfc_core(z, hi, z.mul_add(z, -hi))
}

/// erfc(z) for z >= 0 given z² as an unrounded sum `zz_hi + zz_lo`.
#[inline(always)]
fn erfc_core(z: f32, zz_hi: f32, zz_lo: f32) -> f32 {
    let t = 1.0 / z.mul_add(0.5, 1.0);
    let mut p = 0.170_872_77_f32;
    p = p.mul_add(t, -0.822_152_23);
    p = p.mul_add(t, 1.488_515_9);
    p = p.mul_add(t, -1.135_204);
    p = p.mul_add(t, 0.278_868_07);
    p = p.mul_add(t, -0.186_288_06);
    p = p.mul_add(t, 0.096_784_18);
    p = p.mul_add(t, 0.374_091_96);
    p = p.mul_add(t, 1.000_023_7);
    p = p.mul_add(t, -1.265_512_2);
    t * exp_split(-zz_hi, p - zz_lo)
}

/// Complementary error function.
#[inline(always)]
pub fn erfc(x: f32) -> f32 {
    let a = x.abs();
    let e = erfc_pos(a);
    let y = select(x < 0.0, 2.0 - e, e);
    select(x.is_nan(), x, y)
}

/// Error function: Taylor series for |x| < 0.75, `1 - erfc` above.
#[inline(always)]
pub fn erf(x: f32) -> f32 {
    let z = x * x;
    // erf x = 2/sqrt(pi) * sum (-1)^n x^(2n+1) / (n! (2n+1))
    let mut p = 1.0 / (5040.0 * 15.0_f32);
    p = p.mul_add(-z, 1.0 / (720.0 * 13.0));
    p = p.mul_add(-z, 1.0 / (120.0 * 11.0));
    p = p.mul_add(-z, 1.0 / (24.0 * 9.0));
    p = p.mul_add(-z, 1.0 / (6.0 * 7.0));
    p = p.mul_add(-z, 1.0 / (2.0 * 5.0));
    p = p.mul_add(-z, 1.0 / 3.0);
    p = p.mul_add(-z, 1.0);
    let small = std::f32::consts::FRAC_2_SQRT_PI * x * p;
    let big = (1.0 - erfc_pos(x.abs())).copysign(x);
    let y = select(x.abs() < 0.75, small, big);
    select(x.is_nan(), x, y)
}

/// GELU with the exact (erf) form: `x/2 * erfc(-x/sqrt 2)`, accurate in the
/// negative tail too.
#[inline(always)]
pub fn gelu(x: f32) -> f32 {
    // erfc(-x/sqrt2) with (x/sqrt2)^2 = x^2/2 taken exactly from x, since
    // rounding x/sqrt2 first costs ~100 ulp in the far negative tail. Past
    // |x| = 20 erfc is 0 or 2 in f32: the clamp keeps x² finite, so ±inf
    // and huge inputs give x and (x · 0) -0 or NaN, as PyTorch's do.
    let xc = x.clamp(-20.0, 20.0);
    let z = xc.abs() * std::f32::consts::FRAC_1_SQRT_2;
    let hi = xc * xc;
    let lo = xc.mul_add(xc, -hi);
    let e = erfc_core(z, 0.5 * hi, 0.5 * lo);
    let ec = select(x > 0.0, 2.0 - e, e);
    let y = 0.5 * x * ec;
    select(x.is_nan(), x, y)
}

/// `g · gelu'(x)` for the exact GELU: `g·(Φ(x) + x·φ(x))`. An
/// `#[inline(always)]` fn item, not a closure, so a multiversioned loop
/// inlines it and compiles its FMAs for the CPU (a closure left out of
/// line is compiled for baseline x86-64, where `mul_add` is a libm call:
/// 50x slower).
#[inline(always)]
pub fn gelu_backward(g: f32, x: f32) -> f32 {
    const RSQRT_2PI: f32 = 0.398_942_3;
    let cdf = 0.5 * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2));
    let pdf = exp_nonpos(-0.5 * (x * x)) * RSQRT_2PI;
    g * x.mul_add(pdf, cdf)
}

/// `g · gelu_tanh'(x)`: `g·(½(1 + t) + ½x(1 - t²)·k(1 + 3·0.044715x²))`
/// with `t = tanh(k(x + 0.044715x³))`, `k = √(2/π)`. As [`gelu_backward`].
#[inline(always)]
pub fn gelu_tanh_backward(g: f32, x: f32) -> f32 {
    const K: f32 = 0.797_884_6;
    let x2 = x * x;
    let t = tanh(K * (0.044715 * x2).mul_add(x, x));
    let dt = K * (3.0 * 0.044715f32).mul_add(x2, 1.0);
    g * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * dt)
}

/// Below this input [`gelu_fast`] loses relative accuracy; use [`gelu`].
pub const GELU_FAST_MIN: f32 = -3.0;
/// Above this input [`gelu_fast`]'s rational erf leaves its fitted range.
pub const GELU_FAST_MAX: f32 = 5.5;

/// Whether [`gelu_fast`] is accurate at `x`: `GELU_FAST_MIN <= x <=
/// GELU_FAST_MAX` (false for NaN).
#[inline(always)]
pub fn gelu_fast_ok(x: f32) -> bool {
    (GELU_FAST_MIN..=GELU_FAST_MAX).contains(&x)
}

/// erf(z) as z·P(z²)/Q(z²) for |z| <= 3.92 (a 6/4 rational fitted to
/// erf(z)/z on [0, 4], about 5 ulp).
#[inline(always)]
fn erf_rational(z: f32) -> f32 {
    let u = z * z;
    // Estrin's scheme (as in `expm1_reduced`): shorter dependency chains.
    let u2 = u * u;
    let u4 = u2 * u2;
    let p01 = u.mul_add(0.198_737_26, std::f32::consts::FRAC_2_SQRT_PI);
    let p23 = u.mul_add(3.642_791e-3, 5.039_947e-2);
    let p45 = u.mul_add(-1.935_022_3e-6, 1.397_929_6e-4);
    let p46 = u2.mul_add(1.967_784_7e-8, p45);
    let p = u4.mul_add(p46, u2.mul_add(p23, p01));
    let q01 = u.mul_add(0.509_458_5, 1.0);
    let q23 = u.mul_add(1.424_037e-2, 0.114_491_83);
    let q = u4.mul_add(9.397_245_6e-4, u2.mul_add(q23, q01));
    z * p / q
}

/// Exact-form GELU as PyTorch writes it, `x/2 · (1 + erf(x/√2))`, with a
/// rational erf: about a third of the work of [`gelu`], for inputs where
/// [`gelu_fast_ok`] only (callers send the rest, NaN and ±inf included, to
/// [`gelu`]). There its absolute error is below 3e-7·max(1, |x|); below
/// [`GELU_FAST_MIN`], `1 + erf` cancels (as in PyTorch's own kernel).
#[inline(always)]
pub fn gelu_fast(x: f32) -> f32 {
    // x/2 + x/2·erf in one FMA: one rounding and one step fewer in the
    // dependency chain than `x/2 · (1 + erf)`.
    let hx = 0.5 * x;
    hx.mul_add(erf_rational(x * std::f32::consts::FRAC_1_SQRT_2), hx)
}

/// GELU with PyTorch's `approximate='tanh'` form.
#[inline(always)]
pub fn gelu_tanh(x: f32) -> f32 {
    const K: f32 = 0.797_884_6; // sqrt(2/pi)
    let inner = K * x * (0.044_715 * x * x).mul_add(1.0, 1.0);
    0.5 * x * (1.0 + tanh(inner))
}

/// Natural logarithm (Cephes `logf` polynomial); handles 0, negatives,
/// subnormals, inf and NaN.
#[inline(always)]
pub fn ln(x: f32) -> f32 {
    // Scale subnormals into the normal range.
    let sub = x < f32::MIN_POSITIVE;
    let xs = select(sub, x * 8_388_608.0, x);
    let bits = xs.to_bits();
    let mut e = ((bits >> 23) & 0xff) as i32 - 126;
    e = if sub { e - 23 } else { e };
    let mut m = f32::from_bits((bits & 0x807f_ffff) | 0x3f00_0000);
    let lo = m < std::f32::consts::FRAC_1_SQRT_2;
    e = if lo { e - 1 } else { e };
    m = select(lo, m + m - 1.0, m - 1.0);
    let ef = e as f32;
    let z = m * m;
    let mut p = 7.037_683_6e-2_f32;
    p = p.mul_add(m, -1.151_461e-1);
    p = p.mul_add(m, 1.167_699_9e-1);
    p = p.mul_add(m, -1.242_014_1e-1);
    p = p.mul_add(m, 1.424_932_3e-1);
    p = p.mul_add(m, -1.666_805_8e-1);
    p = p.mul_add(m, 2.000_071_4e-1);
    p = p.mul_add(m, -2.499_999_4e-1);
    p = p.mul_add(m, 3.333_333e-1);
    let mut y = p * m * z;
    y = ef.mul_add(LN2_LO, y);
    y = z.mul_add(-0.5, y);
    let r = ef.mul_add(LN2_HI, m + y);
    let r = select(x == f32::INFINITY, f32::INFINITY, r);
    let r = select(x == 0.0, f32::NEG_INFINITY, r);
    select(x < 0.0 || x.is_nan(), f32::NAN, r)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Largest error in ulps of `f` against an f64 reference over a grid.
    fn max_ulp(f: fn(f32) -> f32, r: fn(f64) -> f64, lo: f32, hi: f32, n: usize) -> f64 {
        let mut worst: f64 = 0.0;
        for i in 0..=n {
            let x = lo + (hi - lo) * (i as f32 / n as f32);
            let want = r(x as f64);
            let got = f(x) as f64;
            if want == 0.0 && got == 0.0 {
                continue;
            }
            let ulp = (want.abs() as f32).max(f32::MIN_POSITIVE * 1e-6);
            let ulp = (f32::from_bits(ulp.to_bits() + 1) - ulp) as f64;
            worst = worst.max((got - want).abs() / ulp);
        }
        worst
    }

    fn erf64(x: f64) -> f64 {
        // Reference: high-precision series / continued fraction in f64.
        if x.abs() < 2.5 {
            let mut sum = 0.0;
            let mut term = x;
            let mut n = 0.0;
            while term.abs() > 1e-300 && n < 200.0 {
                sum += term / (2.0 * n + 1.0);
                n += 1.0;
                term *= -x * x / n;
            }
            2.0 / std::f64::consts::PI.sqrt() * sum
        } else {
            x.signum() * (1.0 - erfc64(x.abs()))
        }
    }

    fn erfc64(x: f64) -> f64 {
        if x < 2.5 {
            return 1.0 - erf64(x);
        }
        // Continued fraction (Lentz), converges fast for x >= 2.5.
        let mut f = 0.0;
        for k in (1..200).rev() {
            f = (k as f64 / 2.0) / (x + f);
        }
        (-x * x).exp() / std::f64::consts::PI.sqrt() / (x + f)
    }

    #[test]
    fn exp_nonpos_is_accurate_and_flushes_below_the_normal_range() {
        let u = max_ulp(exp_nonpos, f64::exp, -87.3, 0.0, 200_000);
        assert!(u <= 2.0, "{} ulp", u);
        assert_eq!(exp_nonpos(0.0), 1.0);
        assert_eq!(exp_nonpos(-0.0), 1.0);
        assert_eq!(exp_nonpos(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp_nonpos(-88.0), 0.0);
        assert_eq!(exp_nonpos(-1e30), 0.0);
        assert!(exp_nonpos(-87.3) >= f32::MIN_POSITIVE);
        // the subnormal range: e^x to a few subnormal steps, then 0
        let tiny = f32::from_bits(1) as f64;
        for i in 0..=10_000 {
            let x = -87.3 - 0.7 * (i as f32 / 10_000.0);
            let (y, want) = (exp_nonpos(x) as f64, (x as f64).exp());
            if x > -87.67 {
                assert!((y - want).abs() <= 4.0 * tiny, "x={x} {y} {want}");
            } else if x < -87.69 {
                assert_eq!(y, 0.0, "x={x}");
            }
        }
    }

    #[test]
    fn exp_is_accurate_over_the_full_range() {
        {
            let u = max_ulp(exp, f64::exp, -87.0, 88.7, 200_000);
            assert!(u <= 2.0, "{} ulp", u);
        }
        {
            let u = max_ulp(exp, f64::exp, -1.0, 1.0, 100_000);
            assert!(u <= 2.0, "{} ulp", u);
        }
        assert!(exp(f32::NAN).is_nan());
        assert_eq!(exp(f32::INFINITY), f32::INFINITY);
        assert_eq!(exp(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp(100.0), f32::INFINITY);
        assert_eq!(exp(-200.0), 0.0);
        // subnormal results
        let s = exp(-100.0);
        assert!(
            (s - (-100f64).exp() as f32).abs() <= 2.0 * f32::from_bits(1),
            "{s}"
        );
    }

    #[test]
    fn tanh_sigmoid_expm1_are_accurate() {
        {
            let u = max_ulp(tanh, f64::tanh, -10.0, 10.0, 200_000);
            assert!(u <= 6.0, "{} ulp", u);
        }
        {
            let u = max_ulp(tanh, f64::tanh, -0.01, 0.01, 10_000);
            assert!(u <= 3.0, "{} ulp", u);
        }
        {
            let u = max_ulp(expm1, f64::exp_m1, -3.0, 3.0, 100_000);
            assert!(u <= 3.0, "{} ulp", u);
        }
        {
            let u = max_ulp(sigmoid, |x| 1.0 / (1.0 + (-x).exp()), -80.0, 80.0, 100_000);
            assert!(u <= 2.5, "{} ulp", u);
        }
        {
            let u = max_ulp(sigmoid, |x| 1.0 / (1.0 + (-x).exp()), -87.3, 30.0, 200_000);
            assert!(u <= 2.5, "{} ulp", u);
        }
        assert_eq!(sigmoid(0.0), 0.5);
        assert_eq!(sigmoid(-0.0), 0.5);
        assert_eq!(sigmoid(f32::INFINITY), 1.0);
        assert_eq!(sigmoid(f32::NEG_INFINITY), 0.0);
        assert_eq!(sigmoid(100.0), 1.0);
        assert_eq!(sigmoid(-100.0), 0.0);
        assert!(sigmoid(f32::NAN).is_nan());
        assert!(sigmoid(-f32::NAN).is_nan());
        assert_eq!(tanh(f32::INFINITY), 1.0);
        assert_eq!(tanh(f32::NEG_INFINITY), -1.0);
        assert!(tanh(f32::NAN).is_nan());
        assert_eq!(tanh(-0.0).to_bits(), (-0.0f32).to_bits());
    }

    #[test]
    fn sigmoid_tanh_shares_one_exponential() {
        // the sigmoid is `sigmoid`'s to the bit; the tanh within 3.5 ulp of
        // f64 (3.3 over every f32, checked once with a full sweep)
        let t = |x: f32| sigmoid_tanh(x).1;
        for (lo, hi) in [(-10.0, 10.0), (-0.01, 0.01), (-1e-30, 1e-30), (0.3, 0.4)] {
            let u = max_ulp(t, f64::tanh, lo, hi, 200_000);
            assert!(u <= 3.5, "[{lo}, {hi}]: {u} ulp");
        }
        for i in 0..=400_000 {
            let x = -100.0 + 200.0 * (i as f32 / 400_000.0);
            assert_eq!(sigmoid_tanh(x).0.to_bits(), sigmoid(x).to_bits(), "{x}");
        }
        for x in [
            0.0f32,
            -0.0,
            1e-40,
            -1e-40,
            f32::MIN_POSITIVE,
            12.0,
            -12.0,
            88.0,
            -88.5,
            -104.0,
            f32::MAX,
            f32::MIN,
            f32::INFINITY,
            f32::NEG_INFINITY,
        ] {
            let (sg, th) = sigmoid_tanh(x);
            assert_eq!(sg.to_bits(), sigmoid(x).to_bits(), "{x}");
            let want = (x as f64).tanh() as f32;
            assert_eq!(
                th.to_bits(),
                want.to_bits(),
                "tanh({x}) = {th}, want {want}"
            );
        }
        let (sg, th) = sigmoid_tanh(f32::NAN);
        assert!(sg.is_nan() && th.is_nan());
    }

    #[test]
    fn erf_family_is_accurate() {
        {
            let u = max_ulp(erf, erf64, -6.0, 6.0, 100_000);
            assert!(u <= 8.0, "{} ulp", u);
        }
        {
            let u = max_ulp(erf, erf64, -0.01, 0.01, 1000);
            assert!(u <= 2.0, "{} ulp", u);
        }
        {
            let u = max_ulp(erfc, |x| 1.0 - erf64(x), -3.0, 2.4, 100_000);
            assert!(u <= 16.0, "{} ulp", u);
        }
        {
            let u = max_ulp(erfc, erfc64, 2.5, 9.0, 100_000);
            assert!(u <= 16.0, "{} ulp", u);
        }
        // the tails and infinities (erf(inf) was NaN: inf - inf in z²'s split)
        let inf = f32::INFINITY;
        for (x, e, ec) in [
            (inf, 1.0, 0.0),
            (-inf, -1.0, 2.0),
            (30.0, 1.0, 0.0),
            (-11.0, -1.0, 2.0),
        ] {
            assert_eq!((erf(x), erfc(x)), (e, ec), "x = {x}");
        }
        assert!(erf(f32::NAN).is_nan() && erfc(f32::NAN).is_nan());
        let g = |x: f64| 0.5 * x * (1.0 + erf64(x / std::f64::consts::SQRT_2));
        let gneg = |x: f64| 0.5 * x * erfc64(-x / std::f64::consts::SQRT_2);
        {
            let u = max_ulp(gelu, g, -3.0, 8.0, 100_000);
            assert!(u <= 16.0, "{} ulp", u);
        }
        {
            let u = max_ulp(gelu, gneg, -12.0, -3.6, 100_000);
            assert!(u <= 16.0, "{} ulp", u);
        }
    }

    #[test]
    fn gelu_fast_is_close_to_exact_gelu_above_its_threshold() {
        let g = |x: f64| 0.5 * x * (1.0 + erf64(x / std::f64::consts::SQRT_2));
        // relative accuracy where 1 + erf does not cancel
        let u = max_ulp(gelu_fast, g, -0.5, GELU_FAST_MAX, 100_000);
        assert!(u <= 16.0, "{} ulp", u);
        for i in 0..=100_000 {
            let x = GELU_FAST_MIN + (GELU_FAST_MAX - GELU_FAST_MIN) * (i as f32 / 100_000.0);
            assert!(gelu_fast_ok(x));
            let err = (gelu_fast(x) as f64 - g(x as f64)).abs();
            assert!(err <= 3e-7 * (x.abs() as f64).max(1.0), "x={x} err={err}");
        }
        assert_eq!(gelu_fast(0.0), 0.0);
        // the rest goes to `gelu`
        for x in [
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            -3.01,
            5.51,
            1e30,
        ] {
            assert!(!gelu_fast_ok(x), "{x}");
        }
        // PyTorch 2.15: gelu([inf, -inf, nan, -30, 1e30, -1e30]) =
        // [inf, nan, nan, 0, 1e30, 0]
        assert_eq!(gelu(f32::INFINITY), f32::INFINITY);
        assert!(gelu(f32::NEG_INFINITY).is_nan());
        assert!(gelu(f32::NAN).is_nan());
        assert_eq!(gelu(-30.0), 0.0);
        assert_eq!(gelu(1e30), 1e30);
        assert_eq!(gelu(-1e30), 0.0);
    }

    #[test]
    fn ln_is_accurate_and_handles_edges() {
        {
            let u = max_ulp(ln, f64::ln, 1e-30, 10.0, 200_000);
            assert!(u <= 2.0, "{} ulp", u);
        }
        {
            let u = max_ulp(ln, f64::ln, 0.5, 2.0, 100_000);
            assert!(u <= 2.0, "{} ulp", u);
        }
        {
            let u = max_ulp(ln, f64::ln, 10.0, 3e38, 100_000);
            assert!(u <= 2.0, "{} ulp", u);
        }
        assert!((ln(1e-40) as f64 - (1e-40f32 as f64).ln()).abs() < 1e-5);
        assert_eq!(ln(0.0), f32::NEG_INFINITY);
        assert!(ln(-1.0).is_nan());
        assert_eq!(ln(f32::INFINITY), f32::INFINITY);
        assert_eq!(ln(1.0), 0.0);
    }
}

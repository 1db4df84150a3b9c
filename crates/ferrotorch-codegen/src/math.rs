//! f32 transcendentals emitted inline: the same polynomials, constants,
//! FMA placement and special-case selects as `ferrotorch_kernels::math`
//! (see that module for where each comes from), so a compiled kernel
//! agrees with the eager kernel to the bit wherever the eager one uses
//! them, and keeps their ≤ 2 ulp (exp) to ≤ 6 ulp (tanh) bounds. The
//! one exception is a tanh paired with a sigmoid of the same value
//! ([`sigmoid_tanh`], Note [Paired transcendentals] in `blocked.rs`),
//! which follows `math::sigmoid_tanh` instead. Each function works on
//! scalars and vectors alike through [`Em`].

use crate::emit::Em;
use cranelift_codegen::ir::condcodes::FloatCC;
use cranelift_codegen::ir::{InstBuilder, Value};

const LOG2E: f64 = std::f32::consts::LOG2_E as f64;
const LN2_HI: f64 = 0.693_359_4_f32 as f64;
const LN2_LO: f64 = -2.121_944_4e-4_f32 as f64;
const ROUND_MAGIC: f64 = 12_582_912.0;

/// Horner: `((c0·x + c1)·x + c2)…` for coefficients from the highest.
fn horner(em: &mut Em, x: Value, cs: &[f64]) -> Value {
    let mut p = em.c(cs[0]);
    for &c in &cs[1..] {
        let k = em.c(c);
        p = em.fma(p, x, k);
    }
    p
}

/// e^r - 1 for |r| <= ln(2)/2 (Estrin's scheme; `math::expm1_reduced`'s
/// degree-6 fit).
fn expm1_reduced(em: &mut Em, r: Value) -> Value {
    let r2 = em.mul(r, r);
    let r4 = em.mul(r2, r2);
    let q0 = em.fmakk(r, 0.166_665_21_f32 as f64, 0.499_999_94_f32 as f64);
    let q1 = em.fmakk(r, 0.008_368_745_f32 as f64, 0.041_668_39_f32 as f64);
    let inner = em.fma(r2, q1, q0);
    let p = em.fmak(r4, 0.001_381_453_9_f32 as f64, inner);
    em.fma(p, r2, r)
}

/// 2^n as two exact power-of-two factors, for `n` integer lanes.
fn pow2i(em: &mut Em, n: Value) -> (Value, Value) {
    let n1 = em.b.ins().sshr_imm_u(n, 1);
    let n2 = em.b.ins().isub(n, n1);
    let bias = em.ci(127);
    let mut two = |v: Value| {
        let e = em.b.ins().iadd(v, bias);
        let s = em.b.ins().ishl_imm_u(e, 23);
        em.float_of_bits(s)
    };
    (two(n1), two(n2))
}

/// `(n, r, n as integer)` with `x = n·ln2 + r`, from the clamped `xc`
/// and a correction `b` added before rounding.
fn reduce(em: &mut Em, xc: Value, b: Option<Value>) -> (Value, Value) {
    let arg = match b {
        Some(b) => em.add(xc, b),
        None => xc,
    };
    let t = em.fmakk(arg, LOG2E, ROUND_MAGIC);
    let n = em.addk(t, -ROUND_MAGIC);
    let tb = em.bits(t);
    let magic = em.ci(i64::from((ROUND_MAGIC as f32).to_bits() as i32));
    let ni = em.b.ins().isub(tb, magic);
    let r = em.fmak(n, -LN2_HI, xc);
    let r = em.fmak(n, -LN2_LO, r);
    let r = match b {
        Some(b) => em.add(r, b),
        None => r,
    };
    (r, ni)
}

/// `e^x` from the clamped argument `xc` (and a correction `b` added
/// before rounding): the reduction, the polynomial, the scaling, and the
/// overflow and underflow selects on the unclamped `x` that `exp` and
/// `exp_split` share.
fn exp_from(em: &mut Em, x: Value, xc: Value, b: Option<Value>) -> Value {
    let (r, ni) = reduce(em, xc, b);
    let (s1, s2) = pow2i(em, ni);
    let m = expm1_reduced(em, r);
    let y = em.fma(m, s1, s1);
    let y = em.mul(y, s2);
    let over = em.cmpk(FloatCC::GreaterThan, x, 88.722_84_f32 as f64);
    let y = em.selk(over, f64::INFINITY, y);
    let under = em.cmpk(FloatCC::LessThan, x, -103.972_08_f32 as f64);
    em.selk(under, 0.0, y)
}

/// e^x (`math::exp`).
pub(crate) fn exp(em: &mut Em, x: Value) -> Value {
    let xc = em.clampk(x, -104.0, 89.0);
    exp_from(em, x, xc, None)
}

/// e^(a+b) without rounding `a + b` first (`math::exp_split`).
fn exp_split(em: &mut Em, a: Value, b: Value) -> Value {
    let x = em.add(a, b);
    let ac = em.clampk(a, -104.0, 89.0);
    let y = exp_from(em, x, ac, Some(b));
    let nan = em.cmp(FloatCC::Unordered, x, x);
    em.sel(nan, x, y)
}

/// e^x - 1 (`math::expm1`).
pub(crate) fn expm1(em: &mut Em, x: Value) -> Value {
    let cs = [
        (1.0 / 362_880.0_f32) as f64,
        (1.0 / 40_320.0_f32) as f64,
        (1.0 / 5_040.0_f32) as f64,
        (1.0 / 720.0_f32) as f64,
        (1.0 / 120.0_f32) as f64,
        (1.0 / 24.0_f32) as f64,
        (1.0 / 6.0_f32) as f64,
        0.5,
    ];
    let p = horner(em, x, &cs);
    let px = em.mul(p, x);
    let small = em.fma(px, x, x);
    let e = exp(em, x);
    let big = em.addk(e, -1.0);
    let ax = em.abs(x);
    let m = em.cmpk(FloatCC::LessThan, ax, 0.5);
    em.sel(m, small, big)
}

/// tanh x (`math::tanh`).
pub(crate) fn tanh(em: &mut Em, x: Value) -> Value {
    const LIM: f64 = 7.905_311_f32 as f64;
    let c = em.clampk(x, -LIM, LIM);
    let z = em.mul(c, c);
    let p = horner(
        em,
        z,
        &[
            2.429_206_3e-11_f32 as f64,
            -1.497_951_6e-8_f32 as f64,
            9.964_016e-6_f32 as f64,
            2.994_869e-3_f32 as f64,
            1.298_751_4e-1_f32 as f64,
            1.0,
        ],
    );
    let q = horner(
        em,
        z,
        &[
            2.384_665_9e-4_f32 as f64,
            2.406_451_5e-2_f32 as f64,
            4.632_083_8e-1_f32 as f64,
            1.0,
        ],
    );
    let cp = em.mul(c, p);
    let y = em.div(cp, q);
    let one = em.c(1.0);
    let sign = em.copysign(one, x);
    let ax = em.abs(x);
    let big = em.cmpk(FloatCC::GreaterThan, ax, 9.0);
    let y = em.sel(big, sign, y);
    let nan = em.cmp(FloatCC::Unordered, x, x);
    em.sel(nan, x, y)
}

/// `(m, s)` with `e^{-|x|} = s·(1 + m)`, the argument clamped to -88
/// (`math::nonpos_parts` as `math::sigmoid` calls it).
fn neg_abs_parts(em: &mut Em, x: Value) -> (Value, Value) {
    let ax = em.abs(x);
    let a = em.neg(ax);
    let l = em.c(-88.0);
    let low = em.cmp(FloatCC::LessThan, a, l);
    let ac = em.sel(low, l, a);
    let (r, ni) = reduce(em, ac, None);
    let bias = em.ci(127);
    let biased = em.b.ins().iadd(ni, bias);
    let bits = em.b.ins().ishl_imm_u(biased, 23);
    let s = em.float_of_bits(bits);
    (expm1_reduced(em, r), s)
}

/// The sigmoid from `e = e^{-|x|}`: `1 / (1 + e)` or `e / (1 + e)` by
/// the sign of x; also returns `1 + e`.
fn sigmoid_of(em: &mut Em, x: Value, e: Value) -> (Value, Value) {
    let d = em.addk(e, 1.0);
    let pos = em.cmpk(FloatCC::GreaterThanOrEqual, x, 0.0);
    let one = em.c(1.0);
    let num = em.sel(pos, one, e);
    (em.div(num, d), d)
}

/// 1 / (1 + e^-x) from `e = e^-|x|` (`math::sigmoid`): the reduction
/// and polynomial of `exp`, one scaling (`math::exp_nonpos_clamped`), and
/// `1 / (1 + e)` or `e / (1 + e)` by the sign of x.
pub(crate) fn sigmoid(em: &mut Em, x: Value) -> Value {
    let (m, s) = neg_abs_parts(em, x);
    let e = em.fma(m, s, s);
    sigmoid_of(em, x, e).0
}

/// `(sigmoid x, tanh x)` from one exponential (`math::sigmoid_tanh`).
pub(crate) fn sigmoid_tanh(em: &mut Em, x: Value) -> (Value, Value) {
    let (m, s) = neg_abs_parts(em, x);
    let e = em.fma(m, s, s);
    let s1 = em.addk(s, -1.0);
    let e_m1 = em.fma(m, s, s1);
    let (sg, one_e) = sigmoid_of(em, x, e);
    let ne = em.neg(e_m1);
    let num = em.mul(ne, one_e);
    let one = em.c(1.0);
    let den = em.fma(e, e, one);
    let th = em.div(num, den);
    (sg, em.copysign(th, x))
}

/// erfc(z) for z >= 0 given z² as `hi + lo` (`math::erfc_core`).
fn erfc_core(em: &mut Em, z: Value, hi: Value, lo: Value) -> Value {
    let d = em.fmakk(z, 0.5, 1.0);
    let one = em.c(1.0);
    let t = em.div(one, d);
    let p = horner(
        em,
        t,
        &[
            0.170_872_77_f32 as f64,
            -0.822_152_23_f32 as f64,
            1.488_515_9_f32 as f64,
            -1.135_204_f32 as f64,
            0.278_868_07_f32 as f64,
            -0.186_288_06_f32 as f64,
            0.096_784_18_f32 as f64,
            0.374_091_96_f32 as f64,
            1.000_023_7_f32 as f64,
            -1.265_512_2_f32 as f64,
        ],
    );
    let a = em.neg(hi);
    let b = em.sub(p, lo);
    let e = exp_split(em, a, b);
    em.mul(t, e)
}

/// erfc(z) for z >= 0 (`math::erfc_pos`).
fn erfc_pos(em: &mut Em, z: Value) -> Value {
    // capped at 12 as the eager one, so erf(±inf) is ±1
    let z = em.clampk(z, 0.0, 12.0);
    let hi = em.mul(z, z);
    let nhi = em.neg(hi);
    let lo = em.fma(z, z, nhi);
    erfc_core(em, z, hi, lo)
}

/// erf x (`math::erf`).
pub(crate) fn erf(em: &mut Em, x: Value) -> Value {
    let z = em.mul(x, x);
    let nz = em.neg(z);
    let cs = [
        (1.0 / (5040.0 * 15.0_f32)) as f64,
        (1.0 / (720.0 * 13.0_f32)) as f64,
        (1.0 / (120.0 * 11.0_f32)) as f64,
        (1.0 / (24.0 * 9.0_f32)) as f64,
        (1.0 / (6.0 * 7.0_f32)) as f64,
        (1.0 / (2.0 * 5.0_f32)) as f64,
        (1.0 / 3.0_f32) as f64,
        1.0,
    ];
    let p = horner(em, nz, &cs);
    let kx = em.mulk(x, std::f32::consts::FRAC_2_SQRT_PI as f64);
    let small = em.mul(kx, p);
    let ax = em.abs(x);
    let e = erfc_pos(em, ax);
    let one = em.c(1.0);
    let om = em.sub(one, e);
    let big = em.copysign(om, x);
    let m = em.cmpk(FloatCC::LessThan, ax, 0.75);
    let y = em.sel(m, small, big);
    let nan = em.cmp(FloatCC::Unordered, x, x);
    em.sel(nan, x, y)
}

/// Exact GELU (`math::gelu`).
pub(crate) fn gelu(em: &mut Em, x: Value) -> Value {
    let xc = em.clampk(x, -20.0, 20.0);
    let axc = em.abs(xc);
    let z = em.mulk(axc, std::f32::consts::FRAC_1_SQRT_2 as f64);
    let hi = em.mul(xc, xc);
    let nhi = em.neg(hi);
    let lo = em.fma(xc, xc, nhi);
    let hh = em.mulk(hi, 0.5);
    let hl = em.mulk(lo, 0.5);
    let e = erfc_core(em, z, hh, hl);
    let two = em.c(2.0);
    let te = em.sub(two, e);
    let pos = em.cmpk(FloatCC::GreaterThan, x, 0.0);
    let ec = em.sel(pos, te, e);
    let hx = em.mulk(x, 0.5);
    let y = em.mul(hx, ec);
    let nan = em.cmp(FloatCC::Unordered, x, x);
    em.sel(nan, x, y)
}

/// GELU with `approximate='tanh'` (`math::gelu_tanh`).
pub(crate) fn gelu_tanh(em: &mut Em, x: Value) -> Value {
    const K: f64 = 0.797_884_6_f32 as f64;
    let kx = em.mulk(x, K);
    let ax = em.mulk(x, 0.044_715_f32 as f64);
    let axx = em.mul(ax, x);
    let one = em.c(1.0);
    let s = em.fma(axx, one, one);
    let inner = em.mul(kx, s);
    let t = tanh(em, inner);
    let t1 = em.addk(t, 1.0);
    let hx = em.mulk(x, 0.5);
    em.mul(hx, t1)
}

/// ln x (`math::ln`, Cephes' polynomial); exponents are kept as floats
/// (exact for these small integers) so every select is a float select.
pub(crate) fn ln(em: &mut Em, x: Value) -> Value {
    let sub = em.cmpk(FloatCC::LessThan, x, f32::MIN_POSITIVE as f64);
    let scaled = em.mulk(x, 8_388_608.0);
    let xs = em.sel(sub, scaled, x);
    let bits = em.bits(xs);
    let e = em.b.ins().ushr_imm_u(bits, 23);
    let ff = em.ci(0xff);
    let e = em.b.ins().band(e, ff);
    let ef = em.b.ins().fcvt_from_sint(em.ty, e);
    let ef = em.addk(ef, -126.0);
    let sub_adj = em.c(23.0);
    let zero = em.c(0.0);
    let adj = em.sel(sub, sub_adj, zero);
    let ef = em.sub(ef, adj);
    let keep = em.ci(0x807f_ffff);
    let mb = em.b.ins().band(bits, keep);
    let half = em.ci(0x3f00_0000);
    let mb = em.b.ins().bor(mb, half);
    let m = em.float_of_bits(mb);
    let lo = em.cmpk(FloatCC::LessThan, m, std::f32::consts::FRAC_1_SQRT_2 as f64);
    let one = em.c(1.0);
    let adj = em.sel(lo, one, zero);
    let ef = em.sub(ef, adj);
    let mm = em.add(m, m);
    let a = em.addk(mm, -1.0);
    let b = em.addk(m, -1.0);
    let m = em.sel(lo, a, b);
    let z = em.mul(m, m);
    let p = horner(
        em,
        m,
        &[
            7.037_683_6e-2_f32 as f64,
            -1.151_461e-1_f32 as f64,
            1.167_699_9e-1_f32 as f64,
            -1.242_014_1e-1_f32 as f64,
            1.424_932_3e-1_f32 as f64,
            -1.666_805_8e-1_f32 as f64,
            2.000_071_4e-1_f32 as f64,
            -2.499_999_4e-1_f32 as f64,
            3.333_333e-1_f32 as f64,
        ],
    );
    let pm = em.mul(p, m);
    let y = em.mul(pm, z);
    let y = em.fmak(ef, LN2_LO, y);
    let y = em.fmak(z, -0.5, y);
    let my = em.add(m, y);
    let r = em.fmak(ef, LN2_HI, my);
    let inf = em.cmpk(FloatCC::Equal, x, f64::INFINITY);
    let r = em.selk(inf, f64::INFINITY, r);
    let zero_in = em.cmpk(FloatCC::Equal, x, 0.0);
    let r = em.selk(zero_in, f64::NEG_INFINITY, r);
    let bad = em.cmpk(FloatCC::UnorderedOrLessThan, x, 0.0);
    em.selk(bad, f64::NAN, r)
}

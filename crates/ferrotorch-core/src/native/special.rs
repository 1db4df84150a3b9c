//! Special functions without a `std` equivalent: lgamma, digamma, erfinv
//! (f64; f32 callers widen).

use std::f64::consts::PI;

/// ln|Γ(x)| by the Lanczos approximation (g = 7, 9 terms), with reflection
/// for x < 0.5. Poles (0, -1, -2, ...) give +inf, as PyTorch.
pub fn lgamma(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x.is_infinite() {
        return f64::INFINITY;
    }
    if x <= 0.0 && x == x.floor() {
        return f64::INFINITY;
    }
    if x < 0.5 {
        // Γ(x)Γ(1-x) = π / sin(πx)
        return (PI / (PI * x).sin().abs()).ln() - lgamma(1.0 - x);
    }
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + G + 0.5;
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// ψ(x) = d/dx ln Γ(x): recurrence up to x >= 6, then the asymptotic series;
/// reflection for negative x. Poles give NaN at negative integers and -inf
/// at 0... PyTorch returns -inf at 0 and NaN at negative integers.
pub fn digamma(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x == 0.0 {
        return if x.is_sign_negative() {
            f64::INFINITY
        } else {
            f64::NEG_INFINITY
        };
    }
    if x < 0.0 {
        if x == x.floor() {
            return f64::NAN;
        }
        // ψ(1-x) - ψ(x) = π cot(πx)
        return digamma(1.0 - x) - PI / (PI * x).tan();
    }
    let mut r = 0.0;
    let mut x = x;
    while x < 6.0 {
        r -= 1.0 / x;
        x += 1.0;
    }
    let f = 1.0 / (x * x);
    let t = f
        * (-1.0 / 12.0
            + f * (1.0 / 120.0
                + f * (-1.0 / 252.0
                    + f * (1.0 / 240.0 + f * (-1.0 / 132.0 + f * (691.0 / 32760.0))))));
    r + x.ln() - 0.5 / x + t
}

/// Inverse error function: Giles' single-precision-style initial guess
/// refined by two Newton steps against `erf` in f64.
pub fn erfinv(y: f64) -> f64 {
    if y.is_nan() || !(-1.0..=1.0).contains(&y) {
        return f64::NAN;
    }
    if y == 1.0 {
        return f64::INFINITY;
    }
    if y == -1.0 {
        return f64::NEG_INFINITY;
    }
    let w = -((1.0 - y) * (1.0 + y)).ln();
    let mut x = if w < 5.0 {
        let w = w - 2.5;
        let mut p = 2.810_226_36e-08;
        p = 3.432_739_39e-07 + p * w;
        p = -3.523_387_7e-06 + p * w;
        p = -4.391_506_54e-06 + p * w;
        p = 0.000_218_580_87 + p * w;
        p = -0.001_253_725_03 + p * w;
        p = -0.004_177_681_64 + p * w;
        p = 0.246_640_727 + p * w;
        p = 1.501_409_41 + p * w;
        p * y
    } else {
        let w = w.sqrt() - 3.0;
        let mut p = -0.000_200_214_257;
        p = 0.000_100_950_558 + p * w;
        p = 0.001_349_343_22 + p * w;
        p = -0.003_673_428_44 + p * w;
        p = 0.005_739_507_73 + p * w;
        p = -0.007_622_461_3 + p * w;
        p = 0.009_438_870_47 + p * w;
        p = 1.001_674_06 + p * w;
        p = 2.832_976_82 + p * w;
        p * y
    };
    for _ in 0..2 {
        let err = erf(x) - y;
        x -= err / (2.0 / PI.sqrt() * (-x * x).exp());
    }
    x
}

/// erf in f64 (series near 0, continued fraction for the tail); for the
/// f64 kernels and for `erfinv`'s Newton steps.
pub fn erf(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x.abs() < 2.5 {
        let mut sum: f64 = 0.0;
        let mut term = x;
        let mut n = 0.0;
        while term.abs() > 1e-17 * sum.abs().max(1e-300) && n < 100.0 {
            sum += term / (2.0 * n + 1.0);
            n += 1.0;
            term *= -x * x / n;
        }
        2.0 / PI.sqrt() * sum
    } else {
        x.signum() * (1.0 - erfc(x.abs()))
    }
}

/// erfc in f64.
pub fn erfc(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x < 2.5 {
        return 1.0 - erf(x);
    }
    if x > 27.0 {
        return 0.0;
    }
    let mut f = 0.0;
    for k in (1..60).rev() {
        f = (k as f64 / 2.0) / (x + f);
    }
    (-x * x).exp() / PI.sqrt() / (x + f)
}

/// Hurwitz zeta ζ(s, q) = Σ_{k≥0} (q + k)^-s for s > 1, by Euler–Maclaurin
/// summation: terms are added directly until `q + k >= 10`, then the tail
/// is the integral plus Bernoulli corrections. Negative non-integer `q` is
/// fine for the integer `s` that polygamma uses; poles give +inf.
fn hurwitz_zeta(s: f64, q: f64) -> f64 {
    // B_2j / (2j)! for j = 1..=12
    const B: [f64; 12] = [
        1.0 / 6.0 / 2.0,
        -1.0 / 30.0 / 24.0,
        1.0 / 42.0 / 720.0,
        -1.0 / 30.0 / 40_320.0,
        5.0 / 66.0 / 3_628_800.0,
        -691.0 / 2730.0 / 479_001_600.0,
        7.0 / 6.0 / 87_178_291_200.0,
        -3617.0 / 510.0 / 20_922_789_888_000.0,
        43_867.0 / 798.0 / 6_402_373_705_728_000.0,
        -174_611.0 / 330.0 / 2_432_902_008_176_640_000.0,
        854_513.0 / 138.0 / 1.124_000_727_777_607_7e21,
        -236_364_091.0 / 2730.0 / 6.204_484_017_332_394e23,
    ];
    if q <= 0.0 && q == q.floor() {
        return f64::INFINITY;
    }
    let mut sum = 0.0;
    let mut a = q;
    while a < 10.0 {
        sum += a.powf(-s);
        a += 1.0;
    }
    // tail Σ_{k≥0} (a + k)^-s
    sum += a.powf(1.0 - s) / (s - 1.0) + 0.5 * a.powf(-s);
    let mut rising = s; // s (s+1) ... (s + 2j - 2)
    let mut pow = a.powf(-s - 1.0); // a^(-s-2j+1)
    for (j, b) in B.iter().enumerate() {
        let t = b * rising * pow;
        sum += t;
        if t.abs() < 1e-17 * sum.abs() {
            break;
        }
        let k = 2.0 * j as f64;
        rising *= (s + k + 1.0) * (s + k + 2.0);
        pow /= a * a;
    }
    sum
}

/// The Hurwitz zeta function ζ(x, q) (`torch.special.zeta`), with
/// Cephes's domain: +inf at x = 1 and at the poles q = 0, -1, ...; NaN
/// for x < 1 and for negative non-integer q with non-integer x.
pub fn zeta(x: f64, q: f64) -> f64 {
    if x.is_nan() || q.is_nan() {
        return f64::NAN;
    }
    if x == 1.0 {
        return f64::INFINITY;
    }
    if x < 1.0 {
        return f64::NAN;
    }
    if q <= 0.0 {
        if q == q.floor() {
            return f64::INFINITY;
        }
        if x != x.floor() {
            return f64::NAN;
        }
    }
    hurwitz_zeta(x, q)
}

/// ψ⁽ⁿ⁾(x), the n-th derivative of digamma (`torch.polygamma`); n = 0 is
/// digamma itself. ψ⁽ⁿ⁾(x) = (-1)ⁿ⁺¹ n! ζ(n + 1, x).
pub fn polygamma(n: u32, x: f64) -> f64 {
    if n == 0 {
        return digamma(x);
    }
    if x.is_nan() {
        return x;
    }
    let fact: f64 = (1..=n).map(f64::from).product();
    let sign = if n % 2 == 1 { 1.0 } else { -1.0 };
    sign * fact * hurwitz_zeta(f64::from(n) + 1.0, x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_values() {
        // Γ(n) = (n-1)!
        assert!((lgamma(5.0) - 24f64.ln()).abs() < 1e-12);
        assert!((lgamma(0.5) - PI.sqrt().ln()).abs() < 1e-12);
        assert!((lgamma(-0.5) - (2.0 * PI.sqrt()).ln()).abs() < 1e-12);
        assert_eq!(lgamma(0.0), f64::INFINITY);
        assert_eq!(lgamma(-3.0), f64::INFINITY);
        // ψ(1) = -γ, ψ(1/2) = -γ - 2 ln 2
        let euler = 0.577_215_664_901_532_9;
        assert!((digamma(1.0) + euler).abs() < 1e-12);
        assert!((digamma(0.5) + euler + 2.0 * 2f64.ln()).abs() < 1e-12);
        assert!(digamma(-2.0).is_nan());
        assert_eq!(digamma(0.0), f64::NEG_INFINITY);
        for &y in &[-0.999, -0.5, 0.0, 0.1, 0.7, 0.99999] {
            assert!((erf(erfinv(y)) - y).abs() < 1e-14, "{y}");
        }
        assert!((erf(1.0) - 0.842_700_792_949_714_9).abs() < 1e-15);
        assert!((erfc(3.0) - 2.209_049_699_858_544e-5).abs() < 1e-19);
    }
}

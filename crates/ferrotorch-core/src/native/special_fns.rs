//! Scalar special functions behind `torch.special` (in `f64`): the normal
//! distribution (`ndtr`, `log_ndtr`, `ndtri`), `erfcx`, the modified
//! Bessel functions `I₀`, `I₁`, `K₀`, `K₁` (plain and scaled), `J₀`, `J₁`
//! and the classical orthogonal polynomials.
//!
//! # Note [Bessel functions by quadrature]
//! `Iₙ`, `Jₙ` (integer n) and `Kₙ` are integrals of smooth functions that
//! the trapezoid rule integrates to machine precision with few points:
//! `Iₙ(x) = (1/π)∫₀^π e^{x cos θ} cos nθ dθ` and `Jₙ(x) = (1/π)∫₀^π cos(nθ -
//! x sin θ) dθ` are integrals of periodic analytic functions over a period
//! (spectral convergence once the point count passes ~√(80|x|)), and
//! `Kₙ(x) = ∫₀^∞ e^{-x cosh t} cosh nt dt` decays double-exponentially.
//! The scaled forms fold `e^{∓x}` into the integrand, so nothing
//! overflows. Near zero the power series is used instead (the integral
//! of `I₁` cancels there).

use super::special::{erfc, erfinv};
use std::f64::consts::{PI, SQRT_2};

/// The standard normal CDF.
pub fn ndtr(x: f64) -> f64 {
    0.5 * erfc(-x / SQRT_2)
}

/// `exp(x²) erfc(x)`, without overflow for large `x`.
pub fn erfcx(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x < 0.0 {
        if x < -26.7 {
            return f64::INFINITY;
        }
        return 2.0 * (x * x).exp() - erfcx(-x);
    }
    if x < 25.0 {
        return (x * x).exp() * erfc(x);
    }
    // asymptotic series: 1/(x√π) Σ (-1)^k (2k-1)!! / (2x²)^k
    let t = 1.0 / (2.0 * x * x);
    let mut term = 1.0;
    let mut sum = 1.0;
    for k in 1..8 {
        term *= -((2 * k - 1) as f64) * t;
        sum += term;
    }
    sum / (x * PI.sqrt())
}

/// `log(ndtr(x))`, accurate in both tails.
pub fn log_ndtr(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x < -1.0 {
        // ndtr(x) = ½ erfcx(-x/√2) e^{-x²/2}
        (0.5 * erfcx(-x / SQRT_2)).ln() - 0.5 * x * x
    } else {
        (-0.5 * erfc(x / SQRT_2)).ln_1p()
    }
}

/// The inverse of [`ndtr`]: an `erfinv` (or tail asymptotic) start, then
/// Newton steps on `log_ndtr` (in log space, so the far tail does not
/// underflow).
pub fn ndtri(p: f64) -> f64 {
    if p.is_nan() || !(0.0..=1.0).contains(&p) {
        return f64::NAN;
    }
    if p == 0.0 {
        return f64::NEG_INFINITY;
    }
    if p == 1.0 {
        return f64::INFINITY;
    }
    if p > 0.5 {
        return -ndtri_lower(1.0 - p);
    }
    ndtri_lower(p)
}

fn ndtri_lower(p: f64) -> f64 {
    let lp = p.ln();
    let mut x = if p > 1e-10 {
        SQRT_2 * erfinv(2.0 * p - 1.0)
    } else {
        let t = -2.0 * lp;
        -(t - t.ln() - (2.0 * PI).ln()).sqrt()
    };
    for _ in 0..6 {
        let l = log_ndtr(x);
        // d/dx log Φ(x) = φ(x) / Φ(x)
        let slope = (-0.5 * x * x - l).exp() / (2.0 * PI).sqrt();
        let step = (l - lp) / slope;
        x -= step;
        if step.abs() <= 1e-16 * x.abs().max(1.0) {
            break;
        }
    }
    x
}

/// `I₀(x)`, `I₁(x)` by series (|x| < 1) or quadrature (Note [Bessel
/// functions by quadrature]); `scaled` multiplies by `e^{-|x|}`.
pub fn bessel_i(n: u32, x: f64, scaled: bool) -> f64 {
    if x.is_nan() {
        return x;
    }
    let ax = x.abs();
    let sign = if n == 1 && x < 0.0 { -1.0 } else { 1.0 };
    if ax.is_infinite() {
        return if scaled { 0.0 } else { sign * f64::INFINITY };
    }
    let v = if ax < 1.0 {
        // Σ (x/2)^{2k+n} / (k! (k+n)!)
        let q = ax * ax / 4.0;
        let mut term = if n == 1 { ax / 2.0 } else { 1.0 };
        let mut sum = term;
        for k in 1..40 {
            term *= q / (k as f64 * (k + n as usize) as f64);
            sum += term;
            if term < sum * 1e-17 {
                break;
            }
        }
        if scaled {
            sum * (-ax).exp()
        } else {
            sum
        }
    } else {
        let points = 48 + (10.0 * ax.sqrt()) as usize;
        let h = PI / points as f64;
        let mut sum = 0.0;
        for k in 0..=points {
            let th = k as f64 * h;
            let w = if k == 0 || k == points { 0.5 } else { 1.0 };
            let e = if scaled {
                ax * (th.cos() - 1.0)
            } else {
                ax * th.cos()
            };
            sum += w * e.exp() * (n as f64 * th).cos();
        }
        sum * h / PI
    };
    sign * v
}

/// `Kₙ(x)` (n = 0, 1) for `x > 0` by quadrature; `scaled` multiplies by `eˣ`.
pub fn bessel_k(n: u32, x: f64, scaled: bool) -> f64 {
    if x.is_nan() || x < 0.0 {
        return f64::NAN;
    }
    if x == 0.0 {
        return f64::INFINITY;
    }
    if x.is_infinite() {
        return 0.0;
    }
    // integrate until x (cosh t - 1) passes 750 (the integrand is e^{-750} there)
    let h = 0.02;
    let mut sum = 0.0;
    let mut k = 0usize;
    loop {
        let t = k as f64 * h;
        let e = -x * (t.cosh() - 1.0);
        if e < -750.0 {
            break;
        }
        let w = if k == 0 { 0.5 } else { 1.0 };
        sum += w * e.exp() * (n as f64 * t).cosh();
        k += 1;
    }
    let v = sum * h;
    if scaled {
        v
    } else {
        v * (-x).exp()
    }
}

/// `Jₙ(x)` (n = 0, 1) by quadrature.
pub fn bessel_j(n: u32, x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x.is_infinite() {
        return 0.0;
    }
    let points = 48 + x.abs().ceil() as usize + (10.0 * x.abs().sqrt()) as usize;
    let h = PI / points as f64;
    let mut sum = 0.0;
    for k in 0..=points {
        let th = k as f64 * h;
        let w = if k == 0 || k == points { 0.5 } else { 1.0 };
        sum += w * (n as f64 * th - x * th.sin()).cos();
    }
    sum * h / PI
}

/// Which classical polynomial [`polynomial`] evaluates.
#[derive(Clone, Copy)]
pub enum Poly {
    /// Chebyshev of the first kind, `T`.
    ChebyshevT,
    /// Chebyshev of the second kind, `U`.
    ChebyshevU,
    /// Chebyshev of the third kind, `V`.
    ChebyshevV,
    /// Chebyshev of the fourth kind, `W`.
    ChebyshevW,
    /// Physicists' Hermite, `H`.
    HermiteH,
    /// Probabilists' Hermite, `He`.
    HermiteHe,
    /// Laguerre, `L`.
    Laguerre,
    /// Legendre, `P`.
    Legendre,
}

/// The degree-`n` polynomial at `x` by its three-term recurrence (`n`
/// truncated to an integer; 0 for a negative one, as torch).
pub fn polynomial(kind: Poly, x: f64, n: f64) -> f64 {
    // the degree is n truncated to an integer, as torch casts it
    let n = n.trunc();
    if n < 0.0 || x.is_nan() {
        return if x.is_nan() { x } else { 0.0 };
    }
    let n = n as i64;
    // torch's closed forms at the ends of [-1, 1] (and L_n(0) = 1): the
    // values the recurrence reaches, without n steps
    let odd_neg = x < 0.0 && n % 2 == 1;
    let nf = n as f64;
    if x.abs() == 1.0 {
        match kind {
            Poly::ChebyshevT | Poly::Legendre => return if odd_neg { -1.0 } else { 1.0 },
            Poly::ChebyshevU => return if odd_neg { -(nf + 1.0) } else { nf + 1.0 },
            Poly::ChebyshevV if x > 0.0 => return 1.0,
            Poly::ChebyshevV => {
                return if n % 2 == 1 {
                    -(2.0 * nf + 1.0)
                } else {
                    2.0 * nf + 1.0
                }
            }
            Poly::ChebyshevW if x > 0.0 => return 2.0 * nf + 1.0,
            Poly::ChebyshevW => return if n % 2 == 1 { -1.0 } else { 1.0 },
            _ => {}
        }
    }
    if x == 0.0 && matches!(kind, Poly::Laguerre) {
        return 1.0;
    }
    let (p0, p1) = match kind {
        Poly::ChebyshevT => (1.0, x),
        Poly::ChebyshevU => (1.0, 2.0 * x),
        Poly::ChebyshevV => (1.0, 2.0 * x - 1.0),
        Poly::ChebyshevW => (1.0, 2.0 * x + 1.0),
        Poly::HermiteH => (1.0, 2.0 * x),
        Poly::HermiteHe => (1.0, x),
        Poly::Laguerre => (1.0, 1.0 - x),
        Poly::Legendre => (1.0, x),
    };
    if n == 0 {
        return p0;
    }
    let (mut a, mut b) = (p0, p1);
    for k in 1..n {
        let kf = k as f64;
        let c = match kind {
            Poly::ChebyshevT | Poly::ChebyshevU | Poly::ChebyshevV | Poly::ChebyshevW => {
                2.0 * x * b - a
            }
            Poly::HermiteH => 2.0 * x * b - 2.0 * kf * a,
            Poly::HermiteHe => x * b - kf * a,
            Poly::Laguerre => ((2.0 * kf + 1.0 - x) * b - kf * a) / (kf + 1.0),
            Poly::Legendre => ((2.0 * kf + 1.0) * x * b - kf * a) / (kf + 1.0),
        };
        a = b;
        b = c;
        if b.is_nan() {
            // NaN stays NaN through every later step: stop (huge n)
            return b;
        }
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs().max(1e-300)
    }

    #[test]
    fn bessel_values_match_tables() {
        // Abramowitz & Stegun tables 9.8 and 9.1
        assert!(close(
            bessel_i(0, 1.0, false),
            1.266_065_877_752_008_4,
            1e-14
        ));
        assert!(close(bessel_i(1, 1.0, false), 0.565_159_103_992_485, 1e-14));
        assert!(close(
            bessel_i(0, 10.0, false),
            2_815.716_628_466_254,
            1e-13
        ));
        assert!(close(
            bessel_i(1, -0.5, false),
            -0.257_894_305_390_896_4,
            1e-14
        ));
        assert!(close(
            bessel_k(0, 1.0, false),
            0.421_024_438_240_708_3,
            1e-13
        ));
        assert!(close(
            bessel_k(1, 2.0, false),
            0.139_865_881_816_522_4,
            1e-13
        ));
        assert!(close(bessel_j(0, 1.0), 0.765_197_686_557_966_6, 1e-14));
        assert!(close(bessel_j(1, 10.0), 0.043_472_746_168_861_44, 1e-12));
        // scaled forms agree with the plain ones where both are finite
        assert!(close(
            bessel_i(0, 30.0, true),
            bessel_i(0, 30.0, false) * (-30f64).exp(),
            1e-13
        ));
    }

    #[test]
    fn normal_distribution_functions() {
        assert!(close(ndtr(1.0), 0.841_344_746_068_542_9, 1e-15));
        assert!(close(ndtri(0.841_344_746_068_542_9), 1.0, 1e-13));
        // torch: -37.0471 (its ndtr underflows there, as erfc does)
        assert!(close(ndtri(1e-300), -37.047_096, 1e-6), "{}", ndtri(1e-300));
        assert!(close(log_ndtr(-40.0), -804.608_442_013_754, 1e-12));
        assert!(close(erfcx(30.0), 0.018_795_888_861_416_75, 1e-13));
        assert!(close(erfcx(1.0), 0.427_583_576_155_807, 1e-14));
    }

    #[test]
    fn polynomial_end_points_are_the_recurrence_values_and_huge_degrees_end() {
        // the recurrences written out, at x = ±1, against the closed forms
        for &x in &[1.0f64, -1.0] {
            let (mut t, mut u, mut v, mut w, mut p) = (
                [1.0, x],
                [1.0, 2.0 * x],
                [1.0, 2.0 * x - 1.0],
                [1.0, 2.0 * x + 1.0],
                [1.0, x],
            );
            for n in 0..10i64 {
                let nf = n as f64;
                let got = |k| polynomial(k, x, nf);
                assert_eq!(got(Poly::ChebyshevT), t[0], "T {n} {x}");
                assert_eq!(got(Poly::ChebyshevU), u[0], "U {n} {x}");
                assert_eq!(got(Poly::ChebyshevV), v[0], "V {n} {x}");
                assert_eq!(got(Poly::ChebyshevW), w[0], "W {n} {x}");
                assert_eq!(got(Poly::Legendre), p[0], "P {n} {x}");
                let k = (n + 1) as f64;
                t = [t[1], 2.0 * x * t[1] - t[0]];
                u = [u[1], 2.0 * x * u[1] - u[0]];
                v = [v[1], 2.0 * x * v[1] - v[0]];
                w = [w[1], 2.0 * x * w[1] - w[0]];
                p = [p[1], ((2.0 * k + 1.0) * x * p[1] - k * p[0]) / (k + 1.0)];
            }
        }
        assert_eq!(polynomial(Poly::Laguerre, 0.0, 7.0), 1.0);
        // overflow to NaN ends the loop: a degree of 2^40 returns at once
        assert!(polynomial(Poly::HermiteH, 3.0, 2f64.powi(40)).is_nan());
        assert!(polynomial(Poly::ChebyshevT, 1.0, 2f64.powi(40)) == 1.0);
    }

    #[test]
    fn polynomials_match_closed_forms() {
        // T_3 = 4x³ - 3x, H_2 = 4x² - 2, L_2 = (x² - 4x + 2)/2, P_3 = (5x³ - 3x)/2
        let x = 0.3;
        assert!(close(
            polynomial(Poly::ChebyshevT, x, 3.0),
            4.0 * x * x * x - 3.0 * x,
            1e-14
        ));
        assert!(close(
            polynomial(Poly::HermiteH, x, 2.0),
            4.0 * x * x - 2.0,
            1e-14
        ));
        assert!(close(
            polynomial(Poly::Laguerre, x, 2.0),
            (x * x - 4.0 * x + 2.0) / 2.0,
            1e-14
        ));
        assert!(close(
            polynomial(Poly::Legendre, x, 3.0),
            (5.0 * x * x * x - 3.0 * x) / 2.0,
            1e-14
        ));
        assert_eq!(polynomial(Poly::ChebyshevU, x, -1.0), 0.0);
    }
}

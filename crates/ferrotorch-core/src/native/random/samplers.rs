//! Draws that take more than one uniform: `_standard_gamma` (Marsaglia
//! and Tsang's rejection sampler, boosted below α = 1) and `poisson`
//! (multiplying uniforms below λ = 10, Hörmann's transformed rejection
//! above), what `torch.distributions` samples Gamma, Beta, Dirichlet,
//! Chi2, StudentT and Poisson with.
//!
//! Note [Samplers on torch's streams]: each element draws from the
//! generator in row-major order, with torch's uniform (53 bits) and
//! Box–Muller normal (its cached second value included), and the float32
//! gamma sampler rounds its α-derived constants to float as torch's CPU
//! kernel does (it computes `alpha - 1/3` in the input's precision), so a
//! seeded sample is torch's sample. These ops have no derivative here:
//! the reparameterized gradient of a gamma draw is computed where
//! `torch.distributions` asks for it (`_standard_gamma_grad`), and a
//! tensor that requires grad is refused rather than given a zero gradient.

use super::{gen, Generator, Mt19937};
use crate::dispatch::Registry;
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;

type Gen = Option<Generator>;

impl Mt19937 {
    /// 1 - U, U uniform in [0, 1) with 53 bits: in (0, 1].
    fn one_minus_uniform(&mut self) -> f64 {
        1.0 - self.uniform(DType::F64)
    }

    /// A Gamma(α, 1) draw. `single` rounds the α-derived constants to
    /// float32 as torch's float kernel does, and both precisions use its
    /// float constants 1/3 and 0.0331 (Note [Samplers on torch's streams]).
    fn gamma(&mut self, alpha: f64, single: bool) -> f64 {
        const THIRD: f64 = (1.0f32 / 3.0f32) as f64;
        const SQUEEZE: f64 = 0.0331f32 as f64;
        let round = |v: f64| if single { v as f32 as f64 } else { v };
        let mut alpha = alpha;
        let mut scale = 1.0f64;
        if alpha < 1.0 {
            if alpha == 0.0 {
                return 0.0;
            }
            scale *= self.one_minus_uniform().powf(round(1.0 / alpha));
            alpha = round(alpha + 1.0);
        }
        let d = round(alpha - THIRD);
        let c = 1.0 / (9.0 * d).sqrt();
        loop {
            let (mut x, mut y);
            loop {
                x = self.normal();
                y = 1.0 + c * x;
                if y > 0.0 {
                    break;
                }
            }
            let v = y * y * y;
            let u = self.one_minus_uniform();
            let xx = x * x;
            if u < 1.0 - SQUEEZE * xx * xx || u.ln() < 0.5 * xx + d * (1.0 - v + v.ln()) {
                return scale * d * v;
            }
        }
    }

    /// A Poisson(λ) draw.
    fn poisson(&mut self, lambda: f64) -> i64 {
        if lambda >= 10.0 {
            // Hörmann (1993), "The transformed rejection method for
            // generating Poisson random variables" (PTRS)
            let slam = lambda.sqrt();
            let loglam = lambda.ln();
            let b = 0.931 + 2.53 * slam;
            let a = -0.059 + 0.02483 * b;
            let invalpha = 1.1239 + 1.1328 / (b - 3.4);
            let vr = 0.9277 - 3.6224 / (b - 2.0);
            loop {
                let u = self.uniform(DType::F64) - 0.5;
                let v = self.uniform(DType::F64);
                let us = 0.5 - u.abs();
                let k = ((2.0 * a / us + b) * u + lambda + 0.43).floor() as i64;
                if us >= 0.07 && v <= vr {
                    return k;
                }
                if k < 0 || (us < 0.013 && v > us) {
                    continue;
                }
                let lhs = v.ln() + invalpha.ln() - (a / (us * us) + b).ln();
                if lhs
                    <= -lambda + k as f64 * loglam - crate::native::special::lgamma(k as f64 + 1.0)
                {
                    return k;
                }
            }
        }
        if lambda == 0.0 {
            return 0;
        }
        let enlam = (-lambda).exp();
        let (mut k, mut prod) = (0i64, 1.0f64);
        loop {
            prod *= self.uniform(DType::F64);
            if prod > enlam {
                k += 1;
            } else {
                return k;
            }
        }
    }
}

/// Stirling's series tail log(k!) - [k log k - k + log(2πk)/2], tabled below 10.
fn stirling_tail(k: f64) -> f64 {
    const TABLE: [f64; 10] = [
        0.081_061_466_795_327_26,
        0.041_340_695_955_409_29,
        0.027_677_925_684_998_34,
        0.020_790_672_103_765_09,
        0.016_644_691_189_821_19,
        0.013_876_128_823_070_75,
        0.011_896_709_945_891_77,
        0.010_411_265_261_972_09,
        0.009_255_462_182_712_733,
        0.008_330_563_433_362_87,
    ];
    if k <= 9.0 {
        return TABLE[k as usize];
    }
    let kp1sq = (k + 1.0) * (k + 1.0);
    (1.0 / 12.0 - (1.0 / 360.0 - 1.0 / 1260.0 / kp1sq) / kp1sq) / (k + 1.0)
}

impl Mt19937 {
    /// Successes in `n` trials of probability `p` ≤ 1/2 by inversion:
    /// geometric waiting times until their sum passes n.
    fn binomial_inversion(&mut self, n: f64, p: f64) -> f64 {
        let logq = (-p).ln_1p();
        let (mut sum, mut k) = (0.0f64, 0.0f64);
        loop {
            let u = self.uniform(DType::F64);
            sum += (u.ln() / logq).ceil();
            if sum > n {
                return k;
            }
            k += 1.0;
        }
    }

    /// Hörmann's BTRS (1993) for n·p ≥ 10, p ≤ 1/2, with the acceptance
    /// bound torch's CPU kernel uses; `single` rounds what that kernel
    /// computes in float (Note [Samplers on torch's streams]).
    fn binomial_btrs(&mut self, n: f64, p: f64, single: bool) -> f64 {
        let f = |v: f64| if single { v as f32 as f64 } else { v };
        let stddev = f(f(f(n * p) * f(1.0 - p)).sqrt());
        let b = 1.15 + 2.53 * stddev;
        let a = -0.0873 + 0.0248 * b + 0.01 * p;
        let c = f(n * p) + 0.5;
        let v_r = 0.92 - 4.2 / b;
        let r = f(p / f(1.0 - p));
        let alpha = (2.83 + 5.1 / b) * stddev;
        let m = f(f(n + 1.0) * p).floor();
        loop {
            let u = self.uniform(DType::F64) - 0.5;
            let mut v = self.uniform(DType::F64);
            let us = 0.5 - u.abs();
            let k = f(((2.0 * a / us + b) * u + c).floor());
            if k < 0.0 || k > n {
                continue;
            }
            if us >= 0.07 && v <= v_r {
                return k;
            }
            v = (v * alpha / (a / (us * us) + b)).ln();
            let nk1 = f(f(n - k) + 1.0);
            let bound = (m + 0.5) * ((m + 1.0) / (r * (n - m + 1.0))).ln()
                + f(n + 1.0) * ((n - m + 1.0) / nk1).ln()
                + (k + 0.5) * (r * nk1 / f(k + 1.0)).ln()
                + stirling_tail(m)
                + stirling_tail(n - m)
                - stirling_tail(k)
                - stirling_tail(f(n - k));
            if v <= bound {
                return k;
            }
        }
    }

    /// A Binomial(n, p) draw (`torch.binomial`).
    fn binomial(&mut self, n: f64, p: f64, single: bool) -> f64 {
        let f = |v: f64| if single { v as f32 as f64 } else { v };
        if n <= 0.0 || p <= 0.0 {
            return 0.0;
        }
        if p >= 1.0 {
            return n;
        }
        if p <= 0.5 {
            return if f(n * p) >= 10.0 {
                self.binomial_btrs(n, p, single)
            } else {
                self.binomial_inversion(n, p)
            };
        }
        if p > 0.5 {
            let q = f(1.0 - p);
            let k = if f(n * q) >= 10.0 {
                self.binomial_btrs(n, q, single)
            } else {
                self.binomial_inversion(n, q)
            };
            return f(n - k);
        }
        f64::NAN
    }
}

fn refuse_grad(op: &str, t: &Tensor) -> Result<()> {
    crate::ensure!(
        !(t.requires_grad() && crate::autograd::mode::is_grad_enabled()),
        Runtime,
        "{op}: this op has no derivative in the core; torch.distributions computes the \
         reparameterized gradient of a gamma draw (ferrotorch._standard_gamma in Python)"
    );
    Ok(())
}

fn float_only(op: &str, t: &Tensor) -> Result<()> {
    crate::ensure!(
        matches!(t.dtype(), DType::F32 | DType::F64),
        NotImplemented,
        "\"{op}\" not implemented for '{}'",
        t.dtype().name_title()
    );
    Ok(())
}

impl Tensor {
    /// Gamma(α, 1) draws, one per element of `self` (α), in `self`'s
    /// dtype (`torch._standard_gamma`; Note [Samplers on torch's streams]).
    pub fn _standard_gamma(&self, generator: Option<&Generator>) -> Result<Tensor> {
        float_only("_standard_gamma", self)?;
        refuse_grad("_standard_gamma", self)?;
        let alphas = self.to_vec_f64()?;
        let single = self.dtype() == DType::F32;
        let tiny = if single {
            f32::MIN_POSITIVE as f64
        } else {
            f64::MIN_POSITIVE
        };
        let mut g = gen(generator).0.lock();
        let out: Vec<f64> = alphas
            .iter()
            .map(|&a| {
                let s = g.gamma(a, single);
                let s = if single { s as f32 as f64 } else { s };
                s.max(tiny)
            })
            .collect();
        drop(g);
        Tensor::from_vec(out, self.shape())?.to_dtype(self.dtype())
    }

    /// Poisson(λ) counts, one per element of `self` (λ ≥ 0), as floats
    /// (`torch.poisson`).
    pub fn poisson(&self, generator: Option<&Generator>) -> Result<Tensor> {
        float_only("poisson", self)?;
        let rates = self.to_vec_f64()?;
        crate::ensure!(
            rates.iter().all(|&r| r >= 0.0),
            Runtime,
            "invalid Poisson rate, expected rate to be non-negative"
        );
        let mut g = gen(generator).0.lock();
        let out: Vec<f64> = rates.iter().map(|&r| g.poisson(r) as f64).collect();
        drop(g);
        Tensor::from_vec(out, self.shape())?.to_dtype(self.dtype())
    }
}

impl Tensor {
    /// Binomial(count, prob) draws, elementwise over the broadcast of
    /// `count` and `prob`, in their dtype (`torch.binomial`).
    pub fn binomial(
        count: &Tensor,
        prob: &Tensor,
        generator: Option<&Generator>,
    ) -> Result<Tensor> {
        float_only("binomial", count)?;
        crate::ensure!(
            count.dtype() == prob.dtype(),
            Runtime,
            "binomial: expected count and prob of one dtype, got {} and {}",
            count.dtype(),
            prob.dtype()
        );
        let shape = crate::tensor::layout::broadcast_shapes(count.shape(), prob.shape())?;
        let dims: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
        let n = count.expand(&dims)?.to_vec_f64()?;
        let p = prob.expand(&dims)?.to_vec_f64()?;
        let single = count.dtype() == DType::F32;
        let mut g = gen(generator).0.lock();
        let out: Vec<f64> = n
            .iter()
            .zip(&p)
            .map(|(&n, &p)| g.binomial(n, p, single))
            .collect();
        drop(g);
        Tensor::from_vec(out, &shape)?.to_dtype(count.dtype())
    }
}

pub(super) fn register(r: &mut Registry) {
    r.def_typed(
        "binomial(Tensor count, Tensor prob, Generator? generator=None) -> Tensor",
        |c: Tensor, p: Tensor, g: Gen| Tensor::binomial(&c, &p, g.as_ref()),
    );
    r.def_typed(
        "_standard_gamma(Tensor self, Generator? generator=None) -> Tensor",
        |x: Tensor, g: Gen| x._standard_gamma(g.as_ref()),
    );
    r.def_typed(
        "poisson(Tensor self, Generator? generator=None) -> Tensor",
        |x: Tensor, g: Gen| x.poisson(g.as_ref()),
    );
}

//! `torch.special` ops (ATen's `special_*` names): unary kernels over the
//! scalar functions of `special_fns`, with their derivatives in
//! `autograd::derivatives::pointwise`'s table; binary ones (`zeta`, the
//! polynomials) over broadcast `f64` values; and composites (`xlog1py`,
//! `entr`, `multigammaln`, `spherical_bessel_j0`).

use super::special_fns::{self as sf, Poly};
use super::special_fns_more as sfm;
use crate::dispatch::Registry;
use crate::dtype::{get_default_dtype, promote_types, DType};
use crate::error::Result;
use crate::native::where_;
use crate::scalar::Scalar;
use crate::tensor::Tensor;

/// A unary special function as a float kernel (integers compute in the
/// default dtype), its derivative found by `name`.
fn special_unary(name: &'static str, x: &Tensor, f: fn(f64) -> f64) -> Result<Tensor> {
    let y = crate::autograd::raw(&[x], || {
        super::unary::unary_float(x, move |v: f32| f(f64::from(v)) as f32, f)
    })?;
    crate::autograd::derivatives::pointwise::unary(name, x, y)
}

/// `f(a, b)` over the broadcast values of `a` and `b`, in `f64`, as the
/// promoted float dtype.
fn binary_values(a: &Tensor, b: &Tensor, f: impl Fn(f64, f64) -> f64) -> Result<Tensor> {
    let mut dt = promote_types(a.dtype(), b.dtype());
    if !dt.is_floating_point() {
        dt = get_default_dtype();
    }
    let shape = crate::tensor::layout::broadcast_shapes(a.shape(), b.shape())?.to_vec();
    let av = a.detach().broadcast_to(&shape)?.to_vec_f64()?;
    let bv = b.detach().broadcast_to(&shape)?.to_vec_f64()?;
    let v: Vec<f64> = av.iter().zip(&bv).map(|(&x, &y)| f(x, y)).collect();
    Tensor::from_vec(v, &shape)?.to_dtype(dt)
}

macro_rules! special_unary_ops {
    ($($(#[$doc:meta])* $method:ident => $name:literal, $f:expr;)*) => {
        impl Tensor {
            $(
                $(#[$doc])*
                pub fn $method(&self) -> Result<Tensor> {
                    special_unary($name, self, $f)
                }
            )*
        }

        fn register_unary(r: &mut Registry) {
            $(
                r.def_typed(concat!($name, "(Tensor self) -> Tensor"), |x: Tensor| x.$method());
            )*
        }
    };
}

special_unary_ops! {
    /// `torch.i0`: the modified Bessel function `I₀`.
    i0 => "i0", |x| sf::bessel_i(0, x, false);
    /// `torch.special.i0e`: `I₀(x) e^{-|x|}`.
    special_i0e => "special_i0e", |x| sf::bessel_i(0, x, true);
    /// `torch.special.i1`: `I₁`.
    special_i1 => "special_i1", |x| sf::bessel_i(1, x, false);
    /// `torch.special.i1e`: `I₁(x) e^{-|x|}`.
    special_i1e => "special_i1e", |x| sf::bessel_i(1, x, true);
    /// `torch.special.ndtr`: the standard normal CDF.
    special_ndtr => "special_ndtr", sf::ndtr;
    /// `torch.special.ndtri`: its inverse.
    special_ndtri => "special_ndtri", sf::ndtri;
    /// `torch.special.log_ndtr`: `log(ndtr(x))`.
    special_log_ndtr => "special_log_ndtr", sf::log_ndtr;
    /// `torch.special.erfcx`: `exp(x²) erfc(x)`.
    special_erfcx => "special_erfcx", sf::erfcx;
    /// `torch.special.entr`: `-x ln x` (0 at 0, -inf below).
    special_entr => "special_entr", |x| if x > 0.0 { -x * x.ln() } else if x == 0.0 { 0.0 } else if x.is_nan() { x } else { f64::NEG_INFINITY };
    /// `torch.special.modified_bessel_i0`.
    special_modified_bessel_i0 => "special_modified_bessel_i0", |x| sf::bessel_i(0, x, false);
    /// `torch.special.modified_bessel_i1`.
    special_modified_bessel_i1 => "special_modified_bessel_i1", |x| sf::bessel_i(1, x, false);
    /// `torch.special.modified_bessel_k0`.
    special_modified_bessel_k0 => "special_modified_bessel_k0", |x| sf::bessel_k(0, x, false);
    /// `torch.special.modified_bessel_k1`.
    special_modified_bessel_k1 => "special_modified_bessel_k1", |x| sf::bessel_k(1, x, false);
    /// `torch.special.scaled_modified_bessel_k0`: `K₀(x) eˣ`.
    special_scaled_modified_bessel_k0 => "special_scaled_modified_bessel_k0", |x| sf::bessel_k(0, x, true);
    /// `torch.special.scaled_modified_bessel_k1`: `K₁(x) eˣ`.
    special_scaled_modified_bessel_k1 => "special_scaled_modified_bessel_k1", |x| sf::bessel_k(1, x, true);
    /// `torch.special.bessel_j0`.
    special_bessel_j0 => "special_bessel_j0", |x| sf::bessel_j(0, x);
    /// `torch.special.bessel_j1`.
    special_bessel_j1 => "special_bessel_j1", |x| sf::bessel_j(1, x);
    /// `torch.special.bessel_y0`: the Bessel function of the second kind `Y₀`.
    special_bessel_y0 => "special_bessel_y0", |x| sfm::bessel_y(0, x);
    /// `torch.special.bessel_y1`: `Y₁`.
    special_bessel_y1 => "special_bessel_y1", |x| sfm::bessel_y(1, x);
    /// `torch.special.spherical_bessel_j0`: `sin(x) / x`.
    special_spherical_bessel_j0 => "special_spherical_bessel_j0", |x| if x == 0.0 { 1.0 } else if x.is_infinite() { 0.0 } else { x.sin() / x };
}

crate::ops! {
    register = register_ops;
    /// `torch.special.xlog1py(x, y)`: `x · log1p(y)`, 0 where `x` is 0 (unless `y` is NaN).
    #[op = "special_xlog1py(Tensor self, Tensor other) -> Tensor"]
    pub fn special_xlog1py(&self, other: &Tensor) -> Result<Tensor> {
        let x = if self.is_floating_point() {
            Clone::clone(self)
        } else {
            self.to_dtype(get_default_dtype())?
        };
        let out = crate::autograd::raw(&[&x, other], || -> Result<Tensor> {
            let zero = x.eq(0)?.logical_and(&other.isnan()?.logical_not()?)?;
            // the x = 0 branch never evaluates log1p(-1) · 0
            let safe_y = where_(&zero, 0.0, other)?;
            where_(&zero, 0.0, &x.mul(&safe_y.log1p()?)?)
        })?;
        if !crate::autograd::needs_grad(&[&x, other]) {
            return Ok(out);
        }
        crate::autograd::record1(
            "SpecialXlog1PyBackward0",
            &[&x, other],
            out,
            smallvec::smallvec![
                crate::autograd::node::Save::Tensor(&x),
                crate::autograd::node::Save::Tensor(other)
            ],
            |c| {
                // torch's: g · log1p(y), 0 where x == 0 and y <= -1 (x == 0
                // elsewhere still takes log1p y); g · x / (y + 1)
                let (g, x, y) = (c.grad(), c.saved(0), c.saved(1));
                let off = x.eq(0.0)?.logical_and(&y.le(-1.0)?)?;
                Ok(smallvec::smallvec![
                    Some(g.mul(&y.log1p()?)?.masked_fill(&off, 0.0)?),
                    Some(g.mul(x)?.div(&y.add(1.0)?)?)
                ])
            },
        )
    }

    /// `torch.special.zeta(x, q)`: the Hurwitz zeta function (derivative in `q` only, as torch).
    #[op = "special_zeta(Tensor self, Tensor other) -> Tensor"]
    pub fn special_zeta(&self, q: &Tensor) -> Result<Tensor> {
        let y = binary_values(self, q, sf_zeta)?;
        if !crate::autograd::needs_grad(&[q]) {
            return Ok(y);
        }
        let x = Clone::clone(self);
        crate::autograd::record(
            "SpecialZetaBackward0",
            &[self, q],
            &[&y],
            smallvec::smallvec![crate::autograd::node::Save::Tensor(q)],
            move |c| {
                // d/dq ζ(x, q) = -x ζ(x + 1, q)
                let q = c.saved(0);
                let d1 = x.add(1.0)?.special_zeta(q)?.mul(&x)?.neg()?;
                Ok(smallvec::smallvec![None, Some(c.grad().mul(&d1)?)])
            },
        )?;
        Ok(y)
    }

    /// `torch.special.multigammaln(x, p)` (`mvlgamma`): `Σ_{i<p} lgamma(x - i/2) + p(p-1)/4 · ln π`.
    #[op = "mvlgamma(Tensor self, int p) -> Tensor"]
    #[op = "special_multigammaln(Tensor self, int p) -> Tensor"]
    pub fn mvlgamma(&self, p: i64) -> Result<Tensor> {
        crate::ensure!(p >= 1, Runtime, "p has to be greater than or equal to 1");
        let x = if self.is_floating_point() {
            Clone::clone(self)
        } else {
            self.to_dtype(get_default_dtype())?
        };
        let bad = x
            .le((p - 1) as f64 / 2.0)?
            .any_dim(None, false)?
            .item()?
            .to_bool();
        crate::ensure!(!bad, Runtime, "All elements must be greater than (p-1)/2");
        // as torch: the p terms side by side (`x[..., None] - arange(p) / 2`),
        // so a huge `p` is a clear allocation error, not hours of ops
        let halves = Tensor::arange(0i64, p, 1i64, x.dtype())?.div(2.0)?;
        let sum = x
            .unsqueeze(-1)?
            .sub(&halves)?
            .lgamma()?
            .sum_dim(Some(&[-1]), false, None)?;
        sum.add((p as f64) * ((p - 1) as f64) / 4.0 * std::f64::consts::PI.ln())
    }

    /// `torch.special.airy_ai`: the Airy function `Ai` (not differentiable, as torch).
    #[op = "special_airy_ai(Tensor x) -> Tensor"]
    pub fn special_airy_ai(&self) -> Result<Tensor> {
        super::unary::unary_float(
            &self.detach(),
            |v: f32| sfm::airy_ai(f64::from(v)) as f32,
            sfm::airy_ai,
        )
    }

    /// `torch.special.gammainc(a, x)` (`igamma`): the regularized lower
    /// incomplete gamma function `P(a, x)`; differentiable in `x` only, as torch.
    #[op = "special_gammainc(Tensor self, Tensor other) -> Tensor"]
    #[op = "igamma(Tensor self, Tensor other) -> Tensor"]
    pub fn special_gammainc(&self, x: &Tensor) -> Result<Tensor> {
        incomplete_gamma("IgammaBackward0", self, x, false)
    }

    /// `torch.special.gammaincc(a, x)` (`igammac`): `Q(a, x) = 1 − P(a, x)`.
    #[op = "special_gammaincc(Tensor self, Tensor other) -> Tensor"]
    #[op = "igammac(Tensor self, Tensor other) -> Tensor"]
    pub fn special_gammaincc(&self, x: &Tensor) -> Result<Tensor> {
        incomplete_gamma("IgammacBackward0", self, x, true)
    }

    /// A classical orthogonal polynomial of degree `n` at `self` (at
    /// `2x - 1` when `shift`: the shifted Chebyshev ones); not
    /// differentiable, as torch.
    pub fn special_polynomial(&self, n: &Tensor, kind: Poly, shift: bool) -> Result<Tensor> {
        binary_values(self, n, move |x, n| {
            sf::polynomial(kind, if shift { 2.0 * x - 1.0 } else { x }, n)
        })
    }
}

/// `P(a, x)` or `Q(a, x)` with the `x` derivative `±x^{a−1} e^{−x} / Γ(a)`;
/// a gradient for `a` is torch's not-implemented error.
fn incomplete_gamma(name: &'static str, a: &Tensor, x: &Tensor, upper: bool) -> Result<Tensor> {
    let y = binary_values(a, x, if upper { sfm::gammaincc } else { sfm::gammainc })?;
    if !crate::autograd::needs_grad(&[a, x]) {
        return Ok(y);
    }
    let op = if upper { "igammac" } else { "igamma" };
    crate::autograd::record(
        name,
        &[a, x],
        &[&y],
        smallvec::smallvec![
            crate::autograd::node::Save::Tensor(a),
            crate::autograd::node::Save::Tensor(x)
        ],
        move |c| {
            crate::ensure!(
                !c.needs_input_grad(0),
                NotImplemented,
                "the derivative for '{op}: input' is not implemented."
            );
            let (a, x) = (c.saved(0), c.saved(1));
            // exp((a − 1) ln x − x − lgamma(a))
            let d = a
                .sub(1.0)?
                .mul(&x.log()?)?
                .sub(x)?
                .sub(&a.lgamma()?)?
                .exp()?;
            let d = if upper { d.neg()? } else { d };
            Ok(smallvec::smallvec![None, Some(c.grad().mul(&d)?)])
        },
    )?;
    Ok(y)
}

fn sf_zeta(x: f64, q: f64) -> f64 {
    super::special::zeta(x, q)
}

fn register_binary(r: &mut Registry) {
    type T = Tensor;
    r.def_typed(
        "special_xlog1py.self_scalar(Scalar self, Tensor other) -> Tensor",
        |x: Scalar, y: T| {
            Tensor::scalar_tensor(x)
                .to_dtype(y.dtype())?
                .special_xlog1py(&y)
        },
    );
    r.def_typed(
        "special_xlog1py.other_scalar(Tensor self, Scalar other) -> Tensor",
        |x: T, y: Scalar| {
            x.special_xlog1py(
                &Tensor::scalar_tensor(y).to_dtype(if x.is_floating_point() {
                    x.dtype()
                } else {
                    DType::F32
                })?,
            )
        },
    );
    r.def_typed(
        "special_zeta.self_scalar(Scalar self, Tensor other) -> Tensor",
        |x: Scalar, q: T| {
            Tensor::scalar_tensor(x)
                .to_dtype(q.dtype())?
                .special_zeta(&q)
        },
    );
    r.def_typed(
        "special_zeta.other_scalar(Tensor self, Scalar other) -> Tensor",
        |x: T, q: Scalar| x.special_zeta(&Tensor::scalar_tensor(q).to_dtype(x.dtype())?),
    );

    for (name, kind, shift) in [
        ("chebyshev_polynomial_t", Poly::ChebyshevT, false),
        ("chebyshev_polynomial_u", Poly::ChebyshevU, false),
        ("chebyshev_polynomial_v", Poly::ChebyshevV, false),
        ("chebyshev_polynomial_w", Poly::ChebyshevW, false),
        ("shifted_chebyshev_polynomial_t", Poly::ChebyshevT, true),
        ("shifted_chebyshev_polynomial_u", Poly::ChebyshevU, true),
        ("shifted_chebyshev_polynomial_v", Poly::ChebyshevV, true),
        ("shifted_chebyshev_polynomial_w", Poly::ChebyshevW, true),
        ("hermite_polynomial_h", Poly::HermiteH, false),
        ("hermite_polynomial_he", Poly::HermiteHe, false),
        ("laguerre_polynomial_l", Poly::Laguerre, false),
        ("legendre_polynomial_p", Poly::Legendre, false),
    ] {
        r.def_typed(
            &format!("special_{name}(Tensor x, Tensor n) -> Tensor"),
            move |x: T, n: T| x.special_polynomial(&n, kind, shift),
        );
        r.def_typed(
            &format!("special_{name}.x_scalar(Scalar x, Tensor n) -> Tensor"),
            move |x: Scalar, n: T| Tensor::scalar_tensor(x).special_polynomial(&n, kind, shift),
        );
        r.def_typed(
            &format!("special_{name}.n_scalar(Tensor x, Scalar n) -> Tensor"),
            move |x: T, n: Scalar| x.special_polynomial(&Tensor::scalar_tensor(n), kind, shift),
        );
    }
}

pub(crate) fn register(r: &mut Registry) {
    register_ops(r);
    register_unary(r);
    register_binary(r);
}

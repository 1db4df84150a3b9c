//! Complex arithmetic on the real view (Note [Complex numbers]): each op is
//! a formula in the real and imaginary parts, so its gradient is that of
//! the real ops it is made of.

use super::{complex, not_implemented};
use crate::dtype::{result_type, DType, ResultTypeArg};
use crate::error::Result;
use crate::native::binary::Operand;
use crate::scalar::Scalar;
use crate::tensor::Tensor;

/// `(re, im)` of a complex tensor, as differentiable real views; a real
/// tensor is its own real part with a zero imaginary part.
pub(crate) fn parts(z: &Tensor) -> Result<(Tensor, Tensor)> {
    if z.dtype().is_complex() {
        let r = z.view_as_real()?;
        Ok((r.select(-1, 0)?, r.select(-1, 1)?))
    } else {
        Ok((z.clone(), z.zeros_like()?))
    }
}

/// `z` as a complex tensor of dtype `dt`.
fn as_complex(z: &Tensor, dt: DType) -> Result<Tensor> {
    if z.dtype() == dt {
        Ok(z.clone())
    } else {
        z.to_dtype(dt)
    }
}

/// Whether a binary op with these operands computes in complex numbers.
pub(crate) fn involves_complex(a: &Tensor, b: &Operand) -> bool {
    a.dtype().is_complex()
        || match b {
            Operand::Tensor(t) => t.dtype().is_complex(),
            Operand::Scalar(s) => s.is_complex(),
        }
}

/// # Note [complex32]
/// `complex32` tensors store two `f16`s per element. Like torch's CPU
/// kernels (which compute `complex<Half>` in `complex<float>`, the "opmath"
/// type), the arithmetic of this module computes them in `complex64` and
/// rounds the result once: [`opmath`] upcasts, runs the op, and casts a
/// `complex64` result back to `complex32` (a `float32` one, such as `abs`,
/// to `float16`). Movement ops, views, casts and comparisons take
/// `complex32` elements as they are. Where torch's CPU build has no
/// `complex32` kernel (`sum`, `exp`, `matmul`, FFTs, ...), ferrotorch still
/// computes one this way, as torch's CUDA build does.
pub(crate) fn opmath(r: Result<Tensor>) -> Result<Tensor> {
    let r = r?;
    match r.dtype() {
        DType::C64 => r.to_dtype(DType::C32),
        DType::F32 => r.to_dtype(DType::F16),
        _ => Ok(r),
    }
}

/// A `complex32` tensor as `complex64` (Note [complex32]); others as they are.
pub(crate) fn widen(z: &Tensor) -> Result<Tensor> {
    if z.dtype() == DType::C32 {
        z.to_dtype(DType::C64)
    } else {
        Ok(z.clone())
    }
}

/// A binary pointwise op where either side is complex.
pub(crate) fn binary(op: &str, a: &Tensor, b: &Operand) -> Result<Tensor> {
    let dt = result_type(&[ResultTypeArg::Tensor(a.dtype(), a.dim()), b.arg()]);
    crate::ensure!(
        dt.is_complex(),
        Runtime,
        "{op}: result type {} is not complex",
        dt.name_title()
    );
    if dt == DType::C32 {
        let wide = |t: &Tensor| as_complex(t, DType::C64);
        let b = match b {
            Operand::Tensor(t) => Operand::Tensor(wide(t)?),
            Operand::Scalar(s) => Operand::Scalar(*s),
        };
        return opmath(binary(op, &wide(a)?, &b));
    }
    let x = as_complex(a, dt)?;
    let y = match b {
        Operand::Tensor(t) => as_complex(t, dt)?,
        Operand::Scalar(s) => Tensor::full_cast(&[], *s, dt)?,
    };
    match op {
        "add" => x.view_as_real()?.add(&y.view_as_real()?)?.into_complex(),
        "sub" => x.view_as_real()?.sub(&y.view_as_real()?)?.into_complex(),
        "mul" => mul(&x, &y),
        "div" | "true_divide" => div(&x, &y),
        "pow" => match b {
            Operand::Scalar(s) => pow_scalar(&x, *s),
            Operand::Tensor(_) => exp(&mul(&log(&x)?, &y)?),
        },
        "eq" | "ne" => {
            let (xr, xi) = parts(&x)?;
            let (yr, yi) = parts(&y)?;
            let e = xr.eq(&yr)?.logical_and(&xi.eq(&yi)?)?;
            if op == "eq" {
                Ok(e)
            } else {
                e.logical_not()
            }
        }
        _ => Err(not_implemented(op, dt)),
    }
}

/// `x * y` for complex `x`, `y`.
pub(crate) fn mul(x: &Tensor, y: &Tensor) -> Result<Tensor> {
    let (a, b) = parts(x)?;
    let (c, d) = parts(y)?;
    complex(&a.mul(&c)?.sub(&b.mul(&d)?)?, &a.mul(&d)?.add(&b.mul(&c)?)?)
}

/// `x / y` for complex `x`, `y`: `x·conj(y) / |y|²`.
fn div(x: &Tensor, y: &Tensor) -> Result<Tensor> {
    let (a, b) = parts(x)?;
    let (c, d) = parts(y)?;
    let den = c.mul(&c)?.add(&d.mul(&d)?)?;
    complex(
        &a.mul(&c)?.add(&b.mul(&d)?)?.div(&den)?,
        &b.mul(&c)?.sub(&a.mul(&d)?)?.div(&den)?,
    )
}

/// `|z|` (real).
pub(crate) fn abs(z: &Tensor) -> Result<Tensor> {
    let (x, y) = parts(z)?;
    x.hypot(&y)
}

/// `arg z` (real), in `(-π, π]`.
pub(crate) fn angle(z: &Tensor) -> Result<Tensor> {
    let (x, y) = parts(z)?;
    y.atan2(&x)
}

/// `exp(z) = e^x (cos y + i sin y)`.
fn exp(z: &Tensor) -> Result<Tensor> {
    let (x, y) = parts(z)?;
    let m = x.exp()?;
    complex(&m.mul(&y.cos()?)?, &m.mul(&y.sin()?)?)
}

/// `log(z) = log|z| + i arg z`.
fn log(z: &Tensor) -> Result<Tensor> {
    complex(&abs(z)?.log()?, &angle(z)?)
}

/// A unary op on a complex tensor; an error when it has no complex form.
pub(crate) fn unary(op: &str, z: &Tensor) -> Result<Tensor> {
    if z.dtype() == DType::C32 {
        return opmath(unary(op, &widen(z)?));
    }
    match op {
        "neg" => z.view_as_real()?.neg()?.into_complex(),
        "abs" => abs(z),
        "angle" => angle(z),
        "exp" => exp(z),
        "log" => log(z),
        "log2" => log(z)?.div(Scalar::Float(std::f64::consts::LN_2)),
        "log10" => log(z)?.div(Scalar::Float(std::f64::consts::LN_10)),
        "sqrt" => {
            let r = abs(z)?.sqrt()?;
            let h = angle(z)?.mul(0.5)?;
            complex(&r.mul(&h.cos()?)?, &r.mul(&h.sin()?)?)
        }
        "rsqrt" => unary("sqrt", z)?.reciprocal(),
        "tan" => div(&unary("sin", z)?, &unary("cos", z)?),
        "tanh" => div(&unary("sinh", z)?, &unary("cosh", z)?),
        "sigmoid" => unary("neg", z)
            .and_then(|n| exp(&n))?
            .add(1.0)?
            .reciprocal(),
        "square" => mul(z, z),
        "expm1" => exp(z)?.sub(1.0),
        "log1p" => log(&z.add(1.0)?),
        _ => unary_on_parts(op, z),
    }
}

/// The unary ops written on the real and imaginary parts (made only for
/// these: the parts are views autograd records).
fn unary_on_parts(op: &str, z: &Tensor) -> Result<Tensor> {
    let (x, y) = parts(z)?;
    match op {
        "reciprocal" => {
            let den = x.mul(&x)?.add(&y.mul(&y)?)?;
            complex(&x.div(&den)?, &y.neg()?.div(&den)?)
        }
        "sin" => complex(&x.sin()?.mul(&y.cosh()?)?, &x.cos()?.mul(&y.sinh()?)?),
        "cos" => complex(
            &x.cos()?.mul(&y.cosh()?)?,
            &x.sin()?.mul(&y.sinh()?)?.neg()?,
        ),
        "sinh" => complex(&x.sinh()?.mul(&y.cos()?)?, &x.cosh()?.mul(&y.sin()?)?),
        "cosh" => complex(&x.cosh()?.mul(&y.cos()?)?, &x.sinh()?.mul(&y.sin()?)?),
        "sgn" => {
            // z / |z|, and 0 at 0
            let a = abs(z)?;
            let zero = a.eq(0.0)?;
            let safe = a.masked_fill(&zero, 1.0)?;
            complex(
                &x.div(&safe)?.masked_fill(&zero, 0.0)?,
                &y.div(&safe)?.masked_fill(&zero, 0.0)?,
            )
        }
        "isnan" => x.isnan()?.logical_or(&y.isnan()?),
        "isinf" => x.isinf()?.logical_or(&y.isinf()?),
        "isfinite" => x.isfinite()?.logical_and(&y.isfinite()?),
        _ => Err(not_implemented(op, z.dtype())),
    }
}

/// `z ** p` for complex `z` and a number `p`: `exp(p log z)`, with the
/// small integer powers done by multiplication (exact, as torch).
pub(crate) fn pow_scalar(z: &Tensor, p: Scalar) -> Result<Tensor> {
    if let Scalar::Int(k) = p {
        if (1..=4).contains(&k) {
            let mut acc = z.clone();
            for _ in 1..k {
                acc = mul(&acc, z)?;
            }
            return Ok(acc);
        }
    }
    let dt = result_type(&[
        ResultTypeArg::Tensor(z.dtype(), z.dim()),
        ResultTypeArg::Scalar(p),
    ]);
    let pz = Tensor::full_cast(&[], p, dt)?;
    exp(&mul(&log(&as_complex(z, dt)?)?, &pz)?)
}

/// A reduction over `dims` (`None` or empty: all) of a complex tensor, as
/// the same reduction of its real view over the same dims (`sum`, `mean`).
pub(crate) fn reduce_real_view(
    z: &Tensor,
    dims: Option<&[i64]>,
    f: impl FnOnce(&Tensor, &[i64]) -> Result<Tensor>,
) -> Result<Tensor> {
    let n = z.dim();
    let dims: Vec<i64> = match dims {
        Some(d) if !d.is_empty() => d
            .iter()
            .map(|&d| crate::tensor::layout::wrap_dim(d, n).map(|d| d as i64))
            .collect::<Result<_>>()?,
        _ => (0..n as i64).collect(),
    };
    if z.dtype() == DType::C32 {
        let r = f(&widen(z)?.view_as_real()?, &dims)?;
        return opmath(r.contiguous()?.into_complex());
    }
    let r = f(&z.view_as_real()?, &dims)?;
    r.contiguous()?.into_complex()
}

/// A matrix product of complex operands from four real products:
/// `(A + iB)(C + iD) = (AC − BD) + i(AD + BC)`.
pub(crate) fn product(
    x: &Tensor,
    y: &Tensor,
    f: impl Fn(&Tensor, &Tensor) -> Result<Tensor>,
) -> Result<Tensor> {
    crate::ensure!(
        x.dtype() == y.dtype(),
        Runtime,
        "expected m1 and m2 to have the same dtype, but got: {} != {}",
        x.dtype().name_title(),
        y.dtype().name_title()
    );
    if x.dtype() == DType::C32 {
        return opmath(product(&widen(x)?, &widen(y)?, f));
    }
    let (a, b) = parts(x)?;
    let (c, d) = parts(y)?;
    complex(&f(&a, &c)?.sub(&f(&b, &d)?)?, &f(&a, &d)?.add(&f(&b, &c)?)?)
}

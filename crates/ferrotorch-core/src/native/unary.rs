//! Unary pointwise ops, declared once each in the tables below.
//!
//! Each row gives the method name, its schema, and the scalar function for
//! f32 and for f64. The macro generates the method (`x.exp()`), the
//! in-place variant (`x.exp_()`) and the dispatcher entries (`exp`, `exp_`).
//! f16/bf16 compute through f32; integer and bool inputs of float ops are
//! promoted to the default dtype, as in PyTorch.

use super::iter::{empty_like_layout, map_unary};
use super::special;
use crate::dispatch::Registry;
use crate::dtype::{get_default_dtype, DType, FloatElem};
use crate::error::Result;
use crate::tensor::Tensor;
use crate::{bf16, f16};
use ferrotorch_kernels::math as km;

/// Refuse to write in place into a tensor whose elements alias each other
/// (an expanded view), as PyTorch does.
pub(crate) fn check_inplace(op: &str, t: &Tensor) -> Result<()> {
    t.storage().check_writable(op)?;
    let overlap = t
        .shape()
        .iter()
        .zip(t.stride())
        .any(|(&s, &st)| s > 1 && st == 0);
    crate::ensure!(
        !overlap,
        Runtime,
        "{op}: unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation."
    );
    Ok(())
}

/// Run a float op into `out` (same shape, float dtype) from `src` (same dtype).
fn float_kernel(
    src: &Tensor,
    out: &Tensor,
    f32f: impl Fn(f32) -> f32 + Copy + Send + Sync,
    f64f: impl Fn(f64) -> f64 + Copy + Send + Sync,
) {
    match out.dtype() {
        DType::F32 => map_unary::<f32, f32>(src, out, f32f),
        DType::F64 => map_unary::<f64, f64>(src, out, f64f),
        DType::F16 => map_unary::<f16, f16>(src, out, move |x| f16::from_f32(f32f(x.to_f32()))),
        DType::BF16 => map_unary::<bf16, bf16>(src, out, move |x| {
            bf16::from_f32(f32f(FloatElem::to_f32(x)))
        }),
        d => unreachable!("float kernel on {d}"),
    }
}

/// Out-of-place float op: ints and bool promote to the default dtype.
pub(crate) fn unary_float(
    x: &Tensor,
    f32f: impl Fn(f32) -> f32 + Copy + Send + Sync,
    f64f: impl Fn(f64) -> f64 + Copy + Send + Sync,
) -> Result<Tensor> {
    let dt = if x.is_floating_point() {
        x.dtype()
    } else {
        get_default_dtype()
    };
    let src = x.to_dtype(dt)?;
    let out = empty_like_layout(x.shape(), dt, Some(&src))?;
    float_kernel(&src, &out, f32f, f64f);
    Ok(out)
}

/// In-place float op: only float tensors (PyTorch cannot cast the float
/// result back into an integer tensor).
pub(crate) fn unary_float_(
    op: &str,
    x: &Tensor,
    f32f: impl Fn(f32) -> f32 + Copy + Send + Sync,
    f64f: impl Fn(f64) -> f64 + Copy + Send + Sync,
) -> Result<()> {
    crate::ensure!(
        x.is_floating_point(),
        Runtime,
        "{op}: result type {} can't be cast to the desired output type {}",
        crate::dtype::promote_types(get_default_dtype(), x.dtype()).name_title(),
        x.dtype().name_title()
    );
    check_inplace(op, x)?;
    float_kernel(x, x, f32f, f64f);
    x.storage().bump_version();
    Ok(())
}

macro_rules! float_unary_ops {
    ($( $(#[$doc:meta])* $name:ident, $name_:ident: $f32:expr, $f64:expr; )*) => {
        impl Tensor {
            $(
                $(#[$doc])*
                pub fn $name(&self) -> Result<Tensor> {
                    static OP: crate::dispatch::OpHandle = crate::dispatch::OpHandle::new(stringify!($name));
                    if let Some(r) = crate::dispatch::handle::intercept_tensor(&OP, || vec![self.into()]) {
                        return r;
                    }
                    if self.dtype().is_complex() {
                        return crate::native::complex::unary(stringify!($name), self);
                    }
                    let y = crate::autograd::raw(&[self], || unary_float(self, $f32, $f64))?;
                    crate::autograd::derivatives::pointwise::unary(stringify!($name), self, y)
                }
                #[doc = concat!("In-place `", stringify!($name), "`.")]
                pub fn $name_(&self) -> Result<()> {
                    static OP: crate::dispatch::OpHandle = crate::dispatch::OpHandle::new(stringify!($name_));
                    if let Some(r) = crate::dispatch::handle::intercept(&OP, || vec![self.into()]) {
                        return r.map(|_| ());
                    }
                    if self.dtype().is_complex() {
                        return crate::native::binary::inplace_from(stringify!($name_), self, &[], |t| t.$name());
                    }
                    if crate::autograd::derivatives::inplace::check(stringify!($name_), self, &[])? {
                        return crate::autograd::derivatives::inplace::run(self, true, |old| old.$name());
                    }
                    unary_float_(stringify!($name_), self, $f32, $f64)
                }
            )*
        }

        pub(crate) fn register_float(r: &mut Registry) {
            $(
                r.def_typed(concat!(stringify!($name), "(Tensor self) -> Tensor"),
                    |x: Tensor| x.$name());
                r.def_typed(concat!(stringify!($name_), "(Tensor(a!) self) -> Tensor(a!)"),
                    |x: Tensor| x.$name_().map(|()| x));
            )*
        }
    };
}

float_unary_ops! {
    /// e^x, elementwise.
    exp, exp_: km::exp, f64::exp;
    /// 2^x.
    exp2, exp2_: f32::exp2, f64::exp2;
    /// e^x - 1, accurate near 0.
    expm1, expm1_: km::expm1, f64::exp_m1;
    /// Natural logarithm.
    log, log_: km::ln, f64::ln;
    /// Base-2 logarithm.
    log2, log2_: f32::log2, f64::log2;
    /// Base-10 logarithm.
    log10, log10_: f32::log10, f64::log10;
    /// ln(1 + x), accurate near 0.
    log1p, log1p_: f32::ln_1p, f64::ln_1p;
    /// Square root.
    sqrt, sqrt_: f32::sqrt, f64::sqrt;
    /// 1 / sqrt(x).
    rsqrt, rsqrt_: |x: f32| 1.0 / x.sqrt(), |x: f64| 1.0 / x.sqrt();
    /// 1 / x.
    reciprocal, reciprocal_: |x: f32| 1.0 / x, |x: f64| 1.0 / x;
    /// Sine.
    sin, sin_: f32::sin, f64::sin;
    /// Cosine.
    cos, cos_: f32::cos, f64::cos;
    /// Tangent.
    tan, tan_: f32::tan, f64::tan;
    /// Arcsine.
    asin, asin_: f32::asin, f64::asin;
    /// Arccosine.
    acos, acos_: f32::acos, f64::acos;
    /// Arctangent.
    atan, atan_: f32::atan, f64::atan;
    /// Hyperbolic sine.
    sinh, sinh_: f32::sinh, f64::sinh;
    /// Hyperbolic cosine.
    cosh, cosh_: f32::cosh, f64::cosh;
    /// Hyperbolic tangent.
    tanh, tanh_: km::tanh, f64::tanh;
    /// Inverse hyperbolic sine.
    asinh, asinh_: f32::asinh, f64::asinh;
    /// Inverse hyperbolic cosine.
    acosh, acosh_: f32::acosh, f64::acosh;
    /// Inverse hyperbolic tangent.
    atanh, atanh_: f32::atanh, f64::atanh;
    /// Logistic sigmoid 1 / (1 + e^-x).
    sigmoid, sigmoid_: km::sigmoid, |x: f64| 1.0 / (1.0 + (-x).exp());
    /// Error function.
    erf, erf_: km::erf, special::erf;
    /// Complementary error function.
    erfc, erfc_: km::erfc, special::erfc;
    /// Inverse error function.
    erfinv, erfinv_: |x: f32| special::erfinv(x as f64) as f32, special::erfinv;
    /// ln |Γ(x)|.
    lgamma, lgamma_: |x: f32| special::lgamma(x as f64) as f32, special::lgamma;
    /// ψ(x), the logarithmic derivative of Γ.
    digamma, digamma_: |x: f32| special::digamma(x as f64) as f32, special::digamma;
}

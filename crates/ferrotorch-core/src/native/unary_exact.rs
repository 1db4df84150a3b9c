//! Unary ops defined on every numeric dtype without promotion: `neg`,
//! `abs`, `sign`, rounding, bitwise/logical not, and the NaN/inf tests.
//!
//! The per-dtype bodies are written once as closures over a variable; the
//! [`map_each_dtype!`] macro instantiates them for every element type.

use super::iter::{empty_like_layout, map_unary};
use super::unary::check_inplace;
use crate::dispatch::Registry;
use crate::dtype::{DType, Element, FloatElem, IntElem};
use crate::error::Result;
use crate::tensor::Tensor;
use crate::{bf16, f16};

/// Instantiate `float |x| ..`, `int |x| ..` and `bool |x| ..` bodies for each
/// dtype of `$src`, writing into `$out` of the same dtype. A `None` body
/// means the dtype is unsupported: that arm returns an error.
macro_rules! map_each_dtype {
    ($op:expr, $src:expr, $out:expr, float |$f:ident| $fb:expr, int |$i:ident| $ib:expr, bool |$b:ident| $bb:expr) => {{
        let (src, out): (&Tensor, &Tensor) = ($src, $out);
        match src.dtype() {
            DType::F32 => map_unary::<f32, f32>(src, out, |$f: f32| $fb),
            DType::F64 => map_unary::<f64, f64>(src, out, |$f: f64| $fb),
            DType::F16 => map_unary::<f16, f16>(src, out, |v: f16| {
                let $f = v.to_f32();
                f16::from_f32($fb)
            }),
            DType::BF16 => map_unary::<bf16, bf16>(src, out, |v: bf16| {
                let $f = FloatElem::to_f32(v);
                bf16::from_f32($fb)
            }),
            DType::I64 => map_unary::<i64, i64>(src, out, |$i: i64| $ib),
            DType::I32 => map_unary::<i32, i32>(src, out, |$i: i32| $ib),
            DType::I16 => map_unary::<i16, i16>(src, out, |$i: i16| $ib),
            DType::I8 => map_unary::<i8, i8>(src, out, |$i: i8| $ib),
            DType::U8 => map_unary::<u8, u8>(src, out, |$i: u8| $ib),
            DType::Bool => map_unary::<bool, bool>(src, out, |$b: bool| $bb),
            d @ (DType::C32 | DType::C64 | DType::C128) => {
                return Err($crate::native::complex::not_implemented($op, d))
            }
        }
    }};
}

/// Which dtypes an op in this file rejects, with PyTorch's message.
fn reject(op: &str, t: &Tensor, float: bool, bool_: bool) -> Result<()> {
    let d = t.dtype();
    if d == DType::Bool && !bool_ {
        crate::bail!(
            NotImplemented,
            "{op}: \"{op}\" not implemented for 'Bool'{}",
            if op.starts_with("neg") {
                ". Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead."
            } else {
                ""
            }
        );
    }
    if d.is_floating_point() && !float {
        crate::bail!(
            NotImplemented,
            "{op}: \"{op}\" not implemented for '{}'",
            d.name_title()
        );
    }
    Ok(())
}

macro_rules! exact_unary_ops {
    ($( $(#[$doc:meta])* $name:ident, $name_:ident, float: $fl:literal, bool: $bo:literal,
        float |$f:ident| $fb:expr, int |$i:ident| $ib:expr, bool |$b:ident| $bb:expr; )*) => {
        impl Tensor {
            $(
                $(#[$doc])*
                pub fn $name(&self) -> Result<Tensor> {
                    // through the dispatcher, so tracers and modes see it
                    static OP: crate::dispatch::OpHandle = crate::dispatch::OpHandle::new(stringify!($name));
                    if let Some(r) = crate::dispatch::handle::intercept_tensor(&OP, || vec![self.into()]) {
                        return r;
                    }
                    if self.dtype().is_complex() && matches!(stringify!($name), "neg" | "abs") {
                        return crate::native::complex::unary(stringify!($name), self);
                    }
                    reject(stringify!($name), self, $fl, $bo)?;
                    let out = empty_like_layout(self.shape(), self.dtype(), Some(self))?;
                    map_each_dtype!(stringify!($name), self, &out, float |$f| $fb, int |$i| $ib, bool |$b| $bb);
                    crate::autograd::derivatives::pointwise::unary(stringify!($name), self, out)
                }
                #[doc = concat!("In-place `", stringify!($name), "`.")]
                pub fn $name_(&self) -> Result<()> {
                    static OP: crate::dispatch::OpHandle = crate::dispatch::OpHandle::new(stringify!($name_));
                    if let Some(r) = crate::dispatch::handle::intercept(&OP, || vec![self.into()]) {
                        return r.map(|_| ());
                    }
                    reject(stringify!($name_), self, $fl, $bo)?;
                    if self.dtype().is_complex() && stringify!($name) == "neg" {
                        return crate::native::binary::inplace_from(stringify!($name_), self, &[], |t| t.$name());
                    }
                    if crate::autograd::derivatives::inplace::check(stringify!($name_), self, &[])? {
                        return crate::autograd::derivatives::inplace::run(self, true, |old| old.$name());
                    }
                    check_inplace(stringify!($name_), self)?;
                    map_each_dtype!(stringify!($name_), self, self, float |$f| $fb, int |$i| $ib, bool |$b| $bb);
                    self.storage().bump_version();
                    Ok(())
                }
            )*
        }

        pub(crate) fn register_exact(r: &mut Registry) {
            $(
                r.def_typed(concat!(stringify!($name), "(Tensor self) -> Tensor"),
                    |x: Tensor| x.$name());
                r.def_typed(concat!(stringify!($name_), "(Tensor(a!) self) -> Tensor(a!)"),
                    |x: Tensor| { x.$name_()?; Ok(x) });
            )*
        }
    };
}

exact_unary_ops! {
    /// -x (`-t`). Not defined for bool.
    neg, neg_, float: true, bool: false,
        float |x| -x, int |x| x.wneg(), bool |x| x;
    /// |x|.
    abs, abs_, float: true, bool: false,
        float |x| x.abs(), int |x| x.wabs(), bool |x| x;
    /// -1, 0 or 1; +0 for ±0 and for NaN, as torch's `(0 < x) - (x < 0)`.
    sign, sign_, float: true, bool: true,
        float |x| if x > 0.0 { 1.0 } else if x < 0.0 { -1.0 } else { 0.0 },
        int |x| if x > Element::zero() { Element::one() } else if x < Element::zero() { IntElem::wneg(Element::one()) } else { x },
        bool |x| x;
    /// Round down (integers unchanged).
    floor, floor_, float: true, bool: false,
        float |x| x.floor(), int |x| x, bool |x| x;
    /// Round up (integers unchanged).
    ceil, ceil_, float: true, bool: false,
        float |x| x.ceil(), int |x| x, bool |x| x;
    /// Round half to even, as `torch.round` (integers unchanged).
    round, round_, float: true, bool: false,
        float |x| x.round_ties_even(), int |x| x, bool |x| x;
    /// Round toward zero (integers unchanged).
    trunc, trunc_, float: true, bool: false,
        float |x| x.trunc(), int |x| x, bool |x| x;
    /// Bitwise NOT for integers, logical NOT for bool (`~t`).
    bitwise_not, bitwise_not_, float: false, bool: true,
        float |x| x, int |x| x.bnot(), bool |x| !x;
}

crate::ops! {
    register = register_misc;
    /// x - trunc(x). Floating dtypes only.
    #[op = "frac(Tensor self) -> Tensor"]
    pub fn frac(&self) -> Result<Tensor> {
        crate::ensure!(
            self.is_floating_point(),
            NotImplemented,
            "frac: \"frac_cpu\" not implemented for '{}'",
            self.dtype().name_title()
        );
        let y = crate::autograd::raw(&[self], || {
            super::unary::unary_float(self, |x: f32| x - x.trunc(), |x: f64| x - x.trunc())
        })?;
        crate::autograd::derivatives::pointwise::unary("frac", self, y)
    }

    /// Round half to even at `decimals` decimal places (`torch.round(x,
    /// decimals=d)`; a negative `d` rounds to tens, hundreds, ...), as
    /// torch computes it: `round(x * 10^d) / 10^d`.
    #[op = "round.decimals(Tensor self, *, int decimals) -> Tensor"]
    pub fn round_decimals(&self, decimals: i64) -> Result<Tensor> {
        if decimals == 0 {
            return self.round();
        }
        crate::ensure!(
            self.is_floating_point(),
            NotImplemented,
            "round: \"round_cpu\" with decimals not implemented for '{}'",
            self.dtype().name_title()
        );
        let ten = 10f64.powi(i32::try_from(decimals.unsigned_abs()).unwrap_or(i32::MAX));
        if decimals > 0 {
            self.mul(ten)?.round()?.div(ten)
        } else {
            self.div(ten)?.round()?.mul(ten)
        }
    }

    /// `logical_not`: `x == 0`, as a bool tensor.
    #[op = "logical_not(Tensor self) -> Tensor"]
    pub fn logical_not(&self) -> Result<Tensor> {
        self.eq(0)
    }

    /// NaN test, as a bool tensor.
    #[op = "isnan(Tensor self) -> Tensor"]
    pub fn isnan(&self) -> Result<Tensor> {
        self.to_bool_with(|x| x.is_nan())
    }

    /// ±inf test, as a bool tensor.
    #[op = "isinf(Tensor self) -> Tensor"]
    pub fn isinf(&self) -> Result<Tensor> {
        self.to_bool_with(|x| x.is_infinite())
    }

    /// Finite test (neither NaN nor inf), as a bool tensor.
    #[op = "isfinite(Tensor self) -> Tensor"]
    pub fn isfinite(&self) -> Result<Tensor> {
        self.to_bool_with(|x| x.is_finite())
    }

    /// Sign bit set (including -0.0), as a bool tensor.
    #[op = "signbit(Tensor self) -> Tensor"]
    pub fn signbit(&self) -> Result<Tensor> {
        self.to_bool_with(|x| x.is_sign_negative())
    }

    fn to_bool_with(&self, f: impl Fn(f64) -> bool + Copy + Send + Sync) -> Result<Tensor> {
        let out = empty_like_layout(self.shape(), DType::Bool, Some(self))?;
        crate::dispatch_dtype!(self.dtype(), T => {
            map_unary::<T, bool>(self, &out, move |x: T| f(x.to_f64()))
        });
        Ok(out)
    }
}

//! Binary pointwise ops with broadcasting and type promotion.
//!
//! Every binary op takes its right operand as anything [`Into<Operand>`]: a
//! tensor (`a.add(&b)`) or a Rust number (`a.add(2.5)`), which takes part in
//! promotion as a wrapped number (Note [Type promotion]). Inputs are brought
//! to the common dtype, then one closure per dtype family runs in the
//! multiversioned loops; the table at the bottom declares each op once.

use super::iter::empty_like_layout;
use super::unary::check_inplace;
use crate::dispatch::Registry;
use crate::dtype::{get_default_dtype, result_type, DType, Element, IntElem, ResultTypeArg};
use crate::error::Result;
use crate::scalar::Scalar;
use crate::tensor::layout::broadcast_shapes;
use crate::tensor::Tensor;

/// The right-hand side of a binary op: a tensor or a wrapped number.
#[derive(Clone)]
pub enum Operand {
    /// A tensor.
    Tensor(Tensor),
    /// A number.
    Scalar(Scalar),
}

impl Operand {
    /// The operand as a dispatcher value.
    pub(crate) fn boxed(&self) -> crate::dispatch::IValue {
        match self {
            Operand::Tensor(t) => t.clone().into(),
            Operand::Scalar(s) => (*s).into(),
        }
    }

    /// The operand as op `op`'s second argument when boxed: a number
    /// where the op has a Scalar overload, else (`maximum`, `atan2`) a
    /// 0-dim tensor of the dtype the typed call computes in, so the boxed
    /// call gives the same result.
    pub(crate) fn boxed_for(&self, op: &str, lhs: &Tensor) -> Result<crate::dispatch::IValue> {
        match self {
            Operand::Scalar(s) if overload_names(op).1.is_none() => {
                let dt = result_type(&[ResultTypeArg::Tensor(lhs.dtype(), lhs.dim()), self.arg()]);
                Ok(Tensor::full_cast(&[], *s, dt)?.into())
            }
            _ => Ok(self.boxed()),
        }
    }

    pub(crate) fn arg(&self) -> ResultTypeArg {
        match self {
            Operand::Tensor(t) => ResultTypeArg::Tensor(t.dtype(), t.dim()),
            Operand::Scalar(s) => ResultTypeArg::Scalar(*s),
        }
    }

    /// As a tensor of `dtype` (a 0-dim tensor for scalars).
    pub(crate) fn to_tensor(&self, dtype: DType) -> Result<Tensor> {
        match self {
            Operand::Tensor(t) => t.to_dtype(dtype),
            Operand::Scalar(s) => Tensor::full_cast(&[], *s, dtype),
        }
    }

    fn shape(&self) -> &[usize] {
        match self {
            Operand::Tensor(t) => t.shape(),
            Operand::Scalar(_) => &[],
        }
    }

    /// The tensor operand, if any, as a slice (no allocation on the op path).
    pub(crate) fn tensors(&self) -> &[Tensor] {
        match self {
            Operand::Tensor(t) => std::slice::from_ref(t),
            Operand::Scalar(_) => &[],
        }
    }

    /// `[lhs, self]` when this is a tensor, else `[lhs]`: the inputs that
    /// decide whether the op is recorded.
    pub(crate) fn with_lhs<'a>(&'a self, lhs: &'a Tensor) -> smallvec::SmallVec<[&'a Tensor; 2]> {
        let mut v = smallvec::SmallVec::new();
        v.push(lhs);
        if let Operand::Tensor(t) = self {
            v.push(t);
        }
        v
    }
}

impl From<&Tensor> for Operand {
    fn from(t: &Tensor) -> Operand {
        Operand::Tensor(t.clone())
    }
}
impl From<Tensor> for Operand {
    fn from(t: Tensor) -> Operand {
        Operand::Tensor(t)
    }
}
impl From<Scalar> for Operand {
    fn from(s: Scalar) -> Operand {
        Operand::Scalar(s)
    }
}
macro_rules! operand_from_num {
    ($($t:ty),*) => {$(
        impl From<$t> for Operand { fn from(v: $t) -> Operand { Operand::Scalar(v.into()) } }
    )*};
}
operand_from_num!(f32, f64, i32, i64, u8, i8, i16, bool, usize);

/// Instantiate per-dtype closures for `out = f(a, b)`. With `same`, the
/// output has the inputs' dtype (half types compute in f32); with `bool`,
/// the output is bool (predicates).
macro_rules! binary_each_dtype {
    (@arm same, $T:ty, $a:expr, $b:expr, $out:expr, |$x:ident, $y:ident| $body:expr) => {
        $crate::native::iter::map_binary::<$T, $T, $T>($a, $b, $out, |$x: $T, $y: $T| $body)
    };
    (@arm bool, $T:ty, $a:expr, $b:expr, $out:expr, |$x:ident, $y:ident| $body:expr) => {
        $crate::native::iter::map_binary::<$T, $T, bool>($a, $b, $out, |$x: $T, $y: $T| $body)
    };
    (@half same, $T:ty, $a:expr, $b:expr, $out:expr, |$x:ident, $y:ident| $body:expr) => {
        $crate::native::iter::map_binary::<$T, $T, $T>($a, $b, $out, |u: $T, v: $T| {
            let ($x, $y) = ($crate::dtype::FloatElem::to_f32(u), $crate::dtype::FloatElem::to_f32(v));
            <$T as $crate::dtype::FloatElem>::from_f32($body)
        })
    };
    (@half bool, $T:ty, $a:expr, $b:expr, $out:expr, |$x:ident, $y:ident| $body:expr) => {
        $crate::native::iter::map_binary::<$T, $T, bool>($a, $b, $out, |u: $T, v: $T| {
            let ($x, $y) = ($crate::dtype::FloatElem::to_f32(u), $crate::dtype::FloatElem::to_f32(v));
            $body
        })
    };
    ($op:expr, $kind:ident, $dt:expr, $a:expr, $b:expr, $out:expr,
     float |$x:ident, $y:ident| $fb:expr, int |$i:ident, $j:ident| $ib:expr, bool |$p:ident, $q:ident| $bb:expr) => {{
        let (a, b, out): (&$crate::Tensor, &$crate::Tensor, &$crate::Tensor) = ($a, $b, $out);
        match $dt {
            $crate::DType::F32 => binary_each_dtype!(@arm $kind, f32, a, b, out, |$x, $y| $fb),
            $crate::DType::F64 => binary_each_dtype!(@arm $kind, f64, a, b, out, |$x, $y| $fb),
            $crate::DType::F16 => binary_each_dtype!(@half $kind, $crate::f16, a, b, out, |$x, $y| $fb),
            $crate::DType::BF16 => binary_each_dtype!(@half $kind, $crate::bf16, a, b, out, |$x, $y| $fb),
            $crate::DType::I64 => binary_each_dtype!(@arm $kind, i64, a, b, out, |$i, $j| $ib),
            $crate::DType::I32 => binary_each_dtype!(@arm $kind, i32, a, b, out, |$i, $j| $ib),
            $crate::DType::I16 => binary_each_dtype!(@arm $kind, i16, a, b, out, |$i, $j| $ib),
            $crate::DType::I8 => binary_each_dtype!(@arm $kind, i8, a, b, out, |$i, $j| $ib),
            $crate::DType::U8 => binary_each_dtype!(@arm $kind, u8, a, b, out, |$i, $j| $ib),
            $crate::DType::Bool => binary_each_dtype!(@arm $kind, bool, a, b, out, |$p, $q| $bb),
            d @ ($crate::DType::C32 | $crate::DType::C64 | $crate::DType::C128) => {
                return Err($crate::native::complex::not_implemented($op, d))
            }
        }
    }};
}
pub(crate) use binary_each_dtype;

/// How a binary op picks its computation dtype.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Promote {
    /// The promoted dtype (`add`, `mul`).
    Same,
    /// The promoted dtype, but integers and bool go to the default float
    /// (`div`, `atan2`).
    Float,
}

/// Shared front half of every binary op: promoted dtype, converted inputs,
/// broadcast output shape.
pub(crate) fn prepare(
    op: &str,
    a: &Tensor,
    b: &Operand,
    promote: Promote,
) -> Result<(DType, Tensor, Tensor, crate::tensor::layout::Dims)> {
    let mut dt = result_type(&[ResultTypeArg::Tensor(a.dtype(), a.dim()), b.arg()]);
    if promote == Promote::Float && !dt.is_floating_point() && !dt.is_complex() {
        dt = get_default_dtype();
    }
    let shape = broadcast_shapes(a.shape(), b.shape()).map_err(|e| e.context(op))?;
    let bt = match b {
        Operand::Scalar(s) => scalar_operand(*s, dt)?,
        Operand::Tensor(t) => t.to_dtype(dt)?,
    };
    Ok((dt, a.to_dtype(dt)?, bt, shape))
}

/// # Note [Scalar operand cache]
/// `x * 2.0` runs the tensor kernel with a 0-dim tensor holding 2.0.
/// Building that tensor (two allocations) costs as much as the op itself
/// on small inputs, and loops repeat the same scalar, so each thread keeps
/// the last few it made. They are only ever read: [`prepare`] hands them
/// to kernels as inputs, never to callers that could write into them.
fn scalar_operand(s: Scalar, dt: DType) -> Result<Tensor> {
    type Key = (DType, u8, u64);
    thread_local! {
        static CACHE: std::cell::RefCell<[Option<(Key, Tensor)>; 4]> =
            const { std::cell::RefCell::new([None, None, None, None]) };
    }
    let key: Key = match s {
        Scalar::Bool(b) => (dt, 0, b as u64),
        Scalar::Int(i) => (dt, 1, i as u64),
        Scalar::Float(f) => (dt, 2, f.to_bits()),
        // Complex scalars are not cached (rare; the key has one word).
        Scalar::Complex(..) => return Tensor::full_cast(&[], s, dt),
    };
    let hit = CACHE.try_with(|c| {
        c.borrow()
            .iter()
            .flatten()
            .find(|(k, _)| *k == key)
            .map(|(_, t)| t.clone())
    });
    if let Ok(Some(t)) = hit {
        return Ok(t);
    }
    let t = Tensor::full_cast(&[], s, dt)?;
    let _ = CACHE.try_with(|c| {
        let mut c = c.borrow_mut();
        c.rotate_right(1);
        c[0] = Some((key, t.clone()));
    });
    Ok(t)
}

/// Error out when an integer divisor contains a zero (PyTorch raises
/// ZeroDivisionError rather than trapping).
pub(crate) fn check_int_divisor(op: &str, b: &Tensor) -> Result<()> {
    if b.dtype().is_integral(false) {
        let zero = b.eq(0)?.any()?.item()?.to_bool();
        crate::ensure!(!zero, Runtime, "{op}: ZeroDivisionError");
    }
    Ok(())
}

/// `dtype` can be written into a tensor of `to` by an in-place op
/// (c10 `canCast`): no float → integer, no non-bool → bool.
pub(crate) fn can_cast(from: DType, to: DType) -> bool {
    !(from.is_floating_point() && to.is_integral(true)
        || from.is_complex() && !to.is_complex()
        || from != DType::Bool && to == DType::Bool)
}

/// # Note [In-place kernels]
/// An in-place op whose result already has `self`'s dtype and shape runs
/// its kernel with `self` as both input and output: one kernel, one write
/// lock, so concurrent in-place updates from several threads serialise
/// instead of losing writes. An operand that is a *different* view of the
/// same memory (`a.add_(&a.t())`) is copied first, so no element is read
/// after it was overwritten.
pub(crate) fn detach_alias(this: &Tensor, other: Tensor) -> Result<Tensor> {
    if other.storage().is_same(this.storage()) && other.layout() != this.layout() {
        other.deep_clone()
    } else {
        Ok(other)
    }
}

/// Run an out-of-place op `f` in place: check shape and castability, then
/// write the result into `self`.
pub(crate) fn inplace_from(
    op: &str,
    this: &Tensor,
    others: &[Tensor],
    compute: impl FnOnce(&Tensor) -> Result<Tensor>,
) -> Result<()> {
    if crate::autograd::derivatives::inplace::check(op, this, others)? {
        return crate::autograd::derivatives::inplace::run(this, true, compute);
    }
    let r = compute(this)?;
    crate::ensure!(
        can_cast(r.dtype(), this.dtype()),
        Runtime,
        "{op}: result type {} can't be cast to the desired output type {}",
        r.dtype().name_title(),
        this.dtype().name_title()
    );
    crate::ensure!(
        r.shape() == this.shape(),
        Runtime,
        "{op}: output with shape {:?} doesn't match the broadcast shape {:?}",
        this.shape(),
        r.shape()
    );
    check_inplace(op, this)?;
    crate::tensor::data::copy_cast(&r, this);
    this.storage().bump_version();
    Ok(())
}

macro_rules! binary_ops {
    ($( $(#[$doc:meta])* $name:ident, $name_:ident, $promote:ident,
        float |$x:ident, $y:ident| $fb:expr, int |$i:ident, $j:ident| $ib:expr, bool |$p:ident, $q:ident| $bb:expr,
        check: $check:expr; )*) => {
        impl Tensor {
            $(
                $(#[$doc])*
                pub fn $name(&self, other: impl Into<Operand>) -> Result<Tensor> {
                    let other = other.into();
                    static OP: crate::dispatch::OpHandle = crate::dispatch::OpHandle::new(stringify!($name));
                    if crate::dispatch::keys::interposed() {
                        let b = other.boxed_for(stringify!($name), self)?;
                        if let Some(r) = crate::dispatch::handle::intercept_tensor(&OP, || vec![self.into(), b]) {
                            return r;
                        }
                    }
                    if crate::native::complex::involves_complex(self, &other) {
                        return crate::native::complex::binary(stringify!($name), self, &other);
                    }
                    let raw = || -> Result<Tensor> {
                        if let Some(y) = pow_number_form(stringify!($name), self, &other)? {
                            return Ok(y);
                        }
                        let (dt, a, b, shape) = prepare(stringify!($name), self, &other, Promote::$promote)?;
                        let check: fn(&str, DType, &Operand, &Tensor) -> Result<()> = $check;
                        check(stringify!($name), dt, &other, &b)?;
                        let like = if a.shape() == shape.as_slice() { Some(&a) } else { None };
                        let out = empty_like_layout(&shape, dt, like)?;
                        binary_each_dtype!(stringify!($name), same, dt, &a, &b, &out,
                            float |$x, $y| $fb, int |$i, $j| $ib, bool |$p, $q| $bb);
                        Ok(out)
                    };
                    let y = crate::autograd::raw(&other.with_lhs(self), raw)?;
                    crate::autograd::derivatives::pointwise::binary(stringify!($name), self, &other, 1.0, y)
                }
                #[doc = concat!("In-place `", stringify!($name), "`.")]
                pub fn $name_(&self, other: impl Into<Operand>) -> Result<()> {
                    let other = other.into();
                    static OP: crate::dispatch::OpHandle = crate::dispatch::OpHandle::new(stringify!($name_));
                    if crate::dispatch::keys::interposed() {
                        let b = other.boxed_for(stringify!($name), self)?;
                        if let Some(r) = crate::dispatch::handle::intercept(&OP, || vec![self.into(), b]) {
                            return r.map(|_| ());
                        }
                    }
                    if crate::native::complex::involves_complex(self, &other) {
                        // the other operand's history counts too (Note [In-place autograd])
                        let others = other.tensors().to_vec();
                        return inplace_from(stringify!($name_), self, &others, |t| t.$name(other));
                    }
                    if crate::autograd::derivatives::inplace::check(stringify!($name_), self, other.tensors())? {
                        let uses_old = !matches!(stringify!($name), "add" | "sub");
                        return crate::autograd::derivatives::inplace::run(self, uses_old, |old| old.$name(other.clone()));
                    }
                    let (dt, _, b, shape) = prepare(stringify!($name_), self, &other, Promote::$promote)?;
                    if dt != self.dtype() || shape.as_slice() != self.shape() {
                        // the other operand's history counts too (Note [In-place autograd])
                        let others = other.tensors().to_vec();
                        return inplace_from(stringify!($name_), self, &others, |t| t.$name(other));
                    }
                    // Note [In-place kernels]: read and write `self` in one
                    // kernel under its write lock, so the update is atomic.
                    let check: fn(&str, DType, &Operand, &Tensor) -> Result<()> = $check;
                    check(stringify!($name_), dt, &other, &b)?;
                    check_inplace(stringify!($name_), self)?;
                    if let Some(y) = pow_number_form(stringify!($name), self, &other)? {
                        return self.copy_(&y);
                    }
                    let b = detach_alias(self, b)?;
                    binary_each_dtype!(stringify!($name_), same, dt, self, &b, self,
                        float |$x, $y| $fb, int |$i, $j| $ib, bool |$p, $q| $bb);
                    self.storage().bump_version();
                    Ok(())
                }
            )*
        }

        pub(crate) fn register_binary(r: &mut Registry) {
            $(
                let (tn, sn) = overload_names(stringify!($name));
                r.def_typed(&format!("{}{tn}(Tensor self, Tensor other) -> Tensor", stringify!($name)),
                    |x: Tensor, y: Tensor| x.$name(y));
                if let Some(sn) = sn {
                    r.def_typed(&format!("{}.{sn}(Tensor self, Scalar other) -> Tensor", stringify!($name)),
                        |x: Tensor, y: Scalar| x.$name(y));
                }
                r.def_typed(concat!(stringify!($name_), ".Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)"),
                    |x: Tensor, y: Tensor| x.$name_(y).map(|()| x));
                r.def_typed(concat!(stringify!($name_), ".Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)"),
                    |x: Tensor, y: Scalar| x.$name_(y).map(|()| x));
            )*
        }
    };
}

/// PyTorch's overload names for the tensor-tensor and tensor-scalar forms.
/// `pow` uses `Tensor_Tensor`/`Tensor_Scalar` (`pow.Scalar` is the
/// scalar-base form); the elementwise max/min family, `atan2` and `hypot`
/// have no scalar overload in PyTorch (the Rust methods still take numbers).
fn overload_names(op: &str) -> (&'static str, Option<&'static str>) {
    match op {
        "pow" => (".Tensor_Tensor", Some("Tensor_Scalar")),
        "maximum" | "minimum" | "fmax" | "fmin" | "atan2" | "hypot" => ("", None),
        "xlogy" => (".Tensor", Some("Scalar_Other")),
        _ => (".Tensor", Some("Scalar")),
    }
}

fn no_check(_: &str, _: DType, _: &Operand, _: &Tensor) -> Result<()> {
    Ok(())
}

fn not_bool(op: &str, dt: DType) -> Result<()> {
    crate::ensure!(
        dt != DType::Bool,
        NotImplemented,
        "{op}: \"{op}_cpu\" not implemented for 'Bool'"
    );
    Ok(())
}

fn int_divisor(op: &str, dt: DType, _: &Operand, b: &Tensor) -> Result<()> {
    not_bool(op, dt)?;
    check_int_divisor(op, b)
}

fn no_bool(op: &str, dt: DType, _: &Operand, _: &Tensor) -> Result<()> {
    crate::ensure!(
        dt != DType::Bool,
        NotImplemented,
        "{op}: Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` operator instead."
    );
    Ok(())
}

fn float_only(op: &str, dt: DType, _: &Operand, _: &Tensor) -> Result<()> {
    crate::ensure!(
        dt.is_floating_point(),
        NotImplemented,
        "{op}: not implemented for '{}'",
        dt.name_title()
    );
    Ok(())
}

#[inline(always)]
fn py_mod_i<I: IntElem>(x: I, y: I) -> I {
    let r = x.trem(y);
    let z = I::zero();
    if r != z && ((r < z) != (y < z)) {
        r.wadd(y)
    } else {
        r
    }
}

#[inline(always)]
fn int_pow<I: IntElem>(base: I, exp: I) -> I {
    let mut e = exp.to_i64();
    if e < 0 {
        // only reachable for 1 and -1 bases after the check below
        return if base == I::one() {
            I::one()
        } else if base.wadd(I::one()) == I::zero() {
            if e % 2 == 0 {
                I::one()
            } else {
                base
            }
        } else {
            I::zero()
        };
    }
    let (mut r, mut b) = (I::one(), base);
    while e > 0 {
        if e & 1 == 1 {
            r = r.wmul(b);
        }
        b = b.wmul(b);
        e >>= 1;
    }
    r
}

/// # Note [pow of a number]
/// `torch.pow(x, 0.5)` is `sqrt(x)` and `torch.pow(x, -0.5)` is `rsqrt(x)`
/// for a float `x` and a number exponent (a tensor exponent takes C's
/// `pow`). They differ from `pow` at -0 (sqrt gives -0, pow +0) and -inf
/// (sqrt gives NaN, pow +inf), and the gradient of `x^1.5` takes
/// `x^0.5` the same way. The number form of `op` on `a`, or `None`.
fn pow_number_form(op: &str, a: &Tensor, b: &Operand) -> Result<Option<Tensor>> {
    if op != "pow" || !a.dtype().is_floating_point() {
        return Ok(None);
    }
    match b {
        Operand::Scalar(s) if !s.is_complex() && s.to_f64() == 0.5 => a.sqrt().map(Some),
        Operand::Scalar(s) if !s.is_complex() && s.to_f64() == -0.5 => a.rsqrt().map(Some),
        _ => Ok(None),
    }
}

/// Integer bases with a negative *scalar* exponent are an error (a tensor
/// exponent gives 0, 1 or -1 elementwise, as in PyTorch).
fn pow_check(op: &str, dt: DType, other: &Operand, _: &Tensor) -> Result<()> {
    not_bool(op, dt)?;
    if let Operand::Scalar(s) = other {
        crate::ensure!(
            !(dt.is_integral(false) && s.to_f64() < 0.0),
            Runtime,
            "{op}: Integers to negative integer powers are not allowed."
        );
    }
    Ok(())
}

binary_ops! {
    /// Elementwise sum with broadcasting (`a + b`); bool + bool is logical or.
    add, add_, Same,
        float |x, y| x + y, int |x, y| x.wadd(y), bool |p, q| p | q, check: no_check;
    /// Elementwise difference (`a - b`); not defined for two bools.
    sub, sub_, Same,
        float |x, y| x - y, int |x, y| x.wsub(y), bool |p, q| p ^ q, check: no_bool;
    /// Elementwise product (`a * b`); bool * bool is logical and.
    mul, mul_, Same,
        float |x, y| x * y, int |x, y| x.wmul(y), bool |p, q| p & q, check: no_check;
    /// True division (`a / b`): integers give the default float dtype.
    div, div_, Float,
        float |x, y| x / y, int |x, _y| x, bool |p, _q| p, check: no_check;
    /// Python's modulus: the result has the sign of the divisor.
    remainder, remainder_, Same,
        float |x, y| { let m = x % y; if m != 0.0 && ((y < 0.0) != (m < 0.0)) { m + y } else { m } }, int |x, y| py_mod_i(x, y), bool |p, _q| p, check: int_divisor;
    /// C's fmod: the result has the sign of the dividend.
    fmod, fmod_, Same,
        float |x, y| x % y, int |x, y| x.trem(y), bool |p, _q| p, check: int_divisor;
    /// x to the power y. Integer bases with negative integer exponents are errors.
    pow, pow_, Same,
        float |x, y| x.powf(y), int |x, y| int_pow(x, y), bool |p, _q| p, check: pow_check;
    /// Elementwise maximum; NaN propagates.
    maximum, maximum_, Same,
        float |x, y| if x.is_nan() || y.is_nan() { x + y } else if x > y { x } else { y },
        int |x, y| if x > y { x } else { y }, bool |p, q| p | q, check: no_check;
    /// Elementwise minimum; NaN propagates.
    minimum, minimum_, Same,
        float |x, y| if x.is_nan() || y.is_nan() { x + y } else if x < y { x } else { y },
        int |x, y| if x < y { x } else { y }, bool |p, q| p & q, check: no_check;
    /// Elementwise maximum ignoring NaN.
    fmax, fmax_, Same,
        float |x, y| x.max(y), int |x, y| if x > y { x } else { y }, bool |p, q| p | q, check: no_check;
    /// Elementwise minimum ignoring NaN.
    fmin, fmin_, Same,
        float |x, y| x.min(y), int |x, y| if x < y { x } else { y }, bool |p, q| p & q, check: no_check;
    /// atan(x / y) in the right quadrant.
    atan2, atan2_, Float,
        float |x, y| x.atan2(y), int |x, _y| x, bool |p, _q| p, check: float_only;
    /// sqrt(x² + y²) without overflow.
    hypot, hypot_, Same,
        float |x, y| x.hypot(y), int |x, _y| x, bool |p, _q| p, check: float_only;
    /// |x| with the sign of y.
    copysign, copysign_, Float,
        float |x, y| x.copysign(y), int |x, _y| x, bool |p, _q| p, check: float_only;
    /// x * ln(y), with 0 where x == 0 (unless y is NaN).
    xlogy, xlogy_, Float,
        float |x, y| if y.is_nan() { y } else if x == 0.0 { 0.0 } else { x * y.ln() },
        int |x, _y| x, bool |p, _q| p, check: float_only;
}

impl Tensor {
    /// `a + alpha * b` (`torch.add(a, b, alpha=alpha)`).
    pub fn add_alpha(&self, other: impl Into<Operand>, alpha: impl Into<Scalar>) -> Result<Tensor> {
        let alpha = alpha.into();
        match other.into() {
            o if alpha == Scalar::Int(1) => self.add(o),
            Operand::Tensor(t) => self.add(t.mul(alpha)?),
            Operand::Scalar(s) if s.is_complex() || alpha.is_complex() => {
                let ((a, b), (c, d)) = (s.to_complex(), alpha.to_complex());
                self.add(Scalar::Complex(a * c - b * d, a * d + b * c))
            }
            Operand::Scalar(s) => self.add(Scalar::Float(s.to_f64() * alpha.to_f64())),
        }
    }

    /// `a - alpha * b` (`torch.sub(a, b, alpha=alpha)`).
    pub fn sub_alpha(&self, other: impl Into<Operand>, alpha: impl Into<Scalar>) -> Result<Tensor> {
        match alpha.into() {
            Scalar::Int(1) => self.sub(other),
            Scalar::Int(i) => self.add_alpha(other, Scalar::Int(i.wrapping_neg())),
            Scalar::Complex(re, im) => self.add_alpha(other, Scalar::Complex(-re, -im)),
            a => self.add_alpha(other, Scalar::Float(-a.to_f64())),
        }
    }

    /// Division with a rounding mode: `None` (true division), `"trunc"` or
    /// `"floor"` (`torch.div(a, b, rounding_mode=...)`). Integer inputs keep
    /// their dtype with a rounding mode.
    pub fn div_mode(
        &self,
        other: impl Into<Operand>,
        rounding_mode: Option<&str>,
    ) -> Result<Tensor> {
        let other: Operand = other.into();
        let Some(mode) = rounding_mode else {
            return self.div(other);
        };
        crate::enter_op!("div", self, other.boxed(), mode);
        let (dt, a, b, shape) = prepare("div", self, &other, Promote::Same)?;
        check_int_divisor("div", &b)?;
        let out = empty_like_layout(
            &shape,
            dt,
            if a.shape() == shape.as_slice() {
                Some(&a)
            } else {
                None
            },
        )?;
        match mode {
            "trunc" => binary_each_dtype!(
                "div",
                same,
                dt,
                &a,
                &b,
                &out,
                float | x,
                y | (x / y).trunc(),
                int | x,
                y | x.tdiv(y),
                bool | p,
                _q | p
            ),
            "floor" => binary_each_dtype!(
                "div",
                same,
                dt,
                &a,
                &b,
                &out,
                float | x,
                y | floor_div_f(x as f64, y as f64) as _,
                int | x,
                y | {
                    let q = x.tdiv(y);
                    let z = Element::zero();
                    if x.trem(y) != z && ((x < z) != (y < z)) {
                        q.wsub(Element::one())
                    } else {
                        q
                    }
                },
                bool | p,
                _q | p
            ),
            m => crate::bail!(
                Value,
                "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{m}'"
            ),
        }
        match &other {
            Operand::Tensor(o) => crate::autograd::derivatives::pointwise::zero_derivative(
                "DivBackward1",
                &[self, o],
                out,
            ),
            Operand::Scalar(_) => crate::autograd::derivatives::pointwise::zero_derivative(
                "DivBackward2",
                &[self],
                out,
            ),
        }
    }

    /// `torch.floor_divide` (floor rounding).
    pub fn floor_divide(&self, other: impl Into<Operand>) -> Result<Tensor> {
        let other: Operand = other.into();
        crate::enter_op!("floor_divide", self, other.boxed());
        self.div_mode(other, Some("floor"))
    }
}

/// Python's `//` on floats, as PyTorch's `div_floor_floating`.
fn floor_div_f(a: f64, b: f64) -> f64 {
    if b == 0.0 {
        return a / b;
    }
    let m = a % b;
    let mut div = (a - m) / b;
    if m != 0.0 && ((b < 0.0) != (m < 0.0)) {
        div -= 1.0;
    }
    if div == 0.0 {
        return (0.0f64).copysign(a / b);
    }
    let mut f = div.floor();
    if div - f > 0.5 {
        f += 1.0;
    }
    f
}

pub(crate) fn register_arith_extras(r: &mut Registry) {
    r.def_typed(
        "add.Tensor_alpha(Tensor self, Tensor other, *, Scalar alpha) -> Tensor",
        |x: Tensor, y: Tensor, alpha: Scalar| x.add_alpha(y, alpha),
    );
    r.def_typed(
        "sub.Tensor_alpha(Tensor self, Tensor other, *, Scalar alpha) -> Tensor",
        |x: Tensor, y: Tensor, alpha: Scalar| x.sub_alpha(y, alpha),
    );
    r.def_typed(
        "add_.Tensor_alpha(Tensor(a!) self, Tensor other, *, Scalar alpha) -> Tensor(a!)",
        |x: Tensor, y: Tensor, alpha: Scalar| x.add_(y.mul(alpha)?).map(|()| x),
    );
    r.def_typed(
        "sub_.Tensor_alpha(Tensor(a!) self, Tensor other, *, Scalar alpha) -> Tensor(a!)",
        |x: Tensor, y: Tensor, alpha: Scalar| x.sub_(y.mul(alpha)?).map(|()| x),
    );
    r.def_typed(
        "div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode) -> Tensor",
        |x: Tensor, y: Tensor, mode: Option<String>| x.div_mode(y, mode.as_deref()),
    );
    r.def_typed(
        "div.Scalar_mode(Tensor self, Scalar other, *, str? rounding_mode) -> Tensor",
        |x: Tensor, y: Scalar, mode: Option<String>| x.div_mode(y, mode.as_deref()),
    );
    r.def_typed(
        "floor_divide(Tensor self, Tensor other) -> Tensor",
        |x: Tensor, y: Tensor| x.floor_divide(y),
    );
    r.def_typed(
        "floor_divide.Scalar(Tensor self, Scalar other) -> Tensor",
        |x: Tensor, y: Scalar| x.floor_divide(y),
    );
    r.def_typed(
        "pow.Scalar(Scalar self, Tensor exponent) -> Tensor",
        |base: Scalar, e: Tensor| {
            let dt = result_type(&[
                ResultTypeArg::Scalar(base),
                ResultTypeArg::Tensor(e.dtype(), e.dim()),
            ]);
            Tensor::full_cast(&[], base, dt)?.pow(&e)
        },
    );
}

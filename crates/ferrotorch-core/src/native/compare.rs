//! Comparisons, logical ops and bitwise ops.
//!
//! Comparisons compute in the promoted dtype and return bool tensors;
//! logical ops treat any nonzero as true; bitwise ops are defined for
//! integers and bool only.

use super::binary::{binary_each_dtype, inplace_from, prepare, Operand, Promote};
use super::iter::{empty_like_layout, map_binary};
use crate::dispatch::Registry;
use crate::dtype::{DType, IntElem};
use crate::error::Result;
use crate::tensor::Tensor;

macro_rules! predicate_ops {
    ($( $(#[$doc:meta])* $name:ident, $name_:ident: |$x:ident, $y:ident| $body:expr; )*) => {
        impl Tensor {
            $(
                $(#[$doc])*
                pub fn $name(&self, other: impl Into<Operand>) -> Result<Tensor> {
                    let other = other.into();
                    static OP: crate::dispatch::OpHandle = crate::dispatch::OpHandle::new(stringify!($name));
                    if let Some(r) = crate::dispatch::handle::intercept_tensor(&OP, || vec![self.into(), other.boxed()]) {
                        return r;
                    }
                    if crate::native::complex::involves_complex(self, &other) {
                        return crate::native::complex::binary(stringify!($name), self, &other);
                    }
                    let (dt, a, b, shape) = prepare(stringify!($name), self, &other, Promote::Same)?;
                    let out = empty_like_layout(&shape, DType::Bool, if a.shape() == shape.as_slice() { Some(&a) } else { None })?;
                    binary_each_dtype!(stringify!($name), bool, dt, &a, &b, &out,
                        float |$x, $y| $body, int |$x, $y| $body, bool |$x, $y| $body);
                    Ok(out)
                }
                #[doc = concat!("In-place `", stringify!($name), "` (writes 0/1 in `self`'s dtype).")]
                pub fn $name_(&self, other: impl Into<Operand>) -> Result<()> {
                    let other = other.into();
                    inplace_from(stringify!($name_), self, other.tensors(), |t| t.$name(other.clone()).and_then(|r| r.to_dtype(t.dtype())))
                }
            )*
        }

        pub(crate) fn register_predicates(r: &mut Registry) {
            $(
                r.def_typed(concat!(stringify!($name), ".Tensor(Tensor self, Tensor other) -> Tensor"),
                    |x: Tensor, y: Tensor| x.$name(y));
                r.def_typed(concat!(stringify!($name), ".Scalar(Tensor self, Scalar other) -> Tensor"),
                    |x: Tensor, y: crate::scalar::Scalar| x.$name(y));
            )*
        }
    };
}

predicate_ops! {
    /// `a == b`, elementwise, as bool.
    eq, eq_: |x, y| x == y;
    /// `a != b`, elementwise, as bool.
    ne, ne_: |x, y| x != y;
    /// `a < b`, elementwise, as bool.
    lt, lt_: |x, y| x < y;
    /// `a <= b`, elementwise, as bool.
    le, le_: |x, y| x <= y;
    /// `a > b`, elementwise, as bool.
    gt, gt_: |x, y| x > y;
    /// `a >= b`, elementwise, as bool.
    ge, ge_: |x, y| x >= y;
}

macro_rules! logical_ops {
    ($( $(#[$doc:meta])* $name:ident: |$p:ident, $q:ident| $body:expr; )*) => {
        impl Tensor {
            $(
                $(#[$doc])*
                pub fn $name(&self, other: &Tensor) -> Result<Tensor> {
                    static OP: crate::dispatch::OpHandle = crate::dispatch::OpHandle::new(stringify!($name));
                    if let Some(r) = crate::dispatch::handle::intercept_tensor(&OP, || vec![self.into(), other.into()]) {
                        return r;
                    }
                    let a = self.ne(0)?;
                    let b = other.ne(0)?;
                    let shape = crate::tensor::layout::broadcast_shapes(a.shape(), b.shape())
                        .map_err(|e| e.context(stringify!($name)))?;
                    let out = Tensor::empty(&shape, DType::Bool)?;
                    map_binary::<bool, bool, bool>(&a, &b, &out, |$p, $q| $body);
                    Ok(out)
                }
            )*
        }

        pub(crate) fn register_logical(r: &mut Registry) {
            $(
                r.def_typed(concat!(stringify!($name), "(Tensor self, Tensor other) -> Tensor"),
                    |x: Tensor, y: Tensor| x.$name(&y));
            )*
        }
    };
}

logical_ops! {
    /// Elementwise logical and (nonzero is true), as bool.
    logical_and: |p, q| p & q;
    /// Elementwise logical or, as bool.
    logical_or: |p, q| p | q;
    /// Elementwise logical xor, as bool.
    logical_xor: |p, q| p ^ q;
}

macro_rules! bitwise_ops {
    ($( $(#[$doc:meta])* $name:ident, $name_:ident: int |$x:ident, $y:ident| $ib:expr, bool |$p:ident, $q:ident| $bb:expr; )*) => {
        impl Tensor {
            $(
                $(#[$doc])*
                pub fn $name(&self, other: impl Into<Operand>) -> Result<Tensor> {
                    let other = other.into();
                    static OP: crate::dispatch::OpHandle = crate::dispatch::OpHandle::new(stringify!($name));
                    if let Some(r) = crate::dispatch::handle::intercept_tensor(&OP, || vec![self.into(), other.boxed()]) {
                        return r;
                    }
                    let (dt, a, b, shape) = prepare(stringify!($name), self, &other, Promote::Same)?;
                    crate::ensure!(
                        !dt.is_floating_point(),
                        NotImplemented,
                        "{}: \"{}_cpu\" not implemented for '{}'",
                        stringify!($name), stringify!($name), dt.name_title()
                    );
                    let out = empty_like_layout(&shape, dt, if a.shape() == shape.as_slice() { Some(&a) } else { None })?;
                    binary_each_dtype!(stringify!($name), same, dt, &a, &b, &out,
                        float |u, _v| u, int |$x, $y| $ib, bool |$p, $q| $bb);
                    Ok(out)
                }
                #[doc = concat!("In-place `", stringify!($name), "`.")]
                pub fn $name_(&self, other: impl Into<Operand>) -> Result<()> {
                    let other = other.into();
                    inplace_from(stringify!($name_), self, other.tensors(), |t| t.$name(other.clone()))
                }
            )*
        }

        pub(crate) fn register_bitwise(r: &mut Registry) {
            $(
                r.def_typed(concat!(stringify!($name), ".Tensor(Tensor self, Tensor other) -> Tensor"),
                    |x: Tensor, y: Tensor| x.$name(y));
                r.def_typed(concat!(stringify!($name), ".Scalar(Tensor self, Scalar other) -> Tensor"),
                    |x: Tensor, y: crate::scalar::Scalar| x.$name(y));
            )*
        }
    };
}

bitwise_ops! {
    /// Bitwise and (`&`); logical and for bool.
    bitwise_and, bitwise_and_: int |x, y| x.band(y), bool |p, q| p & q;
    /// Bitwise or (`|`); logical or for bool.
    bitwise_or, bitwise_or_: int |x, y| x.bor(y), bool |p, q| p | q;
    /// Bitwise xor (`^`); logical xor for bool.
    bitwise_xor, bitwise_xor_: int |x, y| x.bxor(y), bool |p, q| p ^ q;
    /// Shift left (`<<`); shifts past the width give 0.
    bitwise_left_shift, bitwise_left_shift_: int |x, y| x.shl(y), bool |p, q| (p as u8).shl(q as u8) != 0;
    /// Arithmetic shift right (`>>`).
    bitwise_right_shift, bitwise_right_shift_: int |x, y| x.shr(y), bool |p, q| (p as u8).shr(q as u8) != 0;
}

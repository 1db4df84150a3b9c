//! Typed kernels: the boxed adapter of an op generated from its schema
//! and the Rust function's parameter types.
//!
//! # Note [Typed kernels]
//! A kernel registered with [`Registry::def_typed`] is a plain function of
//! typed arguments, one per schema argument in schema order
//! (`|x: Tensor, dim: i64, keepdim: bool| x.sum_dim(...)`). Registration
//! checks the two against each other — the count, and that each
//! parameter's type can hold the schema argument's type
//! ([`FromArg::accepts`]) — so a mismatch is a registration error naming
//! the op and the argument, not a wrong read at call time; the adapter
//! that unboxes each argument and boxes the result is generated here,
//! once, instead of being written by hand for every op. Every built-in op
//! is registered this way; [`Registry::add`] remains for kernels that
//! take the bound [`Args`] whole (custom ops registered at run time).

use super::{Args, IValue, Registry, Schema, Type};
use crate::dtype::DType;
use crate::error::{Error, ErrorKind, Result};
use crate::scalar::Scalar;
use crate::tensor::Tensor;

/// A Rust type a schema argument converts to.
pub trait FromArg: Sized {
    /// Whether a schema argument of type `ty` converts to this type.
    fn accepts(ty: &Type) -> bool;
    /// Argument `i` of `a`.
    fn from_arg(a: &Args, i: usize) -> Result<Self>;
}

fn optional(ty: &Type, inner: impl Fn(&Type) -> bool) -> bool {
    matches!(ty, Type::Optional(t) if inner(t))
}

fn int_list(ty: &Type) -> bool {
    matches!(ty, Type::List(t, _) if **t == Type::Int)
}

macro_rules! from_arg {
    ($t:ty, |$ty:ident| $accepts:expr, |$a:ident, $i:ident| $get:expr) => {
        impl FromArg for $t {
            fn accepts($ty: &Type) -> bool {
                $accepts
            }
            fn from_arg($a: &Args, $i: usize) -> Result<Self> {
                $get
            }
        }
    };
}

from_arg!(Tensor, |ty| *ty == Type::Tensor, |a, i| a.tensor(i));
from_arg!(
    Option<Tensor>,
    |ty| optional(ty, |t| *t == Type::Tensor),
    |a, i| a.opt_tensor(i)
);
from_arg!(i64, |ty| *ty == Type::Int, |a, i| a.int(i));
from_arg!(usize, |ty| *ty == Type::Int, |a, i| a.usize(i));
from_arg!(
    Option<i64>,
    |ty| optional(ty, |t| *t == Type::Int),
    |a, i| a.opt_int(i)
);
from_arg!(
    Option<usize>,
    |ty| optional(ty, |t| *t == Type::Int),
    |a, i| a.opt_int(i)?.map(|_| a.usize(i)).transpose()
);
// a `Scalar` argument too, for a method that takes it as a number
// (`leaky_relu`'s slope; `elu`'s default alpha is the int 1)
from_arg!(
    f64,
    |ty| matches!(ty, Type::Float | Type::Scalar),
    |a, i| if a.schema().args[i].ty == Type::Scalar {
        a.scalar(i).map(|s| s.to_f64())
    } else {
        a.float(i)
    }
);
from_arg!(
    Option<bool>,
    |ty| optional(ty, |t| *t == Type::Bool),
    |a, i| match a.get(i) {
        IValue::None => Ok(None),
        _ => a.bool(i).map(Some),
    }
);
from_arg!(
    Option<f64>,
    |ty| optional(ty, |t| matches!(t, Type::Float | Type::Scalar)),
    |a, i| match &a.schema().args[i].ty {
        Type::Optional(t) if **t == Type::Scalar => Ok(a.opt_scalar(i)?.map(|s| s.to_f64())),
        _ => a.opt_float(i),
    }
);
from_arg!(bool, |ty| *ty == Type::Bool, |a, i| a.bool(i));
from_arg!(String, |ty| *ty == Type::Str, |a, i| a.str(i));
from_arg!(
    Option<String>,
    |ty| optional(ty, |t| *t == Type::Str),
    |a, i| a.opt_str(i)
);
from_arg!(Scalar, |ty| *ty == Type::Scalar, |a, i| a.scalar(i));
from_arg!(
    Option<Scalar>,
    |ty| optional(ty, |t| *t == Type::Scalar),
    |a, i| a.opt_scalar(i)
);
// a tensor or a number, for a method taking `impl Into<Operand>` (one
// kernel for an op's Tensor and Scalar overloads)
from_arg!(
    crate::native::binary::Operand,
    |ty| matches!(ty, Type::Tensor | Type::Scalar),
    |a, i| match a.get(i) {
        IValue::Tensor(t) => Ok(t.clone().into()),
        _ => a.scalar(i).map(Into::into),
    }
);
from_arg!(
    Option<crate::native::binary::Operand>,
    |ty| optional(ty, |t| matches!(t, Type::Tensor | Type::Scalar)),
    |a, i| match a.get(i) {
        IValue::None => Ok(None),
        IValue::Tensor(t) => Ok(Some(t.clone().into())),
        _ => a.scalar(i).map(|s| Some(s.into())),
    }
);
from_arg!(Vec<i64>, |ty| int_list(ty), |a, i| a.int_list(i));
from_arg!(Vec<usize>, |ty| int_list(ty), |a, i| a.usize_list(i));
from_arg!(Option<Vec<i64>>, |ty| optional(ty, int_list), |a, i| a
    .opt_int_list(i));
from_arg!(
    Option<Vec<f64>>,
    |ty| optional(ty, |t| matches!(t, Type::List(e, _) if **e == Type::Float)),
    |a, i| match a.get(i) {
        IValue::None => Ok(None),
        IValue::FloatList(l) => Ok(Some(l.clone())),
        IValue::IntList(l) => Ok(Some(l.iter().map(|&v| v as f64).collect())),
        v => Err(a.wrong(i, v)),
    }
);
from_arg!(
    Vec<Tensor>,
    |ty| matches!(ty, Type::List(t, _) if **t == Type::Tensor),
    |a, i| a.tensor_list(i)
);
from_arg!(
    Vec<Option<Tensor>>,
    |ty| matches!(ty, Type::List(t, _) if matches!(&**t, Type::Optional(e) if **e == Type::Tensor)),
    |a, i| match a.get(i) {
        IValue::OptTensorList(l) => Ok(l.clone()),
        IValue::TensorList(l) => Ok(l.iter().cloned().map(Some).collect()),
        v => Err(a.wrong(i, v)),
    }
);
from_arg!(
    Option<crate::native::random::Generator>,
    |ty| optional(ty, |t| *t == Type::Generator),
    |a, i| a.opt_generator(i)
);
from_arg!(
    Option<DType>,
    |ty| optional(ty, |t| *t == Type::ScalarType),
    |a, i| a.opt_dtype(i)
);
from_arg!(DType, |ty| *ty == Type::ScalarType, |a, i| match a.get(i) {
    IValue::DType(d) => Ok(*d),
    v => Err(a.wrong(i, v)),
});

/// A kernel's result as a boxed value.
pub trait IntoReturn {
    /// Box it.
    fn into_return(self) -> IValue;
}

impl IntoReturn for Tensor {
    fn into_return(self) -> IValue {
        IValue::Tensor(self)
    }
}

impl IntoReturn for () {
    fn into_return(self) -> IValue {
        IValue::None
    }
}

impl IntoReturn for bool {
    fn into_return(self) -> IValue {
        IValue::Bool(self)
    }
}

impl IntoReturn for Scalar {
    fn into_return(self) -> IValue {
        IValue::from(self)
    }
}

impl IntoReturn for i64 {
    fn into_return(self) -> IValue {
        IValue::Int(self)
    }
}

impl IntoReturn for Vec<Tensor> {
    fn into_return(self) -> IValue {
        IValue::TensorList(self)
    }
}

impl IntoReturn for (Tensor, Tensor) {
    fn into_return(self) -> IValue {
        IValue::Tuple(vec![self.0.into(), self.1.into()])
    }
}

impl IntoReturn for (Tensor, Tensor, Tensor) {
    fn into_return(self) -> IValue {
        IValue::Tuple(vec![self.0.into(), self.1.into(), self.2.into()])
    }
}

impl IntoReturn for (Tensor, Tensor, Tensor, Tensor) {
    fn into_return(self) -> IValue {
        IValue::Tuple(vec![
            self.0.into(),
            self.1.into(),
            self.2.into(),
            self.3.into(),
        ])
    }
}

/// The one value of a `SymInt[1]`-style argument (an empty or longer
/// list is an error naming it, never an index past the end).
pub fn single(op: &str, name: &str, v: &[usize]) -> Result<usize> {
    match v {
        [x] => Ok(*x),
        _ => Err(Error::new(
            ErrorKind::Runtime,
            format!("{op}(): argument '{name}' must be one int (or a list of one), got {v:?}"),
        )),
    }
}

/// A function usable as a typed kernel (implemented for closures of up
/// to ten [`FromArg`] parameters returning `Result<impl IntoReturn>`);
/// `M` tells the arities apart.
pub trait TypedKernel<M>: Send + Sync + 'static {
    /// The parameter count and, for parameter `i`, whether it accepts a
    /// schema type.
    fn params() -> Vec<fn(&Type) -> bool>;
    /// Unbox, call, box.
    fn call_boxed(&self, a: &Args) -> Result<IValue>;
}

macro_rules! typed_kernel {
    ($($p:ident $i:tt),*) => {
        impl<F, R, $($p),*> TypedKernel<($($p,)*)> for F
        where
            F: Fn($($p),*) -> Result<R> + Send + Sync + 'static,
            R: IntoReturn,
            $($p: FromArg),*
        {
            fn params() -> Vec<fn(&Type) -> bool> {
                vec![$($p::accepts as fn(&Type) -> bool),*]
            }
            #[allow(unused_variables)]
            fn call_boxed(&self, a: &Args) -> Result<IValue> {
                Ok(self($($p::from_arg(a, $i)?),*)?.into_return())
            }
        }
    };
}

typed_kernel!();
typed_kernel!(A 0);
typed_kernel!(A 0, B 1);
typed_kernel!(A 0, B 1, C 2);
typed_kernel!(A 0, B 1, C 2, D 3);
typed_kernel!(A 0, B 1, C 2, D 3, E 4);
typed_kernel!(A 0, B 1, C 2, D 3, E 4, G 5);
typed_kernel!(A 0, B 1, C 2, D 3, E 4, G 5, H 6);
typed_kernel!(A 0, B 1, C 2, D 3, E 4, G 5, H 6, I 7);
typed_kernel!(A 0, B 1, C 2, D 3, E 4, G 5, H 6, I 7, J 8);
typed_kernel!(A 0, B 1, C 2, D 3, E 4, G 5, H 6, I 7, J 8, K 9);

/// Whether the kernel's parameters match the schema's arguments.
fn check<M, F: TypedKernel<M>>(s: &Schema) -> Result<()> {
    let params = F::params();
    if params.len() != s.args.len() {
        return Err(Error::new(
            ErrorKind::Type,
            format!(
                "{}: the schema has {} arguments but the kernel takes {}",
                s.name,
                s.args.len(),
                params.len()
            ),
        ));
    }
    for (arg, accepts) in s.args.iter().zip(params) {
        if !accepts(&arg.ty) {
            return Err(Error::new(
                ErrorKind::Type,
                format!(
                    "{}: argument '{}' is {} in the schema, which the kernel's parameter type does not hold",
                    s.name, arg.name, arg.ty
                ),
            ));
        }
    }
    Ok(())
}

impl Registry {
    /// Register a typed kernel under `schema` (Note [Typed kernels]): its
    /// parameters are checked against the schema's arguments and the
    /// boxed adapter is generated.
    pub fn add_typed<M, F: TypedKernel<M>>(&mut self, schema: &str, kernel: F) -> Result<()> {
        check::<M, F>(&Schema::parse(schema)?)?;
        self.add(schema, move |a: &Args| kernel.call_boxed(a))
    }

    /// [`Registry::add_typed`] for built-in ops, where a mismatch is a bug.
    pub(crate) fn def_typed<M, F: TypedKernel<M>>(&mut self, schema: &str, kernel: F) {
        if let Err(e) = self.add_typed(schema, kernel) {
            panic!("built-in op registration failed: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_kernels_are_checked_against_their_schemas() {
        let mut r = Registry::default();
        r.add_typed(
            "t_ok(Tensor self, int dim, bool keepdim=False) -> Tensor",
            |x: Tensor, d: i64, k: bool| x.sum_dim(Some(&[d]), k, None),
        )
        .unwrap();
        let e = r
            .add_typed("t_count(Tensor self, int dim) -> Tensor", |x: Tensor| Ok(x))
            .unwrap_err()
            .to_string();
        assert!(e.contains("has 2 arguments but the kernel takes 1"), "{e}");
        let e = r
            .add_typed(
                "t_type(Tensor self, float p) -> Tensor",
                |x: Tensor, _p: i64| Ok(x),
            )
            .unwrap_err()
            .to_string();
        assert!(e.contains("argument 'p' is float"), "{e}");
        // the generated adapter unboxes by schema position
        let s = std::sync::Arc::new(
            Schema::parse("t(Tensor self, int dim, bool keepdim=False) -> Tensor").unwrap(),
        );
        let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
        let a = Args {
            schema: s,
            vals: vec![x.into(), IValue::Int(1), IValue::Bool(true)],
        };
        let k = |x: Tensor, d: i64, keep: bool| x.sum_dim(Some(&[d]), keep, None);
        let out = TypedKernel::call_boxed(&k, &a)
            .unwrap()
            .into_tensor()
            .unwrap();
        assert_eq!(out.shape(), &[2, 1]);
        assert_eq!(out.to_vec::<f32>().unwrap(), vec![3.0, 7.0]);
    }
}

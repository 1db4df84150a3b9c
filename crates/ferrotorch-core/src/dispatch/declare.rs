//! Ops declared once, next to their methods: [`crate::ops!`].
//!
//! # Note [Ops declared once]
//! An op used to be written in three places: its method with an
//! `enter_op!` preamble restating its arguments, and a `def_typed` line in
//! its module's `register` function (often hundreds of lines away) with
//! the schema and a closure that calls the method. Inside [`crate::ops!`]
//! a method carries its schema as an attribute, `#[op = "schema"]`, and
//! the macro writes the other two from it: the preamble (the op's handle,
//! named by the schema, and every argument boxed) and the registration
//! (the typed kernel's closure, each parameter's owned form from
//! [`KernelArg`]), collected into one `register` function per block. So the
//! schema, the name the handle resolves and the parameter list cannot
//! drift apart; [`Registry::def_typed`] still checks the method's
//! parameter types against the schema when the op is registered.
//!
//! [`Registry::def_typed`]: super::Registry

use crate::scalar::Scalar;
use crate::tensor::Tensor;

/// A method parameter's type as a typed kernel receives it: the owned
/// form the boxed argument converts to ([`super::typed::FromArg`]) and
/// how the method is handed it.
pub trait KernelArg<'a> {
    /// What the kernel's closure takes.
    type Owned: 'a;
    /// The method's argument from it.
    fn pass(o: &'a Self::Owned) -> Self;
}

macro_rules! by_value {
    ($($t:ty),*) => {$(
        impl<'a> KernelArg<'a> for $t {
            type Owned = $t;
            fn pass(o: &'a $t) -> $t {
                o.clone()
            }
        }
    )*};
}

by_value!(
    f64,
    i64,
    usize,
    bool,
    Scalar,
    Option<f64>,
    Option<i64>,
    Option<bool>
);

impl<'a> KernelArg<'a> for &'a Tensor {
    type Owned = Tensor;
    fn pass(o: &'a Tensor) -> &'a Tensor {
        o
    }
}

impl<'a> KernelArg<'a> for Option<&'a Tensor> {
    type Owned = Option<Tensor>;
    fn pass(o: &'a Option<Tensor>) -> Option<&'a Tensor> {
        o.as_ref()
    }
}

impl<'a> KernelArg<'a> for &'a str {
    type Owned = String;
    fn pass(o: &'a String) -> &'a str {
        o
    }
}

impl<'a> KernelArg<'a> for &'a [i64] {
    type Owned = Vec<i64>;
    fn pass(o: &'a Vec<i64>) -> &'a [i64] {
        o
    }
}

/// The op name of a schema (`round.decimals` of `round.decimals(Tensor
/// self, *, int decimals) -> Tensor`), at compile time.
pub const fn schema_name(schema: &'static str) -> &'static str {
    let b = schema.as_bytes();
    let mut n = 0;
    while n < b.len() && b[n] != b'(' {
        n += 1;
    }
    let (head, _) = b.split_at(n);
    match std::str::from_utf8(head) {
        Ok(s) => s,
        Err(_) => panic!("a schema's name is ASCII"),
    }
}

/// Tensor methods that are ops, each declared once with its schema
/// (Note [Ops declared once]):
///
/// ```text
/// ops! {
///     register = register_rows;
///     /// docs
///     #[op = "leaky_relu(Tensor self, Scalar negative_slope=0.01) -> Tensor"]
///     pub fn leaky_relu(&self, negative_slope: f64) -> Result<Tensor> { ... }
/// }
/// ```
///
/// makes the methods (each entering its op's handle first, as
/// `enter_op!` does) and `fn register_rows(r: &mut Registry)`, which
/// registers every one of them as the typed kernel of its schema.
#[macro_export]
macro_rules! ops {
    (
        register = $reg:ident;
        $(
            $(#[doc = $doc:literal])*
            #[op = $schema:literal]
            $vis:vis fn $name:ident(&$self:ident $(, $arg:ident : $ty:ty)* $(,)?) -> Result<Tensor>
            $body:block
        )*
    ) => {
        impl $crate::tensor::Tensor {
            $(
                $(#[doc = $doc])*
                $vis fn $name(&$self $(, $arg: $ty)*) -> $crate::error::Result<$crate::tensor::Tensor> {
                    {
                        static OP: $crate::dispatch::OpHandle = $crate::dispatch::OpHandle::new(
                            $crate::dispatch::declare::schema_name($schema),
                        );
                        if let Some(r) = $crate::dispatch::handle::intercept_tensor(&OP, || {
                            vec![$crate::dispatch::IValue::from($self) $(, $crate::dispatch::IValue::from($arg))*]
                        }) {
                            return r;
                        }
                    }
                    $body
                }
            )*
        }

        /// Register this block's ops (Note [Ops declared once]).
        pub(crate) fn $reg(r: &mut $crate::dispatch::Registry) {
            $(
                r.def_typed(
                    $schema,
                    |this: $crate::tensor::Tensor
                     $(, $arg: <$ty as $crate::dispatch::declare::KernelArg<'_>>::Owned)*| {
                        this.$name($(<$ty as $crate::dispatch::declare::KernelArg<'_>>::pass(&$arg)),*)
                    },
                );
            )*
        }
    };
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_schemas_name_is_its_op_and_overload() {
        const N: &str =
            super::schema_name("round.decimals(Tensor self, *, int decimals) -> Tensor");
        assert_eq!(N, "round.decimals");
        assert_eq!(super::schema_name("relu(Tensor self) -> Tensor"), "relu");
    }
}

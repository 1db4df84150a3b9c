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
//! One method may carry several schemas: an op's overloads that differ
//! only in whether an argument is a tensor or a number (`impl
//! Into<Operand>`, read by one kernel for both) or aliases (`igamma` and
//! `special_gammainc`); its handle is then the overloads' base name, which
//! binds among them by the arguments, as `enter_op!` did. A method's
//! result type says how its kernel returns: `()` is in place and gives
//! back `self` (`Tensor(a!)`), anything else is itself ([`MethodOut`]).
//! Methods whose parameters are not one schema's (`sum()` for
//! `sum(Tensor self, *, ScalarType? dtype)`) stay plain items of the block
//! and their overloads are registered by hand, next to the block.
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
    crate::dtype::DType,
    Option<f64>,
    Option<i64>,
    Option<usize>,
    Option<bool>,
    Option<Scalar>,
    Option<crate::dtype::DType>
);

impl<'a> KernelArg<'a> for Option<&'a [i64]> {
    type Owned = Option<Vec<i64>>;
    fn pass(o: &'a Option<Vec<i64>>) -> Option<&'a [i64]> {
        o.as_deref()
    }
}

impl<'a> KernelArg<'a> for &'a [usize] {
    type Owned = Vec<usize>;
    fn pass(o: &'a Vec<usize>) -> &'a [usize] {
        o
    }
}

impl<'a> KernelArg<'a> for &'a [Tensor] {
    type Owned = Vec<Tensor>;
    fn pass(o: &'a Vec<Tensor>) -> &'a [Tensor] {
        o
    }
}

impl<'a> KernelArg<'a> for Option<&'a str> {
    type Owned = Option<String>;
    fn pass(o: &'a Option<String>) -> Option<&'a str> {
        o.as_deref()
    }
}

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
    before(schema, b'(')
}

/// `s` up to its first `stop` byte (all of it without one), at compile
/// time.
const fn before(s: &'static str, stop: u8) -> &'static str {
    let b = s.as_bytes();
    let mut n = 0;
    while n < b.len() && b[n] != stop {
        n += 1;
    }
    let (head, _) = b.split_at(n);
    match std::str::from_utf8(head) {
        Ok(s) => s,
        // the cut is at an ASCII byte, so a char boundary
        Err(_) => panic!("a str cut at an ASCII byte is a str"),
    }
}

/// What a method declared in [`crate::ops!`] returns, as its typed
/// kernel returns it: an in-place method (`-> Result<()>`) gives back its
/// `self` (`Tensor(a!)`), every other result is itself.
pub trait MethodOut: Sized {
    /// The kernel's result.
    type Out: super::typed::IntoReturn;
    /// It, from the method's result and the `self` it was called on.
    fn out(self, this: Tensor) -> Self::Out;
    /// The method's result from the boxed call's (the intercepted path).
    fn from_boxed(v: super::IValue) -> crate::error::Result<Self>;
}

impl MethodOut for () {
    type Out = Tensor;
    fn out(self, this: Tensor) -> Tensor {
        this
    }
    fn from_boxed(_: super::IValue) -> crate::error::Result<()> {
        Ok(())
    }
}

impl MethodOut for Tensor {
    type Out = Tensor;
    fn out(self, _: Tensor) -> Tensor {
        self
    }
    fn from_boxed(v: super::IValue) -> crate::error::Result<Tensor> {
        v.into_tensor()
    }
}

impl MethodOut for Vec<Tensor> {
    type Out = Vec<Tensor>;
    fn out(self, _: Tensor) -> Vec<Tensor> {
        self
    }
    fn from_boxed(v: super::IValue) -> crate::error::Result<Vec<Tensor>> {
        v.into_tensor_list()
    }
}

impl MethodOut for (Tensor, Tensor) {
    type Out = (Tensor, Tensor);
    fn out(self, _: Tensor) -> (Tensor, Tensor) {
        self
    }
    fn from_boxed(v: super::IValue) -> crate::error::Result<(Tensor, Tensor)> {
        let [a, b] = tuple::<2>(v)?;
        Ok((a, b))
    }
}

impl MethodOut for (Tensor, Tensor, Tensor) {
    type Out = (Tensor, Tensor, Tensor);
    fn out(self, _: Tensor) -> (Tensor, Tensor, Tensor) {
        self
    }
    fn from_boxed(v: super::IValue) -> crate::error::Result<(Tensor, Tensor, Tensor)> {
        let [a, b, c] = tuple::<3>(v)?;
        Ok((a, b, c))
    }
}

fn tuple<const N: usize>(v: super::IValue) -> crate::error::Result<[Tensor; N]> {
    let items = match v {
        super::IValue::Tuple(items) => items
            .into_iter()
            .map(super::IValue::into_tensor)
            .collect::<crate::error::Result<Vec<_>>>()?,
        super::IValue::TensorList(l) => l,
        v => {
            return Err(crate::error::Error::new(
                crate::error::ErrorKind::Type,
                format!("expected a tuple of {N} tensors, got {}", v.type_name()),
            ))
        }
    };
    let n = items.len();
    items.try_into().map_err(|_| {
        crate::error::Error::new(
            crate::error::ErrorKind::Type,
            format!("expected a tuple of {N} tensors, got {n}"),
        )
    })
}

/// A method argument as the intercepted path boxes it (a copy of it).
pub trait Boxed {
    /// The dispatcher value.
    fn boxed(&self) -> super::IValue;
}

macro_rules! boxed_by_from {
    ($($t:ty),*) => {$(
        impl Boxed for $t {
            fn boxed(&self) -> super::IValue {
                super::IValue::from(self.clone())
            }
        }
    )*};
}

boxed_by_from!(
    &Tensor,
    f64,
    i64,
    bool,
    Scalar,
    crate::dtype::DType,
    &str,
    &[i64],
    &[usize],
    &[Tensor],
    crate::native::binary::Operand,
    Option<&Tensor>,
    Option<f64>,
    Option<i64>,
    Option<bool>,
    Option<Scalar>,
    Option<crate::dtype::DType>,
    Option<&str>,
    Option<&[i64]>,
    Option<crate::native::binary::Operand>
);

impl Boxed for usize {
    fn boxed(&self) -> super::IValue {
        super::IValue::Int(*self as i64)
    }
}

impl Boxed for Option<usize> {
    fn boxed(&self) -> super::IValue {
        self.map_or(super::IValue::None, |v| super::IValue::Int(v as i64))
    }
}

/// The handle name of a method declared with `schemas`: the one schema's
/// full name, or for several overloads (`clamp_min`, `clamp_min.Tensor`)
/// their base name, which binds among them by the arguments.
pub const fn handle_name(schemas: &[&'static str]) -> &'static str {
    let first = schema_name(schemas[0]);
    if schemas.len() == 1 {
        return first;
    }
    before(first, b'.')
}

/// Tensor methods (and free functions) that are ops, each declared once
/// with its schema (Note [Ops declared once]):
///
/// ```text
/// ops! {
///     register = register_rows;
///     /// docs
///     #[op = "leaky_relu(Tensor self, Scalar negative_slope=0.01) -> Tensor"]
///     pub fn leaky_relu(&self, negative_slope: f64) -> Result<Tensor> { ... }
///     /// an op with overloads: one method, several schemas
///     #[op = "clamp_min(Tensor self, Scalar min) -> Tensor"]
///     #[op = "clamp_min.Tensor(Tensor self, Tensor min) -> Tensor"]
///     pub fn clamp_min(&self, lo: impl Into<Operand>) -> Result<Tensor> { ... }
///     /// in place: the kernel returns `self`
///     #[op = "lerp_.Tensor(Tensor(a!) self, Tensor end, Tensor weight) -> Tensor(a!)"]
///     pub fn lerp_(&self, end: &Tensor, weight: impl Into<Operand>) -> Result<()> { ... }
///     /// lint allowances go between the docs and the schemas
///     #[allow(clippy::too_many_arguments)]
///     #[op = "..."]
///     pub fn many(&self, ...) -> Result<Tensor> { ... }
///     /// a plain method, passed through
///     fn helper(&self) -> Result<Tensor> { ... }
/// }
/// ```
///
/// makes the methods (each entering its op's handle first, as
/// `enter_op!` does; `impl Into<T>` and `Option<impl Into<T>>` parameters
/// are converted to `T` first) and `fn register_rows(r: &mut Registry)`,
/// which registers every one of them as the typed kernel of each of its
/// schemas. A method whose parameters are not its schema's (one schema
/// fixes some of them) stays outside, registered by hand.
#[macro_export]
macro_rules! ops {
    (register = $reg:ident; $($items:tt)*) => {
        $crate::__ops_items! { $reg r; []; $($items)* }
    };
}

/// [`crate::ops!`]'s item muncher: each op method becomes a method and a
/// registration statement.
#[doc(hidden)]
#[macro_export]
macro_rules! __ops_items {
    ($reg:ident $r:ident; [$($regs:tt)*];) => {
        /// Register this block's ops (Note [Ops declared once]).
        pub(crate) fn $reg($r: &mut $crate::dispatch::Registry) {
            $($regs)*
        }
    };
    ($reg:ident $r:ident; [$($regs:tt)*];
        $(#[doc = $doc:literal])*
        $(#[allow($($lint:tt)*)])*
        $(#[op = $schema:literal])+
        $vis:vis fn $name:ident(&$self:ident $(, $($params:tt)*)?) -> Result<$ret:ty>
        $body:block
        $($rest:tt)*
    ) => {
        impl $crate::tensor::Tensor {
            $crate::__ops_params! {
                @method [$(#[doc = $doc])* $(#[allow($($lint)*)])* $vis $name $self ($ret) $body [$($schema),+]]
                [] [] [] ; $($($params)*)?
            }
        }
        $crate::__ops_items! { $reg $r; [$($regs)*
            $crate::__ops_params! {
                @reg [$r $name self [$($schema),+]] [] [] ; $($($params)*)?
            }
        ]; $($rest)* }
    };
    ($reg:ident $r:ident; [$($regs:tt)*];
        $(#[doc = $doc:literal])*
        $(#[allow($($lint:tt)*)])*
        $(#[op = $schema:literal])+
        $vis:vis fn $name:ident($($params:tt)*) -> Result<$ret:ty>
        $body:block
        $($rest:tt)*
    ) => {
        $crate::__ops_params! {
            @free [$(#[doc = $doc])* $(#[allow($($lint)*)])* $vis $name ($ret) $body [$($schema),+]]
            [] [] [] ; $($params)*
        }
        $crate::__ops_items! { $reg $r; [$($regs)*
            $crate::__ops_params! {
                @reg [$r $name free [$($schema),+]] [] [] ; $($params)*
            }
        ]; $($rest)* }
    };
    ($reg:ident $r:ident; [$($regs:tt)*]; $item:item $($rest:tt)*) => {
        impl $crate::tensor::Tensor {
            $item
        }
        $crate::__ops_items! { $reg $r; [$($regs)*]; $($rest)* }
    };
}

/// [`crate::ops!`]'s parameter muncher. For a method (`@method`, `@free`)
/// it collects the signature, the conversions of `impl Into` parameters
/// and the boxed arguments; for a registration (`@reg`) the kernel's
/// parameters (each one's owned form) and the method's arguments from
/// them.
#[doc(hidden)]
#[macro_export]
macro_rules! __ops_params {
    // -- the method
    (@method [$(#[$m:meta])* $vis:vis $name:ident $self:ident ($ret:ty) $body:block [$($schema:literal),+]]
        [$($sig:tt)*] [$($conv:tt)*] [$($bx:tt)*] ; $(,)?
    ) => {
        $(#[$m])*
        $vis fn $name(&$self, $($sig)*) -> $crate::error::Result<$ret> {
            $($conv)*
            {
                static OP: $crate::dispatch::OpHandle = $crate::dispatch::OpHandle::new(
                    $crate::dispatch::declare::handle_name(&[$($schema),+]),
                );
                if let Some(r) = $crate::dispatch::handle::intercept(&OP, || {
                    vec![$crate::dispatch::IValue::from($self), $($bx)*]
                }) {
                    return r.and_then(<$ret as $crate::dispatch::declare::MethodOut>::from_boxed);
                }
            }
            $body
        }
    };
    (@free [$(#[$m:meta])* $vis:vis $name:ident ($ret:ty) $body:block [$($schema:literal),+]]
        [$($sig:tt)*] [$($conv:tt)*] [$($bx:tt)*] ; $(,)?
    ) => {
        $(#[$m])*
        $vis fn $name($($sig)*) -> $crate::error::Result<$ret> {
            $($conv)*
            {
                static OP: $crate::dispatch::OpHandle = $crate::dispatch::OpHandle::new(
                    $crate::dispatch::declare::handle_name(&[$($schema),+]),
                );
                if let Some(r) = $crate::dispatch::handle::intercept(&OP, || {
                    vec![$($bx)*]
                }) {
                    return r.and_then(<$ret as $crate::dispatch::declare::MethodOut>::from_boxed);
                }
            }
            $body
        }
    };
    (@$k:ident $head:tt [$($sig:tt)*] [$($conv:tt)*] [$($bx:tt)*] ;
        $arg:ident : impl Into<$t:ty> $(, $($rest:tt)*)?
    ) => {
        $crate::__ops_params! { @$k $head
            [$($sig)* $arg: impl Into<$t>,]
            [$($conv)* let $arg: $t = $arg.into();]
            [$($bx)* $crate::dispatch::declare::Boxed::boxed(&$arg),] ; $($($rest)*)?
        }
    };
    (@$k:ident $head:tt [$($sig:tt)*] [$($conv:tt)*] [$($bx:tt)*] ;
        $arg:ident : Option<impl Into<$t:ty>> $(, $($rest:tt)*)?
    ) => {
        $crate::__ops_params! { @$k $head
            [$($sig)* $arg: Option<impl Into<$t>>,]
            [$($conv)* let $arg: Option<$t> = $arg.map(Into::into);]
            [$($bx)* $crate::dispatch::declare::Boxed::boxed(&$arg),] ; $($($rest)*)?
        }
    };
    // (before the registration arms: `@reg` has one list fewer)
    (@$k:ident $head:tt [$($sig:tt)*] [$($conv:tt)*] [$($bx:tt)*] ;
        $arg:ident : $ty:ty $(, $($rest:tt)*)?
    ) => {
        $crate::__ops_params! { @$k $head
            [$($sig)* $arg: $ty,]
            [$($conv)*]
            [$($bx)* $crate::dispatch::declare::Boxed::boxed(&$arg),] ; $($($rest)*)?
        }
    };
    // -- the registration
    (@reg [$r:ident $name:ident $recv:ident [$($schema:literal),+]] [$($kp:tt)*] [$($ka:tt)*] ; $(,)?) => {
        $crate::__ops_params! { @each $r [$($schema),+]
            ($crate::__ops_params!(@kernel $recv $name [$($kp)*] [$($ka)*]))
        }
    };
    (@reg $head:tt [$($kp:tt)*] [$($ka:tt)*] ; $arg:ident : impl Into<$t:ty> $(, $($rest:tt)*)?) => {
        $crate::__ops_params! { @reg $head [$($kp)* $arg: $t,] [$($ka)* $arg,] ; $($($rest)*)? }
    };
    (@reg $head:tt [$($kp:tt)*] [$($ka:tt)*] ; $arg:ident : Option<impl Into<$t:ty>> $(, $($rest:tt)*)?) => {
        $crate::__ops_params! { @reg $head [$($kp)* $arg: Option<$t>,] [$($ka)* $arg,] ; $($($rest)*)? }
    };
    (@reg $head:tt [$($kp:tt)*] [$($ka:tt)*] ; $arg:ident : $ty:ty $(, $($rest:tt)*)?) => {
        $crate::__ops_params! { @reg $head
            [$($kp)* $arg: <$ty as $crate::dispatch::declare::KernelArg<'_>>::Owned,]
            [$($ka)* <$ty as $crate::dispatch::declare::KernelArg<'_>>::pass(&$arg),] ;
            $($($rest)*)?
        }
    };
    (@kernel self $name:ident [$($kp:tt)*] [$($ka:tt)*]) => {
        |this: $crate::tensor::Tensor, $($kp)*| {
            let r = this.$name($($ka)*);
            r.map(|v| $crate::dispatch::declare::MethodOut::out(v, this))
        }
    };
    (@kernel free $name:ident [$($kp:tt)*] [$($ka:tt)*]) => {
        |$($kp)*| $name($($ka)*)
    };
    (@each $r:ident [$($schema:literal),+] $kernel:tt) => {
        $( $r.def_typed($schema, $kernel); )+
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
        const H: &str = super::handle_name(&[
            "clamp_min(Tensor self, Scalar min) -> Tensor",
            "clamp_min.Tensor(Tensor self, Tensor min) -> Tensor",
        ]);
        assert_eq!(H, "clamp_min");
        assert_eq!(
            super::handle_name(&["sum.dim_IntList(Tensor self, int[1]? dim) -> Tensor"]),
            "sum.dim_IntList"
        );
    }
}

//! Rust types a custom class's methods take and return, with their schema
//! types: how `class_::<T>().def("push", TensorQueue::push)` writes the
//! method's schema from the function's signature, as TorchBind infers it
//! from C++ types.

use crate::dispatch::IValue;
use crate::error::{Error, ErrorKind, Result};
use crate::tensor::Tensor;

use super::class::ScriptObject;

/// A method or constructor argument: its schema type and how it is read
/// from a bound value.
pub trait ArgValue: Sized {
    /// The schema type (`Tensor`, `int`, `Tensor[]`).
    fn schema_type() -> String;
    /// The argument from its bound value.
    fn from_ivalue(v: IValue) -> Result<Self>;
}

/// A method result: its schema return type (`()` for none) and its value.
pub trait ReturnValue {
    /// The schema return (`Tensor`, `()`, `Any`).
    fn schema_return() -> String;
    /// The value.
    fn into_ivalue(self) -> Result<IValue>;
}

fn wrong(want: &str, v: &IValue) -> Error {
    Error::new(
        ErrorKind::Type,
        format!("expected {want} but got {}", v.type_name()),
    )
}

macro_rules! value_type {
    ($t:ty, $name:expr, $pat:pat => $get:expr, $v:ident => $make:expr) => {
        impl ArgValue for $t {
            fn schema_type() -> String {
                $name.to_string()
            }
            fn from_ivalue(v: IValue) -> Result<Self> {
                match v {
                    $pat => Ok($get),
                    other => Err(wrong($name, &other)),
                }
            }
        }
        impl ReturnValue for $t {
            fn schema_return() -> String {
                $name.to_string()
            }
            fn into_ivalue(self) -> Result<IValue> {
                let $v = self;
                Ok($make)
            }
        }
    };
}

value_type!(Tensor, "Tensor", IValue::Tensor(t) => t, t => IValue::Tensor(t));
value_type!(i64, "int", IValue::Int(i) => i, i => IValue::Int(i));
value_type!(f64, "float", IValue::Float(x) => x, x => IValue::Float(x));
value_type!(bool, "bool", IValue::Bool(b) => b, b => IValue::Bool(b));
value_type!(String, "str", IValue::Str(s) => s, s => IValue::Str(s));
value_type!(Vec<Tensor>, "Tensor[]", IValue::TensorList(l) => l, l => IValue::TensorList(l));
value_type!(Vec<i64>, "int[]", IValue::IntList(l) => l, l => IValue::IntList(l));
value_type!(Vec<f64>, "float[]", IValue::FloatList(l) => l, l => IValue::FloatList(l));
value_type!(ScriptObject, "Any", IValue::Object(o) => o, o => IValue::Object(o));

impl ArgValue for Option<Tensor> {
    fn schema_type() -> String {
        "Tensor?".into()
    }
    fn from_ivalue(v: IValue) -> Result<Self> {
        match v {
            IValue::None => Ok(None),
            IValue::Tensor(t) => Ok(Some(t)),
            other => Err(wrong("Tensor?", &other)),
        }
    }
}

impl ReturnValue for Option<Tensor> {
    fn schema_return() -> String {
        "Tensor?".into()
    }
    fn into_ivalue(self) -> Result<IValue> {
        Ok(self.map_or(IValue::None, IValue::Tensor))
    }
}

/// Any value (a pickled state, `__obj_flatten__`'s tuples): schema `Any`.
impl ArgValue for IValue {
    fn schema_type() -> String {
        "Any".into()
    }
    fn from_ivalue(v: IValue) -> Result<Self> {
        Ok(v)
    }
}

impl ReturnValue for IValue {
    fn schema_return() -> String {
        "Any".into()
    }
    fn into_ivalue(self) -> Result<IValue> {
        Ok(self)
    }
}

impl ReturnValue for () {
    fn schema_return() -> String {
        "()".into()
    }
    fn into_ivalue(self) -> Result<IValue> {
        Ok(IValue::None)
    }
}

/// A fallible method: its error is the call's error.
impl<R: ReturnValue> ReturnValue for Result<R> {
    fn schema_return() -> String {
        R::schema_return()
    }
    fn into_ivalue(self) -> Result<IValue> {
        self?.into_ivalue()
    }
}

/// A pair (a pickled state of two parts): a tuple, schema `Any`.
impl<A: ArgValue, B: ArgValue> ArgValue for (A, B) {
    fn schema_type() -> String {
        "Any".into()
    }
    fn from_ivalue(v: IValue) -> Result<Self> {
        match v {
            IValue::Tuple(items) if items.len() == 2 => {
                let mut it = items.into_iter();
                let (a, b) = (it.next().expect("two"), it.next().expect("two"));
                Ok((A::from_ivalue(a)?, B::from_ivalue(b)?))
            }
            other => Err(wrong("a tuple of two", &other)),
        }
    }
}

impl<A: ReturnValue, B: ReturnValue> ReturnValue for (A, B) {
    fn schema_return() -> String {
        "Any".into()
    }
    fn into_ivalue(self) -> Result<IValue> {
        Ok(IValue::Tuple(vec![
            self.0.into_ivalue()?,
            self.1.into_ivalue()?,
        ]))
    }
}

/// A method of class `T` taking arguments `Args` (a tuple of
/// [`ArgValue`]s) and returning `R`: any `Fn(&T, A1, .., An) -> R`.
pub trait Method<T, Marker>: Send + Sync + 'static {
    /// The schema types of the arguments after `self`.
    fn arg_types() -> Vec<String>;
    /// The schema return.
    fn ret() -> String;
    /// Call it on `this` with the values after `self`.
    fn invoke(&self, this: &T, args: Vec<IValue>) -> Result<IValue>;
}

/// A constructor of class `T` (`def_init`): any `Fn(A1, .., An) -> T` or
/// `-> Result<T>`.
pub trait Init<T, Marker>: Send + Sync + 'static {
    /// The schema types of its arguments.
    fn arg_types() -> Vec<String>;
    /// Make the object's value.
    fn construct(&self, args: Vec<IValue>) -> Result<T>;
}

macro_rules! arities {
    ($($A:ident),*) => {
        impl<T, F, R, $($A),*> Method<T, (R, $($A,)*)> for F
        where
            F: Fn(&T, $($A),*) -> R + Send + Sync + 'static,
            R: ReturnValue,
            $($A: ArgValue,)*
        {
            fn arg_types() -> Vec<String> {
                vec![$($A::schema_type()),*]
            }
            fn ret() -> String {
                R::schema_return()
            }
            #[allow(non_snake_case, unused_mut, unused_variables)]
            fn invoke(&self, this: &T, args: Vec<IValue>) -> Result<IValue> {
                let mut it = args.into_iter();
                $(let $A = $A::from_ivalue(it.next().ok_or_else(missing)?)?;)*
                self(this, $($A),*).into_ivalue()
            }
        }

        impl<T, F, $($A),*> Init<T, (T, $($A,)*)> for F
        where
            F: Fn($($A),*) -> T + Send + Sync + 'static,
            $($A: ArgValue,)*
        {
            fn arg_types() -> Vec<String> {
                vec![$($A::schema_type()),*]
            }
            #[allow(non_snake_case, unused_mut, unused_variables)]
            fn construct(&self, args: Vec<IValue>) -> Result<T> {
                let mut it = args.into_iter();
                $(let $A = $A::from_ivalue(it.next().ok_or_else(missing)?)?;)*
                Ok(self($($A),*))
            }
        }

        impl<T, F, $($A),*> Init<T, (Result<T>, $($A,)*)> for F
        where
            F: Fn($($A),*) -> Result<T> + Send + Sync + 'static,
            $($A: ArgValue,)*
        {
            fn arg_types() -> Vec<String> {
                vec![$($A::schema_type()),*]
            }
            #[allow(non_snake_case, unused_mut, unused_variables)]
            fn construct(&self, args: Vec<IValue>) -> Result<T> {
                let mut it = args.into_iter();
                $(let $A = $A::from_ivalue(it.next().ok_or_else(missing)?)?;)*
                self($($A),*)
            }
        }
    };
}

fn missing() -> Error {
    Error::new(
        ErrorKind::Type,
        "a method got too few arguments".to_string(),
    )
}

arities!();
arities!(A1);
arities!(A1, A2);
arities!(A1, A2, A3);
arities!(A1, A2, A3, A4);
arities!(A1, A2, A3, A4, A5);

//! Rust and Python numbers as op arguments (`c10::Scalar`).

use crate::dtype::{DType, Element};
use std::fmt;

/// A number passed to an op: `t.add(2)`, `t.mul(0.5)`, `t.masked_fill(m, true)`.
/// It takes part in type promotion as a *wrapped number*: see
/// Note [Type promotion].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar {
    /// A boolean.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A floating-point number.
    Float(f64),
}

impl Scalar {
    /// As f64.
    pub fn to_f64(self) -> f64 {
        match self {
            Scalar::Bool(b) => b as u8 as f64,
            Scalar::Int(i) => i as f64,
            Scalar::Float(f) => f,
        }
    }

    /// As i64 (floats truncate).
    pub fn to_i64(self) -> i64 {
        match self {
            Scalar::Bool(b) => b as i64,
            Scalar::Int(i) => i,
            Scalar::Float(f) => f as i64,
        }
    }

    /// As bool (nonzero).
    pub fn to_bool(self) -> bool {
        match self {
            Scalar::Bool(b) => b,
            Scalar::Int(i) => i != 0,
            Scalar::Float(f) => f != 0.0,
        }
    }

    /// Convert to element type `T` with C-cast semantics.
    pub fn to_elem<T: Element>(self) -> T {
        match self {
            Scalar::Bool(b) => T::from_bool(b),
            Scalar::Int(i) => {
                if T::IS_FLOAT {
                    T::from_f64(i as f64)
                } else {
                    T::from_i64(i)
                }
            }
            Scalar::Float(f) => T::from_f64(f),
        }
    }

    /// True for `Float`.
    pub fn is_floating_point(self) -> bool {
        matches!(self, Scalar::Float(_))
    }

    /// The dtype a tensor made from this scalar alone gets (`torch.tensor(x)`).
    pub fn natural_dtype(self) -> DType {
        match self {
            Scalar::Bool(_) => DType::Bool,
            Scalar::Int(_) => DType::I64,
            Scalar::Float(_) => crate::dtype::get_default_dtype(),
        }
    }
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scalar::Bool(b) => write!(f, "{}", if *b { "True" } else { "False" }),
            Scalar::Int(i) => write!(f, "{i}"),
            Scalar::Float(x) => write!(f, "{x}"),
        }
    }
}

macro_rules! from_int {
    ($($t:ty),*) => {$(
        impl From<$t> for Scalar { fn from(v: $t) -> Scalar { Scalar::Int(v as i64) } }
    )*};
}
from_int!(i8, i16, i32, i64, u8, u16, u32, isize, usize);
impl From<f32> for Scalar {
    fn from(v: f32) -> Scalar {
        Scalar::Float(v as f64)
    }
}
impl From<f64> for Scalar {
    fn from(v: f64) -> Scalar {
        Scalar::Float(v)
    }
}
impl From<bool> for Scalar {
    fn from(v: bool) -> Scalar {
        Scalar::Bool(v)
    }
}
impl From<half::f16> for Scalar {
    fn from(v: half::f16) -> Scalar {
        Scalar::Float(v.to_f64())
    }
}
impl From<half::bf16> for Scalar {
    fn from(v: half::bf16) -> Scalar {
        Scalar::Float(v.to_f64())
    }
}

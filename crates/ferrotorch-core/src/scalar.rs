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
    /// A complex number `(re, im)` (Python's `complex`).
    Complex(f64, f64),
}

impl Scalar {
    /// As f64.
    pub fn to_f64(self) -> f64 {
        match self {
            Scalar::Bool(b) => b as u8 as f64,
            Scalar::Int(i) => i as f64,
            Scalar::Float(f) => f,
            Scalar::Complex(re, _) => re,
        }
    }

    /// As i64 (floats truncate).
    pub fn to_i64(self) -> i64 {
        match self {
            Scalar::Bool(b) => b as i64,
            Scalar::Int(i) => i,
            Scalar::Float(f) => f as i64,
            Scalar::Complex(re, _) => re as i64,
        }
    }

    /// As bool (nonzero).
    pub fn to_bool(self) -> bool {
        match self {
            Scalar::Bool(b) => b,
            Scalar::Int(i) => i != 0,
            Scalar::Float(f) => f != 0.0,
            Scalar::Complex(re, im) => re != 0.0 || im != 0.0,
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
            Scalar::Complex(re, im) => T::from_complex(re, im),
        }
    }

    /// Whether the value converts to `dtype` without overflow, by c10's
    /// `overflows`: integers must be in range (a negative integer may wrap
    /// into an unsigned type whose maximum covers its magnitude, so `-1`
    /// gives `255` for uint8), floats must be in range and not NaN for an
    /// integer type, finite values must be in range for a float type (±inf
    /// converts to any float type), and anything converts to bool.
    pub fn fits(self, dtype: DType) -> bool {
        if let Scalar::Complex(re, im) = self {
            // c10: a complex value with a nonzero imaginary part overflows
            // every real type.
            return dtype.is_complex() || (im == 0.0 && Scalar::Float(re).fits(dtype));
        }
        let (lo, hi) = match dtype {
            DType::Bool => return true,
            DType::U8 => (0.0, 255.0),
            DType::I8 => (-128.0, 127.0),
            DType::I16 => (-32768.0, 32767.0),
            DType::I32 => (-2147483648.0, 2147483647.0),
            DType::I64 => (-9223372036854775808.0, 9223372036854775807.0),
            DType::F16 => (-65504.0, 65504.0),
            DType::BF16 => (-3.3895313892515355e38, 3.3895313892515355e38),
            DType::F32 => (f32::MIN as f64, f32::MAX as f64),
            // complex<Half> conversions do not check overflow in c10 either
            DType::F64 | DType::C32 | DType::C64 | DType::C128 => return true,
        };
        match self {
            Scalar::Bool(_) => true,
            Scalar::Int(_) if dtype == DType::I64 || dtype.is_floating_point() => true,
            Scalar::Int(i) if dtype == DType::U8 => (-255..=255).contains(&i),
            Scalar::Int(i) => (lo as i64..=hi as i64).contains(&i),
            Scalar::Float(f) if dtype.is_floating_point() => {
                f.is_infinite() || f.is_nan() || (lo..=hi).contains(&f)
            }
            // 2^63 itself is out of int64's range: compare below it.
            Scalar::Float(f) if dtype == DType::I64 => f >= lo && f < 9223372036854775808.0,
            Scalar::Float(f) => (lo..=hi).contains(&f),
            Scalar::Complex(..) => true,
        }
    }

    /// [`Scalar::fits`] as an error naming the C++ type, as PyTorch's
    /// creation and fill ops report it ("value cannot be converted to type
    /// int8_t without overflow").
    pub fn check_fits(self, dtype: DType) -> crate::Result<()> {
        crate::ensure!(
            self.fits(dtype),
            Runtime,
            "value cannot be converted to type {} without overflow",
            match dtype {
                DType::Bool => "bool",
                DType::U8 => "uint8_t",
                DType::I8 => "int8_t",
                DType::I16 => "int16_t",
                DType::I32 => "int32_t",
                DType::I64 => "int64_t",
                DType::F16 => "c10::Half",
                DType::BF16 => "c10::BFloat16",
                DType::F32 => "float",
                DType::F64 => "double",
                DType::C32 => "c10::complex<c10::Half>",
                DType::C64 => "c10::complex<float>",
                DType::C128 => "c10::complex<double>",
            }
        );
        Ok(())
    }

    /// True for `Float`.
    pub fn is_floating_point(self) -> bool {
        matches!(self, Scalar::Float(_))
    }

    /// As `(re, im)`.
    pub fn to_complex(self) -> (f64, f64) {
        match self {
            Scalar::Complex(re, im) => (re, im),
            s => (s.to_f64(), 0.0),
        }
    }

    /// True for `Complex`.
    pub fn is_complex(self) -> bool {
        matches!(self, Scalar::Complex(..))
    }

    /// The dtype a tensor made from this scalar alone gets (`torch.tensor(x)`).
    pub fn natural_dtype(self) -> DType {
        match self {
            Scalar::Bool(_) => DType::Bool,
            Scalar::Int(_) => DType::I64,
            Scalar::Float(_) => crate::dtype::get_default_dtype(),
            Scalar::Complex(..) => crate::dtype::default_complex_dtype(),
        }
    }
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scalar::Bool(b) => write!(f, "{}", if *b { "True" } else { "False" }),
            Scalar::Int(i) => write!(f, "{i}"),
            Scalar::Float(x) => write!(f, "{x}"),
            Scalar::Complex(re, im) => write!(f, "({re}{im:+}j)"),
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

impl From<crate::dtype::Complex128> for Scalar {
    fn from(v: crate::dtype::Complex128) -> Scalar {
        Scalar::Complex(v.re, v.im)
    }
}

impl From<crate::dtype::Complex64> for Scalar {
    fn from(v: crate::dtype::Complex64) -> Scalar {
        Scalar::Complex(v.re as f64, v.im as f64)
    }
}

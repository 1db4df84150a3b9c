//! The Rust types behind each [`DType`] and the conversions between them.

use super::DType;
use half::{bf16, f16};
use std::fmt::Debug;

/// A Rust type that can be a tensor element.
///
/// Conversions follow C casts, as PyTorch's `to(dtype)` does: float → int
/// truncates toward zero (and wraps out-of-range values through i64), any
/// nonzero value → `true`.
pub trait Element: Copy + Send + Sync + PartialEq + PartialOrd + Default + Debug + 'static {
    /// The matching runtime dtype.
    const DTYPE: DType;
    /// Whether this is a floating type (complex types count: their casts
    /// go through floating point).
    const IS_FLOAT: bool;
    /// Whether this is a complex type (Note [Complex numbers]).
    const IS_COMPLEX: bool = false;
    /// Zero.
    fn zero() -> Self;
    /// One.
    fn one() -> Self;
    /// Widen to f64 (exact for every type except i64 beyond 2^53).
    fn to_f64(self) -> f64;
    /// Narrow from f64 with C-cast semantics.
    fn from_f64(v: f64) -> Self;
    /// To i64 (floats truncate).
    fn to_i64(self) -> i64;
    /// From i64, wrapping like a C cast.
    fn from_i64(v: i64) -> Self;
    /// `self != 0`.
    fn to_bool(self) -> bool;
    /// `true` → 1, `false` → 0.
    fn from_bool(b: bool) -> Self;

    /// As `(re, im)`; a real value has imaginary part 0.
    #[inline(always)]
    fn to_complex(self) -> (f64, f64) {
        (self.to_f64(), 0.0)
    }
    /// From `(re, im)`; a real type keeps the real part.
    #[inline(always)]
    fn from_complex(re: f64, _im: f64) -> Self {
        Self::from_f64(re)
    }

    /// Convert to another element type with PyTorch's cast semantics.
    #[inline(always)]
    fn cast<U: Element>(self) -> U {
        if U::IS_COMPLEX {
            let (re, im) = self.to_complex();
            U::from_complex(re, im)
        } else if U::DTYPE as u8 == DType::Bool as u8 {
            U::from_bool(self.to_bool())
        } else if U::IS_FLOAT || Self::IS_FLOAT {
            U::from_f64(self.to_f64())
        } else {
            U::from_i64(self.to_i64())
        }
    }

    /// NaN test (always false for integers).
    #[inline(always)]
    fn is_nan(self) -> bool {
        #[allow(clippy::eq_op)]
        let r = self != self;
        r
    }
}

macro_rules! int_element {
    ($($t:ty => $d:ident),*) => {$(
        impl Element for $t {
            const DTYPE: DType = DType::$d;
            const IS_FLOAT: bool = false;
            #[inline(always)] fn zero() -> Self { 0 }
            #[inline(always)] fn one() -> Self { 1 }
            #[inline(always)] fn to_f64(self) -> f64 { self as f64 }
            #[inline(always)] fn from_f64(v: f64) -> Self { (v as i64) as $t }
            #[inline(always)] fn to_i64(self) -> i64 { self as i64 }
            #[inline(always)] fn from_i64(v: i64) -> Self { v as $t }
            #[inline(always)] fn to_bool(self) -> bool { self != 0 }
            #[inline(always)] fn from_bool(b: bool) -> Self { b as $t }
        }
    )*};
}
int_element!(u8 => U8, i8 => I8, i16 => I16, i32 => I32, i64 => I64);

impl Element for bool {
    const DTYPE: DType = DType::Bool;
    const IS_FLOAT: bool = false;
    #[inline(always)]
    fn zero() -> Self {
        false
    }
    #[inline(always)]
    fn one() -> Self {
        true
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self as u8 as f64
    }
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        v != 0.0
    }
    #[inline(always)]
    fn to_i64(self) -> i64 {
        self as i64
    }
    #[inline(always)]
    fn from_i64(v: i64) -> Self {
        v != 0
    }
    #[inline(always)]
    fn to_bool(self) -> bool {
        self
    }
    #[inline(always)]
    fn from_bool(b: bool) -> Self {
        b
    }
}

macro_rules! float_element {
    ($t:ty, $d:ident, $from:expr, $to:expr) => {
        impl Element for $t {
            const DTYPE: DType = DType::$d;
            const IS_FLOAT: bool = true;
            #[inline(always)]
            fn zero() -> Self {
                $from(0.0)
            }
            #[inline(always)]
            fn one() -> Self {
                $from(1.0)
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                $to(self)
            }
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                $from(v)
            }
            #[inline(always)]
            fn to_i64(self) -> i64 {
                $to(self) as i64
            }
            #[inline(always)]
            fn from_i64(v: i64) -> Self {
                $from(v as f64)
            }
            #[inline(always)]
            fn to_bool(self) -> bool {
                $to(self) != 0.0
            }
            #[inline(always)]
            fn from_bool(b: bool) -> Self {
                $from(b as u8 as f64)
            }
        }
    };
}
float_element!(f32, F32, |v: f64| v as f32, |x: f32| x as f64);
float_element!(f64, F64, |v: f64| v, |x: f64| x);
float_element!(f16, F16, f16::from_f64, f16::to_f64);
float_element!(bf16, BF16, bf16::from_f64, bf16::to_f64);

/// Floating element types; half types compute through f32 (PyTorch's
/// "opmath" type).
pub trait FloatElem: Element {
    /// Widen to the compute type.
    fn to_f32(self) -> f32;
    /// Narrow from the compute type (round to nearest even).
    fn from_f32(v: f32) -> Self;
}

impl FloatElem for f32 {
    #[inline(always)]
    fn to_f32(self) -> f32 {
        self
    }
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        v
    }
}
impl FloatElem for f64 {
    #[inline(always)]
    fn to_f32(self) -> f32 {
        self as f32
    }
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        v as f64
    }
}
impl FloatElem for f16 {
    #[inline(always)]
    fn to_f32(self) -> f32 {
        f16::to_f32(self)
    }
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        f16::from_f32(v)
    }
}
impl FloatElem for bf16 {
    #[inline(always)]
    fn to_f32(self) -> f32 {
        bf16::to_f32(self)
    }
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        bf16::from_f32(v)
    }
}

/// Integer element types, with the wrapping arithmetic PyTorch's integer
/// kernels have.
pub trait IntElem: Element + Ord + Eq {
    /// Wrapping add.
    fn wadd(self, o: Self) -> Self;
    /// Wrapping sub.
    fn wsub(self, o: Self) -> Self;
    /// Wrapping mul.
    fn wmul(self, o: Self) -> Self;
    /// Wrapping negation.
    fn wneg(self) -> Self;
    /// Division truncating toward zero (`o != 0` checked by the caller).
    fn tdiv(self, o: Self) -> Self;
    /// Remainder with the sign of the dividend, as C `%`.
    fn trem(self, o: Self) -> Self;
    /// Bitwise and/or/xor/not.
    fn band(self, o: Self) -> Self;
    /// Bitwise or.
    fn bor(self, o: Self) -> Self;
    /// Bitwise xor.
    fn bxor(self, o: Self) -> Self;
    /// Bitwise not.
    fn bnot(self) -> Self;
    /// Shift left (shifts ≥ the width give 0, as PyTorch).
    fn shl(self, o: Self) -> Self;
    /// Arithmetic shift right.
    fn shr(self, o: Self) -> Self;
    /// Absolute value (wrapping).
    fn wabs(self) -> Self;
    /// Width in bits.
    const BITS: u32;
}

macro_rules! int_elem {
    ($($t:ty),*) => {$(
        impl IntElem for $t {
            #[inline(always)] fn wadd(self, o: Self) -> Self { self.wrapping_add(o) }
            #[inline(always)] fn wsub(self, o: Self) -> Self { self.wrapping_sub(o) }
            #[inline(always)] fn wmul(self, o: Self) -> Self { self.wrapping_mul(o) }
            #[inline(always)] fn wneg(self) -> Self { self.wrapping_neg() }
            #[inline(always)] fn tdiv(self, o: Self) -> Self { self.wrapping_div(o) }
            #[inline(always)] fn trem(self, o: Self) -> Self { self.wrapping_rem(o) }
            #[inline(always)] fn band(self, o: Self) -> Self { self & o }
            #[inline(always)] fn bor(self, o: Self) -> Self { self | o }
            #[inline(always)] fn bxor(self, o: Self) -> Self { self ^ o }
            #[inline(always)] fn bnot(self) -> Self { !self }
            #[inline(always)] fn shl(self, o: Self) -> Self {
                if (o as i64) < 0 || (o as i64) >= Self::BITS as i64 { 0 } else { self.wrapping_shl(o as u32) }
            }
            #[inline(always)] fn shr(self, o: Self) -> Self {
                let s = if (o as i64) < 0 || (o as i64) >= Self::BITS as i64 { Self::BITS - 1 } else { o as u32 };
                self.wrapping_shr(s)
            }
            #[inline(always)] fn wabs(self) -> Self { self.wrapping_abs_() }
            const BITS: u32 = <$t>::BITS;
        }
    )*};
}

/// `wrapping_abs` for signed and identity for unsigned, under one name.
trait WrappingAbs {
    fn wrapping_abs_(self) -> Self;
}
impl WrappingAbs for u8 {
    #[inline(always)]
    fn wrapping_abs_(self) -> Self {
        self
    }
}
macro_rules! wabs_signed {
    ($($t:ty),*) => {$(
        impl WrappingAbs for $t {
            #[inline(always)] fn wrapping_abs_(self) -> Self { self.wrapping_abs() }
        }
    )*};
}
wabs_signed!(i8, i16, i32, i64);
int_elem!(u8, i8, i16, i32, i64);

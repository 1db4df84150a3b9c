//! The value algebra a pointwise row is written in (Note [Pointwise
//! rows]): numbers, tensors and recorded expressions all implement it, so
//! one formula serves the fused scalar loop, eager autograd and the code
//! generator.

use super::prim::{binary_ref, unary_ref, Binary, Cmp, Unary};
use std::ops::{Add, Div, Mul, Neg, Sub};

/// A value a pointwise formula computes with: the arithmetic operators,
/// the primitives of [`Unary`] and [`Binary`], constants and selects.
/// Formulas are generic over it (`fn d<V: Pw>(g: V, y: V) -> V`).
pub trait Pw:
    Clone
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
{
    /// The constant `v` in this value's setting (its dtype, its
    /// expression).
    fn k(&self, v: f64) -> Self;
    /// `f(self)`.
    fn un(self, f: Unary) -> Self;
    /// `f(self, o)`.
    fn bin(self, f: Binary, o: Self) -> Self;
    /// `if a cmp b { then } else { other }`.
    fn select(cmp: Cmp, a: Self, b: Self, then: Self, other: Self) -> Self;

    /// `sgn(self)`: -1, 0 or 1 (0 at NaN). Tensors take `torch.sign`.
    fn sign(self) -> Self {
        let zero = self.k(0.0);
        let neg = Self::select(
            Cmp::Lt,
            self.clone(),
            zero.clone(),
            self.k(-1.0),
            zero.clone(),
        );
        Self::select(Cmp::Gt, self.clone(), zero, self.k(1.0), neg)
    }
}

/// Shorthands for the primitives (`x.exp()` for `x.un(Unary::Exp)`).
pub trait PwExt: Pw {
    /// `e^x`
    fn exp(self) -> Self {
        self.un(Unary::Exp)
    }
    /// `sin x`
    fn sin(self) -> Self {
        self.un(Unary::Sin)
    }
    /// `cos x`
    fn cos(self) -> Self {
        self.un(Unary::Cos)
    }
    /// `1 / √x`
    fn rsqrt(self) -> Self {
        self.un(Unary::Rsqrt)
    }
    /// `ln x`
    fn log(self) -> Self {
        self.un(Unary::Log)
    }
    /// `1 / (1 + e^-x)`
    fn sigmoid(self) -> Self {
        self.un(Unary::Sigmoid)
    }
    /// `tanh x`
    fn tanh(self) -> Self {
        self.un(Unary::Tanh)
    }
    /// `erf x`
    fn erf(self) -> Self {
        self.un(Unary::Erf)
    }
    /// `ln(1 + x)`
    fn log1p(self) -> Self {
        self.un(Unary::Log1p)
    }
    /// `e^x - 1`
    fn expm1(self) -> Self {
        self.un(Unary::Expm1)
    }
    /// `a ** b`
    fn pow(self, b: Self) -> Self {
        self.bin(Binary::Pow, b)
    }
}

impl<V: Pw> PwExt for V {}

macro_rules! float_pw {
    ($t:ty, $($u:ident => $f:expr),*) => {
        impl Pw for $t {
            #[inline(always)]
            fn k(&self, v: f64) -> $t {
                v as $t
            }
            #[inline(always)]
            fn un(self, f: Unary) -> $t {
                match f {
                    Unary::Neg => -self,
                    Unary::Abs => self.abs(),
                    Unary::Sin => self.sin(),
                    Unary::Cos => self.cos(),
                    Unary::Sqrt => self.sqrt(),
                    Unary::Rsqrt => 1.0 / self.sqrt(),
                    Unary::Reciprocal => 1.0 / self,
                    $(Unary::$u => $f(self),)*
                    f => unary_ref(f, self as f64) as $t,
                }
            }
            #[inline(always)]
            fn bin(self, f: Binary, o: $t) -> $t {
                match f {
                    Binary::Add => self + o,
                    Binary::Sub => self - o,
                    Binary::Mul => self * o,
                    Binary::Div => self / o,
                    Binary::Pow => self.powf(o),
                    f => binary_ref(f, self as f64, o as f64) as $t,
                }
            }
            #[inline(always)]
            fn select(cmp: Cmp, a: $t, b: $t, then: $t, other: $t) -> $t {
                let holds = match cmp {
                    Cmp::Lt => a < b,
                    Cmp::Le => a <= b,
                    Cmp::Gt => a > b,
                    Cmp::Ge => a >= b,
                    Cmp::Eq => a == b,
                    Cmp::Ne => a != b,
                };
                if holds {
                    then
                } else {
                    other
                }
            }
        }
    };
}

// float32's transcendental primitives are the kernels' (about 1 ulp,
// subnormals kept, branch-free so a fused loop vectorises), which the
// tensor ops compute too: a fused loop gives the tensor ops' numbers
mod km32 {
    pub(super) use ferrotorch_kernels::math::{erf, exp, expm1, ln, sigmoid, tanh};
    /// `ln(1 + x)` as `ln(u) · x / (u - 1)`, `u = 1 + x` (the rounding of
    /// `u` cancels; Goldberg's form), with the kernels' `ln`: branch-free,
    /// so a loop of it vectorises where libm's `log1pf` is a call.
    #[inline(always)]
    pub(super) fn log1p(x: f32) -> f32 {
        let u = 1.0 + x;
        let r = ln(u) * (x / (u - 1.0));
        if u == 1.0 {
            x
        } else if u == f32::INFINITY {
            u
        } else {
            r
        }
    }
}
float_pw!(f32, Exp => km32::exp, Expm1 => km32::expm1, Tanh => km32::tanh,
    Sigmoid => km32::sigmoid, Erf => km32::erf, Log => km32::ln, Log1p => km32::log1p);
float_pw!(f64, Exp => f64::exp, Expm1 => f64::exp_m1, Tanh => f64::tanh,
    Sigmoid => |x: f64| 1.0 / (1.0 + (-x).exp()), Log => f64::ln, Log1p => f64::ln_1p);

/// The four arithmetic operators and negation of a [`Pw`] type, through
/// its `bin`/`un`.
macro_rules! pw_operators {
    ($t:ty) => {
        impl std::ops::Add for $t {
            type Output = $t;
            fn add(self, o: $t) -> $t {
                $crate::rows::Pw::bin(self, $crate::rows::prim::Binary::Add, o)
            }
        }
        impl std::ops::Sub for $t {
            type Output = $t;
            fn sub(self, o: $t) -> $t {
                $crate::rows::Pw::bin(self, $crate::rows::prim::Binary::Sub, o)
            }
        }
        impl std::ops::Mul for $t {
            type Output = $t;
            fn mul(self, o: $t) -> $t {
                $crate::rows::Pw::bin(self, $crate::rows::prim::Binary::Mul, o)
            }
        }
        impl std::ops::Div for $t {
            type Output = $t;
            fn div(self, o: $t) -> $t {
                $crate::rows::Pw::bin(self, $crate::rows::prim::Binary::Div, o)
            }
        }
        impl std::ops::Neg for $t {
            type Output = $t;
            fn neg(self) -> $t {
                $crate::rows::Pw::un(self, $crate::rows::prim::Unary::Neg)
            }
        }
    };
}
pub(crate) use pw_operators;

//! The rows of the one-argument pointwise ops (Note [Pointwise rows]).

use super::algebra::{Pw, PwExt};
use super::prim::{Cmp, Op, Unary};
use super::sym::{record, Recorded, SymV};
use super::tensor::TVal;
use crate::error::Result;
use crate::native::iter::map_binary;
use crate::tensor::Tensor;
use std::f64::consts::{LN_10, LN_2, PI};

/// What a derivative reads besides the output gradient: the tensor the
/// node saves, as `derivatives.yaml` says per op (`self` or `result`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reads {
    /// Nothing: a function of the gradient alone.
    Nothing,
    /// The op's input `x`.
    Input,
    /// The op's result `y`.
    Result,
}

/// When eager backward runs the formula as one fused elementwise loop
/// over the gradient and the saved tensor instead of with tensor ops
/// (Note [Fused pointwise backward] in `autograd::derivatives`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fuse {
    /// Never: the tensor ops are as fast.
    Never,
    /// Up to [`FUSE_SMALL_MAX`] elements: the scalar functions the loop
    /// calls are slower per element than the vectorised tensor kernels.
    Small,
    /// At any size.
    Always,
}

/// The most elements a [`Fuse::Small`] formula fuses over.
pub const FUSE_SMALL_MAX: usize = 4096;

type Fused = fn(&Tensor, &Tensor, &Tensor);

/// A derivative `g · f'(·)` of the gradient and the saved tensor, in each
/// algebra that reads it.
struct Grad {
    sym: fn(SymV, SymV) -> SymV,
    tensor: fn(TVal, TVal) -> TVal,
    f32: Fused,
    f64: Fused,
}

/// One unary op's row: its value in primitives (where the code generator
/// can compile it) and its derivative, written once.
pub struct UnaryRow {
    /// The op's name (`tanh`).
    pub name: &'static str,
    /// What its derivative reads.
    pub reads: Reads,
    /// When eager backward fuses it.
    pub fuse: Fuse,
    value: Option<fn(SymV) -> SymV>,
    grad: Option<Grad>,
}

impl UnaryRow {
    /// Its value as recorded primitives of one input, `None` when it has
    /// no form in them (the op is not fused then).
    pub fn value(&self) -> Option<Recorded> {
        let v = self.value?;
        Some(record(1, |x| vec![Some(v(x[0]))]))
    }

    /// Its derivative as recorded primitives of two inputs (the output
    /// gradient, then the saved tensor of [`UnaryRow::reads`]); `None`
    /// where the derivative is zero.
    pub fn grad(&self) -> Option<Recorded> {
        let d = self.grad.as_ref()?.sym;
        Some(record(2, |i| vec![Some(d(i[0], i[1]))]))
    }

    /// Whether its value needs a polynomial or host function (not only
    /// IEEE arithmetic, roundings and selects).
    pub fn transcendental(&self) -> bool {
        self.value()
            .is_some_and(|r| r.ops.iter().any(|op| !op.is_arithmetic()))
    }

    /// The input gradient from the output gradient `g` and the saved
    /// tensor `s`, with tensor ops (recorded under `create_graph`).
    pub fn grad_tensor(&self, g: &Tensor, s: &Tensor) -> Result<Tensor> {
        match &self.grad {
            None => g.zeros_like(),
            Some(d) => (d.tensor)(g.into(), s.into()).tensor_shaped(g, g.shape()),
        }
    }

    /// The fused loop writing `out = g · f'(s)` for float32 or float64
    /// operands of one dtype; `None` for a zero derivative.
    pub(crate) fn fused(&self, dtype: crate::DType) -> Option<Fused> {
        let d = self.grad.as_ref()?;
        Some(if dtype == crate::DType::F32 {
            d.f32
        } else {
            d.f64
        })
    }

    /// Whether op `Op::Unary(f, _)` is this row's whole value.
    pub fn is_prim(&self, f: Unary) -> bool {
        self.value()
            .is_some_and(|r| r.ops.get(1) == Some(&Op::Unary(f, 0)) && r.ops.len() == 2)
    }
}

macro_rules! value_fn {
    (none) => {
        None
    };
    (prim $u:ident) => {{
        fn v(x: SymV) -> SymV {
            x.un(Unary::$u)
        }
        Some(v as fn(SymV) -> SymV)
    }};
    (fn $f:ident) => {
        Some($f::<SymV> as fn(SymV) -> SymV)
    };
}

macro_rules! grad_fn {
    (zero) => {
        None
    };
    ($d:ident) => {
        Some(Grad {
            sym: $d::<SymV>,
            tensor: $d::<TVal>,
            f32: |g, s, out| map_binary::<f32, f32, f32>(g, s, out, |a, v| $d::<f32>(a, v)),
            f64: |g, s, out| map_binary::<f64, f64, f64>(g, s, out, |a, v| $d::<f64>(a, v)),
        })
    };
}

macro_rules! rows {
    ($($name:literal: $reads:ident, $fuse:ident, value $vk:ident $($v:ident)?, grad $g:ident;)*) => {
        static ROWS: &[UnaryRow] = &[$(UnaryRow {
            name: $name,
            reads: Reads::$reads,
            fuse: Fuse::$fuse,
            value: value_fn!($vk $($v)?),
            grad: grad_fn!($g),
        }),*];
    };
}

// The formulas: `g` is the output gradient, `x` the input, `y` the result
// (whichever the row reads). Each is PyTorch's (`derivatives.yaml`,
// `FunctionsManual.cpp`), with its operations in the order eager autograd
// has always computed them.

fn neg_d<V: Pw>(g: V, _: V) -> V {
    -g
}
fn ident_d<V: Pw>(g: V, _: V) -> V {
    g
}
fn abs_d<V: Pw>(g: V, x: V) -> V {
    g * x.sign()
}
fn exp_d<V: Pw>(g: V, y: V) -> V {
    g * y
}
fn exp2_d<V: Pw>(g: V, y: V) -> V {
    let ln2 = y.k(LN_2);
    g * y * ln2
}
fn expm1_d<V: Pw>(g: V, y: V) -> V {
    let one = y.k(1.0);
    g * (y + one)
}
fn log_d<V: Pw>(g: V, x: V) -> V {
    g / x
}
fn log2_d<V: Pw>(g: V, x: V) -> V {
    let c = x.k(LN_2);
    g / (x * c)
}
fn log10_d<V: Pw>(g: V, x: V) -> V {
    let c = x.k(LN_10);
    g / (x * c)
}
fn log1p_d<V: Pw>(g: V, x: V) -> V {
    let one = x.k(1.0);
    g / (x + one)
}
fn sqrt_d<V: Pw>(g: V, y: V) -> V {
    let two = y.k(2.0);
    g / (y * two)
}
fn rsqrt_d<V: Pw>(g: V, y: V) -> V {
    let h = y.k(-0.5);
    g * (y.clone() * y.clone() * y) * h
}
fn reciprocal_d<V: Pw>(g: V, y: V) -> V {
    -(g * (y.clone() * y))
}
fn sin_d<V: Pw>(g: V, x: V) -> V {
    g * x.cos()
}
fn cos_d<V: Pw>(g: V, x: V) -> V {
    -(g * x.sin())
}
fn tan_d<V: Pw>(g: V, y: V) -> V {
    let one = y.k(1.0);
    g * (y.clone() * y + one)
}
/// `1 - x²`
fn one_minus_sq<V: Pw>(x: V) -> V {
    x.k(1.0) - x.clone() * x
}
fn asin_d<V: Pw>(g: V, x: V) -> V {
    g * one_minus_sq(x).rsqrt()
}
fn acos_d<V: Pw>(g: V, x: V) -> V {
    -(g * one_minus_sq(x).rsqrt())
}
fn atan_d<V: Pw>(g: V, x: V) -> V {
    let one = x.k(1.0);
    g / (x.clone() * x + one)
}
fn tanh_d<V: Pw>(g: V, y: V) -> V {
    g * one_minus_sq(y)
}
fn asinh_d<V: Pw>(g: V, x: V) -> V {
    let one = x.k(1.0);
    g * (x.clone() * x + one).rsqrt()
}
fn acosh_d<V: Pw>(g: V, x: V) -> V {
    let one = x.k(1.0);
    g * (x.clone() * x - one).rsqrt()
}
fn atanh_d<V: Pw>(g: V, x: V) -> V {
    g / one_minus_sq(x)
}
fn sigmoid_d<V: Pw>(g: V, y: V) -> V {
    let one = y.k(1.0);
    g * (y.clone() * (one - y))
}
/// `c · e^(-x²)`
fn gauss<V: Pw>(x: V, c: f64) -> V {
    let k = x.k(c);
    (-(x.clone() * x)).exp() * k
}
fn erf_d<V: Pw>(g: V, x: V) -> V {
    g * gauss(x, 2.0 / PI.sqrt())
}
fn erfc_d<V: Pw>(g: V, x: V) -> V {
    g * gauss(x, -2.0 / PI.sqrt())
}
fn erfinv_d<V: Pw>(g: V, y: V) -> V {
    let c = y.k(PI.sqrt() / 2.0);
    g * ((y.clone() * y).exp() * c)
}
/// torch's threshold_backward: 0 where `y <= 0`, else `g` (so a NaN
/// result passes its gradient) — a select, not a product with a mask, so
/// an infinite gradient where the mask is off gives 0
fn relu_d<V: Pw>(g: V, y: V) -> V {
    let zero = y.k(0.0);
    V::select(Cmp::Le, y, zero.clone(), zero, g)
}
fn silu<V: Pw>(x: V) -> V {
    x.clone() * x.sigmoid()
}
fn silu_d<V: Pw>(g: V, x: V) -> V {
    let s = x.clone().sigmoid();
    let one = x.k(1.0);
    g * (s.clone() * (x * (one.clone() - s) + one))
}

rows! {
    "neg": Nothing, Never, value prim Neg, grad neg_d;
    "abs": Input, Never, value prim Abs, grad abs_d;
    "relu": Result, Always, value prim Relu, grad relu_d;
    "sigmoid": Result, Always, value prim Sigmoid, grad sigmoid_d;
    "tanh": Result, Always, value prim Tanh, grad tanh_d;
    "exp": Result, Always, value prim Exp, grad exp_d;
    "expm1": Result, Never, value prim Expm1, grad expm1_d;
    "log": Input, Never, value prim Log, grad log_d;
    "log1p": Input, Never, value prim Log1p, grad log1p_d;
    "sqrt": Result, Never, value prim Sqrt, grad sqrt_d;
    "rsqrt": Result, Never, value prim Rsqrt, grad rsqrt_d;
    "reciprocal": Result, Never, value prim Reciprocal, grad reciprocal_d;
    "erf": Input, Never, value prim Erf, grad erf_d;
    "sin": Input, Small, value prim Sin, grad sin_d;
    "cos": Input, Small, value prim Cos, grad cos_d;
    "floor": Nothing, Never, value prim Floor, grad zero;
    "ceil": Nothing, Never, value prim Ceil, grad zero;
    "trunc": Nothing, Never, value prim Trunc, grad zero;
    "round": Nothing, Never, value prim Round, grad zero;
    "silu": Input, Never, value fn silu, grad silu_d;
    "sign": Nothing, Never, value none, grad zero;
    "frac": Nothing, Never, value none, grad ident_d;
    "exp2": Result, Never, value none, grad exp2_d;
    "log2": Input, Never, value none, grad log2_d;
    "log10": Input, Never, value none, grad log10_d;
    "tan": Result, Never, value none, grad tan_d;
    "asin": Input, Never, value none, grad asin_d;
    "acos": Input, Never, value none, grad acos_d;
    "atan": Input, Never, value none, grad atan_d;
    "asinh": Input, Never, value none, grad asinh_d;
    "acosh": Input, Never, value none, grad acosh_d;
    "atanh": Input, Never, value none, grad atanh_d;
    "erfc": Input, Never, value none, grad erfc_d;
    "erfinv": Result, Never, value none, grad erfinv_d;
}

/// The row of unary op `name`, if it has one.
pub fn unary(name: &str) -> Option<&'static UnaryRow> {
    ROWS.iter().find(|r| r.name == name)
}

/// Every unary row.
pub fn unary_rows() -> &'static [UnaryRow] {
    ROWS
}

//! Tensors as a [`Pw`] value: a formula evaluated with eager tensor ops,
//! so it records under `create_graph` (double backward) as PyTorch's
//! formulas do. Constants stay numbers until an op meets a tensor; the
//! first error is kept and returned at the end.

use super::algebra::{pw_operators, Pw};
use super::prim::{binary_ref, unary_ref, Binary, Cmp, Op, Unary};
use crate::error::{Error, Result};
use crate::native::where_;
use crate::tensor::Tensor;

/// A tensor, a number, or the error an op gave.
#[derive(Clone)]
pub enum TVal {
    /// A tensor.
    T(Tensor),
    /// A number (a constant not yet met by a tensor).
    C(f64),
    /// The first error.
    E(Error),
}

impl TVal {
    /// The tensor (a number as a 0-dim tensor of `like`'s dtype).
    pub fn tensor(self, like: &Tensor) -> Result<Tensor> {
        match self {
            TVal::T(t) => Ok(t),
            TVal::C(c) => Tensor::full(&[], c, like.dtype()),
            TVal::E(e) => Err(e),
        }
    }

    /// The tensor, a number broadcast to `shape` (of `like`'s dtype).
    pub fn tensor_shaped(self, like: &Tensor, shape: &[usize]) -> Result<Tensor> {
        match self {
            TVal::C(c) => Tensor::full(shape, c, like.dtype()),
            v => v.tensor(like),
        }
    }

    fn of(r: Result<Tensor>) -> TVal {
        r.map_or_else(TVal::E, TVal::T)
    }
}

impl From<&Tensor> for TVal {
    fn from(t: &Tensor) -> TVal {
        TVal::T(t.clone())
    }
}

fn unary(f: Unary, x: &Tensor) -> Result<Tensor> {
    match f {
        Unary::Neg => x.neg(),
        Unary::Abs => x.abs(),
        Unary::Relu => x.relu(),
        Unary::Sigmoid => x.sigmoid(),
        Unary::Tanh => x.tanh(),
        Unary::Exp => x.exp(),
        Unary::Expm1 => x.expm1(),
        Unary::Log => x.log(),
        Unary::Log1p => x.log1p(),
        Unary::Sqrt => x.sqrt(),
        Unary::Rsqrt => x.rsqrt(),
        Unary::Reciprocal => x.reciprocal(),
        Unary::Erf => x.erf(),
        Unary::Gelu => x.gelu("none"),
        Unary::GeluTanh => x.gelu("tanh"),
        Unary::Sin => x.sin(),
        Unary::Cos => x.cos(),
        Unary::Floor => x.floor(),
        Unary::Ceil => x.ceil(),
        Unary::Trunc => x.trunc(),
        Unary::Round => x.round(),
    }
}

fn binary(f: Binary, l: &Tensor, r: crate::native::binary::Operand) -> Result<Tensor> {
    match f {
        Binary::Add => l.add(r),
        Binary::Sub => l.sub(r),
        Binary::Mul => l.mul(r),
        Binary::Div => l.div(r),
        Binary::Max => l.maximum(r),
        Binary::Min => l.minimum(r),
        Binary::Pow => l.pow(r),
    }
}

fn compare(c: Cmp, a: &Tensor, b: crate::native::binary::Operand) -> Result<Tensor> {
    match c {
        Cmp::Lt => a.lt(b),
        Cmp::Le => a.le(b),
        Cmp::Gt => a.gt(b),
        Cmp::Ge => a.ge(b),
        Cmp::Eq => a.eq(b),
        Cmp::Ne => a.ne(b),
    }
}

/// `b cmp a` for `a cmp b`.
fn flipped(c: Cmp) -> Cmp {
    match c {
        Cmp::Lt => Cmp::Gt,
        Cmp::Le => Cmp::Ge,
        Cmp::Gt => Cmp::Lt,
        Cmp::Ge => Cmp::Le,
        c => c,
    }
}

fn operand(v: TVal) -> crate::native::binary::Operand {
    match v {
        TVal::T(t) => t.into(),
        TVal::C(c) => c.into(),
        TVal::E(_) => unreachable!("errors are taken out first"),
    }
}

impl Pw for TVal {
    fn k(&self, v: f64) -> TVal {
        TVal::C(v)
    }

    fn un(self, f: Unary) -> TVal {
        match self {
            TVal::T(t) => TVal::of(unary(f, &t)),
            TVal::C(c) => TVal::C(unary_ref(f, c)),
            e => e,
        }
    }

    fn bin(self, f: Binary, o: TVal) -> TVal {
        match (self, o) {
            (TVal::E(e), _) | (_, TVal::E(e)) => TVal::E(e),
            (TVal::C(x), TVal::C(y)) => TVal::C(binary_ref(f, x, y)),
            (TVal::T(x), o) => TVal::of(binary(f, &x, operand(o))),
            (TVal::C(c), TVal::T(y)) => TVal::of(match f {
                // the same values with the number on the right
                Binary::Add | Binary::Mul | Binary::Max | Binary::Min => binary(f, &y, c.into()),
                // c - y = -y + c exactly
                Binary::Sub => y.neg().and_then(|n| n.add(c)),
                _ => Tensor::full(&[], c, y.dtype()).and_then(|l| binary(f, &l, y.into())),
            }),
        }
    }

    fn select(cmp: Cmp, a: TVal, b: TVal, then: TVal, other: TVal) -> TVal {
        for v in [&a, &b, &then, &other] {
            if let TVal::E(e) = v {
                return TVal::E(e.clone());
            }
        }
        let like = [&a, &b].into_iter().find_map(|v| match v {
            TVal::T(t) => Some(t.dtype()),
            _ => None,
        });
        let mask = match (a, b) {
            (TVal::C(x), TVal::C(y)) => {
                return if cmp.holds(x, y) { then } else { other };
            }
            (TVal::T(x), b) => compare(cmp, &x, operand(b)),
            (a, TVal::T(y)) => compare(flipped(cmp), &y, operand(a)),
            _ => unreachable!("errors are taken out first"),
        };
        match (mask, then, other) {
            (Err(e), ..) => TVal::E(e),
            // two numbers: of the compared tensor's dtype
            (Ok(m), TVal::C(x), TVal::C(y)) => {
                let dt = like.unwrap_or(crate::DType::F32);
                TVal::of(Tensor::full(&[], x, dt).and_then(|x| where_(&m, &x, y)))
            }
            (Ok(m), t, o) => TVal::of(where_(&m, operand(t), operand(o))),
        }
    }

    fn sign(self) -> TVal {
        match self {
            TVal::T(t) => TVal::of(t.sign()),
            TVal::C(c) => TVal::C(if c > 0.0 {
                1.0
            } else if c < 0.0 {
                -1.0
            } else {
                0.0
            }),
            e => e,
        }
    }
}

pw_operators!(TVal);

/// The values of `ops` over `inputs`, in any [`Pw`] algebra (`TVal` for
/// eager tensors, `f64` for the reference); `constant` makes op
/// `Const`'s value.
pub fn eval_ops<V: Pw>(ops: &[Op], inputs: &[V], constant: impl Fn(f64) -> V) -> Vec<V> {
    let mut v: Vec<V> = Vec::with_capacity(ops.len());
    for op in ops {
        let r = match *op {
            Op::Input(k) => inputs[k].clone(),
            Op::Const(bits) => constant(f64::from_bits(bits)),
            Op::Unary(f, a) => v[a].clone().un(f),
            Op::Binary(f, a, b) => v[a].clone().bin(f, v[b].clone()),
            Op::Select {
                cmp,
                a,
                b,
                then,
                other,
            } => V::select(
                cmp,
                v[a].clone(),
                v[b].clone(),
                v[then].clone(),
                v[other].clone(),
            ),
        };
        v.push(r);
    }
    v
}

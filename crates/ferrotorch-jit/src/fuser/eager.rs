//! An expression evaluated with eager tensor ops: differentiable, so a
//! fused group's backward under `create_graph` (double backward) gives
//! the graph PyTorch would record. Constants stay numbers until an op
//! meets a tensor.

use ferrotorch_codegen::expr::{unary_ref, Binary, Cmp, Op, Unary};
use ferrotorch_codegen::Expr;
use ferrotorch_core::native::where_;
use ferrotorch_core::{Result, Tensor};

#[derive(Clone)]
enum V {
    T(Tensor),
    C(f64),
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

/// `v` as a tensor shaped like `like` (a constant filled in).
fn tensor(v: &V, like: &Tensor) -> Result<Tensor> {
    match v {
        V::T(t) => Ok(t.clone()),
        V::C(c) => Tensor::full(&[], *c, like.dtype()),
    }
}

fn compare(c: Cmp, a: &Tensor, b: &V) -> Result<Tensor> {
    let b = tensor(b, a)?;
    match c {
        Cmp::Lt => a.lt(&b),
        Cmp::Le => a.le(&b),
        Cmp::Gt => a.gt(&b),
        Cmp::Ge => a.ge(&b),
        Cmp::Eq => a.eq(&b),
        Cmp::Ne => a.ne(&b),
    }
}

/// `e`'s outputs on `inputs`, computed op by op (every output a tensor:
/// a constant output is broadcast to `shape`).
pub(crate) fn eval(e: &Expr, inputs: &[Tensor], shape: &[usize]) -> Result<Vec<Tensor>> {
    let mut v: Vec<V> = Vec::with_capacity(e.ops.len());
    for op in &e.ops {
        let r = match *op {
            Op::Input(k) => V::T(inputs[k].clone()),
            Op::Const(bits) => V::C(f64::from_bits(bits)),
            Op::Unary(f, a) => match &v[a] {
                V::T(t) => V::T(unary(f, t)?),
                V::C(c) => V::C(unary_ref(f, *c)),
            },
            Op::Binary(f, a, b) => match (&v[a], &v[b]) {
                (V::C(x), V::C(y)) => V::C(ferrotorch_codegen::expr::binary_ref(f, *x, *y)),
                (V::T(x), y) | (y, V::T(x)) => {
                    let (l, r) = if matches!(v[a], V::T(_)) {
                        (x.clone(), tensor(y, x)?)
                    } else {
                        (tensor(y, x)?, x.clone())
                    };
                    V::T(match f {
                        Binary::Add => l.add(&r)?,
                        Binary::Sub => l.sub(&r)?,
                        Binary::Mul => l.mul(&r)?,
                        Binary::Div => l.div(&r)?,
                        Binary::Max => l.maximum(&r)?,
                        Binary::Min => l.minimum(&r)?,
                        Binary::Pow => l.pow(&r)?,
                    })
                }
            },
            Op::Select {
                cmp,
                a,
                b,
                then,
                other,
            } => {
                let like = [&v[a], &v[b], &v[then], &v[other]]
                    .into_iter()
                    .find_map(|x| match x {
                        V::T(t) => Some(t.clone()),
                        V::C(_) => None,
                    });
                match like {
                    None => {
                        let (x, y) = match (&v[a], &v[b]) {
                            (V::C(x), V::C(y)) => (*x, *y),
                            _ => unreachable!("no tensor among them"),
                        };
                        if cmp.holds(x, y) {
                            v[then].clone()
                        } else {
                            v[other].clone()
                        }
                    }
                    Some(like) => {
                        let lhs = tensor(&v[a], &like)?;
                        let mask = compare(cmp, &lhs, &v[b])?;
                        let t = tensor(&v[then], &like)?;
                        let o = tensor(&v[other], &like)?;
                        V::T(where_(&mask, &t, &o)?)
                    }
                }
            }
        };
        v.push(r);
    }
    let like = inputs.first().cloned();
    e.outputs
        .iter()
        .map(|&o| match &v[o] {
            V::T(t) => Ok(t.clone()),
            V::C(c) => {
                let dtype = like
                    .as_ref()
                    .map(|t| t.dtype())
                    .unwrap_or(ferrotorch_core::DType::F32);
                Tensor::full(shape, *c, dtype)
            }
        })
        .collect()
}

//! The rows of the activations with parameters (Note [Pointwise rows]):
//! `leaky_relu`'s slope, `softplus`'s beta and threshold, `gelu`'s
//! approximation, `elu`'s three scales. A formula takes the parameters as
//! a slice of numbers in schema order (a string choice as its index).
//!
//! # Note [Activation rows]
//! Each row's derivative is PyTorch's `*_backward` kernel formula, not the
//! derivative of its composition: one factor, then `g · d(x)`, with
//! selects where PyTorch selects, so an infinite output gradient or a NaN
//! input gives what PyTorch's gives (the composed `mish` made `inf - inf`).
//! Its value is written so that the code generator's automatic derivative
//! of it is that formula too: a branch that is not taken reads a guarded
//! input (`softplus`'s `exp` sees 0 past the threshold, `elu`'s `expm1`
//! sees `min(x, 0)`), so its unused gradient is `0 · finite`, not
//! `0 · inf`; a NaN that must carry no gradient is `x - x`. Eager code
//! runs the value and the derivative as one elementwise loop over
//! float32/float64 (the formula instantiated for the element type, when
//! [`Fuse`] allows), otherwise with tensor ops, which `create_graph`
//! records (double backward). `gelu` and `elu` keep their vectorised
//! forward kernels and read only their derivative rows.

use super::algebra::{Pw, PwExt};
use super::prim::{Cmp, Unary};
use super::sym::{record, Recorded, SymV};
use super::tensor::TVal;
use super::unary::{Fuse, FUSE_SMALL_MAX};
use crate::autograd::node::Save;
use crate::autograd::{mode::is_grad_enabled, needs_grad, raw, record1};
use crate::error::Result;
use crate::native::iter::{empty_like_layout, map_binary, map_unary};
use crate::tensor::Tensor;
use crate::DType;

/// One parameter of an activation, after its input, in schema order.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Param {
    /// A number and its default.
    Num(&'static str, f64),
    /// One of these strings (the first is the default); the formula reads
    /// its index.
    Choice(&'static str, &'static [&'static str]),
}

impl Param {
    /// The parameter's name in the schema.
    pub fn name(&self) -> &'static str {
        match self {
            Param::Num(n, _) | Param::Choice(n, _) => n,
        }
    }

    /// Its default, as the number a formula reads.
    pub fn default(&self) -> f64 {
        match self {
            Param::Num(_, d) => *d,
            Param::Choice(..) => 0.0,
        }
    }
}

type Kernel1 = fn(&Tensor, &Tensor, &[f64]);
type Kernel2 = fn(&Tensor, &Tensor, &Tensor, &[f64]);

/// A formula of the input (and parameters), in each algebra that reads it.
struct Value {
    sym: fn(SymV, &[f64]) -> SymV,
    tensor: fn(TVal, &[f64]) -> TVal,
    f32: Kernel1,
    f64: Kernel1,
}

/// A derivative `g · d(x)` of the gradient and the input.
struct Grad {
    sym: fn(SymV, SymV, &[f64]) -> SymV,
    tensor: fn(TVal, TVal, &[f64]) -> TVal,
    f32: Kernel2,
    f64: Kernel2,
}

/// One activation's row: its parameters, its value and its derivative
/// (which reads the input), written once (Note [Activation rows]).
pub struct ActRow {
    /// The op's name (`leaky_relu`).
    pub name: &'static str,
    /// Its autograd node's name (`LeakyReluBackward0`).
    pub node: &'static str,
    /// Its parameters after the input.
    pub params: &'static [Param],
    /// When eager code runs it as one elementwise loop.
    pub fuse: Fuse,
    value: Value,
    grad: Grad,
}

impl ActRow {
    /// Parameters in the order the formulas read them, from those given
    /// (`None`: the default).
    pub fn with_defaults(&self, given: &[Option<f64>]) -> Vec<f64> {
        self.params
            .iter()
            .enumerate()
            .map(|(i, p)| given.get(i).copied().flatten().unwrap_or(p.default()))
            .collect()
    }

    /// Its value at parameters `p` as recorded primitives of one input.
    pub fn value(&self, p: &[f64]) -> Recorded {
        let v = self.value.sym;
        record(1, |x| vec![Some(v(x[0], p))])
    }

    /// Its derivative at `p` as recorded primitives of two inputs (the
    /// output gradient, then the input).
    pub fn grad(&self, p: &[f64]) -> Recorded {
        let d = self.grad.sym;
        record(2, |i| vec![Some(d(i[0], i[1], p))])
    }

    /// Whether its value (at the default parameters) needs a polynomial
    /// or host function.
    pub fn transcendental(&self) -> bool {
        let p = self.with_defaults(&[]);
        self.value(&p).ops.iter().any(|op| !op.is_arithmetic())
    }

    fn fuses(&self, x: &Tensor) -> bool {
        matches!(x.dtype(), DType::F32 | DType::F64)
            && match self.fuse {
                Fuse::Never => false,
                Fuse::Small => x.numel() <= FUSE_SMALL_MAX,
                Fuse::Always => true,
            }
    }

    /// The value of `x` at `p`, not recorded: one loop for float32/float64
    /// where [`ActRow::fuse`] allows, else tensor ops.
    pub fn forward(&self, x: &Tensor, p: &[f64]) -> Result<Tensor> {
        if self.fuses(x) {
            let out = empty_like_layout(x.shape(), x.dtype(), Some(x))?;
            let k = if x.dtype() == DType::F32 {
                self.value.f32
            } else {
                self.value.f64
            };
            k(x, &out, p);
            return Ok(out);
        }
        (self.value.tensor)(x.into(), p).tensor_shaped(x, x.shape())
    }

    /// The input gradient from the output gradient `g` and the input `x`:
    /// one loop without `create_graph` for same-shaped float32/float64
    /// operands where [`ActRow::fuse`] allows, else tensor ops (recorded
    /// under `create_graph`).
    pub fn backward(&self, g: &Tensor, x: &Tensor, p: &[f64]) -> Result<Tensor> {
        if self.fuses(g) && !is_grad_enabled() && x.dtype() == g.dtype() && x.shape() == g.shape() {
            let out = empty_like_layout(g.shape(), g.dtype(), Some(g))?;
            let k = if g.dtype() == DType::F32 {
                self.grad.f32
            } else {
                self.grad.f64
            };
            k(g, x, &out, p);
            return Ok(out);
        }
        (self.grad.tensor)(g.into(), x.into(), p).tensor_shaped(g, g.shape())
    }

    /// The op on `x` at `p`: its value, and where `x` requires grad, a
    /// node named [`ActRow::node`] saving `x` whose backward is the row's.
    pub fn apply(&'static self, x: &Tensor, p: &[f64]) -> Result<Tensor> {
        let y = raw(&[x], || self.forward(x, p))?;
        self.record(x, y, p)
    }

    /// Record the node of this row for `y`, computed from `x` at `p` by
    /// the caller's kernel (`gelu`, `elu`).
    pub fn record(&'static self, x: &Tensor, y: Tensor, p: &[f64]) -> Result<Tensor> {
        if !needs_grad(&[x]) {
            return Ok(y);
        }
        // at most three parameters, kept without an allocation per op
        let (mut kept, n) = ([0.0; 3], p.len());
        kept[..n].copy_from_slice(p);
        record1(
            self.node,
            &[x],
            y,
            smallvec::smallvec![Save::Tensor(x)],
            move |c| {
                Ok(smallvec::smallvec![Some(self.backward(
                    c.grad(),
                    c.saved(0),
                    &kept[..n]
                )?)])
            },
        )
    }
}

macro_rules! act_rows {
    ($($name:literal => $node:literal, [$($param:expr),*], $fuse:ident, $v:ident, $d:ident;)*) => {
        static ROWS: &[ActRow] = &[$(ActRow {
            name: $name,
            node: $node,
            params: &[$($param),*],
            fuse: Fuse::$fuse,
            value: Value {
                sym: $v::<SymV>,
                tensor: $v::<TVal>,
                f32: |x, out, p| map_unary::<f32, f32>(x, out, #[inline(always)] |v| $v::<f32>(v, p)),
                f64: |x, out, p| map_unary::<f64, f64>(x, out, #[inline(always)] |v| $v::<f64>(v, p)),
            },
            grad: Grad {
                sym: $d::<SymV>,
                tensor: $d::<TVal>,
                f32: |g, x, out, p| {
                    map_binary::<f32, f32, f32>(g, x, out, #[inline(always)] |a, v| $d::<f32>(a, v, p))
                },
                f64: |g, x, out, p| {
                    map_binary::<f64, f64, f64>(g, x, out, #[inline(always)] |a, v| $d::<f64>(a, v, p))
                },
            },
        }),*];
    };
}

// The formulas: `x` the input, `g` the output gradient, `p` the
// parameters. Derivatives are PyTorch's (`derivatives.yaml`, the
// `*_backward` kernels of `Activation.cpp`), in the order of operations
// eager autograd has computed them.

/// `x` where `x > 0`, else `0` — and NaN kept (`min(x, 0)` as a select):
/// the guarded input of a branch taken for `x <= 0`.
#[inline(always)]
fn neg_part<V: Pw>(x: V) -> V {
    let zero = x.k(0.0);
    V::select(Cmp::Gt, x.clone(), zero.clone(), zero, x)
}

/// `clamp(x, lo, hi)` for `lo <= hi` whose derivative is 1 strictly
/// inside, 0 at the bounds and at NaN (`x - x` there).
#[inline(always)]
fn strict_clamp<V: Pw>(x: V, lo: f64, hi: f64) -> V {
    let (l, h) = (x.k(lo), x.k(hi));
    let inside = V::select(Cmp::Lt, x.clone(), h.clone(), x.clone(), h);
    let nan = x.clone() - x.clone();
    let low = V::select(Cmp::Le, x.clone(), l.clone(), l.clone(), nan);
    V::select(Cmp::Gt, x, l, inside, low)
}

/// `g` strictly inside `(lo, hi)`, else 0 (0 at NaN).
#[inline(always)]
fn inside_grad<V: Pw>(g: V, x: V, lo: f64, hi: f64) -> V {
    let zero = x.k(0.0);
    let (l, h) = (x.k(lo), x.k(hi));
    let inner = V::select(Cmp::Lt, x.clone(), h, g, zero.clone());
    V::select(Cmp::Gt, x, l, inner, zero)
}

#[inline(always)]
fn leaky_relu<V: Pw>(x: V, p: &[f64]) -> V {
    let (zero, s) = (x.k(0.0), x.k(p[0]));
    V::select(Cmp::Gt, x.clone(), zero, x.clone(), x * s)
}
#[inline(always)]
fn leaky_relu_d<V: Pw>(g: V, x: V, p: &[f64]) -> V {
    let (zero, s) = (x.k(0.0), x.k(p[0]));
    V::select(Cmp::Gt, x, zero, g.clone(), g * s)
}

#[inline(always)]
fn hardtanh<V: Pw>(x: V, p: &[f64]) -> V {
    strict_clamp(x, p[0], p[1])
}
#[inline(always)]
fn hardtanh_d<V: Pw>(g: V, x: V, p: &[f64]) -> V {
    inside_grad(g, x, p[0], p[1])
}
#[inline(always)]
fn relu6<V: Pw>(x: V, _: &[f64]) -> V {
    strict_clamp(x, 0.0, 6.0)
}
#[inline(always)]
fn relu6_d<V: Pw>(g: V, x: V, _: &[f64]) -> V {
    inside_grad(g, x, 0.0, 6.0)
}

/// `βx`, and `βx` where it is at most the threshold, else 0 (the input
/// the smooth branch reads).
#[inline(always)]
fn softplus_in<V: Pw>(x: V, p: &[f64]) -> (V, V, V) {
    let (beta, t) = (x.k(p[0]), x.k(p[1]));
    let bx = x * beta;
    let zero = bx.k(0.0);
    let smooth = V::select(Cmp::Gt, bx.clone(), t.clone(), zero, bx.clone());
    (bx, t, smooth)
}
/// `log1p(e^(βx))/β`, `x` where `βx > threshold`.
#[inline(always)]
fn softplus<V: Pw>(x: V, p: &[f64]) -> V {
    let (bx, t, smooth) = softplus_in(x.clone(), p);
    let soft = smooth.exp().log1p() / x.k(p[0]);
    V::select(Cmp::Gt, bx, t, x, soft)
}
/// `g` where `βx > threshold`, else `g · z / (z + 1)`, `z = e^(βx)`.
#[inline(always)]
fn softplus_d<V: Pw>(g: V, x: V, p: &[f64]) -> V {
    let (bx, t, smooth) = softplus_in(x, p);
    let z = smooth.exp();
    let one = z.k(1.0);
    V::select(Cmp::Gt, bx, t, g.clone(), g * z.clone() / (z + one))
}

const SOFTPLUS_DEFAULTS: &[f64] = &[1.0, 20.0];

#[inline(always)]
fn mish<V: Pw>(x: V, _: &[f64]) -> V {
    x.clone() * softplus(x, SOFTPLUS_DEFAULTS).tanh()
}
/// `g · (t + x · sigmoid(x) · (1 - t²))`, `t = tanh(softplus(x))`.
#[inline(always)]
fn mish_d<V: Pw>(g: V, x: V, _: &[f64]) -> V {
    let t = softplus(x.clone(), SOFTPLUS_DEFAULTS).tanh();
    let one = t.k(1.0);
    g * (x.clone() * x.sigmoid() * (one - t.clone() * t.clone()) + t)
}

/// `clamp(x + 3, 0, 6)`, NaN kept (with no gradient).
#[inline(always)]
fn relu6_shift<V: Pw>(x: V) -> V {
    let s = x.clone() + x.k(3.0);
    strict_clamp(s, 0.0, 6.0)
}
#[inline(always)]
fn hardswish<V: Pw>(x: V, _: &[f64]) -> V {
    let six = x.k(6.0);
    x.clone() * relu6_shift(x) / six
}
/// 0 for `x <= -3`, `g` for `x >= 3`, else `g · (x/3 + 1/2)`
/// (PyTorch's vector loop).
#[inline(always)]
fn hardswish_d<V: Pw>(g: V, x: V, _: &[f64]) -> V {
    let (m3, p3, half, zero) = (x.k(-3.0), x.k(3.0), x.k(0.5), x.k(0.0));
    let mid = g.clone() * (x.clone() / p3.clone() + half);
    let upper = V::select(Cmp::Ge, x.clone(), p3, g, mid);
    V::select(Cmp::Le, x, m3, zero, upper)
}
#[inline(always)]
fn hardsigmoid<V: Pw>(x: V, _: &[f64]) -> V {
    let six = x.k(6.0);
    relu6_shift(x) / six
}
/// `g / 6` strictly inside `(-3, 3)`, else 0.
#[inline(always)]
fn hardsigmoid_d<V: Pw>(g: V, x: V, _: &[f64]) -> V {
    let six = x.k(6.0);
    inside_grad(g / six, x, -3.0, 3.0)
}

/// `-|x|` as a select (its derivative at 0 is -1, as PyTorch's branch).
#[inline(always)]
fn minus_abs<V: Pw>(x: V) -> V {
    let zero = x.k(0.0);
    V::select(Cmp::Lt, x.clone(), zero, x.clone(), -x)
}
/// `min(x, 0) - log1p(e^-|x|)`.
#[inline(always)]
fn log_sigmoid<V: Pw>(x: V, _: &[f64]) -> V {
    let zero = x.k(0.0);
    let low = V::select(Cmp::Lt, x.clone(), zero.clone(), x.clone(), zero);
    low - minus_abs(x).exp().log1p()
}
/// With `s = e^-|x| / (1 + e^-|x|)`: `g · (1 - s)` for `x < 0`, else
/// `g · s`.
#[inline(always)]
fn log_sigmoid_d<V: Pw>(g: V, x: V, _: &[f64]) -> V {
    let z = minus_abs(x.clone()).exp();
    let one = z.k(1.0);
    let s = z.clone() / (z + one.clone());
    let zero = x.k(0.0);
    g * V::select(Cmp::Lt, x, zero, one - s.clone(), s)
}

/// `scale·x` for `x > 0`, else `scale·alpha·(e^z - 1)`, `z =
/// input_scale·x`: `expm1(z)` near 0, `exp(z) - 1` below -1/2 (no
/// cancellation there), whose chain rule gives `e^z` — `expm1`'s own
/// derivative reads its result, `y + 1`, which cancels to 0 at `z = -100`
/// where PyTorch's formula gives `e^-100`.
#[inline(always)]
fn elu<V: Pw>(x: V, p: &[f64]) -> V {
    let (alpha, scale, input_scale) = (p[0], p[1], p[2]);
    let zero = x.k(0.0);
    let pos = x.k(scale) * x.clone();
    let z = neg_part(x.clone()) * x.k(input_scale);
    let one = z.k(1.0);
    let em1 = V::select(
        Cmp::Lt,
        z.clone(),
        z.k(-0.5),
        z.clone().exp() - one,
        z.expm1(),
    );
    let neg = x.k(scale * alpha) * em1;
    V::select(Cmp::Gt, x, zero, pos, neg)
}
/// `g·scale` for `x > 0`, else `g·scale·alpha·input_scale·e^(input_scale·x)`.
#[inline(always)]
fn elu_d<V: Pw>(g: V, x: V, p: &[f64]) -> V {
    let (alpha, scale, input_scale) = (p[0], p[1], p[2]);
    let zero = x.k(0.0);
    let neg = (neg_part(x.clone()) * x.k(input_scale)).exp() * x.k(scale * alpha * input_scale);
    let pos = x.k(scale);
    g * V::select(Cmp::Gt, x, zero, pos, neg)
}

/// `selu`'s constants.
const SELU: [f64; 3] = [1.673_263_242_354_377_3, 1.050_700_987_355_480_5, 1.0];

#[inline(always)]
fn selu<V: Pw>(x: V, _: &[f64]) -> V {
    elu(x, &SELU)
}
#[inline(always)]
fn selu_d<V: Pw>(g: V, x: V, _: &[f64]) -> V {
    elu_d(g, x, &SELU)
}
#[inline(always)]
fn celu<V: Pw>(x: V, p: &[f64]) -> V {
    elu(x, &[p[0], 1.0, 1.0 / p[0]])
}
#[inline(always)]
fn celu_d<V: Pw>(g: V, x: V, p: &[f64]) -> V {
    elu_d(g, x, &[p[0], 1.0, 1.0 / p[0]])
}

#[inline(always)]
fn gelu<V: Pw>(x: V, p: &[f64]) -> V {
    x.un(if p[0] == 0.0 {
        Unary::Gelu
    } else {
        Unary::GeluTanh
    })
}
/// `g·(Φ(x) + x·φ(x))`; for the tanh form `g·(½(1 + t) + ½x(1 - t²)·k(1 +
/// 3·0.044715x²))` with `t = tanh(k(x + 0.044715x³))`, `k = √(2/π)`.
#[inline(always)]
fn gelu_d<V: Pw>(g: V, x: V, p: &[f64]) -> V {
    use std::f64::consts::{FRAC_1_SQRT_2, PI};
    let (one, half) = (x.k(1.0), x.k(0.5));
    let d = if p[0] == 0.0 {
        let cdf = ((x.clone() * x.k(FRAC_1_SQRT_2)).erf() + one) * half;
        let pdf = (x.clone() * x.clone() * x.k(-0.5)).exp() * x.k(1.0 / (2.0 * PI).sqrt());
        cdf + x * pdf
    } else {
        let k = x.k((2.0 / PI).sqrt());
        let x2 = x.clone() * x.clone();
        let t = ((x.clone() + x2.clone() * x.clone() * x.k(0.044715)) * k.clone()).tanh();
        let dt = (x2 * x.k(3.0 * 0.044715) + one.clone()) * k;
        (t.clone() + one.clone()) * half.clone() + x * (one - t.clone() * t) * dt * half
    };
    g * d
}

act_rows! {
    "leaky_relu" => "LeakyReluBackward0", [Param::Num("negative_slope", 0.01)], Always,
        leaky_relu, leaky_relu_d;
    "hardtanh" => "HardtanhBackward0",
        [Param::Num("min_val", -1.0), Param::Num("max_val", 1.0)], Always, hardtanh, hardtanh_d;
    "relu6" => "HardtanhBackward0", [], Always, relu6, relu6_d;
    "softplus" => "SoftplusBackward0",
        [Param::Num("beta", 1.0), Param::Num("threshold", 20.0)], Always, softplus, softplus_d;
    "mish" => "MishBackward0", [], Always, mish, mish_d;
    "hardswish" => "HardswishBackward0", [], Always, hardswish, hardswish_d;
    "hardsigmoid" => "HardsigmoidBackward0", [], Always, hardsigmoid, hardsigmoid_d;
    "log_sigmoid" => "LogSigmoidBackward0", [], Always, log_sigmoid, log_sigmoid_d;
    "elu" => "EluBackward0",
        [Param::Num("alpha", 1.0), Param::Num("scale", 1.0), Param::Num("input_scale", 1.0)],
        Always, elu, elu_d;
    "selu" => "EluBackward0", [], Always, selu, selu_d;
    "celu" => "EluBackward0", [Param::Num("alpha", 1.0)], Always, celu, celu_d;
    "gelu" => "GeluBackward0", [Param::Choice("approximate", &["none", "tanh"])], Never,
        gelu, gelu_d;
}

/// The activation row of op `name`, if it has one.
pub fn act(name: &str) -> Option<&'static ActRow> {
    ROWS.iter().find(|r| r.name == name)
}

/// Every activation row.
pub fn act_rows() -> &'static [ActRow] {
    ROWS
}

/// The row of activation `name`, which core's own methods read by name
/// (a table invariant: `each_method_records_its_rows_node` calls every
/// one of them).
pub(crate) fn named(name: &str) -> &'static ActRow {
    act(name).expect("every activation row core reads is in the table")
}

/// The row and parameters whose value is primitive `f` (the GELUs).
pub fn act_of_prim(f: Unary) -> Option<(&'static ActRow, [f64; 1])> {
    let p = match f {
        Unary::Gelu => 0.0,
        Unary::GeluTanh => 1.0,
        _ => return None,
    };
    act("gelu").map(|r| (r, [p]))
}

#[cfg(test)]
mod tests {
    use crate::tensor::Tensor;

    #[test]
    fn each_method_records_its_rows_node() {
        // every method that reads its row by name finds it, and the node
        // is PyTorch's (torch 2.15's grad_fn names)
        let x = Tensor::from_vec(vec![-1.5f32, 0.5], &[2])
            .unwrap()
            .requires_grad_(true)
            .unwrap();
        type Method = fn(&Tensor) -> crate::Result<Tensor>;
        let cases: [(Method, &str); 12] = [
            (|x| x.leaky_relu(0.1), "LeakyReluBackward0"),
            (|x| x.hardtanh(-1.0, 1.0), "HardtanhBackward0"),
            (|x| x.relu6(), "HardtanhBackward0"),
            (|x| x.softplus(1.0, 20.0), "SoftplusBackward0"),
            (|x| x.mish(), "MishBackward0"),
            (|x| x.hardswish(), "HardswishBackward0"),
            (|x| x.hardsigmoid(), "HardsigmoidBackward0"),
            (|x| x.log_sigmoid(), "LogSigmoidBackward0"),
            (|x| x.elu(1.0, 1.0, 1.0), "EluBackward0"),
            (|x| x.selu(), "EluBackward0"),
            (|x| x.celu(0.5), "EluBackward0"),
            (|x| x.gelu("tanh"), "GeluBackward0"),
        ];
        for (f, node) in cases {
            let y = f(&x).unwrap();
            assert_eq!(y.grad_fn().unwrap().name(), node);
        }
    }
}

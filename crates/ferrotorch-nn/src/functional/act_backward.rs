//! Activations whose gradient is PyTorch's `*_backward` kernel formula
//! rather than the derivative of their composition.
//!
//! # Note [Activation backward formulas]
//! A composed activation differentiates term by term: `mish`'s
//! `x · tanh(softplus(x))` gives `g·tanh(..) + g·x·(..)`, so an infinite
//! output gradient makes `inf - inf` = NaN where PyTorch gives ±inf, and a
//! select inside the composition (softplus's branches) sends a NaN input's
//! gradient down the branch that is 0 where PyTorch's is NaN. These
//! activations keep their composed forward (run without recording) and
//! take the gradient as PyTorch's kernels compute it: one factor `d(x)`,
//! then `g · d(x)`, with selects where PyTorch selects. The backward is
//! written with differentiable ops, so double backward works.

use ferrotorch_core::autograd::function::{apply, Function, FunctionCtx};
use ferrotorch_core::native::where_;
use ferrotorch_core::{Result, Tensor};

/// `(x, params) -> y` without recording.
pub(super) type Forward = fn(&Tensor, [f64; 2]) -> Result<Tensor>;
/// `(g, x, params) -> dx`.
pub(super) type Backward = fn(&Tensor, &Tensor, [f64; 2]) -> Result<Tensor>;

/// One activation: its grad_fn name, parameters and two formulas.
struct Activation {
    name: &'static str,
    params: [f64; 2],
    forward: Forward,
    backward: Backward,
}

impl Function for Activation {
    fn forward(&self, ctx: &mut FunctionCtx, x: &[Tensor]) -> Result<Vec<Tensor>> {
        ctx.save_for_backward(&[x[0].clone()]);
        Ok(vec![(self.forward)(&x[0], self.params)?])
    }

    fn backward(&self, ctx: &FunctionCtx, g: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        let x = &ctx.saved_tensors()[0];
        Ok(vec![Some((self.backward)(&g[0], x, self.params)?)])
    }

    fn name(&self) -> String {
        self.name.to_string()
    }
}

pub(super) fn run(
    name: &'static str,
    x: &Tensor,
    params: [f64; 2],
    f: Forward,
    b: Backward,
) -> Result<Tensor> {
    let a = Activation {
        name,
        params,
        forward: f,
        backward: b,
    };
    Ok(apply(a, std::slice::from_ref(x))?.remove(0))
}

/// `log(1 + e^(beta x)) / beta`, `x` where `beta x > threshold`.
fn softplus_forward(x: &Tensor, p: [f64; 2]) -> Result<Tensor> {
    let (beta, threshold) = (p[0], p[1]);
    let bx = x.mul(beta)?;
    // log1p(exp(bx)) without overflow: bx + log1p(exp(-bx)) for bx > 0
    let pos = bx.clamp_min(0.0)?;
    let upper = pos.add(&pos.neg()?.exp()?.log1p()?)?;
    let lower = bx.clamp_max(0.0)?.exp()?.log1p()?;
    let smooth = where_(&bx.gt(0.0)?, &upper, &lower)?.div(beta)?;
    where_(&bx.gt(threshold)?, x, &smooth)
}

/// PyTorch's `softplus_backward`: `g` where `beta x > threshold`, else
/// `g · z / (z + 1)` with `z = e^(beta x)` (NaN for a NaN input). `exp`
/// keeps subnormal results where f32 `sigmoid` flushes them to 0, so an
/// infinite `g` at `beta x = -100` stays infinite, as PyTorch's.
fn softplus_backward(g: &Tensor, x: &Tensor, p: [f64; 2]) -> Result<Tensor> {
    let bx = x.mul(p[0])?;
    let z = bx.exp()?;
    where_(&bx.gt(p[1])?, g, &g.mul(&z)?.div(&z.add(1.0)?)?)
}

/// `softplus(x, beta, threshold)` (Note [Activation backward formulas]).
pub fn softplus(x: &Tensor, beta: f64, threshold: f64) -> Result<Tensor> {
    run(
        "SoftplusBackward0",
        x,
        [beta, threshold],
        softplus_forward,
        softplus_backward,
    )
}

/// `-softplus(-x)`.
fn logsigmoid_forward(x: &Tensor, _: [f64; 2]) -> Result<Tensor> {
    softplus_forward(&x.neg()?, [1.0, 20.0])?.neg()
}

/// PyTorch's `log_sigmoid_backward`: with `s = e^-|x| / (1 + e^-|x|)`,
/// `g · (1 - s)` for `x < 0`, else `g · s`.
fn logsigmoid_backward(g: &Tensor, x: &Tensor, _: [f64; 2]) -> Result<Tensor> {
    let z = x.abs()?.neg()?.exp()?;
    let s = z.div(&z.add(1.0)?)?;
    let d = where_(&x.lt(0.0)?, &s.neg()?.add(1.0)?, &s)?;
    g.mul(&d)
}

/// `log(sigmoid(x))` (Note [Activation backward formulas]).
pub fn logsigmoid(x: &Tensor) -> Result<Tensor> {
    run(
        "LogSigmoidBackward0",
        x,
        [0.0; 2],
        logsigmoid_forward,
        logsigmoid_backward,
    )
}

/// `x · tanh(softplus(x))`.
fn mish_forward(x: &Tensor, _: [f64; 2]) -> Result<Tensor> {
    x.mul(&softplus_forward(x, [1.0, 20.0])?.tanh()?)
}

/// PyTorch's `mish_backward`: `g · (t + x · sigmoid(x) · (1 - t²))`,
/// `t = tanh(softplus(x))`.
fn mish_backward(g: &Tensor, x: &Tensor, _: [f64; 2]) -> Result<Tensor> {
    let t = softplus_forward(x, [1.0, 20.0])?.tanh()?;
    let d = x
        .mul(&x.sigmoid()?)?
        .mul(&t.mul(&t)?.neg()?.add(1.0)?)?
        .add(&t)?;
    g.mul(&d)
}

/// `x · tanh(softplus(x))` (Note [Activation backward formulas]).
pub fn mish(x: &Tensor) -> Result<Tensor> {
    run("MishBackward0", x, [0.0; 2], mish_forward, mish_backward)
}

/// `x · clamp(x + 3, 0, 6) / 6`.
fn hardswish_forward(x: &Tensor, _: [f64; 2]) -> Result<Tensor> {
    x.mul(&x.add(3.0)?.clamp(Some(0.0), Some(6.0))?)?.div(6.0)
}

/// PyTorch's `hardswish_backward` (its vector loop): 0 for `x <= -3`,
/// `g` for `x >= 3`, else `g · (x/3 + 1/2)` (NaN for a NaN input).
fn hardswish_backward(g: &Tensor, x: &Tensor, _: [f64; 2]) -> Result<Tensor> {
    let mid = g.mul(&x.div(3.0)?.add(0.5)?)?;
    where_(&x.le(-3.0)?, 0.0, &where_(&x.ge(3.0)?, g, &mid)?)
}

/// `x · relu6(x + 3) / 6` (Note [Activation backward formulas]).
pub fn hardswish(x: &Tensor) -> Result<Tensor> {
    run(
        "HardswishBackward0",
        x,
        [0.0; 2],
        hardswish_forward,
        hardswish_backward,
    )
}

/// The Huber loss of a difference `d`, divided by `scale` (1 for
/// `huber_loss`, `beta` for `smooth_l1_loss`): `0.5 d²` where
/// `|d| <= delta`, else `delta (|d| - 0.5 delta)`.
fn huber_forward(d: &Tensor, p: [f64; 2]) -> Result<Tensor> {
    let (delta, scale) = (p[0], p[1]);
    let a = d.abs()?;
    let quad = a.mul(&a)?.mul(0.5)?;
    let lin = a.sub(0.5 * delta)?.mul(delta)?;
    where_(&a.le(delta)?, &quad, &lin)?.div(scale)
}

/// PyTorch's `huber_loss_backward`: `g · clamp(d, -delta, delta) / scale`
/// (so `±delta` at infinite `d`, where the composed gradient was
/// `0 · inf` = NaN, and NaN at a NaN `d`).
fn huber_backward(g: &Tensor, d: &Tensor, p: [f64; 2]) -> Result<Tensor> {
    let (delta, scale) = (p[0], p[1]);
    g.mul(&d.clamp(Some(-delta), Some(delta))?)?.div(scale)
}

/// The pointwise Huber loss of `d` over `scale` (Note [Activation backward
/// formulas]: PyTorch's backward formula, not the composition's); `name`
/// is PyTorch's node name (`HuberLossBackward0`, `SmoothL1LossBackward0`).
pub(super) fn huber(name: &'static str, d: &Tensor, delta: f64, scale: f64) -> Result<Tensor> {
    run(name, d, [delta, scale], huber_forward, huber_backward)
}

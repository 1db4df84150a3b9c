//! Pointwise losses whose gradient is PyTorch's `*_backward` kernel
//! formula rather than the derivative of their composition (the
//! activations' are their rows in core, Note [Activation rows]).
//!
//! # Note [Activation backward formulas]
//! A composed formula differentiates term by term, so an infinite output
//! gradient can make `inf - inf` = NaN where PyTorch gives ±inf, and a
//! select inside the composition can send a NaN input's gradient down a
//! branch that is 0 where PyTorch's is NaN. The Huber loss keeps its
//! composed forward (run without recording) and takes the gradient as
//! PyTorch's kernel computes it: one factor `d(x)`, then `g · d(x)`. The
//! backward is written with differentiable ops, so double backward works.

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

//! Activation checkpointing (`torch.utils.checkpoint.checkpoint`): run a
//! segment without keeping its intermediate tensors, and recompute it
//! during backward.
//!
//! The segment's forward runs under no_grad, keeping only its inputs. When
//! its gradient is needed, the inputs are detached into fresh leaves, the
//! segment is recomputed with grad mode on and differentiated there. The
//! default generator's state is captured before the forward and restored
//! for the recomputation, so random ops (dropout) draw the same values
//! (PyTorch's `preserve_rng_state=True`). Like PyTorch's reentrant
//! checkpoint, the result supports first-order gradients only.

use super::function::{apply, Function, FunctionCtx};
use super::mode;
use crate::error::Result;
use crate::native::random::{default_generator, Generator};
use crate::tensor::Tensor;
use std::sync::Arc;

/// A segment of computation: inputs to outputs.
pub type Segment = Arc<dyn Fn(&[Tensor]) -> Result<Vec<Tensor>> + Send + Sync>;

struct Checkpoint(Segment);

impl Function for Checkpoint {
    fn name(&self) -> String {
        "CheckpointFunctionBackward".to_string()
    }

    fn forward(&self, ctx: &mut FunctionCtx, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        ctx.save_for_backward(inputs);
        ctx.save_data(default_generator().get_state());
        (self.0)(inputs)
    }

    fn backward(&self, ctx: &FunctionCtx, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        let _g = mode::enable_grad();
        let leaves: Vec<Tensor> = ctx
            .saved_tensors()
            .iter()
            .enumerate()
            .map(|(i, t)| {
                t.detach()
                    .requires_grad_(ctx.needs_input_grad(i) && t.dtype().is_differentiable())
            })
            .collect::<Result<_>>()?;
        let outputs = {
            let now = default_generator().get_state();
            if let Some(state) = ctx.data::<Generator>() {
                default_generator().set_state(state);
            }
            let out = (self.0)(&leaves);
            default_generator().set_state(&now);
            out?
        };
        let (mut outs, mut gs) = (Vec::new(), Vec::new());
        for (o, g) in outputs.iter().zip(grads) {
            if o.requires_grad() {
                outs.push(o.clone());
                gs.push(g.clone());
            }
        }
        let wanted: Vec<usize> = (0..leaves.len())
            .filter(|&i| leaves[i].requires_grad())
            .collect();
        let targets: Vec<Tensor> = wanted.iter().map(|&i| leaves[i].clone()).collect();
        let mut result = vec![None; leaves.len()];
        if outs.is_empty() || targets.is_empty() {
            return Ok(result);
        }
        let got = super::grad(&outs, &targets, Some(&gs), Some(false), false, true)?;
        for (i, g) in wanted.into_iter().zip(got) {
            result[i] = g;
        }
        Ok(result)
    }
}

/// Run `segment(inputs)` without keeping its activations for backward;
/// they are recomputed when the gradient is needed.
pub fn checkpoint(
    segment: impl Fn(&[Tensor]) -> Result<Vec<Tensor>> + Send + Sync + 'static,
    inputs: &[Tensor],
) -> Result<Vec<Tensor>> {
    apply(Checkpoint(Arc::new(segment)), inputs)
}

//! Fusion groups under autograd: the forward kernel runs inside an
//! autograd function whose backward is the group's backward expression
//! (Note [Fused backward] in ferrotorch-codegen), compiled as one more
//! kernel; under `create_graph` it is evaluated with eager ops instead,
//! so the gradient itself is differentiable.

use super::{eager, kernel_for, run, Compiled, Prepared};
use ferrotorch_codegen::grad::backward;
use ferrotorch_codegen::Kernel;
use ferrotorch_core::autograd::function::{apply as apply_fn, Function, FunctionCtx};
use ferrotorch_core::autograd::{is_grad_enabled, sum_to};
use ferrotorch_core::{Result, Tensor};

/// A fused group as an autograd function.
struct FusedGroup(Prepared);

impl Function for FusedGroup {
    fn forward(&self, ctx: &mut FunctionCtx, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        ctx.save_for_backward(inputs);
        self.0.execute(inputs)
    }

    fn backward(&self, ctx: &FunctionCtx, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        let xs = ctx.saved_tensors();
        let lowered = self.0.lowered();
        let entry = &self.0.entry;
        let bwd = entry.backward.get_or_init(|| backward(&lowered.expr));
        let all: Vec<Tensor> = xs.iter().chain(grads).cloned().collect();
        let shape = &self.0.plan.shape;
        let full = if is_grad_enabled() {
            // create_graph: differentiable eager ops
            eager::eval(bwd, &all, shape)?
        } else {
            native(self, bwd, &all).unwrap_or_else(|| eager::eval(bwd, &all, shape))?
        };
        full.into_iter()
            .zip(xs)
            .enumerate()
            .map(|(k, (g, x))| {
                if !ctx.needs_input_grad(k) {
                    return Ok(None);
                }
                let g = if g.shape() == x.shape() {
                    g
                } else {
                    sum_to(&g, x.shape())?
                };
                Ok(Some(g))
            })
            .collect()
    }

    fn name(&self) -> String {
        // torch's name for a differentiated JIT subgraph
        "DifferentiableGraphBackward".into()
    }
}

/// The backward kernel's result over the forward's broadcast shape, or
/// `None` when its guards fail (gradients of another dtype, say).
fn native(
    f: &FusedGroup,
    bwd: &ferrotorch_codegen::Expr,
    all: &[Tensor],
) -> Option<Result<Vec<Tensor>>> {
    let lowered = f.0.lowered();
    if all.iter().any(|t| t.dtype() != lowered.dtype) {
        return None;
    }
    let plan = run::Plan::new(all, false)?;
    if plan.shape != f.0.plan.shape {
        return None;
    }
    let float = run::float_of(lowered.dtype)?;
    let k = kernel_for(
        &f.0.entry.backward_kernels,
        (plan.access(), float),
        |access, float| Kernel::compile(bwd, float, access).map(Compiled::Pointwise),
    )?;
    let Compiled::Pointwise(k) = &*k else {
        return None;
    };
    let as_lowered = super::lower::Lowered {
        expr: bwd.clone(),
        dtype: lowered.dtype,
        reads: Vec::new(),
        row: None,
    };
    super::RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    Some(run::execute(&as_lowered, k, &plan, all))
}

/// Run `p` on `inputs` recording autograd.
pub(crate) fn apply(p: Prepared, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
    apply_fn(FusedGroup(p), inputs)
}

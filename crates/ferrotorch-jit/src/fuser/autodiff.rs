//! Fusion groups under autograd: the forward kernel runs inside an
//! autograd function whose backward is the group's backward expression
//! (Note [Fused backward] in ferrotorch-codegen), compiled as one more
//! kernel; under `create_graph` it is evaluated with eager ops instead,
//! so the gradient itself is differentiable. A group ending in a
//! reduction recomputes the reduction's input with the prologue kernel,
//! takes the reduction's vector-Jacobian product with eager autograd
//! (its weight and bias too), and runs the prologue's backward as a
//! kernel on that.

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
        // the gradient of the prologue's output, and of a reduction's
        // weight and bias
        let (pre_grads, mut extra) = match self.0.row {
            None => (grads.to_vec(), Vec::new()),
            Some((row, _)) => {
                let v = prologue(&self.0, xs)?;
                let g_out = grads.last().expect("one gradient per output");
                let (gv, extra) = row_vjp(&row, &v, xs, g_out)?;
                let gv = if row.keeps_input {
                    gv.add(&grads[0])?
                } else {
                    gv
                };
                (vec![gv], extra)
            }
        };
        let bwd = entry.backward.get_or_init(|| backward(&lowered.expr));
        let all: Vec<Tensor> = xs.iter().chain(&pre_grads).cloned().collect();
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
                let mut g = if g.shape() == x.shape() {
                    g
                } else {
                    sum_to(&g, x.shape())?
                };
                if let Some(i) = extra.iter().position(|(j, _)| *j == k) {
                    g = g.add(&extra.swap_remove(i).1)?;
                }
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
    super::RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    Some(run::execute(lowered.dtype, k, &plan, all))
}

/// Run `p` on `inputs` recording autograd.
pub(crate) fn apply(p: Prepared, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
    apply_fn(FusedGroup(p), inputs)
}

/// The reduction's input (the prologue expression's values) for `xs`,
/// by the prologue as a pointwise kernel, or eager ops where it cannot
/// run.
fn prologue(p: &Prepared, xs: &[Tensor]) -> Result<Tensor> {
    let lowered = p.lowered();
    let native = (|| {
        let plan = run::Plan::new(xs, false)?;
        let float = run::float_of(lowered.dtype)?;
        let k = kernel_for(
            &p.entry.prologue_kernels,
            (plan.access(), float),
            |access, float| Kernel::compile(&lowered.expr, float, access).map(Compiled::Pointwise),
        )?;
        let Compiled::Pointwise(k) = &*k else {
            return None;
        };
        Some(run::execute(lowered.dtype, k, &plan, xs))
    })();
    let mut v = match native {
        Some(v) => v?,
        None => eager::eval(&lowered.expr, xs, &p.plan.shape)?,
    };
    Ok(v.remove(0))
}

/// The vector-Jacobian product of the group's reduction at `v` with
/// output gradient `g`, by eager autograd: the gradient of `v`, and of
/// the weight and bias inputs that require grad (by input index).
fn row_vjp(
    row: &super::lower::Row,
    v: &Tensor,
    xs: &[Tensor],
    g: &Tensor,
) -> Result<(Tensor, Vec<(usize, Tensor)>)> {
    use super::rows::RowKind;
    use ferrotorch_core::autograd::{enable_grad, grad};
    let create_graph = is_grad_enabled();
    let _g = enable_grad();
    let vr = v.detach().requires_grad_(true)?;
    let param = |k: Option<usize>| k.map(|k| (k, xs[k].clone()));
    let (w, b) = (param(row.weight), param(row.bias));
    let out = match row.desc.kind {
        RowKind::Sum => vr.sum_dim(Some(&[-1]), row.desc.keepdim, None)?,
        RowKind::Mean => vr.mean_dim(Some(&[-1]), row.desc.keepdim, None)?,
        RowKind::Max => vr.amax(&[-1], row.desc.keepdim)?,
        RowKind::Softmax => vr.softmax(-1, None)?,
        RowKind::LogSoftmax => vr.log_softmax(-1, None)?,
        RowKind::LayerNorm { eps } => vr.layer_norm(
            &[row.last],
            w.as_ref().map(|(_, t)| t),
            b.as_ref().map(|(_, t)| t),
            eps,
        )?,
    };
    let params: Vec<(usize, Tensor)> = [w, b]
        .into_iter()
        .flatten()
        .filter(|(_, t)| t.requires_grad())
        .collect();
    let wrt: Vec<Tensor> = std::iter::once(vr)
        .chain(params.iter().map(|(_, t)| t.clone()))
        .collect();
    let mut gs = grad(
        &[out],
        &wrt,
        Some(std::slice::from_ref(g)),
        None,
        create_graph,
        true,
    )?
    .into_iter();
    let gv = gs.next().flatten().map_or_else(|| v.zeros_like(), Ok)?;
    let extra = params
        .into_iter()
        .zip(gs)
        .filter_map(|((k, _), g)| g.map(|g| (k, g)))
        .collect();
    Ok((gv, extra))
}

//! Reverse-mode automatic differentiation (`torch.autograd`).
//!
//! Ops on tensors that require grad record a graph of [`Node`]s (Note
//! [Autograd graph] in `node.rs`); [`Tensor::backward`] and [`grad`] run it
//! backwards with the formulas in [`derivatives`]. Grad mode is
//! thread-local ([`no_grad`], [`enable_grad`], [`set_grad_enabled`],
//! [`inference_mode`]).
//!
//! ```
//! use ferrotorch_core::{autograd, Tensor};
//! let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3]).unwrap().requires_grad_(true).unwrap();
//! let y = x.mul(&x).unwrap().sum().unwrap();      // y = Σ x²
//! y.backward().unwrap();
//! assert_eq!(x.grad().unwrap().to_vec::<f32>().unwrap(), vec![2.0, 4.0, 6.0]);
//! assert_eq!(y.grad_fn().unwrap().name(), "SumBackward0");
//! ```

pub mod checkpoint;
pub(crate) mod derivatives;
mod engine;
pub mod function;
pub mod functional;
pub mod gradcheck;
pub mod graph_hooks;
mod hooks;
pub(crate) mod meta;
pub mod mode;
pub(crate) mod node;
mod tensor_api;

pub use checkpoint::checkpoint;
pub use engine::{is_anomaly_enabled, set_detect_anomaly, sum_to};
pub use function::{Function, FunctionCtx};
pub use gradcheck::{gradcheck, gradgradcheck, GradcheckOptions};
pub use hooks::RemovableHandle;
pub use meta::{Hook, PostAccumulateHook};
pub use mode::{
    enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad,
    set_grad_enabled, with_no_grad, GradModeGuard,
};
pub use node::{Ctx, Node};

use crate::error::Result;
use crate::tensor::Tensor;
use node::{Kind, Save, TensorMeta};
use parking_lot::Mutex;
use std::sync::Arc;

/// Whether an op on `inputs` must be recorded: grad mode is on and some
/// input requires grad. One thread-local read and one flag per input.
#[inline]
pub(crate) fn needs_grad(inputs: &[&Tensor]) -> bool {
    inputs.iter().any(|t| t.requires_grad()) && mode::is_grad_enabled()
}

/// Record op `name` that made `outputs` from `inputs`: a node whose
/// `formula` maps output gradients to input gradients (one entry per input,
/// `None` where there is none), with `saves` kept for it. Does nothing when
/// [`needs_grad`] is false. Only floating outputs get the node as grad_fn
/// (integer outputs such as indices are not differentiable).
pub(crate) fn record(
    name: &'static str,
    inputs: &[&Tensor],
    outputs: &[&Tensor],
    saves: smallvec::SmallVec<[Save<'_>; 2]>,
    formula: impl Fn(&Ctx) -> Result<node::GradVec> + Send + Sync + 'static,
) -> Result<()> {
    if !needs_grad(inputs) {
        return Ok(());
    }
    for s in &saves {
        if let Save::Tensor(t) = s {
            crate::ensure!(
                !t.is_inference(),
                Runtime,
                "Inference tensors cannot be saved for backward. To work around you can make a clone to get a normal tensor and use it in autograd."
            );
        }
    }
    graph_hooks::check_not_in_creation_hook(name)?;
    let saved = saves
        .into_iter()
        .map(|s| node::save(s, outputs, name))
        .collect::<Result<_>>()?;
    // Note [Graph hooks]: creation hooks see a leaf's accumulator when it
    // is made, before the node that made it
    let fresh: smallvec::SmallVec<[bool; 4]> = if graph_hooks::has_node_creation_hooks() {
        inputs
            .iter()
            .map(|t| meta::needs_new_accumulator(t))
            .collect()
    } else {
        smallvec::SmallVec::new()
    };
    let next: smallvec::SmallVec<[Option<node::Edge>; 2]> =
        inputs.iter().map(|t| meta::gradient_edge(t)).collect();
    for (made, e) in fresh.iter().zip(&next) {
        if let (true, Some(e)) = (made, e) {
            graph_hooks::node_created(&e.node)?;
        }
    }
    let node = Arc::new(Node {
        name,
        seq: node::next_seq(),
        next,
        inputs: inputs.iter().map(|t| TensorMeta::of(t)).collect(),
        outputs: outputs.iter().map(|t| TensorMeta::of(t)).collect(),
        saved: Mutex::new(Some(saved)),
        kind: Kind::Formula(Box::new(formula)),
        pre_hooks: Mutex::new(Vec::new()),
        node_hooks: Mutex::new(Default::default()),
        has_node_hooks: std::sync::atomic::AtomicBool::new(false),
        trace: engine::is_anomaly_enabled()
            .then(|| std::backtrace::Backtrace::force_capture().to_string()),
    });
    for (i, o) in outputs.iter().enumerate() {
        if o.dtype().is_differentiable() {
            meta::set_grad_fn(o, node.clone(), i);
        }
    }
    graph_hooks::node_created(&node)
}

/// [`record`] for a one-output op, returning the output.
pub(crate) fn record1(
    name: &'static str,
    inputs: &[&Tensor],
    out: Tensor,
    saves: smallvec::SmallVec<[Save<'_>; 2]>,
    formula: impl Fn(&Ctx) -> Result<node::GradVec> + Send + Sync + 'static,
) -> Result<Tensor> {
    record(name, inputs, &[&out], saves, formula)?;
    Ok(out)
}

/// Run `f` (an op's raw computation) without recording when its own node
/// will be recorded afterwards, so inner ops add nothing to the graph.
#[inline]
pub(crate) fn raw<R>(inputs: &[&Tensor], f: impl FnOnce() -> R) -> R {
    if needs_grad(inputs) {
        let _g = mode::no_grad();
        f()
    } else {
        f()
    }
}

/// Compute and accumulate gradients of `tensors` into the leaves
/// (`torch.autograd.backward`). `grad_tensors` may be omitted for scalar
/// outputs; `retain_graph` defaults to `create_graph`.
pub fn backward(
    tensors: &[Tensor],
    grad_tensors: Option<&[Tensor]>,
    retain_graph: Option<bool>,
    create_graph: bool,
) -> Result<()> {
    let roots = roots(tensors, grad_tensors, "tensors")?;
    engine::execute(
        roots,
        retain_graph.unwrap_or(create_graph),
        create_graph,
        None,
    )?;
    Ok(())
}

/// Gradients of `outputs` with respect to `inputs`, returned instead of
/// accumulated (`torch.autograd.grad`). With `allow_unused`, an input the
/// outputs do not depend on gets `None`; otherwise that is an error.
pub fn grad(
    outputs: &[Tensor],
    inputs: &[Tensor],
    grad_outputs: Option<&[Tensor]>,
    retain_graph: Option<bool>,
    create_graph: bool,
    allow_unused: bool,
) -> Result<Vec<Option<Tensor>>> {
    let roots = roots(outputs, grad_outputs, "outputs")?;
    let targets = engine::edges_of(inputs, "inputs")?;
    let got = engine::execute(
        roots,
        retain_graph.unwrap_or(create_graph),
        create_graph,
        Some(&targets),
    )?;
    got.into_iter()
        .zip(inputs)
        .enumerate()
        .map(|(i, (g, x))| match g {
            Some(g) => engine::reduce_to_input(g, x).map(Some),
            None if allow_unused => Ok(None),
            None => crate::bail!(
                Runtime,
                "One of the differentiated Tensors (input {i}) appears to not have been used in the graph. Set allow_unused=True if this is the desired behavior."
            ),
        })
        .collect()
}

/// The edge gradients of `t` flow into: `(t.grad_fn, t.output_nr)`, or
/// for a leaf its gradient accumulator
/// (`torch.autograd.graph.get_gradient_edge`).
pub fn get_gradient_edge(t: &Tensor) -> Result<(Arc<Node>, usize)> {
    match meta::gradient_edge(t) {
        Some(e) => Ok((e.node, e.input_nr)),
        None => crate::bail!(
            Runtime,
            "It is not possible to get the gradient edge for a Tensor that does not require gradients"
        ),
    }
}

/// [`grad`] with respect to graph edges (`(node, output_nr)`, as
/// [`get_gradient_edge`] gives them) instead of tensors: the gradient
/// flowing into that output of the node.
pub fn grad_edges(
    outputs: &[Tensor],
    edges: &[(Arc<Node>, usize)],
    grad_outputs: Option<&[Tensor]>,
    retain_graph: Option<bool>,
    create_graph: bool,
    allow_unused: bool,
) -> Result<Vec<Option<Tensor>>> {
    let roots = roots(outputs, grad_outputs, "outputs")?;
    let targets: Vec<node::Edge> = edges
        .iter()
        .map(|(n, nr)| {
            crate::ensure!(
                *nr < n.outputs.len().max(1),
                Runtime,
                "gradient edge: {} has {} outputs, got output_nr {nr}",
                n.name,
                n.outputs.len()
            );
            Ok(node::Edge {
                node: n.clone(),
                input_nr: *nr,
            })
        })
        .collect::<Result<_>>()?;
    let got = engine::execute(
        roots,
        retain_graph.unwrap_or(create_graph),
        create_graph,
        Some(&targets),
    )?;
    got.into_iter()
        .enumerate()
        .map(|(i, g)| match g {
            Some(g) => Ok(Some(g)),
            None if allow_unused => Ok(None),
            None => crate::bail!(
                Runtime,
                "One of the differentiated Tensors (input {i}) appears to not have been used in the graph. Set allow_unused=True if this is the desired behavior."
            ),
        })
        .collect()
}

fn roots(
    tensors: &[Tensor],
    grads: Option<&[Tensor]>,
    what: &str,
) -> Result<Vec<(node::Edge, Tensor)>> {
    if let Some(g) = grads {
        crate::ensure!(
            g.len() == tensors.len(),
            Runtime,
            "grad can be implicitly created only for scalar outputs: got {} {what} and {} gradients",
            tensors.len(),
            g.len()
        );
    }
    let edges = engine::edges_of(tensors, what)?;
    edges
        .into_iter()
        .zip(tensors)
        .enumerate()
        .map(|(i, (e, t))| {
            let g = match grads.map(|g| &g[i]) {
                Some(g) => {
                    crate::ensure!(
                        g.shape() == t.shape(),
                        Runtime,
                        "Mismatch in shape: grad_output[{i}] has a shape of {:?} and output[{i}] has a shape of {:?}.",
                        g.shape(),
                        t.shape()
                    );
                    g.clone()
                }
                None => {
                    crate::ensure!(
                        t.numel() == 1,
                        Runtime,
                        "grad can be implicitly created only for scalar outputs"
                    );
                    Tensor::ones(t.shape(), t.dtype())?
                }
            };
            Ok((e, g))
        })
        .collect()
}

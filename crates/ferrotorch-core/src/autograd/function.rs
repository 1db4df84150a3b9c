//! User-defined differentiable operations (`torch.autograd.Function`).
//!
//! Implement [`Function`] (a forward computed without recording and a
//! backward that maps output gradients to input gradients) and call
//! [`apply`]. The context offers PyTorch's `save_for_backward`,
//! `mark_dirty`, `mark_non_differentiable` and `needs_input_grad`, plus a
//! slot for any other value the backward needs.
//!
//! ```
//! use ferrotorch_core::autograd::function::{apply, Function, FunctionCtx};
//! use ferrotorch_core::{Result, Tensor};
//!
//! /// `exp`, saving its result (the derivative of exp is exp).
//! struct MyExp;
//! impl Function for MyExp {
//!     fn forward(&self, ctx: &mut FunctionCtx, x: &[Tensor]) -> Result<Vec<Tensor>> {
//!         let y = x[0].exp()?;
//!         ctx.save_for_backward(&[y.clone()]);
//!         Ok(vec![y])
//!     }
//!     fn backward(&self, ctx: &FunctionCtx, g: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
//!         Ok(vec![Some(g[0].mul(&ctx.saved_tensors()[0])?)])
//!     }
//! }
//!
//! let x = Tensor::from_slice(&[0.0f64, 1.0]).requires_grad_(true)?;
//! let y = apply(MyExp, &[x.clone()])?.remove(0);
//! assert_eq!(y.grad_fn().unwrap().name(), "MyExpBackward");
//! y.sum()?.backward()?;
//! assert_eq!(x.grad().unwrap().to_vec::<f64>()?, vec![1.0, std::f64::consts::E]);
//! # Ok::<(), ferrotorch_core::Error>(())
//! ```
//!
//! The backward runs with grad mode on under `create_graph`, so a backward
//! written with differentiable ops gives higher-order gradients.

use super::node::{Save, TensorMeta};
use super::{mode, needs_grad, record};
use crate::error::Result;
use crate::tensor::Tensor;
use std::any::Any;
use std::sync::Arc;

/// A differentiable operation defined by the user.
pub trait Function: Send + Sync + 'static {
    /// Compute the outputs. Runs without recording; save what the backward
    /// needs in `ctx`.
    fn forward(&self, ctx: &mut FunctionCtx, inputs: &[Tensor]) -> Result<Vec<Tensor>>;

    /// Gradients of the inputs (one entry each, `None` for no gradient)
    /// from the gradients of the outputs (zeros for unused outputs).
    fn backward(&self, ctx: &FunctionCtx, grad_outputs: &[Tensor]) -> Result<Vec<Option<Tensor>>>;

    /// The node name shown as `grad_fn` (PyTorch: the class name plus
    /// `Backward`).
    fn name(&self) -> String {
        let full = std::any::type_name::<Self>();
        let base = full.split('<').next().unwrap_or(full);
        format!("{}Backward", base.rsplit("::").next().unwrap_or(base))
    }
}

/// The `ctx` of a custom function: what the forward leaves for the
/// backward.
#[derive(Default)]
pub struct FunctionCtx {
    saved: Vec<Tensor>,
    dirty: Vec<Tensor>,
    non_differentiable: Vec<Tensor>,
    needs: Vec<bool>,
    data: Option<Arc<dyn Any + Send + Sync>>,
}

impl FunctionCtx {
    /// Keep tensors (inputs or outputs) for the backward
    /// (`ctx.save_for_backward`); an in-place change to them before the
    /// backward is an error, as in PyTorch.
    pub fn save_for_backward(&mut self, tensors: &[Tensor]) {
        self.saved = tensors.to_vec();
    }

    /// The tensors saved by the forward (`ctx.saved_tensors`), in order.
    pub fn saved_tensors(&self) -> &[Tensor] {
        &self.saved
    }

    /// Declare inputs the forward modified in place; they must also be
    /// returned as outputs (`ctx.mark_dirty`).
    pub fn mark_dirty(&mut self, tensors: &[Tensor]) {
        self.dirty = tensors.to_vec();
    }

    /// Declare outputs that have no gradient (indices, masks):
    /// they do not require grad and their gradient is zero in the
    /// backward (`ctx.mark_non_differentiable`).
    pub fn mark_non_differentiable(&mut self, tensors: &[Tensor]) {
        self.non_differentiable = tensors.to_vec();
    }

    /// Whether input `i` needs a gradient (`ctx.needs_input_grad[i]`).
    pub fn needs_input_grad(&self, i: usize) -> bool {
        self.needs.get(i).copied().unwrap_or(false)
    }

    /// Keep any other value for the backward (PyTorch's `ctx.attr = v`).
    pub fn save_data<T: Any + Send + Sync>(&mut self, value: T) {
        self.data = Some(Arc::new(value));
    }

    /// The value kept with [`FunctionCtx::save_data`], if it has type `T`.
    pub fn data<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.data.as_ref()?.downcast_ref()
    }
}

/// Run `f` on `inputs` and record it (`MyFunction.apply(*inputs)`).
pub fn apply<F: Function>(f: F, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
    let ins: Vec<&Tensor> = inputs.iter().collect();
    let recording = needs_grad(&ins);
    let mut ctx = FunctionCtx {
        needs: inputs
            .iter()
            .map(|t| recording && t.requires_grad())
            .collect(),
        ..FunctionCtx::default()
    };
    let outputs = {
        let _g = mode::no_grad();
        f.forward(&mut ctx, inputs)?
    };
    if !recording {
        return Ok(outputs);
    }
    // a user type's name, stored once (node names are &'static)
    let name = super::node::intern(&f.name());
    for d in &ctx.dirty {
        crate::ensure!(
            inputs.iter().any(|t| t.is_same(d)),
            Runtime,
            "{name}: mark_dirty was given a tensor that is not an input"
        );
        crate::ensure!(
            outputs.iter().any(|t| t.is_same(d)),
            Runtime,
            "{name}: some elements marked as dirty during the forward method were not returned as output."
        );
        crate::ensure!(
            !(d.requires_grad() && d.is_leaf()),
            Runtime,
            "a leaf Variable that requires grad is being used in an in-place operation."
        );
        crate::ensure!(
            d.view_base().is_none_or(|b| !b.requires_grad()),
            NotImplemented,
            "{name}: mark_dirty on a view of a tensor that requires grad is not supported"
        );
    }
    // An input returned unchanged becomes a new alias with its own history;
    // a dirty input keeps its identity and takes the new history.
    let outputs: Vec<Tensor> = outputs
        .into_iter()
        .map(|o| {
            let is_input = inputs.iter().any(|t| t.is_same(&o));
            if is_input && !ctx.dirty.iter().any(|d| d.is_same(&o)) {
                o.detach()
            } else {
                o
            }
        })
        .collect();
    let differentiable: Vec<usize> = (0..outputs.len())
        .filter(|&i| {
            !ctx.non_differentiable
                .iter()
                .any(|t| t.is_same(&outputs[i]))
        })
        .collect();
    let diff_outs: Vec<&Tensor> = differentiable.iter().map(|&i| &outputs[i]).collect();
    let all_meta: Vec<TensorMeta> = outputs.iter().map(TensorMeta::of).collect();
    let saves: smallvec::SmallVec<[Save<'_>; 2]> = ctx
        .saved
        .iter()
        .map(|t| match diff_outs.iter().position(|o| o.is_same(t)) {
            Some(i) => Save::Output(i),
            None => Save::Tensor(t),
        })
        .collect();
    let (f, data, n_in) = (Arc::new(f), ctx.data.take(), inputs.len());
    record(name, &ins, &diff_outs, saves, move |c| {
        // Gradients for every output, zeros for the non-differentiable ones.
        let mut grads = Vec::with_capacity(all_meta.len());
        let mut next = c.grads.iter();
        for (i, m) in all_meta.iter().enumerate() {
            if differentiable.contains(&i) {
                grads.push(next.next().expect("one gradient per output").clone());
            } else {
                grads.push(Tensor::zeros(&m.shape, m.dtype)?);
            }
        }
        let bctx = FunctionCtx {
            saved: c.saved.to_vec(),
            needs: c.needs.to_vec(),
            data: data.clone(),
            ..FunctionCtx::default()
        };
        let got = f.backward(&bctx, &grads)?;
        crate::ensure!(
            got.len() == n_in,
            Runtime,
            "function {name} returned an incorrect number of gradients (expected {n_in}, got {})",
            got.len()
        );
        Ok(got.into())
    })?;
    Ok(outputs)
}

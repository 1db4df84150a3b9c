//! The Autograd kernel of a custom op (Note [Custom op autograd]).
//!
//! # Note [Custom op autograd]
//! Every op a [`super::Library`] defines has this kernel under the
//! Autograd key. When no input needs a gradient (or grad mode is off), it
//! passes the call to the backend below. Otherwise it runs the backend
//! below without recording — the kernel is opaque, as PyTorch's custom
//! ops are, whatever ops it uses inside — and records one node whose
//! backward is the op's registered formula, given the call's inputs and
//! outputs (saved, so an in-place change to them before backward is the
//! usual error) and the outputs' gradients. With no formula registered
//! the node's backward fails naming the op, so a user learns the op is
//! not differentiable instead of getting a zero gradient. An op that
//! writes an input in place (`Tensor(a!)`) is not recorded: writing a
//! tensor that requires grad through it is an error.

use super::formula;
use crate::autograd::function::{apply, Function, FunctionCtx};
use crate::dispatch::{self, keys, Args, DispatchKey, IValue, OpEntry};
use crate::error::Result;
use crate::tensor::Tensor;
use std::sync::Arc;

/// What a custom op's autograd formula sees: the call's bound arguments
/// and its tensor outputs.
pub struct AutogradCtx {
    args: Args,
    outputs: Vec<Tensor>,
}

impl AutogradCtx {
    /// The call's arguments, bound to the schema (typed accessors:
    /// `ctx.args().float(1)`).
    pub fn args(&self) -> &Args {
        &self.args
    }

    /// The call's tensor outputs, in order.
    pub fn outputs(&self) -> &[Tensor] {
        &self.outputs
    }
}

/// The tensors among bound values, in schema order (`Tensor` and
/// `Tensor?` arguments).
fn tensor_inputs(vals: &[IValue]) -> Vec<Tensor> {
    vals.iter()
        .filter_map(|v| match v {
            IValue::Tensor(t) => Some(t.clone()),
            _ => None,
        })
        .collect()
}

fn tensor_outputs(op: &str, v: IValue) -> Result<Vec<Tensor>> {
    match v {
        IValue::Tensor(t) => Ok(vec![t]),
        IValue::TensorList(l) => Ok(l),
        IValue::Tuple(vs) => vs
            .into_iter()
            .map(|v| v.into_tensor())
            .collect::<Result<_>>(),
        IValue::None => Ok(vec![]),
        other => crate::bail!(
            NotImplemented,
            "{op}: autograd of a custom op returning {} is not supported",
            other.type_name()
        ),
    }
}

fn below_autograd(entry: &Arc<OpEntry>, a: &Args) -> Result<IValue> {
    dispatch::redispatch(entry, a, keys::call_keys().below(DispatchKey::Autograd))
}

struct CustomOp {
    entry: Arc<OpEntry>,
    args: Args,
}

impl Function for CustomOp {
    fn forward(&self, ctx: &mut FunctionCtx, _inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        let op = self.entry.schema.full_name();
        let out = below_autograd(&self.entry, &self.args)?;
        let outs = tensor_outputs(&op, out)?;
        let mut keep = tensor_inputs(self.args.values());
        keep.extend(outs.iter().cloned());
        ctx.save_for_backward(&keep);
        ctx.save_data(outs.len());
        Ok(outs)
    }

    fn backward(&self, ctx: &FunctionCtx, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        let op = self.entry.schema.full_name();
        let Some(f) = formula(&op) else {
            crate::bail!(
                Runtime,
                "Trying to backward through {op} but no autograd formula was registered. Please use register_autograd (Rust: Library::impl_autograd) to add one."
            );
        };
        let saved = ctx.saved_tensors();
        let n_out = ctx.data::<usize>().copied().unwrap_or(0);
        let c = AutogradCtx {
            args: self.args.clone(),
            outputs: saved[saved.len() - n_out..].to_vec(),
        };
        let n_in = saved.len() - n_out;
        let got = f(&c, grads)?;
        crate::ensure!(
            got.len() == n_in,
            Runtime,
            "the autograd formula of {op} returned {} gradients, but the op has {n_in} tensor inputs",
            got.len()
        );
        Ok(got)
    }

    fn name(&self) -> String {
        // torch names a custom op's node after the op
        format!("{}Backward", self.entry.schema.name.replace("::", "_"))
    }
}

/// The Autograd-key kernel of a custom op.
pub(super) fn kernel(entry: Arc<OpEntry>) -> impl Fn(&Args) -> Result<IValue> + Send + Sync {
    move |a: &Args| {
        // the common case first, without collecting the inputs
        let recording = crate::autograd::mode::is_grad_enabled()
            && a.values()
                .iter()
                .any(|v| matches!(v, IValue::Tensor(t) if t.requires_grad()));
        if !recording {
            return below_autograd(&entry, a);
        }
        let ins = tensor_inputs(a.values());
        let op = entry.schema.full_name();
        for (arg, v) in entry.schema.args.iter().zip(a.values()) {
            if let (true, IValue::Tensor(t)) = (arg.mutable, v) {
                crate::ensure!(
                    !t.requires_grad(),
                    Runtime,
                    "{op}: argument '{}' requires grad and is written in place by a custom op, which autograd cannot differentiate",
                    arg.name
                );
            }
        }
        if entry.schema.args.iter().any(|arg| arg.mutable) {
            let _g = crate::autograd::mode::no_grad();
            return below_autograd(&entry, a);
        }
        let f = CustomOp {
            entry: entry.clone(),
            args: a.clone(),
        };
        let outs = apply(f, &ins)?;
        let tuple = entry.schema.returns.len() != 1;
        Ok(if tuple {
            IValue::Tuple(outs.into_iter().map(IValue::Tensor).collect())
        } else {
            match entry.schema.returns.first() {
                Some(dispatch::Type::List(..)) => IValue::TensorList(outs),
                _ => outs.into_iter().next().map_or(IValue::None, IValue::Tensor),
            }
        })
    }
}

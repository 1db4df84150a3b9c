//! Grad mode and `autograd.grad` for JavaScript.

use crate::convert::to_ivalue;
use crate::errors::{guarded, type_error};
use crate::js::{Js, Raw};
use crate::tensor::wrap;
use ferrotorch_core::autograd::{self, mode::GradModeGuard};
use ferrotorch_core::dispatch::IValue;
use ferrotorch_core::Tensor as Core;
use napi::{sys, Env};
use napi_derive::napi;
use std::cell::RefCell;

thread_local! {
    /// The grad modes `noGrad`/`enableGrad` entered and not yet left,
    /// innermost last (their guards restore the outer mode when popped).
    static MODES: RefCell<Vec<GradModeGuard>> = const { RefCell::new(Vec::new()) };
}

/// Enter a grad mode (`lib/autograd.js` pairs it with `_popGradMode` in a
/// `finally`).
#[napi(js_name = "_pushGradMode")]
pub fn push_grad_mode(enabled: bool) {
    MODES.with(|m| {
        m.borrow_mut()
            .push(autograd::mode::set_grad_enabled(enabled))
    });
}

/// Leave the innermost grad mode.
#[napi(js_name = "_popGradMode")]
pub fn pop_grad_mode() {
    MODES.with(|m| drop(m.borrow_mut().pop()));
}

/// Whether autograd records ops now (`torch.is_grad_enabled()`).
#[napi]
pub fn is_grad_enabled() -> bool {
    autograd::mode::is_grad_enabled()
}

fn tensors(js: Js, v: sys::napi_value, what: &str) -> napi::Result<Vec<Core>> {
    match to_ivalue(js, v)? {
        IValue::Tensor(t) => Ok(vec![t]),
        IValue::TensorList(l) => Ok(l),
        IValue::None => Ok(vec![]),
        other => Err(type_error(
            js.0,
            format!(
                "grad(): argument '{what}' must be a Tensor or an array of Tensors, not {}",
                other.type_name()
            ),
        )),
    }
}

/// Options of `autograd.grad`.
#[napi(object)]
#[derive(Default)]
pub struct GradOptions {
    /// Keep the graph for another backward (default: `createGraph`).
    pub retain_graph: Option<bool>,
    /// Record the backward pass, for higher derivatives.
    pub create_graph: Option<bool>,
    /// Give `null` for inputs the outputs do not depend on.
    pub allow_unused: Option<bool>,
}

/// `autograd.grad(outputs, inputs, gradOutputs?, options?)`: the gradients
/// of `outputs` with respect to `inputs`, returned (not accumulated).
#[napi(
    js_name = "_grad",
    ts_args_type = "outputs: Tensor | Tensor[], inputs: Tensor | Tensor[], gradOutputs?: Tensor | Tensor[] | null, options?: { retainGraph?: boolean, createGraph?: boolean, allowUnused?: boolean }",
    ts_return_type = "(Tensor | null)[]"
)]
pub fn grad(
    env: Env,
    outputs: Raw,
    inputs: Raw,
    grad_outputs: Option<Raw>,
    options: Option<GradOptions>,
) -> napi::Result<Raw> {
    let e = env.raw();
    let js = Js(e);
    let outs = tensors(js, outputs.0, "outputs")?;
    let ins = tensors(js, inputs.0, "inputs")?;
    let gos = match grad_outputs {
        Some(g) => Some(tensors(js, g.0, "gradOutputs")?).filter(|v| !v.is_empty()),
        None => None,
    };
    let o = options.unwrap_or_default();
    let got = guarded(e, "grad", || {
        autograd::grad(
            &outs,
            &ins,
            gos.as_deref(),
            o.retain_graph,
            o.create_graph.unwrap_or(false),
            o.allow_unused.unwrap_or(false),
        )
    })?;
    let vals = got
        .into_iter()
        .map(|g| match g {
            Some(t) => wrap(e, t),
            None => js.null(),
        })
        .collect::<napi::Result<Vec<_>>>()?;
    js.array_of(&vals).map(Raw)
}

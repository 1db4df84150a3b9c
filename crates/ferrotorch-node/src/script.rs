//! `ScriptModule`: a saved program (a traced graph and its weights) loaded
//! from a file and run from JavaScript, synchronously or on libuv's thread
//! pool.
//!
//! # Note [Async forward]
//! `forwardAsync` runs the interpreter on a libuv worker thread, so the
//! event loop keeps turning while a model runs. The call captures the
//! caller's grad mode (`noGrad(() => m.forwardAsync(x))` records nothing)
//! and the input tensors (shared, not copied). Worker errors cannot carry a
//! JavaScript class across threads, so the rejection's message starts with
//! the error's code in brackets; `lib/script.js` turns it back into the
//! `TypeError`/`RangeError`/`Error` a synchronous call throws.

use crate::convert::to_ivalue;
use crate::errors::{guarded, type_error};
use crate::js::{Js, Raw};
use crate::tensor::wrap;
use ferrotorch_core::dispatch::binding;
use ferrotorch_core::dispatch::IValue;
use ferrotorch_core::{ErrorKind, Tensor as Core};
use ferrotorch_jit::ScriptModule as Program;
use napi::bindgen_prelude::AsyncTask;
use napi::{sys, Env, Status, Task};
use napi_derive::napi;
use std::sync::Arc;

/// A loaded program (`torch.jit.ScriptModule`).
#[napi]
pub struct ScriptModule {
    m: Arc<Program>,
    training: bool,
}

fn inputs(js: Js, args: sys::napi_value) -> napi::Result<Vec<Core>> {
    match to_ivalue(js, args)? {
        IValue::TensorList(l) => Ok(l),
        IValue::IntList(l) if l.is_empty() => Ok(vec![]),
        IValue::Tensor(t) => Ok(vec![t]),
        other => Err(type_error(
            js.0,
            format!(
                "forward(): every input must be a Tensor, got {}",
                other.type_name()
            ),
        )),
    }
}

/// One output as a Tensor, several as an array.
fn outputs(e: sys::napi_env, outs: Vec<Core>) -> napi::Result<sys::napi_value> {
    let js = Js(e);
    if outs.len() == 1 {
        return wrap(e, outs.into_iter().next().expect("one"));
    }
    let vals = outs
        .into_iter()
        .map(|t| wrap(e, t))
        .collect::<napi::Result<Vec<_>>>()?;
    js.array_of(&vals)
}

fn kind_code(k: ErrorKind) -> &'static str {
    match k {
        ErrorKind::Type => "FERROTORCH_TYPE",
        ErrorKind::Index => "FERROTORCH_INDEX",
        _ => "FERROTORCH_RUNTIME",
    }
}

/// The work of one `forwardAsync` call (Note [Async forward]).
pub struct Forward {
    m: Arc<Program>,
    inputs: Vec<Core>,
    grad: bool,
}

impl Task for Forward {
    type Output = Vec<Core>;
    type JsValue = Raw;

    fn compute(&mut self) -> napi::Result<Vec<Core>> {
        let _mode = ferrotorch_core::autograd::set_grad_enabled(self.grad);
        binding::guarded("forward", || self.m.forward(&self.inputs)).map_err(|e| {
            napi::Error::new(
                Status::GenericFailure,
                format!("[{}] {}", kind_code(e.kind()), e.message()),
            )
        })
    }

    fn resolve(&mut self, env: Env, output: Vec<Core>) -> napi::Result<Raw> {
        outputs(env.raw(), output).map(Raw)
    }
}

#[napi]
impl ScriptModule {
    /// Load a saved program (`torch.jit.load(path)`). The file is checked
    /// before anything in it is used; a file format never runs code.
    #[napi(constructor)]
    pub fn new(env: Env, path: String) -> napi::Result<Self> {
        let m = guarded(env.raw(), "ScriptModule", || ferrotorch_jit::load(&path))?;
        Ok(ScriptModule {
            m: Arc::new(m),
            training: false,
        })
    }

    /// Run the program on an array of tensors (`forward(...tensors)` in
    /// `lib/script.js`): one output as a Tensor, several as an array.
    #[napi(
        js_name = "_forward",
        ts_args_type = "inputs: Tensor[]",
        ts_return_type = "Tensor | Tensor[]"
    )]
    pub fn forward(&self, env: Env, args: Raw) -> napi::Result<Raw> {
        let e = env.raw();
        crate::create::drain_pending();
        let xs = inputs(Js(e), args.0)?;
        let outs = guarded(e, "forward", || self.m.forward(&xs))?;
        outputs(e, outs).map(Raw)
    }

    /// `forward` on libuv's thread pool (Note [Async forward]).
    #[napi(
        js_name = "_forwardAsync",
        ts_args_type = "inputs: Tensor[]",
        ts_return_type = "Promise<Tensor | Tensor[]>"
    )]
    pub fn forward_async(&self, env: Env, args: Raw) -> napi::Result<AsyncTask<Forward>> {
        crate::create::drain_pending();
        let xs = inputs(Js(env.raw()), args.0)?;
        Ok(AsyncTask::new(Forward {
            m: self.m.clone(),
            inputs: xs,
            grad: ferrotorch_core::autograd::is_grad_enabled(),
        }))
    }

    /// `[name, Tensor]` for every parameter and buffer of the program, by
    /// qualified name (`layer1.0.conv1.weight`).
    #[napi(ts_return_type = "[string, Tensor][]")]
    pub fn named_parameters(&self, env: Env) -> napi::Result<Raw> {
        let e = env.raw();
        let js = Js(e);
        let pairs = self
            .m
            .attributes()
            .iter()
            .map(|(name, a)| {
                let n = js.string(name)?;
                let t = wrap(e, a.tensor())?;
                js.array_of(&[n, t])
            })
            .collect::<napi::Result<Vec<_>>>()?;
        js.array_of(&pairs).map(Raw)
    }

    /// The graph as TorchScript-style source (`module.code`).
    #[napi(getter)]
    pub fn code(&self) -> String {
        self.m.code()
    }

    /// The graph's IR, printed as torch prints `module.graph`.
    #[napi(getter)]
    pub fn graph(&self) -> String {
        self.m.graph().to_string()
    }

    /// Whether `train()` was called last (a traced graph keeps the mode it
    /// was traced in, as in torch; the flag is what `training` reads).
    #[napi(getter)]
    pub fn training(&self) -> bool {
        self.training
    }

    /// `torch.jit.optimize_for_inference`: puts this module in eval mode
    /// (as torch does), then returns a frozen copy whose parameters are
    /// constants, with eval-mode convolution blocks fused and, where a
    /// 3×3 filter takes the Winograd path, its transform kept from call to
    /// call (Note [Prepacked convolution filters] in ferrotorch-core).
    #[napi(js_name = "_optimizeForInference")]
    pub fn optimize_for_inference(&mut self, env: Env) -> napi::Result<ScriptModule> {
        self.training = false;
        let m = guarded(env.raw(), "optimize_for_inference", || {
            ferrotorch_jit::passes::optimize_for_inference(&self.m)
        })?;
        Ok(ScriptModule {
            m: Arc::new(m),
            training: false,
        })
    }

    #[napi(js_name = "_setTraining")]
    pub fn set_training(&mut self, mode: bool) {
        self.training = mode;
    }
}

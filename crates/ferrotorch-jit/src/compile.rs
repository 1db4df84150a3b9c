//! `jit::compile`: `torch.compile` for Rust closures and modules.
//!
//! # Note [Compiled functions]
//! The first call with a new input signature traces the function on its
//! inputs, runs the passes (`passes::optimize`) and groups elementwise
//! chains ([`passes::fuse_elementwise`]), whose groups then run as native
//! kernels (Note [Fusion runtime]). Later calls whose guards hold run
//! that graph. The guards are those `torch.compile` installs for
//! tensors: each input's shape, dtype, device and requires_grad, and
//! whether grad mode is on. A function whose trace is unsound (the
//! tracer warned: a tensor made outside the dispatcher became a
//! constant) or fails runs eagerly for that signature. After
//! [`CACHE_LIMIT`] signatures new ones run eagerly too, with a warning,
//! as torch's `cache_size_limit`. Gradients flow as in eager mode: the
//! interpreter records autograd for every op, and a fusion group whose
//! inputs require grad runs op by op.

use crate::{passes, ScriptModule};
use ferrotorch_core::{DType, Device, Result, Tensor};
use ferrotorch_nn::Module;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// How many input signatures one compiled function keeps graphs for
/// (`torch._dynamo.config.cache_size_limit`).
pub const CACHE_LIMIT: usize = 8;

/// What a compiled function guards on.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Guard {
    inputs: Vec<(Vec<usize>, DType, Device, bool)>,
    grad_mode: bool,
    training: bool,
}

/// What runs for one signature.
enum Plan {
    Graph(ScriptModule),
    Eager(String),
}

type Run<'m> = Box<dyn Fn(&[Tensor]) -> Result<Vec<Tensor>> + 'm>;
/// Traces on inputs: the graph and the traced run's own outputs.
type Trace<'m> = Box<dyn Fn(&[Tensor]) -> Result<(ScriptModule, Vec<Tensor>)> + 'm>;

/// [`crate::trace`]-like `trace` of `run`, keeping the outputs of the
/// run it makes.
fn traced_with_outputs(
    trace: impl FnOnce(&mut dyn FnMut(&[Tensor]) -> Result<Vec<Tensor>>) -> Result<ScriptModule>,
    run: impl Fn(&[Tensor]) -> Result<Vec<Tensor>>,
) -> Result<(ScriptModule, Vec<Tensor>)> {
    let mut outs = Vec::new();
    let m = trace(&mut |t: &[Tensor]| {
        let r = run(t)?;
        outs = r.clone();
        Ok(r)
    })?;
    Ok((m, outs))
}

/// A compiled function of tensors ([`compile`], [`compile_module`]).
pub struct Compiled<'m> {
    run: Run<'m>,
    trace: Trace<'m>,
    training: Box<dyn Fn() -> bool + 'm>,
    fullgraph: bool,
    cache: Mutex<Vec<(Guard, Arc<Plan>)>>,
    warned: AtomicBool,
}

/// Compile `f` (`torch.compile(fn)`): it is traced and compiled on its
/// first call with each new input signature (Note [Compiled functions]).
///
/// ```
/// use ferrotorch_core::Tensor;
/// let f = ferrotorch_jit::compile(|x: &[Tensor]| {
///     Ok(vec![x[0].mul(&x[0].sigmoid()?)?.add(&x[0].tanh()?)?])
/// });
/// let x = Tensor::from_vec(vec![0.5f32, -1.0, 2.0], &[3]).unwrap();
/// let y = f.call(&[x.clone()]).unwrap();
/// let want = x.mul(&x.sigmoid().unwrap()).unwrap().add(&x.tanh().unwrap()).unwrap();
/// assert!(y[0].allclose(&want, 1e-6, 1e-6, false).unwrap());
/// ```
pub fn compile<'m>(f: impl Fn(&[Tensor]) -> Result<Vec<Tensor>> + 'm) -> Compiled<'m> {
    let f = Arc::new(f);
    let g = f.clone();
    Compiled {
        run: Box::new(move |x| f(x)),
        trace: Box::new(move |x| traced_with_outputs(|r| crate::trace(r, x), |t| g(t))),
        training: Box::new(|| false),
        fullgraph: false,
        cache: Mutex::new(Vec::new()),
        warned: AtomicBool::new(false),
    }
}

/// Compile `forward` of `module` (`torch.compile(module)`): the graph
/// reads the module's parameters and buffers as attributes, so training
/// through it trains the module; `module.train()`/`eval()` is guarded.
pub fn compile_module<'m, M: Module + ?Sized>(
    module: &'m M,
    forward: impl Fn(&M, &[Tensor]) -> Result<Vec<Tensor>> + 'm,
) -> Compiled<'m> {
    let f = Arc::new(forward);
    let g = f.clone();
    Compiled {
        run: Box::new(move |x| f(module, x)),
        trace: Box::new(move |x| {
            traced_with_outputs(
                |r| crate::trace_module(module, x, |_, t| r(t)),
                |t| g(module, t),
            )
        }),
        training: Box::new(move || module.is_training()),
        fullgraph: false,
        cache: Mutex::new(Vec::new()),
        warned: AtomicBool::new(false),
    }
}

impl Compiled<'_> {
    /// With `fullgraph`, a function that cannot be traced is an error
    /// naming the reason instead of running eagerly.
    pub fn fullgraph(mut self, on: bool) -> Self {
        self.fullgraph = on;
        self
    }

    /// How many signatures have a plan.
    pub fn cache_len(&self) -> usize {
        self.cache.lock().len()
    }

    fn guard(&self, inputs: &[Tensor]) -> Guard {
        Guard {
            inputs: inputs
                .iter()
                .map(|t| (t.shape().to_vec(), t.dtype(), t.device(), t.requires_grad()))
                .collect(),
            grad_mode: ferrotorch_core::autograd::is_grad_enabled(),
            training: (self.training)(),
        }
    }

    /// The graph run for `inputs`' signature, if one was compiled.
    pub fn graph_for(&self, inputs: &[Tensor]) -> Option<ScriptModule> {
        let g = self.guard(inputs);
        self.cache.lock().iter().find_map(|(k, p)| match &**p {
            Plan::Graph(m) if *k == g => Some(m.clone()),
            _ => None,
        })
    }

    /// Why `inputs`' signature runs eagerly, if it does.
    pub fn eager_reason(&self, inputs: &[Tensor]) -> Option<String> {
        let g = self.guard(inputs);
        self.cache.lock().iter().find_map(|(k, p)| match &**p {
            Plan::Eager(why) if *k == g => Some(why.clone()),
            _ => None,
        })
    }

    /// Run on `inputs`, compiling first for a new signature.
    pub fn call(&self, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        let guard = self.guard(inputs);
        let found = {
            let c = self.cache.lock();
            c.iter().find(|(k, _)| *k == guard).map(|(_, p)| p.clone())
        };
        let plan = match found {
            Some(p) => p,
            None => {
                if self.cache.lock().len() >= CACHE_LIMIT {
                    if !self.warned.swap(true, Ordering::Relaxed) {
                        eprintln!(
                            "[ferrotorch compile] warning: {CACHE_LIMIT} signatures compiled \
                             (cache_size_limit); new ones run eagerly"
                        );
                    }
                    return (self.run)(inputs);
                }
                let (plan, traced) = self.build(inputs)?;
                self.cache.lock().push((guard, Arc::new(plan)));
                if let Some(outs) = traced {
                    // the trace ran the function on these inputs: that
                    // run is this call (running the graph too would
                    // repeat its in-place writes)
                    return Ok(outs);
                }
                return (self.run)(inputs);
            }
        };
        match &*plan {
            Plan::Graph(m) => m.forward(inputs),
            Plan::Eager(_) => (self.run)(inputs),
        }
    }

    /// The plan for `inputs`' signature, and the outputs of the traced
    /// run when the trace finished.
    fn build(&self, inputs: &[Tensor]) -> Result<(Plan, Option<Vec<Tensor>>)> {
        let (why, outs) = match (self.trace)(inputs) {
            Ok((mut m, outs)) if m.trace_warnings().is_empty() => {
                passes::optimize(m.graph_mut())?;
                let groups = passes::fuse_elementwise(m.graph_mut());
                if crate::fuser::logging() {
                    eprintln!(
                        "[ferrotorch compile] graph with {groups} fusion groups:\n{}",
                        m.graph()
                    );
                }
                return Ok((Plan::Graph(m), Some(outs)));
            }
            Ok((m, outs)) => (
                format!("the trace is unsound: {}", m.trace_warnings().join("; ")),
                Some(outs),
            ),
            Err(e) => (format!("tracing failed: {e}"), None),
        };
        ferrotorch_core::ensure!(!self.fullgraph, Runtime, "compile(fullgraph=True): {why}");
        if crate::fuser::logging() {
            eprintln!("[ferrotorch compile] running eagerly: {why}");
        }
        Ok((Plan::Eager(why), outs))
    }
}

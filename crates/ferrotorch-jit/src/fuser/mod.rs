//! The fuser: `prim::FusionGroup`s run as native kernels.
//!
//! # Note [Fusion runtime]
//! The interpreter hands each fusion group to `try_run` first. A group
//! is lowered once (`lower`) to a pointwise expression, possibly ending
//! in a reduction over the last dimension (`rows`); a kernel is compiled
//! per way of reading the inputs (contiguous, broadcast or strided rows;
//! f32 or f64) and cached with the group. These are the guards, checked
//! on every call: every input a CPU tensor of the body's dtype, shapes
//! that broadcast, each output of the full broadcast shape, and for a
//! reduction the traced rank (and layer norm's size). Shapes themselves
//! are not guarded: a kernel works on rows of any length, so a new batch
//! size reuses it. Inputs that require grad (grad mode on) run the same
//! kernel inside an autograd function whose backward is the group's
//! derivative compiled as one more kernel (`autodiff`; eager ops under
//! `create_graph`, so double backward works); a reduction's own
//! gradient is taken by eager autograd inside that backward. When a guard fails, or the body has an op
//! the code generator does not cover, the group runs op by op in the
//! interpreter. Kernels are never saved: a saved program holds IR only,
//! is fused again after loading and compiles on first call, so a file
//! cannot carry machine code.

mod autodiff;
mod eager;
mod lower;
pub(crate) mod rows;
mod run;

use crate::ir::Graph;
use ferrotorch_codegen::{Access, Elem, Kernel, RowKernel, RowOp};
use ferrotorch_core::dispatch::IValue;
use ferrotorch_core::{Device, Result, Tensor};
use lower::Lowered;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};

static ENABLED: AtomicBool = AtomicBool::new(true);
static LOG: OnceLock<AtomicBool> = OnceLock::new();
static RUNS: AtomicU64 = AtomicU64::new(0);
static COMPILES: AtomicU64 = AtomicU64::new(0);
static FALLBACKS: AtomicU64 = AtomicU64::new(0);

/// Turn native fusion kernels on or off (on by default; off, groups run
/// in the interpreter). `torch._C._jit_set_texpr_fuser_enabled`.
pub fn set_enabled(on: bool) {
    ENABLED.store(on, Ordering::Relaxed);
}

/// Whether native fusion kernels are on and this CPU has a code generator.
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed) && ferrotorch_codegen::available()
}

fn log_flag() -> &'static AtomicBool {
    LOG.get_or_init(|| {
        let env = std::env::var("FERROTORCH_LOGS").unwrap_or_default();
        AtomicBool::new(env.split(',').any(|s| {
            let s = s.trim().trim_start_matches('+');
            s == "fusion" || s == "all"
        }))
    })
}

/// Print each group's lowering and each kernel's compile time to stderr
/// (also on with `FERROTORCH_LOGS=fusion`).
pub fn set_logging(on: bool) {
    log_flag().store(on, Ordering::Relaxed);
}

/// Whether fusion logging is on.
pub fn logging() -> bool {
    log_flag().load(Ordering::Relaxed)
}

/// Counters since the process started: groups run as native kernels,
/// kernels compiled, groups that ran in the interpreter instead.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Group calls run by a compiled kernel.
    pub kernel_runs: u64,
    /// Kernels compiled.
    pub compiles: u64,
    /// Group calls that fell back to the interpreter.
    pub fallbacks: u64,
}

/// The counters.
pub fn stats() -> Stats {
    Stats {
        kernel_runs: RUNS.load(Ordering::Relaxed),
        compiles: COMPILES.load(Ordering::Relaxed),
        fallbacks: FALLBACKS.load(Ordering::Relaxed),
    }
}

/// A compiled group: a pointwise or a row kernel.
enum Compiled {
    Pointwise(Kernel),
    Row(RowKernel),
}

impl Compiled {
    fn compile_time(&self) -> std::time::Duration {
        match self {
            Compiled::Pointwise(k) => k.compile_time(),
            Compiled::Row(k) => k.compile_time(),
        }
    }
}

/// A group's kernels, by how inputs are read and the float type.
type Kernels = Mutex<HashMap<(Vec<Access>, Elem), Arc<Compiled>>>;

/// A group's lowering and its kernels, forward and backward.
struct Entry {
    graph: Weak<Graph>,
    lowered: std::result::Result<Lowered, String>,
    kernels: Kernels,
    /// The backward expression, derived on first use.
    backward: OnceLock<ferrotorch_codegen::Expr>,
    backward_kernels: Kernels,
    /// A row group's prologue alone (its backward recomputes it).
    prologue_kernels: Kernels,
}

type Cache = Mutex<HashMap<usize, Arc<Entry>>>;

fn cache() -> &'static Cache {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// The entry for `body`, lowering it on first sight.
fn entry(body: &Arc<Graph>) -> Arc<Entry> {
    let key = Arc::as_ptr(body) as usize;
    let mut c = cache().lock();
    if let Some(e) = c.get(&key) {
        if e.graph.upgrade().is_some_and(|g| Arc::ptr_eq(&g, body)) {
            return e.clone();
        }
    }
    // groups of dropped graphs go when a new one comes
    c.retain(|_, e| e.graph.strong_count() > 0);
    let lowered = lower::lower(body);
    if logging() {
        match &lowered {
            Ok(l) => eprintln!(
                "[ferrotorch fusion] group of {} ops lowered ({}):\n{}",
                body.nodes.len(),
                l.dtype,
                l.expr
            ),
            Err(why) => eprintln!("[ferrotorch fusion] group runs in the interpreter: it {why}"),
        }
    }
    let e = Arc::new(Entry {
        graph: Arc::downgrade(body),
        lowered,
        kernels: Default::default(),
        backward: OnceLock::new(),
        backward_kernels: Default::default(),
        prologue_kernels: Default::default(),
    });
    c.insert(key, e.clone());
    e
}

/// Whether `body` lowers to native code (or why not).
pub fn lowers(body: &Arc<Graph>) -> std::result::Result<(), String> {
    entry(body)
        .lowered
        .as_ref()
        .map(|_| ())
        .map_err(Clone::clone)
}

/// A group ready to run on particular inputs: guards checked, kernel
/// compiled.
pub(crate) struct Prepared {
    entry: Arc<Entry>,
    kernel: Arc<Compiled>,
    plan: run::Plan,
    row: Option<(lower::Row, RowOp)>,
}

impl Prepared {
    fn lowered(&self) -> &Lowered {
        self.entry
            .lowered
            .as_ref()
            .expect("prepared groups are lowered")
    }

    /// Run on `inputs` (those the guards were checked on).
    pub(crate) fn execute(&self, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        RUNS.fetch_add(1, Ordering::Relaxed);
        let lowered = self.lowered();
        match (&*self.kernel, self.row) {
            (Compiled::Pointwise(k), None) => run::execute(lowered.dtype, k, &self.plan, inputs),
            (Compiled::Row(k), Some((row, _))) => {
                let mut shape = self.plan.shape.clone();
                if k.op().reduces() {
                    shape.pop();
                    if row.desc.keepdim {
                        shape.push(1);
                    }
                }
                run::execute_rows(lowered.dtype, k, &self.plan, inputs, &shape)
            }
            _ => unreachable!("a group is either pointwise or a row group"),
        }
    }
}

fn fallback<T>() -> Option<T> {
    FALLBACKS.fetch_add(1, Ordering::Relaxed);
    None
}

/// The kernel of `entry` for `key`, compiled on first use.
fn kernel_for(
    kernels: &Kernels,
    key: (Vec<Access>, Elem),
    compile: impl FnOnce(&[Access], Elem) -> std::result::Result<Compiled, String>,
) -> Option<Arc<Compiled>> {
    let mut ks = kernels.lock();
    if let Some(k) = ks.get(&key) {
        return Some(k.clone());
    }
    match compile(&key.0, key.1) {
        Ok(k) => {
            COMPILES.fetch_add(1, Ordering::Relaxed);
            if logging() {
                eprintln!(
                    "[ferrotorch fusion] compiled a kernel for {:?} ({:?}) in {:.2} ms",
                    key.0,
                    key.1,
                    k.compile_time().as_secs_f64() * 1e3
                );
            }
            let k = Arc::new(k);
            ks.insert(key, k.clone());
            Some(k)
        }
        Err(why) => {
            if logging() {
                eprintln!("[ferrotorch fusion] compile failed: {why}");
            }
            None
        }
    }
}

/// Check the guards for `inputs` and compile: `None` when a guard fails.
fn prepare(e: &Arc<Entry>, inputs: &[Tensor]) -> Option<Prepared> {
    let lowered = e.lowered.as_ref().ok()?;
    let float = run::float_of(lowered.dtype)?;
    let plan = run::Plan::new(inputs, lowered.row.is_some())?;
    // an output reading only some inputs must still have the full shape
    // (nothing to check when every input has it already)
    let same = inputs.iter().all(|t| t.shape() == plan.shape.as_slice());
    for r in lowered.reads.iter().filter(|_| !same) {
        let some: Vec<Tensor> = inputs
            .iter()
            .zip(r)
            .filter(|(_, &read)| read)
            .map(|(t, _)| t.clone())
            .collect();
        if run::Plan::new(&some, false).map(|p| p.shape) != Some(plan.shape.clone()) {
            return None;
        }
    }
    let row = match lowered.row {
        None => None,
        Some(row) => Some((row, row_guard(&row, &plan, inputs)?)),
    };
    let kernel = kernel_for(
        &e.kernels,
        (plan.access(), float),
        |access, float| match row {
            None => Kernel::compile(&lowered.expr, float, access).map(Compiled::Pointwise),
            Some((_, op)) => RowKernel::compile(
                &lowered.expr,
                float,
                access,
                op,
                lowered.row.is_some_and(|r| r.keeps_input),
            )
            .map(Compiled::Row),
        },
    )?;
    Some(Prepared {
        entry: e.clone(),
        kernel,
        plan,
        row,
    })
}

/// Run a fusion group natively: `None` when a guard fails (Note [Fusion
/// runtime]); the caller then interprets the body. Inputs that require
/// grad run the kernel inside an autograd function whose backward is a
/// fused kernel too (Note [Fused backward] in ferrotorch-codegen).
pub(crate) fn try_run(body: &Arc<Graph>, args: &[IValue]) -> Option<Result<Vec<IValue>>> {
    if !enabled() {
        return None;
    }
    let e = entry(body);
    let Ok(lowered) = &e.lowered else {
        return fallback();
    };
    let mut inputs: Vec<Tensor> = Vec::with_capacity(args.len());
    for a in args {
        match a {
            IValue::Tensor(t) if t.dtype() == lowered.dtype && t.device() == Device::Cpu => {
                inputs.push(t.clone())
            }
            _ => return fallback(),
        }
    }
    let grad =
        ferrotorch_core::autograd::is_grad_enabled() && inputs.iter().any(|t| t.requires_grad());
    let Some(p) = prepare(&e, &inputs) else {
        return fallback();
    };
    let outs = if grad {
        autodiff::apply(p, &inputs)
    } else {
        p.execute(&inputs)
    };
    Some(outs.map(|outs| outs.into_iter().map(IValue::Tensor).collect()))
}

/// The row op for these inputs, if its guards hold: the traced rank, a
/// non-empty last dimension, layer norm's size and 1-D weight and bias.
fn row_guard(row: &lower::Row, plan: &run::Plan, inputs: &[Tensor]) -> Option<RowOp> {
    use rows::RowKind;
    let d = *plan.shape.last()?;
    if plan.shape.len() != row.rank || d == 0 || plan.shape.contains(&0) {
        return None;
    }
    Some(match row.desc.kind {
        RowKind::Sum => RowOp::Sum,
        RowKind::Mean => RowOp::Mean,
        RowKind::Max => RowOp::Max,
        RowKind::Softmax => RowOp::Softmax,
        RowKind::LogSoftmax => RowOp::LogSoftmax,
        RowKind::LayerNorm { eps } => {
            let vec_ok = |k: Option<usize>| k.is_none_or(|k| inputs[k].shape() == [d]);
            if d != row.last || !vec_ok(row.weight) || !vec_ok(row.bias) {
                return None;
            }
            RowOp::LayerNorm {
                eps,
                weight: row.weight,
                bias: row.bias,
            }
        }
    })
}

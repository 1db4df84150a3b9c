//! The fuser: `prim::FusionGroup`s run as native kernels.
//!
//! # Note [Fusion runtime]
//! The interpreter hands each fusion group to [`try_run`] first. A group
//! is lowered once ([`lower`]) to a pointwise expression; a kernel is
//! compiled per way of reading the inputs (contiguous, broadcast or
//! strided rows; f32 or f64) and cached with the group. These are the
//! guards, checked on every call: every input a CPU tensor of the body's
//! dtype, shapes that broadcast, and, while grad mode is on, no input
//! that requires grad. Shapes themselves are not guarded: a kernel works
//! on rows of any length, so a new batch size reuses it. When a guard
//! fails, or the body has an op the code generator does not cover, the
//! group runs op by op in the interpreter, with autograd. Kernels are
//! never saved: a saved program holds IR only and compiles when loaded
//! and fused again, so a file cannot carry machine code.

mod lower;
pub(crate) mod rows;
mod run;

use crate::ir::Graph;
use ferrotorch_codegen::{Access, Float, Kernel, RowKernel, RowOp};
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
type Kernels = Mutex<HashMap<(Vec<Access>, Float), Arc<Compiled>>>;

/// A group's lowering and its kernels.
struct Entry {
    graph: Weak<Graph>,
    lowered: std::result::Result<Lowered, String>,
    kernels: Kernels,
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

/// Run a fusion group natively: `None` when a guard fails (Note [Fusion
/// runtime]); the caller then interprets the body.
pub(crate) fn try_run(body: &Arc<Graph>, args: &[IValue]) -> Option<Result<Vec<IValue>>> {
    if !enabled() {
        return None;
    }
    let e = entry(body);
    let Ok(lowered) = &e.lowered else {
        FALLBACKS.fetch_add(1, Ordering::Relaxed);
        return None;
    };
    let grad = ferrotorch_core::autograd::is_grad_enabled();
    let mut inputs: Vec<Tensor> = Vec::with_capacity(args.len());
    for a in args {
        match a {
            IValue::Tensor(t)
                if t.dtype() == lowered.dtype
                    && t.device() == Device::Cpu
                    && !(grad && t.requires_grad()) =>
            {
                inputs.push(t.clone())
            }
            _ => {
                FALLBACKS.fetch_add(1, Ordering::Relaxed);
                return None;
            }
        }
    }
    let float = run::float_of(lowered.dtype)?;
    let fallback = || {
        FALLBACKS.fetch_add(1, Ordering::Relaxed);
        None
    };
    let Some(plan) = run::Plan::new(&inputs, lowered.row.is_some()) else {
        return fallback();
    };
    // an output reading only some inputs must still have the full shape
    for r in &lowered.reads {
        let some: Vec<Tensor> = inputs
            .iter()
            .zip(r)
            .filter(|(_, &read)| read)
            .map(|(t, _)| t.clone())
            .collect();
        if run::Plan::new(&some, false).map(|p| p.shape) != Some(plan.shape.clone()) {
            return fallback();
        }
    }
    let row = match lowered.row {
        None => None,
        Some(row) => match row_guard(&row, &plan, &inputs) {
            Some(op) => Some((row, op)),
            None => return fallback(),
        },
    };
    let key = (plan.access(), float);
    let kernel = {
        let mut ks = e.kernels.lock();
        match ks.get(&key) {
            Some(k) => k.clone(),
            None => {
                let made = match row {
                    None => Kernel::compile(&lowered.expr, float, &key.0).map(Compiled::Pointwise),
                    Some((_, op)) => {
                        RowKernel::compile(&lowered.expr, float, &key.0, op).map(Compiled::Row)
                    }
                };
                match made {
                    Ok(k) => {
                        COMPILES.fetch_add(1, Ordering::Relaxed);
                        if logging() {
                            eprintln!(
                                "[ferrotorch fusion] compiled a kernel for {:?} ({:?}) in {:.2} ms",
                                key.0,
                                float,
                                k.compile_time().as_secs_f64() * 1e3
                            );
                        }
                        let k = Arc::new(k);
                        ks.insert(key, k.clone());
                        k
                    }
                    Err(why) => {
                        if logging() {
                            eprintln!("[ferrotorch fusion] compile failed: {why}");
                        }
                        return fallback();
                    }
                }
            }
        }
    };
    RUNS.fetch_add(1, Ordering::Relaxed);
    let outs = match (&*kernel, row) {
        (Compiled::Pointwise(k), None) => run::execute(lowered, k, &plan, &inputs),
        (Compiled::Row(k), Some((row, _))) => {
            let mut shape = plan.shape.clone();
            if k.op().reduces() {
                shape.pop();
                if row.desc.keepdim {
                    shape.push(1);
                }
            }
            run::execute_rows(lowered, k, &plan, &inputs, &shape).map(|t| vec![t])
        }
        _ => unreachable!("a group is either pointwise or a row group"),
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

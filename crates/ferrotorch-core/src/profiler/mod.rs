//! `torch.profiler`: time every op a program calls, with its input shapes,
//! and the ranges it names (`record_function`) and the backward nodes the
//! autograd engine runs.
//!
//! # Note [Profiling at the dispatcher]
//! The profiler is a mode key (`DispatchKey::Profiler`, above the tracer):
//! while a [`Profile`] lives, the thread that started it includes the key,
//! so every op it calls — typed Rust methods too, which box their
//! arguments only while a mode is on (Note [Dispatch keys]) — enters the
//! key's fallback, which times the call below it. A backend kernel runs
//! with the modes excluded, so an op's parts are not listed again: each
//! row is an op the program called (PyTorch also lists the ops inside a
//! composite; those rows are not here). When no profile is running,
//! nothing is added to a call: the same one thread-local read decides, as
//! for tracing. The autograd engine opens a range per backward node
//! (`autograd::engine::evaluate_function: MulBackward0`, PyTorch's name)
//! when a profile is on, so the ops a backward formula calls nest in it.
//!
//! ```
//! use ferrotorch_core::profiler::{self, ProfilerOptions};
//! use ferrotorch_core::Tensor;
//! # fn main() -> ferrotorch_core::Result<()> {
//! let prof = profiler::profile(ProfilerOptions { record_shapes: true })?;
//! {
//!     let _r = profiler::record_function("step");
//!     let x = Tensor::ones(&[4, 4], ())?;
//!     x.matmul(&x)?.relu()?;
//! }
//! let result = prof.stop();
//! let avg = result.key_averages(false);
//! assert!(avg.iter().any(|a| a.key == "aten::matmul" && a.count == 1));
//! println!("{}", avg.table(Some("cpu_time_total"), 10));
//! # Ok(())
//! # }
//! ```

mod table;
mod trace;

pub use table::{EventAvg, KeyAverages};

use crate::dispatch::keys::{self, DispatchKey, DispatchKeySet, Fallback, IncludeGuard};
use crate::dispatch::{redispatch, Args, IValue, OpEntry};
use crate::error::Result;
use parking_lot::{Mutex, RwLock};
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Once};
use std::time::Instant;

/// What a profile records besides names and times.
#[derive(Clone, Copy, Debug, Default)]
pub struct ProfilerOptions {
    /// Record each op's input shapes (`record_shapes=True`).
    pub record_shapes: bool,
}

/// What an event is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// An op called through the dispatcher (`aten::add`).
    Op,
    /// A range named by `record_function`.
    UserAnnotation,
    /// A backward node run by the autograd engine.
    Backward,
}

/// One timed call or range.
#[derive(Clone, Debug)]
pub struct Event {
    /// `aten::matmul`, the range's name, or
    /// `autograd::engine::evaluate_function: MulBackward0`.
    pub name: String,
    pub kind: EventKind,
    /// A small per-thread number (1 for the first thread seen).
    pub thread: u64,
    /// Start, microseconds since the profile began.
    pub start_us: f64,
    /// End, microseconds since the profile began.
    pub end_us: f64,
    /// Each input's shape (`[]` for a non-tensor), when shapes are recorded.
    pub input_shapes: Vec<Vec<usize>>,
}

impl Event {
    /// Duration in microseconds.
    pub fn duration_us(&self) -> f64 {
        self.end_us - self.start_us
    }
}

struct Session {
    options: ProfilerOptions,
    epoch: Instant,
    events: Mutex<Vec<Event>>,
}

impl Session {
    fn now_us(&self) -> f64 {
        self.epoch.elapsed().as_secs_f64() * 1e6
    }
}

static ON: AtomicBool = AtomicBool::new(false);
static ACTIVE: RwLock<Option<Arc<Session>>> = RwLock::new(None);

fn active() -> Option<Arc<Session>> {
    if !ON.load(Ordering::Relaxed) {
        return None;
    }
    ACTIVE.read().clone()
}

/// Whether a profile is running (one relaxed load).
#[inline]
pub fn is_enabled() -> bool {
    ON.load(Ordering::Relaxed)
}

fn thread_number() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    thread_local! {
        static N: u64 = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    N.with(|n| *n)
}

fn op_name(e: &OpEntry) -> String {
    let name = &e.schema.name;
    if name.contains("::") {
        name.clone()
    } else {
        format!("aten::{name}")
    }
}

fn shape_of(v: &IValue) -> Vec<usize> {
    match v {
        IValue::Tensor(t) => t.shape().to_vec(),
        _ => Vec::new(),
    }
}

/// The profiler key's fallback: time the rest of the stack.
fn record_op(e: &Arc<OpEntry>, a: &Args, below: DispatchKeySet) -> Result<IValue> {
    let Some(s) = active() else {
        return redispatch(e, a, below);
    };
    let input_shapes = if s.options.record_shapes {
        a.values().iter().map(shape_of).collect()
    } else {
        Vec::new()
    };
    let start_us = s.now_us();
    let out = redispatch(e, a, below);
    let end_us = s.now_us();
    s.events.lock().push(Event {
        name: op_name(e),
        kind: EventKind::Op,
        thread: thread_number(),
        start_us,
        end_us,
        input_shapes,
    });
    out
}

fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let f: Fallback = Arc::new(record_op);
        keys::set_fallback(DispatchKey::Profiler, Some(f));
    });
}

/// A running profile (`with torch.profiler.profile() as prof:`): ops
/// called on this thread are recorded until [`Profile::stop`] or drop.
/// One profile runs at a time in a process, as in PyTorch.
#[must_use = "the profile records only while this value lives"]
pub struct Profile {
    session: Arc<Session>,
    _key: IncludeGuard,
    // the key is included on this thread: the guard must drop here
    _not_send: PhantomData<*const ()>,
}

impl std::fmt::Debug for Profile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.session.events.lock().len();
        f.debug_struct("Profile").field("events", &n).finish()
    }
}

/// Start profiling this thread.
pub fn profile(options: ProfilerOptions) -> Result<Profile> {
    install();
    let mut slot = ACTIVE.write();
    crate::ensure!(
        slot.is_none(),
        Runtime,
        "Profiler is already enabled: one profile runs at a time (stop the running one first)"
    );
    let session = Arc::new(Session {
        options,
        epoch: Instant::now(),
        events: Mutex::new(Vec::new()),
    });
    *slot = Some(session.clone());
    ON.store(true, Ordering::SeqCst);
    Ok(Profile {
        session,
        _key: IncludeGuard::new(DispatchKey::Profiler),
        _not_send: PhantomData,
    })
}

impl Profile {
    /// Stop and return what was recorded.
    pub fn stop(self) -> Profiled {
        let events = std::mem::take(&mut *self.session.events.lock());
        drop(self);
        Profiled { events }
    }
}

impl Drop for Profile {
    fn drop(&mut self) {
        let mut slot = ACTIVE.write();
        if slot.as_ref().is_some_and(|s| Arc::ptr_eq(s, &self.session)) {
            *slot = None;
            ON.store(false, Ordering::SeqCst);
        }
    }
}

/// A named range (`with torch.profiler.record_function("name"):`): timed
/// from creation to drop while a profile records this thread; free
/// otherwise.
#[must_use = "the range ends when this value is dropped"]
pub struct RecordFunction {
    // (session, name, kind, start): `None` when no profile records
    open: Option<(Arc<Session>, String, EventKind, f64)>,
}

/// Open a range named `name`.
pub fn record_function(name: &str) -> RecordFunction {
    range(EventKind::UserAnnotation, || name.to_string())
}

/// The running profile, if this thread is the one it records.
fn active_here() -> Option<Arc<Session>> {
    if !ON.load(Ordering::Relaxed) || !keys::local_keys().0.has(DispatchKey::Profiler) {
        return None;
    }
    active()
}

/// Open a range of `kind` on this thread, naming it only when a profile
/// records the thread.
pub fn range(kind: EventKind, name: impl FnOnce() -> String) -> RecordFunction {
    let open = active_here().map(|s| {
        let start = s.now_us();
        (s, name(), kind, start)
    });
    RecordFunction { open }
}

impl std::fmt::Debug for RecordFunction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = self.open.as_ref().map(|o| o.1.as_str());
        f.debug_struct("RecordFunction")
            .field("name", &name)
            .finish()
    }
}

impl Drop for RecordFunction {
    fn drop(&mut self) {
        if let Some((s, name, kind, start_us)) = self.open.take() {
            let end_us = s.now_us();
            s.events.lock().push(Event {
                name,
                kind,
                thread: thread_number(),
                start_us,
                end_us,
                input_shapes: Vec::new(),
            });
        }
    }
}

/// A finished profile's events.
#[derive(Clone, Debug, Default)]
pub struct Profiled {
    events: Vec<Event>,
}

impl Profiled {
    /// Every event, in the order they ended.
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    /// Events grouped by name (and with `group_by_input_shape` by input
    /// shapes too), with counts and total and self times.
    pub fn key_averages(&self, group_by_input_shape: bool) -> KeyAverages {
        table::key_averages(&self.events, group_by_input_shape)
    }

    /// Write the events as a Chrome trace (`chrome://tracing`, Perfetto).
    pub fn export_chrome_trace(&self, path: impl AsRef<std::path::Path>) -> Result<()> {
        std::fs::write(path, trace::chrome_trace(&self.events))?;
        Ok(())
    }
}

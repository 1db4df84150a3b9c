//! Dispatch keys: which layers an op call passes through, in order.
//!
//! # Note [Dispatch keys]
//! As in PyTorch's c10 dispatcher, a call's key set is the keys its
//! arguments carry (the backend: `Cpu` for every tensor today) together
//! with the thread-local *included* set (modes such as the tracer), minus
//! the thread-local *excluded* set. The call goes to the highest-priority
//! key that has something for the op: a kernel registered for that key on
//! the op, or the key's fallback (one boxed function for every op, such as
//! the tracer's recorder); a key with neither falls through to the next.
//! A layer that wants the rest of the stack (the tracer after recording)
//! redispatches with the keys below its own, and excludes itself while it
//! does so, so that the typed methods the lower kernels call do not re-enter
//! it. Priority, highest first: `Profiler`, `Tracer`, `AutocastCpu`,
//! `Autograd`, then the backends.
//!
//! A backend kernel runs with the mode keys excluded, so what it calls
//! (the parts of a composite) is not seen by the modes again: the tracer
//! records the op the user called. `Autograd` is a key of its own in the enum and the key set, but today
//! every built-in op records its own graph inside its `Cpu` kernel (the
//! `raw` + `derivatives::*` pattern), so nothing is registered under it
//! yet: it falls through. Modes are pushed and popped with
//! [`IncludeGuard`] / [`ExcludeGuard`], like `torch.jit`'s tracing state and
//! `no_grad`.

use super::{Args, IValue, OpEntry};
use crate::error::Result;
use parking_lot::RwLock;
use std::cell::Cell;
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::Arc;

/// One layer of the dispatcher. Discriminants are priorities: a higher
/// value runs first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum DispatchKey {
    /// The CPU backend: the built-in kernels.
    Cpu = 0,
    /// A CUDA backend (no kernels registered yet).
    Cuda = 1,
    /// A user-registered backend (PyTorch's `PrivateUse1`).
    PrivateUse1 = 2,
    /// Recording the autograd graph.
    Autograd = 3,
    /// Casting the inputs of listed ops under `torch.autocast("cpu")`
    /// (above autograd, so the casts are recorded and differentiated;
    /// Note [Autocast at the dispatcher]).
    AutocastCpu = 4,
    /// Recording the JIT's IR while tracing.
    Tracer = 5,
    /// Timing each op for `torch.profiler` (above the tracer, so a
    /// profiled trace times the ops the user called).
    Profiler = 6,
}

/// Number of keys (the size of per-op kernel tables).
pub const NUM_KEYS: usize = 7;

impl DispatchKey {
    /// Every key, highest priority first.
    pub const ALL: [DispatchKey; NUM_KEYS] = [
        DispatchKey::Profiler,
        DispatchKey::Tracer,
        DispatchKey::AutocastCpu,
        DispatchKey::Autograd,
        DispatchKey::PrivateUse1,
        DispatchKey::Cuda,
        DispatchKey::Cpu,
    ];

    fn bit(self) -> u16 {
        1 << (self as u8)
    }

    /// Whether this is a backend (where kernels compute, below the modes
    /// and autograd).
    pub fn is_backend(self) -> bool {
        matches!(
            self,
            DispatchKey::Cpu | DispatchKey::Cuda | DispatchKey::PrivateUse1
        )
    }
}

/// A set of keys (a bit per key).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DispatchKeySet(u16);

impl DispatchKeySet {
    /// The empty set.
    pub const EMPTY: DispatchKeySet = DispatchKeySet(0);

    /// The set of these keys.
    pub fn of(keys: &[DispatchKey]) -> DispatchKeySet {
        DispatchKeySet(keys.iter().fold(0, |a, k| a | k.bit()))
    }

    /// Whether `key` is in the set.
    pub fn has(self, key: DispatchKey) -> bool {
        self.0 & key.bit() != 0
    }

    /// The set with `key` added.
    pub fn with(self, key: DispatchKey) -> DispatchKeySet {
        DispatchKeySet(self.0 | key.bit())
    }

    /// The set with `key` removed.
    pub fn without(self, key: DispatchKey) -> DispatchKeySet {
        DispatchKeySet(self.0 & !key.bit())
    }

    /// The keys of lower priority than `key`.
    pub fn below(self, key: DispatchKey) -> DispatchKeySet {
        DispatchKeySet(self.0 & (key.bit() - 1))
    }

    /// The keys in the set, highest priority first.
    pub fn iter(self) -> impl Iterator<Item = DispatchKey> {
        DispatchKey::ALL.into_iter().filter(move |k| self.has(*k))
    }
}

/// Keys that are modes: while one is included, typed methods box their
/// arguments and enter through their op handle (Note [Dispatch keys]).
const MODE_KEYS: u16 = (1 << (DispatchKey::Tracer as u8))
    | (1 << (DispatchKey::Profiler as u8))
    | (1 << (DispatchKey::AutocastCpu as u8));

thread_local! {
    /// The included set in the low 16 bits, the excluded set in the high:
    /// one thread-local read answers [`interposed`].
    static LOCAL: Cell<u32> = const { Cell::new(0) };
}

fn included() -> u16 {
    LOCAL.with(Cell::get) as u16
}

fn excluded() -> u16 {
    (LOCAL.with(Cell::get) >> 16) as u16
}

/// The thread's included and excluded key sets.
pub fn local_keys() -> (DispatchKeySet, DispatchKeySet) {
    (DispatchKeySet(included()), DispatchKeySet(excluded()))
}

/// Whether a mode key is active on this thread (one thread-local read):
/// typed methods take the boxed road through the dispatcher only then.
#[inline]
pub fn interposed() -> bool {
    let l = LOCAL.with(Cell::get);
    if modes_on(l) {
        return true;
    }
    let exc = (l >> 16) as u16;
    // while a conjugated view is alive, calls outside a kernel (where the
    // modes are not excluded) go through the dispatcher, which resolves it
    // (Note [The conjugate bit])
    exc & MODE_KEYS == 0 && crate::tensor::conj::any_live()
}

/// Whether a mode key (not only a live conjugated view) routes typed
/// methods through the dispatcher on this thread.
#[inline]
pub fn mode_active() -> bool {
    modes_on(LOCAL.with(Cell::get))
}

/// Whether the packed included/excluded keys leave a mode key on.
#[inline]
fn modes_on(l: u32) -> bool {
    (l as u16) & !((l >> 16) as u16) & MODE_KEYS != 0
}

thread_local! {
    static INTERNAL: Cell<bool> = const { Cell::new(false) };
}

/// Whether the current boxed call came from a typed Rust method that took
/// the boxed road only because a conjugated view is alive (Note [The
/// conjugate bit]): ferrotorch's own code, which the complex opt-in
/// check does not apply to, as it does not on the direct road.
pub(crate) fn internal_call() -> bool {
    INTERNAL.with(Cell::get)
}

/// Marks the calls made while it lives as [`internal_call`]s.
pub(crate) struct InternalGuard(bool);

impl InternalGuard {
    pub(crate) fn new() -> InternalGuard {
        InternalGuard(INTERNAL.with(|c| c.replace(true)))
    }
}

impl Drop for InternalGuard {
    fn drop(&mut self) {
        INTERNAL.with(|c| c.set(self.0));
    }
}

/// The keys a call on this thread passes, highest first: the backend, the
/// autograd layer and the included modes, minus the excluded ones.
pub fn call_keys() -> DispatchKeySet {
    let (inc, exc) = local_keys();
    DispatchKeySet((inc.0 | DispatchKey::Cpu.bit() | DispatchKey::Autograd.bit()) & !exc.0)
}

/// Set `bits` in the thread's state; the previous state.
fn set_bits(bits: u32) -> u32 {
    LOCAL.with(|c| c.replace(c.get() | bits))
}

/// Adds a key to the thread's included set until dropped.
#[must_use = "the key is included only while the guard lives"]
pub struct IncludeGuard(u32);

impl IncludeGuard {
    /// Include `key` on this thread.
    pub fn new(key: DispatchKey) -> IncludeGuard {
        IncludeGuard(set_bits(u32::from(key.bit())))
    }
}

impl Drop for IncludeGuard {
    fn drop(&mut self) {
        LOCAL.with(|c| c.set(self.0));
    }
}

/// Adds a key to the thread's excluded set until dropped.
#[must_use = "the key is excluded only while the guard lives"]
pub struct ExcludeGuard(u32);

impl ExcludeGuard {
    /// Exclude `key` on this thread.
    pub fn new(key: DispatchKey) -> ExcludeGuard {
        ExcludeGuard(set_bits(u32::from(key.bit()) << 16))
    }

    /// Exclude every mode key: a backend kernel runs below the modes, so
    /// the typed methods it calls (a composite's parts) are not seen by
    /// them again, and the op is recorded as the one the user called.
    pub(crate) fn modes() -> ExcludeGuard {
        ExcludeGuard(set_bits(u32::from(MODE_KEYS) << 16))
    }
}

impl Drop for ExcludeGuard {
    fn drop(&mut self) {
        LOCAL.with(|c| c.set(self.0));
    }
}

/// A key's fallback: one boxed function for every op without a kernel of
/// its own for that key. It gets the op, the bound arguments and the keys
/// below its own, to [`super::redispatch`] to.
pub type Fallback =
    Arc<dyn Fn(&Arc<OpEntry>, &Args, DispatchKeySet) -> Result<IValue> + Send + Sync>;

fn fallbacks() -> &'static [RwLock<Option<Fallback>>; NUM_KEYS] {
    static F: [RwLock<Option<Fallback>>; NUM_KEYS] = [const { RwLock::new(None) }; NUM_KEYS];
    &F
}

/// Keys that have a fallback, so a call skips the lock for the others.
static HAS_FALLBACK: AtomicU16 = AtomicU16::new(0);

/// Set (or with `None`, remove) `key`'s fallback; returns the previous one.
pub fn set_fallback(key: DispatchKey, f: Option<Fallback>) -> Option<Fallback> {
    let mut slot = fallbacks()[key as usize].write();
    if f.is_some() {
        HAS_FALLBACK.fetch_or(key.bit(), Ordering::SeqCst);
    } else {
        HAS_FALLBACK.fetch_and(!key.bit(), Ordering::SeqCst);
    }
    std::mem::replace(&mut *slot, f)
}

pub(crate) fn fallback(key: DispatchKey) -> Option<Fallback> {
    if HAS_FALLBACK.load(Ordering::Relaxed) & key.bit() == 0 {
        return None;
    }
    fallbacks()[key as usize].read().clone()
}

//! Per-tensor autograd state (PyTorch's `AutogradMeta`): `requires_grad`,
//! `.grad`, `grad_fn`, hooks. Held behind a lock in the `TensorImpl`, so the
//! shared `Tensor` handle can be updated in place, like a Python object.

use super::node::{Edge, Kind, Node, PreHook, TensorMeta};
use crate::error::Result;
use crate::tensor::{Tensor, TensorImpl};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

/// A gradient hook: sees the gradient, may return a replacement.
pub type Hook = Arc<dyn Fn(&Tensor) -> Result<Option<Tensor>> + Send + Sync>;
/// A post-accumulate-grad hook: sees the leaf after its `.grad` was updated.
pub type PostAccumulateHook = Arc<dyn Fn(&Tensor) -> Result<()> + Send + Sync>;

#[derive(Default)]
pub(crate) struct AutogradMeta {
    /// Leaf flag set by `requires_grad_` (non-leaves require grad through
    /// their grad_fn).
    pub(crate) requires_grad: bool,
    pub(crate) grad: Option<Tensor>,
    pub(crate) grad_fn: Option<Arc<Node>>,
    pub(crate) output_nr: usize,
    pub(crate) accumulator: Weak<Node>,
    pub(crate) retains_grad: bool,
    /// Hooks of a leaf, run by its AccumulateGrad (a non-leaf's hooks live
    /// on its grad_fn as pre-hooks).
    pub(crate) hooks: Vec<(u64, Hook)>,
    pub(crate) post_hooks: Vec<(u64, PostAccumulateHook)>,
    /// For a view: the storage version its grad_fn was made at; a later
    /// version means an in-place op may have changed its base's history.
    pub(crate) view_version: Option<u64>,
}

/// The autograd part of a `TensorImpl`: a fast flag for "requires grad"
/// (checked by every op) and the rest behind a lock, allocated on first use.
#[derive(Default)]
pub(crate) struct MetaCell {
    flag: AtomicBool,
    pub(crate) inference: bool,
    meta: Mutex<Option<Box<AutogradMeta>>>,
}

impl MetaCell {
    pub(crate) fn new_inference(inference: bool) -> MetaCell {
        MetaCell {
            inference,
            ..Default::default()
        }
    }

    #[inline]
    pub(crate) fn requires_grad(&self) -> bool {
        self.flag.load(Ordering::Relaxed)
    }

    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut AutogradMeta) -> R) -> R {
        let mut g = self.meta.lock();
        let m = g.get_or_insert_with(Default::default);
        let r = f(m);
        self.flag
            .store(m.requires_grad || m.grad_fn.is_some(), Ordering::Relaxed);
        r
    }

    pub(crate) fn read<R>(&self, f: impl FnOnce(&AutogradMeta) -> R) -> Option<R> {
        self.meta.lock().as_deref().map(f)
    }
}

pub(crate) fn set_grad_fn(t: &Tensor, node: Arc<Node>, output_nr: usize) {
    let view_version = t.is_view().then(|| t.version());
    t.0.autograd.with(|m| {
        m.grad_fn = Some(node);
        m.output_nr = output_nr;
        m.requires_grad = false;
        m.view_version = view_version;
    });
}

/// Re-derive a view's grad_fn from its base when the storage was written
/// in place since the grad_fn was made (Note [In-place autograd]).
pub(crate) fn refresh_view(t: &Tensor) {
    if !t.is_view() {
        return;
    }
    let Some(made_at) = t.0.autograd.read(|m| m.view_version).flatten() else {
        return;
    };
    if made_at == t.version() || !super::mode::is_grad_enabled() {
        return;
    }
    if let Some(base) = t.view_base().filter(|b| b.requires_grad()) {
        // On failure the old history stays; recording a view cannot fail
        // short of running out of memory.
        let _ = super::derivatives::inplace::rederive_view(t, &base);
    }
}

/// Give a view that has no history of its own, while its base takes part
/// in the graph, its history from the base (the view was taken before the
/// base entered the graph).
#[cold]
pub(crate) fn follow_base(t: &Tensor, base: &Tensor) {
    if !super::mode::is_grad_enabled() || t.0.autograd.read(|m| m.grad_fn.is_some()) == Some(true) {
        return;
    }
    // On failure the view stays out of the graph; recording a view cannot
    // fail short of running out of memory.
    let _ = super::derivatives::inplace::rederive_view(t, base);
}

/// Whether `t` is a leaf that requires grad with no live accumulator yet
/// (the next [`gradient_edge`] makes one).
pub(crate) fn needs_new_accumulator(t: &Tensor) -> bool {
    t.requires_grad()
        && t.0
            .autograd
            .read(|m| m.grad_fn.is_none() && m.accumulator.upgrade().is_none())
            .unwrap_or(false)
}

/// The edge a gradient for `t` must flow into, if `t` requires grad: its
/// grad_fn, or its leaf accumulator (made on first use and shared).
pub(crate) fn gradient_edge(t: &Tensor) -> Option<Edge> {
    if !t.requires_grad() {
        return None;
    }
    refresh_view(t);
    t.0.autograd.with(|m| {
        if let Some(f) = &m.grad_fn {
            return Some(Edge {
                node: f.clone(),
                input_nr: m.output_nr,
            });
        }
        let acc = match m.accumulator.upgrade() {
            Some(a) => a,
            None => {
                let a = Arc::new(Node {
                    name: "AccumulateGrad",
                    seq: u64::MAX,
                    next: smallvec::SmallVec::new(),
                    inputs: smallvec::smallvec![TensorMeta::of(t)],
                    outputs: smallvec::smallvec![TensorMeta::of(t)],
                    saved: Mutex::new(Some(smallvec::SmallVec::new())),
                    kind: Kind::Accumulate(t.clone()),
                    pre_hooks: Mutex::new(Vec::new()),
                    node_hooks: Mutex::new(Default::default()),
                    has_node_hooks: std::sync::atomic::AtomicBool::new(false),
                    trace: None,
                });
                m.accumulator = Arc::downgrade(&a);
                a
            }
        };
        Some(Edge {
            node: acc,
            input_nr: 0,
        })
    })
}

impl TensorImpl {
    pub(crate) fn weak(self: &Arc<Self>) -> Weak<TensorImpl> {
        Arc::downgrade(self)
    }
}

pub(crate) fn add_pre_hook(node: &Node, hook: PreHook) {
    node.pre_hooks.lock().push(hook);
}

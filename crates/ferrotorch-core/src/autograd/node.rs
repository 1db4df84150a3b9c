//! Graph nodes (`grad_fn`s), edges and saved tensors.
//!
//! # Note [Autograd graph]
//! A tensor that requires grad is either a leaf (made by the user, with
//! `requires_grad`) or the output of a recorded op, holding `grad_fn`: an
//! `Arc<Node>` plus its `output_nr`. A node holds one [`Edge`] per input
//! (`None` where that input needs no gradient): the input's own `grad_fn`,
//! or for a leaf its `AccumulateGrad` node. Outputs own their nodes and
//! nodes own their inputs' nodes, so a graph lives exactly as long as some
//! tensor can still reach it; a leaf owns its accumulator only weakly, and
//! a node keeps its own outputs (when it saves them) without a grad_fn, so
//! there are no reference cycles.
//!
//! A node's formula sees the gradients of its outputs and its saved tensors
//! and returns one gradient per input; the engine reduces each to its
//! input's shape (undoing broadcasting) and dtype before passing it on.
//! Formulas are written with ordinary differentiable ops, so running them
//! with grad mode on (`create_graph`) records the backward pass itself and
//! gives higher-order derivatives.

use super::meta::Hook;
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;
use parking_lot::Mutex;
use smallvec::SmallVec;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Where a gradient goes: input `input_nr` of `node`.
#[derive(Clone)]
pub struct Edge {
    pub(crate) node: Arc<Node>,
    pub(crate) input_nr: usize,
}

/// A tensor kept for backward, with the storage version it had when saved
/// (Note [Version counter]); unpacking after an in-place change is an error.
pub(crate) struct SavedTensor {
    /// The tensor, or `None` when saved-tensor hooks packed it.
    data: Option<Tensor>,
    /// What the pack hook returned, with the hooks that unpack it (Note
    /// [Graph hooks]).
    packed: Option<(
        super::graph_hooks::Packed,
        Arc<super::graph_hooks::SavedTensorHooks>,
    )>,
    version: u64,
    /// `Some(output_nr)` when this is one of the node's own outputs: kept
    /// without grad_fn (no cycle) and given this node back on unpack.
    output_nr: Option<usize>,
    /// `(grad_fn name, output_nr)` of the tensor when saved, for the
    /// modified-by-an-inplace-operation message.
    producer: Option<(&'static str, usize)>,
}

impl SavedTensor {
    fn check_version(&self, data: &Tensor) -> Result<()> {
        let now = data.version();
        if now != self.version {
            let which = match &self.producer {
                Some((name, nr)) => format!(", which is output {nr} of {name},"),
                None => String::new(),
            };
            crate::bail!(
                Runtime,
                "one of the variables needed for gradient computation has been modified by an inplace operation: [torch.{}Tensor [{}]]{which} is at version {now}; expected version {} instead. Hint: enable anomaly detection to find the operation that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True).",
                data.dtype().name_title(),
                data.shape().iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", "),
                self.version
            );
        }
        Ok(())
    }
}

/// Shape and dtype of a node input or output (to shape gradients and to
/// materialise missing ones as zeros).
#[derive(Clone, Debug)]
pub(crate) struct TensorMeta {
    pub(crate) shape: crate::tensor::layout::Dims,
    pub(crate) dtype: DType,
}

impl TensorMeta {
    pub(crate) fn of(t: &Tensor) -> TensorMeta {
        TensorMeta {
            shape: t.shape().into(),
            dtype: t.dtype(),
        }
    }
}

/// Input gradients returned by a formula, one per input (inline for up
/// to two inputs: no allocation per node in backward).
pub(crate) type GradVec = SmallVec<[Option<Tensor>; 2]>;

pub(crate) type Formula = dyn Fn(&Ctx) -> Result<GradVec> + Send + Sync;

pub(crate) enum Kind {
    /// A recorded op: gradient formula over saved tensors.
    Formula(Box<Formula>),
    /// Accumulates into a leaf's `.grad` (`AccumulateGrad`).
    Accumulate(Tensor),
}

/// A hook the engine runs on the gradient of one output of a node before
/// the node runs (tensor hooks and `retain_grad` of non-leaf tensors).
pub(crate) enum PreHook {
    User {
        id: u64,
        output_nr: usize,
        hook: Hook,
    },
    Retain {
        output_nr: usize,
        tensor: std::sync::Weak<crate::tensor::TensorImpl>,
    },
}

/// A backward function: PyTorch's `torch.autograd.graph.Node`, seen from a
/// tensor as its `grad_fn`.
pub struct Node {
    pub(crate) name: &'static str,
    pub(crate) seq: u64,
    pub(crate) next: SmallVec<[Option<Edge>; 2]>,
    pub(crate) inputs: SmallVec<[TensorMeta; 2]>,
    pub(crate) outputs: SmallVec<[TensorMeta; 1]>,
    pub(crate) saved: Mutex<Option<SmallVec<[SavedTensor; 2]>>>,
    pub(crate) kind: Kind,
    pub(crate) pre_hooks: Mutex<Vec<PreHook>>,
    /// The node's own hooks (`register_prehook`, `register_hook`).
    pub(crate) node_hooks: Mutex<NodeHooks>,
    /// Whether `node_hooks` was ever given one (the engine reads only
    /// this flag for the nodes without).
    pub(crate) has_node_hooks: std::sync::atomic::AtomicBool,
    /// Where the forward op ran, recorded in anomaly mode.
    pub(crate) trace: Option<String>,
}

/// A node's own hooks, each with the id its handle removes it by.
#[derive(Default)]
pub(crate) struct NodeHooks {
    pub(crate) pre: Vec<(u64, super::graph_hooks::NodePreHook)>,
    pub(crate) post: Vec<(u64, super::graph_hooks::NodePostHook)>,
}

static SEQ: AtomicU64 = AtomicU64::new(0);

pub(crate) fn next_seq() -> u64 {
    SEQ.fetch_add(1, Ordering::Relaxed)
}

impl Node {
    /// The node's class name, as PyTorch prints it (`MulBackward0`).
    pub fn name(&self) -> &str {
        self.name
    }

    /// The nodes this one passes gradients to, with the input slot of each
    /// (`grad_fn.next_functions`); `None` for inputs without a gradient.
    pub fn next_functions(&self) -> Vec<Option<(Arc<Node>, usize)>> {
        self.next
            .iter()
            .map(|e| e.as_ref().map(|e| (e.node.clone(), e.input_nr)))
            .collect()
    }

    /// For an `AccumulateGrad` node, the leaf it accumulates into
    /// (`grad_fn.variable`).
    pub fn variable(&self) -> Option<Tensor> {
        match &self.kind {
            Kind::Accumulate(t) => Some(t.clone()),
            Kind::Formula(_) => None,
        }
    }

    /// Register `hook` on this node's output gradients, run before its
    /// formula (`grad_fn.register_prehook`): it may return replacements.
    pub fn register_prehook(
        self: &Arc<Node>,
        hook: super::graph_hooks::NodePreHook,
    ) -> super::hooks::RemovableHandle {
        let id = super::hooks::next_id();
        self.node_hooks.lock().pre.push((id, hook));
        self.has_node_hooks.store(true, Ordering::Release);
        super::hooks::RemovableHandle {
            id,
            target: super::hooks::Target::NodeHook(Arc::downgrade(self)),
        }
    }

    /// Register `hook` on this node's input gradients (and its output
    /// gradients), run after its formula (`grad_fn.register_hook`): it may
    /// return replacements for the input gradients.
    pub fn register_hook(
        self: &Arc<Node>,
        hook: super::graph_hooks::NodePostHook,
    ) -> super::hooks::RemovableHandle {
        let id = super::hooks::next_id();
        self.node_hooks.lock().post.push((id, hook));
        self.has_node_hooks.store(true, Ordering::Release);
        super::hooks::RemovableHandle {
            id,
            target: super::hooks::Target::NodeHook(Arc::downgrade(self)),
        }
    }

    /// Unpack the saved tensors, checking versions; error once released.
    /// With `release` (a backward without `retain_graph`) they are freed in
    /// the same lock. Nodes that saved nothing stay runnable, as in PyTorch.
    pub(crate) fn unpack_saved(self: &Arc<Node>, release: bool) -> Result<SmallVec<[Tensor; 2]>> {
        let mut g = self.saved.lock();
        let Some(saved) = g.as_ref() else {
            crate::bail!(
                Runtime,
                "Trying to backward through the graph a second time (or directly access saved tensors after they have already been freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if you need to access saved tensors after calling backward."
            );
        };
        let out = saved
            .iter()
            .map(|s| {
                let data = match (&s.data, &s.packed) {
                    (Some(d), _) => {
                        s.check_version(d)?;
                        d.clone()
                    }
                    (None, Some((packed, hooks))) => (hooks.unpack)(packed)?,
                    (None, None) => {
                        crate::bail!(Runtime, "a saved tensor was neither kept nor packed")
                    }
                };
                Ok(match s.output_nr {
                    None => data,
                    Some(nr) => {
                        let t = data.detach();
                        super::meta::set_grad_fn(&t, self.clone(), nr);
                        t
                    }
                })
            })
            .collect::<Result<SmallVec<[Tensor; 2]>>>();
        if release && g.as_ref().is_some_and(|v| !v.is_empty()) {
            *g = None;
        }
        out
    }
}

/// # Note [Releasing graphs iteratively]
/// Nodes own the nodes of their inputs (through edges, saved tensors, and
/// tensors captured by formulas and hooks), so dropping the last tensor of
/// a long chain (`total = total + x` in a loop of 60 000 steps) would drop
/// node after node recursively and overflow the stack. As PyTorch's
/// `deleteNode`, a node's drop instead moves what it owns onto a
/// per-thread queue when another node's drop on this thread is already
/// running; the outermost drop empties the queue in a loop, so the stack
/// depth stays constant however long the graph.
struct Owned {
    _next: SmallVec<[Option<Edge>; 2]>,
    _saved: Option<SmallVec<[SavedTensor; 2]>>,
    _kind: Kind,
    _hooks: Vec<PreHook>,
    _node_hooks: NodeHooks,
}

thread_local! {
    static RELEASING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    static RELEASE_QUEUE: std::cell::RefCell<Vec<Owned>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl Drop for Node {
    fn drop(&mut self) {
        if self.next.iter().all(Option::is_none)
            && self.saved.get_mut().as_ref().is_none_or(|s| s.is_empty())
            && matches!(self.kind, Kind::Accumulate(_))
            && self.pre_hooks.get_mut().is_empty()
            && self.node_hooks.get_mut().pre.is_empty()
            && self.node_hooks.get_mut().post.is_empty()
        {
            return; // owns no other node (an AccumulateGrad): nothing to defer
        }
        let owned = Owned {
            _next: std::mem::take(&mut self.next),
            _saved: self.saved.get_mut().take(),
            _kind: std::mem::replace(
                &mut self.kind,
                Kind::Formula(Box::new(|_: &Ctx| Ok(GradVec::new()))),
            ),
            _hooks: std::mem::take(self.pre_hooks.get_mut()),
            _node_hooks: std::mem::take(self.node_hooks.get_mut()),
        };
        // During thread teardown the queue may be gone: drop in place then.
        let Ok(outer) = RELEASING.try_with(|r| !r.replace(true)) else {
            return drop(owned);
        };
        if !outer {
            RELEASE_QUEUE.with(|q| q.borrow_mut().push(owned));
            return;
        }
        struct Reset;
        impl Drop for Reset {
            fn drop(&mut self) {
                let _ = RELEASING.try_with(|r| r.set(false));
            }
        }
        let _reset = Reset;
        drop(owned);
        while let Some(o) = RELEASE_QUEUE.with(|q| q.borrow_mut().pop()) {
            drop(o);
        }
    }
}

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "<{} object>", self.name)
    }
}

/// What a formula sees: the gradients of the node's outputs (missing ones
/// filled with zeros), the saved tensors, and which inputs need a gradient.
pub struct Ctx {
    pub(crate) grads: SmallVec<[Tensor; 2]>,
    pub(crate) saved: SmallVec<[Tensor; 2]>,
    pub(crate) needs: SmallVec<[bool; 4]>,
}

impl Ctx {
    /// Gradient of the (first) output.
    pub fn grad(&self) -> &Tensor {
        &self.grads[0]
    }

    /// Gradient of output `i`.
    pub fn grad_at(&self, i: usize) -> &Tensor {
        &self.grads[i]
    }

    /// Saved tensor `i`, in the order they were saved.
    pub fn saved(&self, i: usize) -> &Tensor {
        &self.saved[i]
    }

    /// Whether input `i` needs a gradient (`ctx.needs_input_grad[i]`).
    pub fn needs_input_grad(&self, i: usize) -> bool {
        self.needs.get(i).copied().unwrap_or(false)
    }
}

/// What to save for backward.
pub(crate) enum Save<'a> {
    /// An input (or any tensor other than the outputs), kept as is.
    Tensor(&'a Tensor),
    /// Output `i` of the op being recorded.
    Output(usize),
}

pub(crate) fn save(
    what: Save<'_>,
    outputs: &[&Tensor],
    node_name: &'static str,
) -> Result<SavedTensor> {
    let (data, version, output_nr, producer) = match what {
        Save::Tensor(t) => (
            t.clone(),
            t.version(),
            None,
            t.grad_fn().map(|g| (g.name, t.output_nr())),
        ),
        Save::Output(i) => (
            outputs[i].detach(),
            outputs[i].version(),
            Some(i),
            Some((node_name, i)),
        ),
    };
    // Note [Graph hooks]: with saved-tensor hooks set, the node keeps only
    // what `pack` returned
    let (data, packed) = match super::graph_hooks::current_saved_hooks() {
        Some(h) => (None, Some((super::graph_hooks::pack_paused(&h, &data)?, h))),
        None => (Some(data), None),
    };
    Ok(SavedTensor {
        data,
        packed,
        version,
        output_nr,
        producer,
    })
}

/// Node names are a small fixed set (one per op and custom function): each
/// is stored once for the life of the process, so recording a node copies
/// no string.
pub(crate) fn intern(name: &str) -> &'static str {
    thread_local! {
        static NAMES: std::cell::RefCell<std::collections::HashSet<&'static str>> =
            std::cell::RefCell::new(std::collections::HashSet::new());
    }
    NAMES.with(|n| {
        let mut n = n.borrow_mut();
        if let Some(s) = n.get(name) {
            return *s;
        }
        let s: &'static str = Box::leak(name.to_string().into_boxed_str());
        n.insert(s);
        s
    })
}

//! The hooks of `torch.autograd.graph`: saved-tensor hooks, hooks on graph
//! nodes, the engine's final callbacks and node-creation hooks.
//!
//! # Note [Graph hooks]
//! - Saved-tensor hooks (`saved_tensors_hooks(pack, unpack)`) are a
//!   per-thread stack; the innermost pair applies. While one is set, a node
//!   being recorded hands each tensor it saves to `pack` and keeps only
//!   what `pack` returned; backward gets the tensor back from `unpack`.
//!   `pack` runs with the stack paused, so the ops inside it save plainly.
//!   A packed tensor has no version check (the node no longer holds it).
//! - A node's own hooks (`grad_fn.register_prehook`, `register_hook`) see
//!   all of its output gradients before the formula (after the tensors'
//!   hooks) and its input gradients after it; either may replace them.
//! - `queue_callback` adds a callback to the backward running on this
//!   thread; the callbacks run in order once its graph is done (one a
//!   callback queues runs too).
//! - Node-creation hooks (a per-thread stack) see every node recorded,
//!   once it is complete; recording a node inside one is an error.

use super::node::{GradVec, Node};
use crate::error::Result;
use crate::tensor::Tensor;
use std::any::Any;
use std::cell::RefCell;
use std::sync::Arc;

/// What a pack hook returned: kept by the node until backward unpacks it.
pub type Packed = Arc<dyn Any + Send + Sync>;

/// A pack hook: a tensor being saved to what the node keeps.
pub type PackHook = Box<dyn Fn(&Tensor) -> Result<Packed> + Send + Sync>;

/// An unpack hook: what the node kept back to the tensor.
pub type UnpackHook = Box<dyn Fn(&Packed) -> Result<Tensor> + Send + Sync>;

/// A `(pack, unpack)` pair of saved-tensor hooks.
pub struct SavedTensorHooks {
    /// Called with each tensor a node saves, when the node is recorded.
    pub pack: PackHook,
    /// Called with what `pack` returned, when backward needs the tensor.
    pub unpack: UnpackHook,
}

/// A hook on a node's output gradients: returns replacements or `None`.
pub type NodePreHook =
    Arc<dyn Fn(&[Option<Tensor>]) -> Result<Option<Vec<Option<Tensor>>>> + Send + Sync>;

/// A hook on a node's input gradients (given its output gradients too):
/// returns replacements or `None`.
pub type NodePostHook = Arc<
    dyn Fn(&[Option<Tensor>], &[Option<Tensor>]) -> Result<Option<Vec<Option<Tensor>>>>
        + Send
        + Sync,
>;

/// A hook called with each node recorded while it is set.
pub type NodeCreationHook = Arc<dyn Fn(&Arc<Node>) -> Result<()> + Send + Sync>;

type Callback = Box<dyn FnOnce() -> Result<()> + Send>;

thread_local! {
    static SAVED: RefCell<Vec<Arc<SavedTensorHooks>>> = const { RefCell::new(Vec::new()) };
    static CALLBACKS: RefCell<Vec<Vec<Callback>>> = const { RefCell::new(Vec::new()) };
    static CREATION: RefCell<Vec<NodeCreationHook>> = const { RefCell::new(Vec::new()) };
    static IN_CREATION_HOOK: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Make `hooks` the saved-tensor hooks of this thread until popped.
pub fn push_saved_tensors_hooks(hooks: SavedTensorHooks) {
    SAVED.with(|s| s.borrow_mut().push(Arc::new(hooks)));
}

/// Remove the innermost saved-tensor hooks; false when there were none.
pub fn pop_saved_tensors_hooks() -> bool {
    SAVED.with(|s| s.borrow_mut().pop().is_some())
}

/// The saved-tensor hooks in effect on this thread.
pub(crate) fn current_saved_hooks() -> Option<Arc<SavedTensorHooks>> {
    SAVED
        .try_with(|s| s.borrow().last().cloned())
        .ok()
        .flatten()
}

/// Run `pack` with this thread's saved-tensor hooks paused.
pub(crate) fn pack_paused(hooks: &SavedTensorHooks, t: &Tensor) -> Result<Packed> {
    let stash = SAVED.with(|s| std::mem::take(&mut *s.borrow_mut()));
    struct Restore(Option<Vec<Arc<SavedTensorHooks>>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            if let Some(v) = self.0.take() {
                let _ = SAVED.try_with(|s| *s.borrow_mut() = v);
            }
        }
    }
    let _restore = Restore(Some(stash));
    (hooks.pack)(t)
}

/// Add `callback` to the backward running on this thread
/// (`torch.autograd.Variable._execution_engine.queue_callback`).
pub fn queue_callback(callback: impl FnOnce() -> Result<()> + Send + 'static) -> Result<()> {
    CALLBACKS.with(|c| {
        let mut c = c.borrow_mut();
        match c.last_mut() {
            Some(frame) => {
                frame.push(Box::new(callback));
                Ok(())
            }
            None => Err(crate::Error::new(
                crate::ErrorKind::Runtime,
                "Final callbacks can only be installed during backward pass.",
            )),
        }
    })
}

/// Run `body` (one backward) with a frame for final callbacks, then the
/// callbacks queued during it, in order.
pub(crate) fn with_final_callbacks<R>(body: impl FnOnce() -> Result<R>) -> Result<R> {
    CALLBACKS.with(|c| c.borrow_mut().push(Vec::new()));
    struct Pop;
    impl Drop for Pop {
        fn drop(&mut self) {
            let _ = CALLBACKS.try_with(|c| c.borrow_mut().pop());
        }
    }
    let pop = Pop;
    let out = body()?;
    loop {
        let next = CALLBACKS.with(|c| {
            let mut c = c.borrow_mut();
            let frame = c.last_mut().expect("pushed above");
            (!frame.is_empty()).then(|| frame.remove(0))
        });
        match next {
            Some(cb) => cb()?,
            None => break,
        }
    }
    drop(pop);
    Ok(out)
}

/// Call `hook` with every node recorded on this thread until popped.
pub fn push_node_creation_hook(hook: NodeCreationHook) {
    CREATION.with(|h| h.borrow_mut().push(hook));
}

/// Remove the innermost node-creation hook; false when there was none.
pub fn pop_node_creation_hook() -> bool {
    CREATION.with(|h| h.borrow_mut().pop().is_some())
}

/// Whether any node-creation hook is set on this thread.
pub(crate) fn has_node_creation_hooks() -> bool {
    CREATION
        .try_with(|h| !h.borrow().is_empty())
        .unwrap_or(false)
}

/// Whether node `name` may be recorded now (not from inside a creation hook).
pub(crate) fn check_not_in_creation_hook(name: &str) -> Result<()> {
    crate::ensure!(
        !IN_CREATION_HOOK.try_with(|c| c.get()).unwrap_or(false),
        Runtime,
        "Creating a new autograd node from inside a node creation hook is not supported. Node creation hooks should only observe the node (e.g. record it, stash metadata, or register backward hooks on it); got a new node of type {name} while a hook was running."
    );
    Ok(())
}

/// Call this thread's node-creation hooks with `node`, outermost first.
pub(crate) fn node_created(node: &Arc<Node>) -> Result<()> {
    let hooks = CREATION
        .try_with(|h| h.borrow().clone())
        .unwrap_or_default();
    if hooks.is_empty() {
        return Ok(());
    }
    IN_CREATION_HOOK.with(|c| c.set(true));
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            let _ = IN_CREATION_HOOK.try_with(|c| c.set(false));
        }
    }
    let _reset = Reset;
    for h in hooks {
        h(node)?;
    }
    Ok(())
}

/// Replace `grads` with what a hook returned, checking the count.
pub(crate) fn replace_grads(
    what: &str,
    grads: &mut [Option<Tensor>],
    new: Vec<Option<Tensor>>,
) -> Result<()> {
    crate::ensure!(
        new.len() == grads.len(),
        Runtime,
        "hook '{what}' has returned an incorrect number of values (got {}, but expected {})",
        new.len(),
        grads.len()
    );
    for (g, n) in grads.iter_mut().zip(new) {
        *g = n;
    }
    Ok(())
}

/// The node's post-hooks over its input gradients `ins` (given `outs`).
pub(crate) fn run_post_hooks(
    node: &Arc<Node>,
    mut ins: GradVec,
    outs: &[Option<Tensor>],
) -> Result<GradVec> {
    let hooks: Vec<NodePostHook> = node
        .node_hooks
        .lock()
        .post
        .iter()
        .map(|(_, h)| h.clone())
        .collect();
    for h in hooks {
        if let Some(new) = h(&ins, outs)? {
            replace_grads("register_hook", &mut ins, new)?;
        }
    }
    Ok(ins)
}

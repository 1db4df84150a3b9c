//! Removable handles for gradient hooks (`handle.remove()`).

use super::node::{Node, PreHook};
use crate::tensor::TensorImpl;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Weak;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

pub(crate) fn next_id() -> u64 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

pub(crate) enum Target {
    /// A hook stored on a leaf tensor (pre- or post-accumulate).
    Leaf(Weak<TensorImpl>),
    /// A pre-hook stored on a non-leaf tensor's grad_fn.
    Node(Weak<Node>),
    /// One of a node's own hooks (`grad_fn.register_hook`/`register_prehook`).
    NodeHook(Weak<Node>),
}

/// Returned by `register_hook` and friends; [`RemovableHandle::remove`]
/// unregisters the hook (`torch.utils.hooks.RemovableHandle`).
pub struct RemovableHandle {
    pub(crate) id: u64,
    pub(crate) target: Target,
}

impl RemovableHandle {
    /// Unregister the hook. Removing twice, or after the tensor is gone, is
    /// a no-op.
    pub fn remove(&self) {
        match &self.target {
            Target::Leaf(w) => {
                if let Some(t) = w.upgrade() {
                    t.autograd.with(|m| {
                        m.hooks.retain(|(id, _)| *id != self.id);
                        m.post_hooks.retain(|(id, _)| *id != self.id);
                    });
                }
            }
            Target::NodeHook(w) => {
                if let Some(n) = w.upgrade() {
                    let mut h = n.node_hooks.lock();
                    h.pre.retain(|(id, _)| *id != self.id);
                    h.post.retain(|(id, _)| *id != self.id);
                }
            }
            Target::Node(w) => {
                if let Some(n) = w.upgrade() {
                    n.pre_hooks
                        .lock()
                        .retain(|h| !matches!(h, PreHook::User { id, .. } if *id == self.id));
                }
            }
        }
    }
}

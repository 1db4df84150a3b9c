//! [`ModuleState`]: a module's training flag and forward hooks.

use super::Module;
use ferrotorch_core::{Result, Tensor};
use parking_lot::RwLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// `hook(module, input) -> Option<new input>` (`register_forward_pre_hook`).
pub type ForwardPreHook = Box<dyn Fn(&dyn Module, &Tensor) -> Result<Option<Tensor>> + Send + Sync>;
/// `hook(module, input, output) -> Option<new output>` (`register_forward_hook`).
pub type ForwardHook =
    Box<dyn Fn(&dyn Module, &Tensor, &Tensor) -> Result<Option<Tensor>> + Send + Sync>;

#[derive(Default)]
struct Hooks {
    pre: Vec<(u64, ForwardPreHook)>,
    post: Vec<(u64, ForwardHook)>,
}

/// What PyTorch keeps on every `nn.Module` besides its tensors: the
/// `training` flag (true when made) and the forward hooks. A field of this
/// type makes a derived module answer `train()`/`eval()` itself and accept
/// hooks.
pub struct ModuleState {
    training: AtomicBool,
    hooks: Arc<RwLock<Hooks>>,
    any_hooks: Arc<AtomicBool>,
}

impl Default for ModuleState {
    fn default() -> Self {
        ModuleState {
            training: AtomicBool::new(true),
            hooks: Arc::default(),
            any_hooks: Arc::default(),
        }
    }
}

impl ModuleState {
    /// A state in training mode with no hooks.
    pub fn new() -> ModuleState {
        ModuleState::default()
    }

    /// The `training` flag.
    pub fn is_training(&self) -> bool {
        self.training.load(Ordering::Relaxed)
    }

    pub(crate) fn set_training(&self, mode: bool) {
        self.training.store(mode, Ordering::Relaxed)
    }

    pub(crate) fn has_hooks(&self) -> bool {
        self.any_hooks.load(Ordering::Relaxed)
    }

    pub(crate) fn add_forward_hook(&self, hook: ForwardHook) -> HookHandle {
        let id = next_id();
        self.hooks.write().post.push((id, hook));
        self.handle(id)
    }

    pub(crate) fn add_forward_pre_hook(&self, hook: ForwardPreHook) -> HookHandle {
        let id = next_id();
        self.hooks.write().pre.push((id, hook));
        self.handle(id)
    }

    fn handle(&self, id: u64) -> HookHandle {
        self.any_hooks.store(true, Ordering::Relaxed);
        HookHandle {
            id,
            hooks: Arc::downgrade(&self.hooks),
            any: Arc::downgrade(&self.any_hooks),
        }
    }

    /// Run pre-hooks, `forward`, then hooks, in registration order.
    pub(crate) fn run(
        &self,
        module: &dyn Module,
        input: &Tensor,
        forward: impl FnOnce(&Tensor) -> Result<Tensor>,
    ) -> Result<Tensor> {
        let hooks = self.hooks.read();
        let mut x = input.clone();
        for (_, h) in &hooks.pre {
            if let Some(new) = h(module, &x)? {
                x = new;
            }
        }
        let mut y = forward(&x)?;
        for (_, h) in &hooks.post {
            if let Some(new) = h(module, &x, &y)? {
                y = new;
            }
        }
        Ok(y)
    }
}

fn next_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Removes the hook it was returned for (`handle.remove()`).
#[derive(Debug)]
pub struct HookHandle {
    id: u64,
    hooks: std::sync::Weak<RwLock<Hooks>>,
    any: std::sync::Weak<AtomicBool>,
}

impl HookHandle {
    /// Unregister the hook; a no-op when it or its module is gone.
    pub fn remove(&self) {
        if let Some(h) = self.hooks.upgrade() {
            let mut h = h.write();
            h.pre.retain(|(id, _)| *id != self.id);
            h.post.retain(|(id, _)| *id != self.id);
            if let Some(any) = self.any.upgrade() {
                any.store(!h.pre.is_empty() || !h.post.is_empty(), Ordering::Relaxed);
            }
        }
    }
}

//! The hook through which a tracer sees module calls.
//!
//! # Note [Module calls while tracing]
//! `Forward::call` is where PyTorch's `Module.__call__` would notify the
//! tracer of a submodule call, so a traced graph keeps the module
//! hierarchy (`prim::CallMethod`). `ferrotorch-nn` cannot depend on the
//! tracer, so the tracer installs a function here once; `call` consults
//! it only while a dispatcher mode is on (one thread-local read
//! otherwise), so eager calls pay nothing.

use super::Module;
use ferrotorch_core::{Result, Tensor};
use std::sync::OnceLock;

/// `hook(module, input, run)`: wraps a module call; `run` is the call
/// itself (pre-hooks, `forward`, hooks).
pub type ModuleCallHook =
    fn(&dyn Module, &Tensor, &dyn Fn(&Tensor) -> Result<Tensor>) -> Result<Tensor>;

static HOOK: OnceLock<ModuleCallHook> = OnceLock::new();

/// Install the module-call hook (once per process; later calls are
/// ignored). Note [Module calls while tracing].
pub fn set_module_call_hook(hook: ModuleCallHook) {
    let _ = HOOK.set(hook);
}

/// The hook, while a dispatcher mode is on.
#[inline]
pub(crate) fn active_hook() -> Option<ModuleCallHook> {
    if ferrotorch_core::dispatch::keys::interposed() {
        HOOK.get().copied()
    } else {
        None
    }
}

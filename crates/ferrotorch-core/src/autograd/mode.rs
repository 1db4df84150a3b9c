//! Grad mode (`torch.no_grad`, `torch.enable_grad`, `torch.set_grad_enabled`,
//! `torch.inference_mode`): thread-local switches, as in PyTorch, so one
//! thread's `no_grad` never affects another's recording.

use std::cell::Cell;

thread_local! {
    static GRAD_ENABLED: Cell<bool> = const { Cell::new(true) };
    static INFERENCE: Cell<bool> = const { Cell::new(false) };
}

/// Whether ops on this thread record the graph (`torch.is_grad_enabled()`).
#[inline]
pub fn is_grad_enabled() -> bool {
    GRAD_ENABLED.with(|g| g.get())
}

/// Whether this thread is in inference mode (`torch.is_inference_mode_enabled()`).
pub fn is_inference_mode_enabled() -> bool {
    INFERENCE.with(|g| g.get())
}

/// Restores the previous grad mode when dropped. Made by [`no_grad`],
/// [`enable_grad`] and [`set_grad_enabled`].
#[must_use = "grad mode reverts when the guard is dropped"]
pub struct GradModeGuard {
    prev: bool,
    prev_inference: bool,
}

impl Drop for GradModeGuard {
    fn drop(&mut self) {
        GRAD_ENABLED.with(|g| g.set(self.prev));
        INFERENCE.with(|g| g.set(self.prev_inference));
    }
}

fn guard(enabled: bool, inference: Option<bool>) -> GradModeGuard {
    let prev = GRAD_ENABLED.with(|g| g.replace(enabled));
    let prev_inference = INFERENCE.with(|g| match inference {
        Some(v) => g.replace(v),
        None => g.get(),
    });
    GradModeGuard {
        prev,
        prev_inference,
    }
}

/// Disable recording until the guard drops (`with torch.no_grad():`).
///
/// ```
/// # use ferrotorch_core::{Tensor, autograd};
/// let w = Tensor::ones(&[2], ferrotorch_core::DType::F32).unwrap().requires_grad_(true).unwrap();
/// let y = {
///     let _g = autograd::no_grad();
///     w.mul(2).unwrap()
/// };
/// assert!(!y.requires_grad());
/// ```
pub fn no_grad() -> GradModeGuard {
    guard(false, None)
}

/// Enable recording until the guard drops (`with torch.enable_grad():`).
pub fn enable_grad() -> GradModeGuard {
    guard(true, None)
}

/// Set grad mode until the guard drops (`torch.set_grad_enabled(mode)`).
pub fn set_grad_enabled(mode: bool) -> GradModeGuard {
    guard(mode, None)
}

/// Inference mode (`with torch.inference_mode():`): no recording, and the
/// tensors made inside are marked as inference tensors, which later
/// recorded ops refuse to save for backward.
pub fn inference_mode() -> GradModeGuard {
    guard(false, Some(true))
}

/// Run `f` without recording (`torch.no_grad()` as a function wrapper).
pub fn with_no_grad<R>(f: impl FnOnce() -> R) -> R {
    let _g = no_grad();
    f()
}

/// Set grad mode and inference mode on this thread with no guard, for
/// language bindings whose context managers (Python's `with no_grad():`)
/// save the previous state ([`modes`]) and restore it themselves.
pub fn set_modes(grad_enabled: bool, inference: bool) {
    GRAD_ENABLED.with(|g| g.set(grad_enabled));
    INFERENCE.with(|g| g.set(inference));
}

/// `(is_grad_enabled(), is_inference_mode_enabled())` on this thread.
pub fn modes() -> (bool, bool) {
    (is_grad_enabled(), is_inference_mode_enabled())
}

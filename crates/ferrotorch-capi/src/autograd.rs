//! Autograd from C: `requires_grad`, `backward`, `grad`, grad mode.

use crate::status::{entry, put, FtStatus};
use crate::tensor::{out_tensor, tensor, FtTensor};
use ferrotorch_core::autograd;

/// Whether gradients flow to this tensor (`t.requires_grad`).
#[no_mangle]
pub extern "C" fn ft_tensor_requires_grad(t: *const FtTensor, out: *mut bool) -> FtStatus {
    let what = "ft_tensor_requires_grad";
    entry(what, || put(what, out, tensor(what, t)?.requires_grad()))
}

/// `t.requires_grad_(requires_grad)` (leaves only, floating dtypes).
#[no_mangle]
pub extern "C" fn ft_tensor_set_requires_grad(t: *const FtTensor, requires_grad: bool) -> FtStatus {
    let what = "ft_tensor_set_requires_grad";
    entry(what, || {
        tensor(what, t)?.requires_grad_(requires_grad)?;
        Ok(())
    })
}

/// `t.grad`: a new reference, or null through `out` when there is none.
#[no_mangle]
pub extern "C" fn ft_tensor_grad(t: *const FtTensor, out: *mut *mut FtTensor) -> FtStatus {
    let what = "ft_tensor_grad";
    entry(what, || match tensor(what, t)?.grad() {
        Some(g) => out_tensor(what, out, g),
        None => put(what, out, std::ptr::null_mut()),
    })
}

/// `t.grad = grad` (null clears it, as `t.grad = None`).
#[no_mangle]
pub extern "C" fn ft_tensor_set_grad(t: *const FtTensor, grad: *const FtTensor) -> FtStatus {
    let what = "ft_tensor_set_grad";
    entry(what, || {
        let g = if grad.is_null() {
            None
        } else {
            Some(tensor(what, grad)?.clone())
        };
        Ok(tensor(what, t)?.set_grad(g)?)
    })
}

/// `t.backward(gradient, retain_graph, create_graph)`; `gradient` may be
/// null for a one-element `t`.
#[no_mangle]
pub extern "C" fn ft_tensor_backward(
    t: *const FtTensor,
    gradient: *const FtTensor,
    retain_graph: bool,
    create_graph: bool,
) -> FtStatus {
    let what = "ft_tensor_backward";
    entry(what, || {
        let g = if gradient.is_null() {
            None
        } else {
            Some(tensor(what, gradient)?)
        };
        Ok(tensor(what, t)?.backward_with(g, Some(retain_graph), create_graph)?)
    })
}

/// `t.detach()`: a tensor sharing the data, outside the graph.
#[no_mangle]
pub extern "C" fn ft_tensor_detach(t: *const FtTensor, out: *mut *mut FtTensor) -> FtStatus {
    let what = "ft_tensor_detach";
    entry(what, || out_tensor(what, out, tensor(what, t)?.detach()))
}

/// Whether ops on the calling thread record the graph
/// (`torch.is_grad_enabled()`).
#[no_mangle]
pub extern "C" fn ft_is_grad_enabled() -> bool {
    autograd::is_grad_enabled()
}

/// Turn recording on the calling thread on or off
/// (`torch.set_grad_enabled(enabled)`); the previous setting goes to
/// `previous` (may be null), for restoring it: a `no_grad` scope is
/// `ft_set_grad_enabled(false, &prev); ...; ft_set_grad_enabled(prev, NULL)`.
/// The mode is per thread, as in torch.
#[no_mangle]
pub extern "C" fn ft_set_grad_enabled(enabled: bool, previous: *mut bool) -> FtStatus {
    entry("ft_set_grad_enabled", || {
        let (was, inference) = autograd::mode::modes();
        if !previous.is_null() {
            // SAFETY: non-null; the caller promises a writable bool.
            unsafe { previous.write(was) };
        }
        autograd::mode::set_modes(enabled, inference);
        Ok(())
    })
}

//! `Parameter` and `Buffer`: the tensors a module owns.
//!
//! # Note [Parameter slots]
//! A `Tensor`'s metadata is immutable, but a module's tensors are replaced
//! wholesale by `to(dtype)` (PyTorch assigns `param.data`). So a module
//! holds its tensors in shared slots: cloning a `Parameter` gives another
//! handle to the same slot, which is what an optimizer keeps. Reading the
//! current tensor is a cheap `Arc` clone under an uncontended lock.

use ferrotorch_core::{Result, Tensor};
use parking_lot::RwLock;
use std::sync::Arc;

/// A learnable tensor of a module (`torch.nn.Parameter`): a leaf that
/// requires grad (floating dtypes), listed by `parameters()` and saved in
/// `state_dict`.
#[derive(Clone)]
pub struct Parameter(Arc<RwLock<Tensor>>);

impl Parameter {
    /// Wrap `data` as a parameter: detached from any graph, and requiring
    /// grad when its dtype is floating (`nn.Parameter(data)`).
    pub fn new(data: &Tensor) -> Parameter {
        Parameter::with_requires_grad(data, data.is_floating_point())
    }

    /// `nn.Parameter(data, requires_grad=...)`.
    pub fn with_requires_grad(data: &Tensor, requires_grad: bool) -> Parameter {
        let t = data.detach();
        let _ = t.requires_grad_(requires_grad && t.is_floating_point());
        Parameter(Arc::new(RwLock::new(t)))
    }

    /// A parameter slot holding `t` itself, not a detached copy: the
    /// optimizers' in-place updates and the gradients backward accumulates
    /// are those of `t` (how a binding hands its own tensors, such as Go
    /// module fields, to an optimizer). `t` must be a leaf: an optimizer
    /// cannot update the result of an op.
    pub fn from_tensor(t: &Tensor) -> Result<Parameter> {
        ferrotorch_core::ensure!(
            t.is_leaf(),
            Value,
            "can't optimize a non-leaf Tensor (shape {:?}, dtype {})",
            t.shape(),
            t.dtype().name()
        );
        Ok(Parameter(Arc::new(RwLock::new(t.clone()))))
    }

    /// The current tensor (`param` used in an expression).
    #[inline]
    pub fn tensor(&self) -> Tensor {
        self.0.read().clone()
    }

    /// Replace the data, keeping `requires_grad` (`param.data = t`).
    pub fn set_data(&self, data: &Tensor) {
        let mut slot = self.0.write();
        let rg = slot.requires_grad();
        let t = data.detach();
        let _ = t.requires_grad_(rg && t.is_floating_point());
        *slot = t;
    }

    /// The accumulated gradient (`param.grad`).
    pub fn grad(&self) -> Option<Tensor> {
        self.0.read().grad()
    }

    /// Set or clear the gradient (`param.grad = g`).
    pub fn set_grad(&self, grad: Option<Tensor>) -> Result<()> {
        self.0.read().set_grad(grad)
    }

    /// Whether gradients flow to this parameter.
    pub fn requires_grad(&self) -> bool {
        self.0.read().requires_grad()
    }

    /// Freeze or unfreeze (`param.requires_grad_(flag)`).
    pub fn requires_grad_(&self, requires_grad: bool) -> Result<()> {
        self.0.read().requires_grad_(requires_grad).map(|_| ())
    }

    /// Whether two handles name the same slot (`p1 is p2`).
    pub fn ptr_eq(&self, other: &Parameter) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    pub(crate) fn id(&self) -> usize {
        Arc::as_ptr(&self.0) as usize
    }
}

impl std::fmt::Debug for Parameter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Parameter containing:\n{}", self.tensor())
    }
}

/// A non-learnable tensor of a module (`register_buffer`): running
/// statistics and counters. Persistent buffers are saved in `state_dict`.
#[derive(Clone)]
pub struct Buffer {
    slot: Arc<RwLock<Tensor>>,
    persistent: bool,
}

impl Buffer {
    /// A persistent buffer holding `data` (detached).
    pub fn new(data: &Tensor) -> Buffer {
        Buffer {
            slot: Arc::new(RwLock::new(data.detach())),
            persistent: true,
        }
    }

    /// A buffer left out of `state_dict` (`persistent=False`).
    pub fn non_persistent(data: &Tensor) -> Buffer {
        Buffer {
            persistent: false,
            ..Buffer::new(data)
        }
    }

    /// The current tensor.
    #[inline]
    pub fn tensor(&self) -> Tensor {
        self.slot.read().clone()
    }

    /// Replace the tensor.
    pub fn set_data(&self, data: &Tensor) {
        *self.slot.write() = data.detach();
    }

    /// Whether `state_dict` includes it.
    pub fn persistent(&self) -> bool {
        self.persistent
    }

    pub(crate) fn id(&self) -> usize {
        Arc::as_ptr(&self.slot) as usize
    }
}

impl std::fmt::Debug for Buffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.tensor())
    }
}

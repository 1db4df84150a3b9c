//! The autograd methods of `Tensor`: `requires_grad`, `grad`, `grad_fn`,
//! `backward`, `detach`, `retain_grad`, hooks.

use super::hooks::{next_id, RemovableHandle, Target};
use super::meta::{self, Hook, PostAccumulateHook};
use super::node::{Node, PreHook};
use crate::error::Result;
use crate::tensor::Tensor;
use std::sync::Arc;

impl Tensor {
    /// Whether gradients flow to this tensor (`t.requires_grad`).
    #[inline]
    pub fn requires_grad(&self) -> bool {
        if self.0.autograd.requires_grad() {
            return true;
        }
        // a view follows its base into the graph when the memory was
        // written in place after the view was taken (an in-place op on the
        // base or another view), as torch's views do: its history comes
        // from the base's
        match &self.0.base {
            Some(b)
                if self.0.made_at != self.version()
                    && b.requires_grad()
                    && self.dtype().is_differentiable() =>
            {
                meta::follow_base(self, b);
                true
            }
            _ => false,
        }
    }

    /// Set `requires_grad` on a leaf (`t.requires_grad_()`); returns the
    /// same tensor for chaining. Only floating tensors can require grad.
    pub fn requires_grad_(&self, requires_grad: bool) -> Result<Tensor> {
        crate::ensure!(
            !requires_grad || self.dtype().is_differentiable(),
            Runtime,
            "only Tensors of floating point and complex dtype can require gradients"
        );
        crate::ensure!(
            self.is_leaf() || requires_grad,
            Runtime,
            "you can only change requires_grad flags of leaf variables. If you want to use a computed variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach()."
        );
        if self.is_leaf() {
            self.0.autograd.with(|m| m.requires_grad = requires_grad);
        }
        Ok(self.clone())
    }

    /// True for tensors without a grad_fn (`t.is_leaf`): those made by the
    /// user, and every tensor that does not require grad.
    pub fn is_leaf(&self) -> bool {
        self.grad_fn().is_none()
    }

    /// The node that made this tensor (`t.grad_fn`), for non-leaves.
    pub fn grad_fn(&self) -> Option<Arc<Node>> {
        super::meta::refresh_view(self);
        self.0.autograd.read(|m| m.grad_fn.clone()).flatten()
    }

    /// Which output of its grad_fn this tensor is.
    pub fn output_nr(&self) -> usize {
        self.0.autograd.read(|m| m.output_nr).unwrap_or(0)
    }

    /// The accumulated gradient (`t.grad`), filled by backward for leaves
    /// and for tensors that called [`Tensor::retain_grad`].
    pub fn grad(&self) -> Option<Tensor> {
        self.0.autograd.read(|m| m.grad.clone()).flatten()
    }

    /// Replace (or clear, with `None`) the gradient (`t.grad = g`).
    pub fn set_grad(&self, grad: Option<Tensor>) -> Result<()> {
        if let Some(g) = &grad {
            crate::ensure!(
                g.shape() == self.shape(),
                Runtime,
                "assigned grad has data of a different size: {:?} vs {:?}",
                g.shape(),
                self.shape()
            );
            crate::ensure!(
                g.dtype() == self.dtype(),
                Runtime,
                "assigned grad has data of a different type: {} vs {}",
                g.dtype(),
                self.dtype()
            );
        }
        self.0.autograd.with(|m| m.grad = grad);
        Ok(())
    }

    /// Whether this inference-mode tensor may not be saved for backward.
    pub fn is_inference(&self) -> bool {
        self.0.autograd.inference
    }

    /// A tensor sharing this one's data and version counter but cut from
    /// the graph (`t.detach()`).
    pub fn detach(&self) -> Tensor {
        static OP: crate::dispatch::OpHandle = crate::dispatch::OpHandle::new("detach");
        // recorded while tracing; a failure there (none is expected) falls
        // through to the plain detach below
        if let Some(Ok(t)) = crate::dispatch::handle::intercept_tensor(&OP, || vec![self.into()]) {
            return t;
        }
        self.detach_raw()
    }

    /// [`Tensor::detach`] without the dispatcher: what autograd's own
    /// bookkeeping uses on a tensor whose history it is rewriting (the
    /// dispatcher's road for a conjugated view would consult that history).
    pub(crate) fn detach_raw(&self) -> Tensor {
        Tensor::from_parts(self.0.storage.clone(), self.0.layout.clone(), self.0.dtype)
            .marked_like(self)
    }

    /// Cut this tensor from the graph in place (`t.detach_()`).
    pub fn detach_(&self) -> Result<Tensor> {
        self.0.autograd.with(|m| {
            m.grad_fn = None;
            m.requires_grad = false;
            m.output_nr = 0;
        });
        Ok(self.clone())
    }

    /// Keep `.grad` for this non-leaf tensor after backward
    /// (`t.retain_grad()`). A no-op on leaves.
    pub fn retain_grad(&self) -> Result<()> {
        crate::ensure!(
            self.requires_grad(),
            Runtime,
            "can't retain_grad on Tensor that has requires_grad=False"
        );
        let Some(f) = self.grad_fn() else {
            return Ok(());
        };
        let already = self
            .0
            .autograd
            .with(|m| std::mem::replace(&mut m.retains_grad, true));
        if !already {
            meta::add_pre_hook(
                &f,
                PreHook::Retain {
                    output_nr: self.output_nr(),
                    tensor: self.0.weak(),
                },
            );
        }
        Ok(())
    }

    /// Whether [`Tensor::retain_grad`] was called (`t.retains_grad`).
    pub fn retains_grad(&self) -> bool {
        self.0.autograd.read(|m| m.retains_grad).unwrap_or(false)
    }

    /// Register a hook on this tensor's gradient (`t.register_hook(fn)`):
    /// it runs each time the gradient is computed and may return a
    /// replacement.
    pub fn register_hook(
        &self,
        hook: impl Fn(&Tensor) -> Result<Option<Tensor>> + Send + Sync + 'static,
    ) -> Result<RemovableHandle> {
        crate::ensure!(
            self.requires_grad(),
            Runtime,
            "cannot register a hook on a tensor that doesn't require gradient"
        );
        let id = next_id();
        let hook: Hook = Arc::new(hook);
        match self.grad_fn() {
            Some(f) => {
                meta::add_pre_hook(
                    &f,
                    PreHook::User {
                        id,
                        output_nr: self.output_nr(),
                        hook,
                    },
                );
                Ok(RemovableHandle {
                    id,
                    target: Target::Node(Arc::downgrade(&f)),
                })
            }
            None => {
                self.0.autograd.with(|m| m.hooks.push((id, hook)));
                Ok(RemovableHandle {
                    id,
                    target: Target::Leaf(self.0.weak()),
                })
            }
        }
    }

    /// Register a hook that runs after `.grad` of this leaf was updated
    /// (`t.register_post_accumulate_grad_hook(fn)`).
    pub fn register_post_accumulate_grad_hook(
        &self,
        hook: impl Fn(&Tensor) -> Result<()> + Send + Sync + 'static,
    ) -> Result<RemovableHandle> {
        crate::ensure!(
            self.requires_grad() && self.is_leaf(),
            Runtime,
            "post accumulate grad hooks cannot be registered on non-leaf tensors"
        );
        let id = next_id();
        let hook: PostAccumulateHook = Arc::new(hook);
        self.0.autograd.with(|m| m.post_hooks.push((id, hook)));
        Ok(RemovableHandle {
            id,
            target: Target::Leaf(self.0.weak()),
        })
    }

    /// Backward from a scalar (`t.backward()`): accumulates d self / d leaf
    /// into every leaf's `.grad`, then frees the graph's saved tensors.
    pub fn backward(&self) -> Result<()> {
        super::backward(std::slice::from_ref(self), None, None, false)
    }

    /// Backward with PyTorch's options (`t.backward(gradient, retain_graph,
    /// create_graph)`): `gradient` is required for non-scalar tensors;
    /// `retain_graph` defaults to `create_graph`.
    pub fn backward_with(
        &self,
        gradient: Option<&Tensor>,
        retain_graph: Option<bool>,
        create_graph: bool,
    ) -> Result<()> {
        let g = gradient.map(|g| vec![g.clone()]);
        super::backward(
            std::slice::from_ref(self),
            g.as_deref(),
            retain_graph,
            create_graph,
        )
    }
}

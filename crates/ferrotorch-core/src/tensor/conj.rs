//! The lazy conjugate bit: `torch.conj` on a complex tensor returns a view
//! of the same memory marked conjugated, as torch does.
//!
//! # Note [The conjugate bit]
//! A conjugated view (`z = x.conj()` through the dispatcher, which is how
//! Python, Node, C and Go call it) shares `x`'s storage and carries a mark;
//! `z.is_conj()` is true, `z.resolve_conj()` computes the values, and writes
//! into `x` show through `z` (and writes into `z` land in `x`, conjugated).
//! Kernels never see the mark: the dispatcher's backend step (`dispatch::
//! conj`) hands each kernel resolved arguments, except that view ops
//! (`Tensor(a) self -> Tensor(a)`, which commute with conjugation) run on
//! the unmarked tensor and mark their result, and an in-place op on a
//! marked tensor computes on its value and writes the conjugate back.
//! Under autograd that write is an ordinary in-place copy into the unmarked
//! memory (so the base's history is rewritten, `CopySlices`), and a marked
//! view whose memory was written is re-derived from its base's history,
//! conjugated (`autograd::derivatives::inplace::rederive_view`).
//! While any marked tensor is alive (a global count), typed Rust methods
//! outside a kernel take the boxed road through the dispatcher too
//! (`keys::interposed`), so a marked tensor cannot reach a kernel by a
//! direct call; the raw readers (`copy_cast`, `to_vec`) resolve as a last
//! line. The typed `Tensor::conj` stays eager: code inside ferrotorch
//! never makes a marked tensor, only a call of the `conj` op does.

use super::{Tensor, TensorImpl};
use crate::error::Result;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

static LIVE: AtomicUsize = AtomicUsize::new(0);

/// The mark on a conjugated view; counts the live ones.
pub(crate) struct ConjMark(());

impl ConjMark {
    fn new() -> ConjMark {
        LIVE.fetch_add(1, Ordering::Relaxed);
        ConjMark(())
    }
}

impl Drop for ConjMark {
    fn drop(&mut self) {
        LIVE.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Whether any conjugated view is alive (one relaxed load).
#[inline]
pub(crate) fn any_live() -> bool {
    LIVE.load(Ordering::Relaxed) != 0
}

impl Tensor {
    /// `t.is_conj()`: whether this is a lazily conjugated view.
    pub fn is_conj(&self) -> bool {
        self.0.conj.is_some()
    }

    /// The same memory with the conjugate bit flipped (a view; real
    /// tensors are returned as they are), recorded as `conj` for autograd.
    pub fn conj_view(&self) -> Result<Tensor> {
        if !self.dtype().is_complex() {
            return Ok(self.clone());
        }
        // a view of `self`'s base; after an in-place write to the base its
        // history is regenerated from the base's, conjugated
        // (`autograd::derivatives::inplace::rederive_view`)
        let base = self.0.base.clone().unwrap_or_else(|| self.clone());
        let out = Tensor(Arc::new(TensorImpl {
            storage: self.0.storage.clone(),
            layout: self.0.layout.clone(),
            dtype: self.0.dtype,
            autograd: crate::autograd::meta::MetaCell::new_inference(
                crate::autograd::is_inference_mode_enabled(),
            ),
            base: Some(base),
            made_at: self.0.storage.version(),
            conj: if self.is_conj() {
                None
            } else {
                Some(ConjMark::new())
            },
        }));
        crate::autograd::derivatives::shape::conj_view(self, out)
    }

    /// `t` (a fresh view or detached handle of `self`'s memory) carrying
    /// `self`'s conjugate bit.
    pub(crate) fn marked_like(self, src: &Tensor) -> Tensor {
        if !src.is_conj() {
            return self;
        }
        match Arc::try_unwrap(self.0) {
            Ok(mut inner) => {
                inner.conj = Some(ConjMark::new());
                Tensor(Arc::new(inner))
            }
            Err(shared) => Tensor(shared),
        }
    }

    /// The values of a conjugated view as an ordinary tensor (this tensor
    /// when it is not one).
    pub(crate) fn resolved(&self) -> Result<Tensor> {
        if !self.is_conj() {
            return Ok(self.clone());
        }
        // the unmarked memory, conjugated physically
        self.conj_view()?.conj_physical()
    }
}

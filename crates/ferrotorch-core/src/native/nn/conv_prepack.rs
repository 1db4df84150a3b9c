//! Convolution filters transformed once and kept: the constant filters of
//! frozen graphs, and the filters of convolutions run without gradients.
//!
//! # Note [Prepacked convolution filters]
//! A Winograd convolution transforms its 3×3 filters first (`[16, O, C]`,
//! or `Uᵀ` for Note [Winograd for few tiles]), which for the 512-channel
//! layers of a ResNet at batch 1 costs as much as the convolution. The
//! transforms are kept, per filter tensor, in two places:
//!
//! - the JIT's interpreter keeps a [`PrepackedFilters`] for each constant
//!   filter of a convolution node of a graph and runs the node inside
//!   [`PrepackedFilters::scope`]: the op is still called through the
//!   dispatcher (traced, checked and computed as any call), and the
//!   Winograd path, finding the filter it was given in scope, uses the
//!   transform an earlier call made (PyTorch's `optimize_for_inference`
//!   prepacks its frozen convolutions' weights in the same spirit);
//! - an eager convolution with grad mode off (inference under `no_grad`)
//!   keeps its filter's transforms in a registry that holds the filter's
//!   storage weakly: they are dropped with the filter (at the registry's
//!   next use). With grad mode on (training) nothing is kept, since the
//!   filters change every step.
//!
//! A kept form applies only to the filter it was made from (the same
//! storage, offset, shape, strides and dtype) at the storage version it
//! was made at: an in-place write through ferrotorch bumps the version,
//! and the next call transforms again. Memory that can be written without
//! the version counter (external memory such as a `from_numpy` array's,
//! shared memory, a storage whose address went to NumPy, DLPack,
//! JavaScript or C: `Storage::mark_exported`) is never prepacked; each
//! call transforms its filter then.

use crate::error::Result;
use crate::storage::WeakStorage;
use crate::tensor::Tensor;
use crate::DType;
use std::cell::RefCell;
use std::sync::{Arc, Mutex};

/// The transformed forms of one filter tensor, each made when first
/// needed (which one a call needs depends on its input's size).
#[derive(Default)]
pub(super) struct Forms {
    /// `[16, O, C]` (`ferrotorch_kernels::winograd::transform_weights`).
    pub(super) u: Option<Tensor>,
    /// `[16, C, O']` (`ferrotorch_kernels::winograd_few::transform_weights_t`).
    pub(super) ut: Option<Tensor>,
    /// `[36, O, C]` (`ferrotorch_kernels::winograd4::transform_weights`).
    pub(super) u4: Option<Tensor>,
}

/// The transforms kept for one filter tensor (Note [Prepacked convolution
/// filters]). It holds the filter's storage weakly.
pub struct PrepackedFilters {
    storage: WeakStorage,
    offset: usize,
    shape: Vec<usize>,
    stride: Vec<usize>,
    dtype: DType,
    /// The storage version the forms were made at, and the forms.
    forms: Mutex<(u64, Forms)>,
}

thread_local! {
    static SCOPE: RefCell<Option<Arc<PrepackedFilters>>> = const { RefCell::new(None) };
}

/// Eager calls' kept transforms (grad mode off), pruned of dead filters
/// whenever one is added.
static EAGER: Mutex<Vec<Arc<PrepackedFilters>>> = Mutex::new(Vec::new());

impl PrepackedFilters {
    /// Kept forms for `weight` (none made yet).
    pub fn new(weight: &Tensor) -> Arc<PrepackedFilters> {
        Arc::new(PrepackedFilters {
            storage: weight.storage().downgrade(),
            offset: weight.storage_offset(),
            shape: weight.shape().to_vec(),
            stride: weight.stride().to_vec(),
            dtype: weight.dtype(),
            forms: Mutex::new((weight.version(), Forms::default())),
        })
    }

    /// Whether these are `w`'s: the same storage, offset, shape, strides
    /// and dtype.
    pub fn is_for(&self, w: &Tensor) -> bool {
        self.storage
            .upgrade()
            .is_some_and(|s| s.is_same(w.storage()))
            && w.storage_offset() == self.offset
            && w.shape() == self.shape
            && w.stride() == self.stride
            && w.dtype() == self.dtype
    }

    /// Run `f` (a call of a convolution op taking this filter) with these
    /// forms available to it; the previous scope is restored afterwards.
    pub fn scope<R>(self: &Arc<Self>, f: impl FnOnce() -> R) -> R {
        struct Restore(Option<Arc<PrepackedFilters>>);
        impl Drop for Restore {
            fn drop(&mut self) {
                let prev = self.0.take();
                SCOPE.with(|s| *s.borrow_mut() = prev);
            }
        }
        let prev = SCOPE.with(|s| s.borrow_mut().replace(self.clone()));
        let _restore = Restore(prev);
        f()
    }
}

/// Whether `w`'s memory is written only by ferrotorch: allocator-owned and
/// never handed to foreign code, so that every write bumps its version.
fn private(w: &Tensor) -> bool {
    let st = w.storage();
    st.resizable() && !st.is_exported()
}

/// The kept forms for filter `w`, if any may be kept: the scope's when
/// they are `w`'s, else with grad mode off the eager registry's (made
/// there when missing when `add`).
fn kept(w: &Tensor, add: bool) -> Option<Arc<PrepackedFilters>> {
    if !private(w) {
        return None;
    }
    if let Some(p) = SCOPE.with(|s| s.borrow().clone()).filter(|p| p.is_for(w)) {
        return Some(p);
    }
    if crate::autograd::is_grad_enabled() {
        return None;
    }
    let mut reg = EAGER.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(p) = reg.iter().find(|p| p.is_for(w)) {
        return Some(p.clone());
    }
    if !add {
        return None;
    }
    reg.retain(|p| p.storage.alive());
    let p = PrepackedFilters::new(w);
    reg.push(p.clone());
    Some(p)
}

/// Whether a call with filter `w` keeps its transforms (so a path that
/// pays only when they are kept may be taken).
pub(super) fn keeps(w: &Tensor) -> bool {
    private(w)
        && (!crate::autograd::is_grad_enabled()
            || SCOPE.with(|s| s.borrow().as_ref().is_some_and(|p| p.is_for(w))))
}

/// The form `pick` selects of filter `w`: the kept one when it is up to
/// date, else made by `make` (and kept, where `w`'s may be).
pub(super) fn form(
    w: &Tensor,
    pick: fn(&mut Forms) -> &mut Option<Tensor>,
    make: impl FnOnce() -> Result<Tensor>,
) -> Result<Tensor> {
    let Some(p) = kept(w, true) else {
        return make();
    };
    let mut g = p.forms.lock().unwrap_or_else(|e| e.into_inner());
    let now = w.version();
    if g.0 != now {
        *g = (now, Forms::default());
    }
    if let Some(t) = pick(&mut g.1) {
        return Ok(t.clone());
    }
    let t = make()?;
    *pick(&mut g.1) = Some(t.clone());
    Ok(t)
}

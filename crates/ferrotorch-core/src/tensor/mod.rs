//! The `Tensor` type (c10 `TensorImpl`): a strided view of a [`Storage`].
//!
//! A `Tensor` is an `Arc` around its metadata, so `clone()` is cheap and
//! shares both metadata and data (like assigning a Python variable). Ops that
//! change shape or strides return a new `Tensor` viewing the same storage.

pub mod access;
pub(crate) mod conj;
pub(crate) mod create;
pub(crate) mod create_ops;
pub(crate) mod data;
pub mod display;
pub mod dlpack;
mod external;
pub mod index;
pub mod layout;
pub mod memory_format;
pub mod shared;
mod view;

pub use create::{tensor, FlatData, TensorData, TensorOptions};
pub use index::{step, IntoIndices, TensorIndex, ELLIPSIS, NEW_AXIS};
pub use layout::{Dims, Layout};

use crate::device::Device;
use crate::dtype::DType;
use crate::error::Result;
use crate::storage::Storage;
use memory_format::MemoryFormat;
use std::sync::Arc;

pub(crate) struct TensorImpl {
    pub(crate) storage: Storage,
    pub(crate) layout: Layout,
    pub(crate) dtype: DType,
    /// requires_grad, grad, grad_fn, hooks (`autograd::meta`).
    pub(crate) autograd: crate::autograd::meta::MetaCell,
    /// For views: the tensor (not itself a view) whose storage this views
    /// (Note [In-place autograd]).
    pub(crate) base: Option<Tensor>,
    /// Set on a lazily conjugated view (Note [The conjugate bit]).
    pub(crate) conj: Option<conj::ConjMark>,
    /// For views: the storage's version when the view was made. A view
    /// with no history of its own whose storage was written in place since,
    /// while its base takes part in the graph, takes its history from the
    /// base (`Tensor::requires_grad`), as torch's views do.
    pub(crate) made_at: u64,
}

/// An n-dimensional array with a runtime dtype over shared, strided storage.
///
/// `Tensor` is `Send + Sync`; `clone()` shares (it is an `Arc`); use
/// [`Tensor::deep_clone`] (PyTorch's `t.clone()`) for a copy of the data.
#[derive(Clone)]
pub struct Tensor(pub(crate) Arc<TensorImpl>);

impl Tensor {
    /// Assemble a tensor from a storage and a layout, checking that the
    /// layout stays inside the storage.
    pub fn from_storage(storage: Storage, layout: Layout, dtype: DType) -> Result<Tensor> {
        let need = layout
            .required_elems()
            .and_then(|e| e.checked_mul(dtype.size()));
        crate::ensure!(
            need.is_some_and(|n| n <= storage.nbytes()),
            Runtime,
            "setStorage: sizes {:?}, strides {:?}, storage offset {}, and itemsize {} requiring a storage size of {} are out of bounds for storage of size {}",
            layout.sizes(),
            layout.strides(),
            layout.offset(),
            dtype.size(),
            need.map_or("overflow".to_string(), |n| n.to_string()),
            storage.nbytes()
        );
        // Kernels read whole elements through typed pointers: external
        // memory at an odd address (Note [Untrusted array memory] in the
        // Python binding) must never reach them, in any build profile.
        crate::ensure!(
            layout.numel() == 0 || (storage.data_ptr() as usize).is_multiple_of(dtype.size()),
            Runtime,
            "setStorage: the storage's data at {:p} is not aligned to the {}-byte elements of {}",
            storage.data_ptr(),
            dtype.size(),
            dtype
        );
        Ok(Tensor::from_parts(storage, layout, dtype))
    }

    pub(crate) fn from_parts(storage: Storage, layout: Layout, dtype: DType) -> Tensor {
        Tensor::with_base(storage, layout, dtype, None)
    }

    pub(crate) fn with_base(
        storage: Storage,
        layout: Layout,
        dtype: DType,
        base: Option<Tensor>,
    ) -> Tensor {
        let made_at = if base.is_some() { storage.version() } else { 0 };
        Tensor(Arc::new(TensorImpl {
            storage,
            layout,
            dtype,
            autograd: crate::autograd::meta::MetaCell::new_inference(
                crate::autograd::is_inference_mode_enabled(),
            ),
            base,
            conj: None,
            made_at,
        }))
    }

    /// Sizes (`t.shape`, `t.size()`).
    pub fn shape(&self) -> &[usize] {
        self.0.layout.sizes()
    }

    /// Same as [`Tensor::shape`] (`t.size()`).
    pub fn size(&self) -> &[usize] {
        self.shape()
    }

    /// Size of one dimension; negative dims count from the end. A 0-dim
    /// tensor has none: an IndexError, as in torch.
    pub fn size_at(&self, dim: i64) -> Result<usize> {
        Ok(self.shape()[self.existing_dim(dim)?])
    }

    /// Stride of one dimension, in elements (`t.stride(dim)`).
    pub fn stride_at(&self, dim: i64) -> Result<usize> {
        Ok(self.stride()[self.existing_dim(dim)?])
    }

    /// `dim` wrapped, for a query of a dimension that must exist.
    fn existing_dim(&self, dim: i64) -> Result<usize> {
        crate::ensure!(
            self.dim() > 0,
            Index,
            "Dimension specified as {dim} but tensor has no dimensions"
        );
        layout::wrap_dim(dim, self.dim())
    }

    /// Strides in elements (`t.stride()`).
    pub fn stride(&self) -> &[usize] {
        self.0.layout.strides()
    }

    /// Offset of element 0 in the storage, in elements.
    pub fn storage_offset(&self) -> usize {
        self.0.layout.offset()
    }

    /// Number of dimensions (`t.dim()`).
    pub fn dim(&self) -> usize {
        self.0.layout.ndim()
    }

    /// Number of elements (`t.numel()`).
    pub fn numel(&self) -> usize {
        self.0.layout.numel()
    }

    /// Element type.
    pub fn dtype(&self) -> DType {
        self.0.dtype
    }

    /// Device.
    pub fn device(&self) -> Device {
        self.0.storage.device()
    }

    /// Bytes per element.
    pub fn element_size(&self) -> usize {
        self.0.dtype.size()
    }

    /// Whether the layout is row-major contiguous.
    pub fn is_contiguous(&self) -> bool {
        self.0.layout.is_contiguous()
    }

    /// `dtype.is_floating_point`.
    pub fn is_floating_point(&self) -> bool {
        self.0.dtype.is_floating_point()
    }

    /// The layout (sizes, strides, offset).
    pub fn layout(&self) -> &Layout {
        &self.0.layout
    }

    /// The underlying storage (shared by all views).
    pub fn storage(&self) -> &Storage {
        &self.0.storage
    }

    /// Address of element 0 (`t.data_ptr()`).
    pub fn data_ptr(&self) -> *mut u8 {
        // Not `add`: an empty view's offset may lie past its storage (see
        // `Layout::required_elems`); a non-empty one lies within it, checked
        // when the view was made, and only those are ever dereferenced.
        self.0
            .storage
            .data_ptr()
            .wrapping_add(self.storage_offset() * self.element_size())
    }

    /// The version counter of the storage (Note [Version counter]).
    pub fn version(&self) -> u64 {
        self.0.storage.version()
    }

    /// Count an in-place change made behind the ops' back
    /// (`torch.autograd.graph.increment_version`): a node that saved this
    /// tensor then refuses to use it.
    pub fn increment_version(&self) {
        self.0.storage.bump_version();
    }

    /// Whether two handles are the same tensor object.
    pub fn is_same(&self, other: &Tensor) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// An identity for this tensor object (not its storage), unique among
    /// the tensors alive at the same time (Python's `id(t)`); the JIT's
    /// tracer maps tensors to graph values by it while holding them.
    pub fn object_id(&self) -> usize {
        Arc::as_ptr(&self.0) as usize
    }

    /// A new tensor over the same storage with another layout. The caller
    /// guarantees the layout stays inside the storage.
    pub(crate) fn with_layout(&self, layout: Layout) -> Tensor {
        debug_assert!(
            layout
                .required_elems()
                .is_some_and(|e| e * self.element_size() <= self.storage().nbytes()),
            "view out of storage bounds"
        );
        let base = self.0.base.clone().unwrap_or_else(|| self.clone());
        let view = Tensor::with_base(self.0.storage.clone(), layout, self.0.dtype, Some(base));
        // a view of a conjugated view is one too (Note [The conjugate bit])
        view.marked_like(self)
    }

    /// The tensor this one is a view of (`t._base`), if it is a view.
    pub fn view_base(&self) -> Option<Tensor> {
        self.0.base.clone()
    }

    /// Whether this tensor is a view of another (`t._is_view()`).
    pub fn is_view(&self) -> bool {
        self.0.base.is_some()
    }
}

// Tensor is shared across threads; data access is synchronised by
// Note [Storage access locks].
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Tensor>();
};

/// Dispatcher entries of the view and data ops defined in this module
/// (typed kernels: Note [Typed kernels]).
pub(crate) fn register_views(r: &mut crate::dispatch::Registry) {
    use crate::scalar::Scalar;
    index::register(r);
    view::register_views(r);
    r.def_typed(
        "expand(Tensor(a) self, SymInt[] size, *, bool implicit=False) -> Tensor(a)",
        |x: Tensor, size: Vec<i64>, _implicit: bool| x.expand(&size),
    );
    // `x.split([2, 3])`
    r.def_typed(
        "contiguous(Tensor(a) self, *, MemoryFormat memory_format=contiguous_format) -> Tensor(a)",
        |x: Tensor, f: MemoryFormat| match f {
            MemoryFormat::Contiguous => x.contiguous(),
            f => x.contiguous_as(f),
        },
    );
    r.def_typed("detach(Tensor(a) self) -> Tensor(a)", |x: Tensor| {
        Ok(x.detach())
    });
    r.def_typed(
        "clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor",
        |x: Tensor, f: Option<MemoryFormat>| match f {
            None | Some(MemoryFormat::Preserve) => x.deep_clone(),
            Some(f) => x.clone_as(f),
        },
    );
    r.def_typed(
        "copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!)",
        |x: Tensor, src: Tensor, _non_blocking: bool| x.copy_(&src).map(|()| x),
    );
    r.def_typed(
        "fill_.Scalar(Tensor(a!) self, Scalar value) -> Tensor(a!)",
        |x: Tensor, v: Scalar| x.fill_(v).map(|()| x),
    );
    r.def_typed("zero_(Tensor(a!) self) -> Tensor(a!)", |x: Tensor| {
        x.zero_().map(|()| x)
    });
    r.def_typed(
        "to.dtype(Tensor(a) self, ScalarType dtype) -> Tensor(a)",
        |x: Tensor, d: DType| x.to_dtype(d),
    );
}

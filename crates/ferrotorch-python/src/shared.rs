//! Shared memory from Python (Note [Shared memory] in ferrotorch-core):
//! `Tensor.share_memory_()` / `is_shared()`, `UntypedStorage`'s, and the
//! two halves `ferrotorch.multiprocessing`'s reductions pickle: a shared
//! tensor's descriptor plus description, and the tensor rebuilt from them.

use crate::errors::{guarded, IntoPy};
use crate::storage::PyUntypedStorage;
use crate::tensor::PyTensor;
use ferrotorch_core::storage::shared::SharedFile;
use ferrotorch_core::tensor::shared::SharedTensorMeta;
use ferrotorch_core::{DType, Tensor};
use pyo3::prelude::*;
use std::os::fd::{FromRawFd, OwnedFd};

/// What `_share_tensor` returns besides the descriptor: dtype name, sizes,
/// strides, storage offset (elements), the storage's byte offset in its
/// file, its byte size, requires_grad.
type Meta = (String, Vec<usize>, Vec<usize>, usize, usize, usize, bool);

#[pymethods]
impl PyTensor {
    /// `t.share_memory_()`: move the storage into shared memory, in place
    /// (every view follows); returns `t`.
    fn share_memory_(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
        let t = slf.borrow().t.clone();
        guarded("share_memory_", || t.share_memory_().map(|_| ()))?;
        Ok(slf)
    }

    /// `t.is_shared()`: whether the storage is in shared memory.
    fn is_shared(&self) -> bool {
        self.t.is_shared()
    }
}

#[pymethods]
impl PyUntypedStorage {
    /// `storage.share_memory_()`: move into shared memory, in place.
    fn share_memory_(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
        let s = slf.borrow().storage.clone();
        guarded("share_memory_", || s.share_memory_())?;
        Ok(slf)
    }

    /// `storage.is_shared()`.
    fn is_shared(&self) -> bool {
        self.storage.is_shared()
    }

    /// `storage._share_fd_cpu_()`: share the storage and return `(fd,
    /// nbytes, offset)`: its file's descriptor (owned by the storage: dup
    /// it to keep it), its size, and where in the file it starts (small
    /// storages share one file, Note [Shared memory]; torch returns
    /// `(fd, size)`, with the storage always at offset 0).
    fn _share_fd_cpu_(&self) -> PyResult<(i32, usize, usize)> {
        let s = self.storage.clone();
        guarded("_share_fd_cpu_", || s.share_memory_())?;
        let (file, offset) = self.storage.shared_file().expect("shared");
        Ok((file.fd(), self.storage.nbytes(), offset))
    }

    /// `UntypedStorage._new_shared_fd_cpu(fd, size, offset=0)`: the storage
    /// another process shared, from a descriptor of its file (duplicated
    /// here; the caller keeps `fd`), checked first.
    #[staticmethod]
    #[pyo3(signature = (fd, size, offset=0))]
    fn _new_shared_fd_cpu(fd: i32, size: usize, offset: usize) -> PyResult<PyUntypedStorage> {
        let file = open_dup(fd)?;
        let storage = ferrotorch_core::storage::Storage::from_shared(file, offset, size).py()?;
        Ok(PyUntypedStorage { storage })
    }
}

/// Duplicate `fd` (close-on-exec) and map the file it names.
fn open_dup(fd: i32) -> PyResult<std::sync::Arc<SharedFile>> {
    // SAFETY: F_DUPFD_CLOEXEC makes a new descriptor or fails.
    let dup = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
    if dup < 0 {
        return Err(pyo3::exceptions::PyOSError::new_err(format!(
            "shared memory: descriptor {fd}: {}",
            std::io::Error::last_os_error()
        )));
    }
    // SAFETY: a fresh descriptor we own.
    let owned = unsafe { OwnedFd::from_raw_fd(dup) };
    SharedFile::open(owned).py()
}

/// `_C._share_tensor(t)`: move `t`'s storage into shared memory (if not
/// yet) and return `(fd, meta)` for `ferrotorch.multiprocessing`'s
/// reduction; `fd` belongs to the storage (the reduction duplicates it).
#[pyfunction]
pub fn _share_tensor(t: PyRef<'_, PyTensor>) -> PyResult<(i32, Meta)> {
    let t = t.t.clone();
    let (file, m) = guarded("share_memory_", || t.to_shared())?;
    Ok((
        file.fd(),
        (
            m.dtype.name().to_string(),
            m.sizes,
            m.strides,
            m.storage_offset,
            m.file_offset,
            m.storage_nbytes,
            m.requires_grad,
        ),
    ))
}

/// `_C._tensor_from_shared(fd, meta)`: the tensor another process shared,
/// every part of `meta` checked against the file `fd` names (the caller
/// keeps `fd`; it is duplicated here).
#[pyfunction]
pub fn _tensor_from_shared(py: Python<'_>, fd: i32, meta: Meta) -> PyResult<Bound<'_, PyAny>> {
    let (dtype, sizes, strides, storage_offset, file_offset, storage_nbytes, requires_grad) = meta;
    let Some(dtype) = DType::from_name(&dtype) else {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "shared memory: unknown dtype {dtype:?}"
        )));
    };
    let file = open_dup(fd)?;
    let meta = SharedTensorMeta {
        dtype,
        sizes,
        strides,
        storage_offset,
        file_offset,
        storage_nbytes,
        requires_grad,
    };
    let t = Tensor::from_shared(file, &meta).py()?;
    crate::convert::wrap(py, t)
}

/// `_C._shared_files()`: how many shared-memory files this process maps.
#[pyfunction]
pub fn _shared_files() -> usize {
    SharedFile::mapped_count()
}

/// `_C._empty_shared(sizes, dtype)`: a new zeroed contiguous tensor in
/// shared memory (where DataLoader workers collate a batch).
#[pyfunction]
pub fn _empty_shared<'py>(
    py: Python<'py>,
    sizes: Vec<usize>,
    dtype: PyRef<'_, crate::dtype::PyDType>,
) -> PyResult<Bound<'py, PyAny>> {
    let dtype = dtype.dtype;
    let t = guarded("empty", || {
        let numel = ferrotorch_core::tensor::layout::checked_numel("empty", &sizes)?;
        let nbytes = numel.checked_mul(dtype.size()).ok_or_else(|| {
            ferrotorch_core::Error::new(
                ferrotorch_core::ErrorKind::Runtime,
                format!("empty: {sizes:?} elements of {dtype} overflow"),
            )
        })?;
        let s = ferrotorch_core::storage::Storage::new_shared(nbytes)?;
        let layout = ferrotorch_core::tensor::Layout::contiguous("empty", &sizes)?;
        Tensor::from_storage(s, layout, dtype)
    })?;
    crate::convert::wrap(py, t)
}

/// `_C._stack_shared(tensors)`: `torch.stack(tensors, 0)` written straight
/// into a new tensor in shared memory, as torch's `default_collate` does in
/// a DataLoader worker (the batch then crosses to the main process as a
/// descriptor, never copied again). Tensors that `stack` would refuse give
/// its error.
#[pyfunction]
pub fn _stack_shared<'py>(
    py: Python<'py>,
    tensors: Vec<PyRef<'py, PyTensor>>,
) -> PyResult<Bound<'py, PyAny>> {
    let ts: Vec<Tensor> = tensors.iter().map(|t| t.t.clone()).collect();
    let out = py.detach(|| {
        guarded("stack", || {
            ferrotorch_core::tensor::shared::stack_shared(&ts)
        })
    })?;
    crate::convert::wrap(py, out)
}

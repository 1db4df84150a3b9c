//! `t.untyped_storage()`: the shared buffer under a tensor and its views.

use crate::errors::guarded;
use ferrotorch_core::storage::Storage;
use ferrotorch_core::tensor::Layout;
use ferrotorch_core::Tensor;
use pyo3::prelude::*;

/// `torch.UntypedStorage`, enough to compare and size buffers.
#[pyclass(name = "UntypedStorage", module = "ferrotorch", frozen)]
pub struct PyUntypedStorage {
    /// The buffer.
    pub storage: Storage,
}

#[pymethods]
impl PyUntypedStorage {
    /// Address of the first byte.
    fn data_ptr(&self) -> usize {
        self.storage.data_ptr() as usize
    }

    /// Size in bytes.
    fn nbytes(&self) -> usize {
        self.storage.nbytes()
    }

    /// Size in bytes (`len(storage)`).
    fn size(&self) -> usize {
        self.storage.nbytes()
    }

    fn __len__(&self) -> usize {
        self.storage.nbytes()
    }

    /// `storage._as_tensor(dtype)`: a 1-D tensor of `dtype` over all of the
    /// bytes, sharing them (how `TypedStorage` reads and writes elements).
    fn _as_tensor<'py>(
        &self,
        py: Python<'py>,
        dtype: PyRef<'_, crate::dtype::PyDType>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let d = dtype.dtype;
        let n = self.storage.nbytes();
        if !n.is_multiple_of(d.size()) {
            return Err(pyo3::exceptions::PyRuntimeError::new_err(format!(
                "TypedStorage: a storage of {n} bytes is not a whole number of {d} elements ({} bytes each)",
                d.size()
            )));
        }
        let storage = self.storage.clone();
        let t = guarded("TypedStorage", || {
            Tensor::from_storage(
                storage,
                Layout::contiguous("TypedStorage", &[n / d.size()])?,
                d,
            )
        })?;
        crate::convert::wrap(py, t)
    }

    /// The device the bytes live on.
    #[getter]
    fn device(&self) -> String {
        self.storage.device().to_string()
    }
}

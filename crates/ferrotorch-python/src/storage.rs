//! `t.untyped_storage()`: the shared buffer under a tensor and its views.

use ferrotorch_core::storage::Storage;
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

    /// The device the bytes live on.
    #[getter]
    fn device(&self) -> String {
        self.storage.device().to_string()
    }
}

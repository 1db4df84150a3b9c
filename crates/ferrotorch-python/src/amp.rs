//! `torch.autocast("cpu")` regions for the Python package (Note [Autocast
//! at the dispatcher] in the core).

use crate::dtype::PyDType;
use crate::errors::to_py;
use pyo3::prelude::*;

/// `_C._autocast_enter(dtype, enabled)`: open a region on this thread.
#[pyfunction]
#[pyo3(signature = (dtype=None, enabled=true))]
pub fn _autocast_enter(dtype: Option<PyRef<'_, PyDType>>, enabled: bool) -> PyResult<()> {
    ferrotorch_core::amp::enter(dtype.map(|d| d.dtype), enabled).map_err(to_py)
}

/// `_C._autocast_exit()`: close the innermost region.
#[pyfunction]
pub fn _autocast_exit() -> PyResult<()> {
    ferrotorch_core::amp::exit().map_err(to_py)
}

/// Whether CPU autocast is on for this thread.
#[pyfunction]
pub fn _autocast_is_enabled() -> bool {
    ferrotorch_core::amp::is_enabled()
}

/// The dtype CPU autocast runs listed ops in.
#[pyfunction]
pub fn _autocast_get_dtype(py: Python<'_>) -> Bound<'_, PyDType> {
    crate::dtype::dtype_object(py, ferrotorch_core::amp::get_dtype())
}

/// Set this thread's CPU autocast dtype.
#[pyfunction]
pub fn _autocast_set_dtype(dtype: PyRef<'_, PyDType>) -> PyResult<()> {
    ferrotorch_core::amp::set_dtype(dtype.dtype).map_err(to_py)
}

//! `ferrotorch.save` / `ferrotorch.load` bytes: the nn crate's safetensors
//! writer and validating reader (byte-identical to `safetensors.torch`),
//! so the Python package does not carry a second implementation.

use crate::convert::wrap;
use crate::errors::IntoPy;
use crate::tensor::PyTensor;
use ferrotorch_nn::safetensors;
use ferrotorch_nn::StateDict;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use std::collections::BTreeMap;

/// `_C._safetensors_save(tensors, metadata)`: safetensors bytes of a
/// `{name: tensor}` dict with string metadata.
#[pyfunction]
pub fn _safetensors_save<'py>(
    py: Python<'py>,
    tensors: Vec<(String, PyRef<'py, PyTensor>)>,
    metadata: BTreeMap<String, String>,
) -> PyResult<Bound<'py, PyBytes>> {
    let mut sd = StateDict::new();
    for (name, t) in tensors {
        sd.insert(name, t.t.detach());
    }
    let bytes = py.detach(|| safetensors::save(&sd, Some(&metadata))).py()?;
    Ok(PyBytes::new(py, &bytes))
}

/// `_C._safetensors_load(data)`: `({name: tensor}, metadata)`, every
/// offset, dtype and shape validated (never runs code from the file).
#[pyfunction]
pub fn _safetensors_load<'py>(
    py: Python<'py>,
    data: &[u8],
) -> PyResult<(Bound<'py, PyDict>, BTreeMap<String, String>)> {
    let sd = safetensors::load(data).py()?;
    let meta = safetensors::metadata(data).py()?;
    let out = PyDict::new(py);
    for (name, t) in sd.iter() {
        out.set_item(name, wrap(py, t.clone())?)?;
    }
    Ok((out, meta))
}

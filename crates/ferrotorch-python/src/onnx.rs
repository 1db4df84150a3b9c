//! `torch.onnx.export`'s native half: a traced module written as an ONNX
//! model (Note [ONNX export] in `ferrotorch-jit`).

use crate::errors::guarded;
use crate::jit::PyScriptModule;
use ferrotorch_jit::onnx::{export, ExportOptions};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// `_C._onnx_export(module, input_names, output_names, dynamic_axes,
/// opset)`: the model's bytes; `dynamic_axes` is `[(name, [(axis,
/// dim name)])]`.
#[pyfunction]
pub fn _onnx_export<'py>(
    py: Python<'py>,
    m: PyRef<'py, PyScriptModule>,
    input_names: Vec<String>,
    output_names: Vec<String>,
    dynamic_axes: Vec<(String, Vec<(usize, String)>)>,
    opset: Option<i64>,
) -> PyResult<Bound<'py, PyBytes>> {
    let opts = ExportOptions {
        input_names,
        output_names,
        dynamic_axes,
        opset_version: opset,
    };
    let bytes = guarded("onnx.export", || export(&m.m, &opts))?;
    Ok(PyBytes::new(py, &bytes))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_onnx_export, m)?)
}

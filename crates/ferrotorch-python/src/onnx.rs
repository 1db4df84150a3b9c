//! `torch.onnx.export`'s native half: a traced module written as an ONNX
//! model (Note [ONNX export] in `ferrotorch-jit`).

use crate::errors::guarded;
use crate::jit::PyScriptModule;
use ferrotorch_jit::onnx::{export, ExportOptions};
use pyo3::prelude::*;

/// A model's bytes, handed to Python without a copy: a read-only buffer
/// (`memoryview(model)`, `f.write(model)`) over the exporter's output.
#[pyclass(name = "_ModelBytes", module = "ferrotorch._C", frozen)]
pub struct ModelBytes(Vec<u8>);

#[pymethods]
impl ModelBytes {
    fn __len__(&self) -> usize {
        self.0.len()
    }

    /// # Safety
    /// `view` is the buffer Python asks to fill; `PyBuffer_FillInfo`
    /// keeps a reference to `slf`, so the bytes (never resized: the class
    /// is frozen) outlive every view of them.
    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut pyo3::ffi::Py_buffer,
        flags: std::os::raw::c_int,
    ) -> PyResult<()> {
        let bytes = &slf.get().0;
        // SAFETY: see above; the buffer is read-only.
        let rc = unsafe {
            pyo3::ffi::PyBuffer_FillInfo(
                view,
                slf.as_ptr(),
                bytes.as_ptr() as *mut std::os::raw::c_void,
                bytes.len() as pyo3::ffi::Py_ssize_t,
                1,
                flags,
            )
        };
        if rc == -1 {
            return Err(PyErr::fetch(slf.py()));
        }
        Ok(())
    }
}

/// `_C._onnx_export(module, input_names, output_names, dynamic_axes,
/// opset, path=None)`: the model's bytes (a buffer), or with `path` the model
/// written there (and `None`); `dynamic_axes` is `[(name, [(axis, dim
/// name)])]`.
#[pyfunction]
#[pyo3(signature = (m, input_names, output_names, dynamic_axes, opset, path=None))]
pub fn _onnx_export<'py>(
    py: Python<'py>,
    m: PyRef<'py, PyScriptModule>,
    input_names: Vec<String>,
    output_names: Vec<String>,
    dynamic_axes: Vec<(String, Vec<(usize, String)>)>,
    opset: Option<i64>,
    path: Option<std::path::PathBuf>,
) -> PyResult<Option<Bound<'py, ModelBytes>>> {
    let opts = ExportOptions {
        input_names,
        output_names,
        dynamic_axes,
        opset_version: opset,
    };
    let bytes = guarded("onnx.export", || export(&m.m, &opts))?;
    match path {
        Some(p) => {
            std::fs::write(&p, &bytes).map_err(|e| {
                pyo3::exceptions::PyOSError::new_err(format!(
                    "onnx.export: cannot write {}: {e}",
                    p.display()
                ))
            })?;
            Ok(None)
        }
        None => Ok(Some(Bound::new(py, ModelBytes(bytes))?)),
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<ModelBytes>()?;
    m.add_function(wrap_pyfunction!(_onnx_export, m)?)
}

//! Zero-copy exchange with NumPy: the buffer protocol in, the array
//! interface out.
//!
//! # Note [NumPy without linking NumPy]
//! The extension does not link NumPy's C API. `from_numpy(a)` takes the
//! array's memory through the buffer protocol (`PyObject_GetBuffer`), which
//! NumPy's own C code answers for a real `numpy.ndarray`: the pointer,
//! shape, strides, format and read-only flag come from the exporter that
//! owns the memory, and the export is held (so the memory stays valid and
//! its owner cannot be resized) until the last tensor over it is dropped.
//! `t.numpy()` hands NumPy this tensor's pointer and strides through
//! `__array_interface__`, and NumPy keeps the tensor alive as the array's
//! base. Either way writes are seen on both sides, as in torch.
//!
//! # Note [Untrusted array memory]
//! Nothing that merely *describes* memory is believed: an object that is
//! not a `numpy.ndarray` but has an `__array_interface__` (whose `data`
//! could name any address) is not imported as an array at all; it goes
//! through the generic sequence path, or is refused. Imported memory is
//! validated before a tensor views it: the format must be a supported,
//! native-order dtype, strides non-negative multiples of the item size, the
//! extent must not overflow, and the data must be aligned to its element
//! size (kernels read whole elements). A misaligned array (`np.frombuffer`
//! at an odd offset) is refused by `from_numpy`, which promises to share
//! memory, and copied by `tensor`, `as_tensor` and op arguments. Memory the
//! exporter marks read-only becomes read-only storage (Note [Read-only
//! storage] in the core): in-place writes raise instead of mutating it.

use crate::errors::IntoPy;
use ferrotorch_core::tensor::layout::contiguous_strides;
use ferrotorch_core::{DType, Tensor};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple, PyType};

/// Whether `obj` is a real `numpy.ndarray` (or a subclass): NumPy is
/// looked up in `sys.modules`, so an object can only be one once NumPy is
/// imported. See Note [Untrusted array memory].
pub fn is_ndarray(obj: &Bound<'_, PyAny>) -> bool {
    static NDARRAY: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    let py = obj.py();
    let ty = match NDARRAY.get(py) {
        Some(t) => t.bind(py).clone(),
        None => {
            let found = py
                .import("sys")
                .and_then(|sys| sys.getattr("modules"))
                .and_then(|m| m.get_item("numpy"))
                .and_then(|np| np.getattr("ndarray"))
                .and_then(|t| Ok(t.cast_into::<PyType>()?));
            let Ok(t) = found else {
                return false;
            };
            let _ = NDARRAY.set(py, t.clone().unbind());
            t
        }
    };
    obj.is_instance(&ty).unwrap_or(false)
}

/// A held buffer export, released (under the GIL) when dropped.
struct HeldBuffer(Box<ffi::Py_buffer>);

// SAFETY: the view is only read after creation; the release takes the GIL.
unsafe impl Send for HeldBuffer {}
unsafe impl Sync for HeldBuffer {}

impl Drop for HeldBuffer {
    fn drop(&mut self) {
        // SAFETY: the view was filled by a successful PyObject_GetBuffer
        // and is released exactly once.
        Python::attach(|_| unsafe { ffi::PyBuffer_Release(&mut *self.0) });
    }
}

/// The dtype of a buffer-protocol format with `itemsize` bytes per item;
/// `None` for formats torch has no dtype for. An explicit non-native byte
/// order is an error.
fn dtype_of_format(format: &str, itemsize: usize) -> PyResult<Option<DType>> {
    let (order, code) = match format.chars().next() {
        Some(c @ ('@' | '=' | '<' | '>' | '!')) => (Some(c), &format[1..]),
        _ => (None, format),
    };
    let little = cfg!(target_endian = "little");
    let native = match order {
        None | Some('@') | Some('=') => true,
        Some('<') => little,
        _ => !little,
    };
    let dt = match (code, itemsize) {
        ("d", 8) => Some(DType::F64),
        ("f", 4) => Some(DType::F32),
        ("e", 2) => Some(DType::F16),
        ("Zf", 8) => Some(DType::C64),
        ("Zd", 16) => Some(DType::C128),
        ("q" | "l", 8) => Some(DType::I64),
        ("i" | "l", 4) => Some(DType::I32),
        ("h", 2) => Some(DType::I16),
        ("b", 1) => Some(DType::I8),
        ("B", 1) => Some(DType::U8),
        ("?", 1) => Some(DType::Bool),
        _ => None,
    };
    if dt.is_some() && !native && itemsize > 1 {
        return Err(PyValueError::new_err(
            "given numpy array has byte order different from the native byte order. Conversion between byte orders is currently not supported.",
        ));
    }
    Ok(dt)
}

/// What to do with an array whose data is not aligned to its element size.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Misaligned {
    /// Refuse (`from_numpy` promises to share memory).
    Refuse,
    /// Import an aligned copy (`tensor`, `as_tensor`, op arguments).
    Copy,
}

/// `torch.from_numpy(a)`: a tensor sharing `a`'s memory (Note [NumPy
/// without linking NumPy], Note [Untrusted array memory]). `a` must be a
/// `numpy.ndarray`.
pub fn from_numpy(array: &Bound<'_, PyAny>, misaligned: Misaligned) -> PyResult<Tensor> {
    if !is_ndarray(array) {
        return Err(PyTypeError::new_err(format!(
            "expected np.ndarray (got {})",
            array.get_type().name()?
        )));
    }
    let py = array.py();
    let mut view = Box::new(ffi::Py_buffer::new());
    // SAFETY: `view` is a valid Py_buffer to fill; on failure nothing is
    // held and a Python error is set.
    let rc = unsafe {
        ffi::PyObject_GetBuffer(
            array.as_ptr(),
            &mut *view,
            ffi::PyBUF_STRIDES | ffi::PyBUF_FORMAT,
        )
    };
    if rc != 0 {
        let err = PyErr::fetch(py);
        return Err(unsupported_dtype(array).unwrap_or(err));
    }
    let held = HeldBuffer(view);
    let v = &*held.0;
    let itemsize = v.itemsize.max(0) as usize;
    let format = if v.format.is_null() {
        "B".to_string()
    } else {
        // SAFETY: a non-null format is a NUL-terminated string owned by the view.
        unsafe { std::ffi::CStr::from_ptr(v.format) }
            .to_string_lossy()
            .into_owned()
    };
    let Some(dtype) = dtype_of_format(&format, itemsize)? else {
        return Err(unsupported_dtype(array).unwrap_or_else(|| {
            PyTypeError::new_err(format!("can't convert buffer of format {format}"))
        }));
    };
    let ndim = v.ndim.max(0) as usize;
    let read = |p: *const ffi::Py_ssize_t| -> Vec<isize> {
        if ndim == 0 || p.is_null() {
            return vec![];
        }
        // SAFETY: shape and strides hold `ndim` entries when non-null.
        unsafe { std::slice::from_raw_parts(p, ndim) }.to_vec()
    };
    let shape = read(v.shape);
    let strides = read(v.strides);
    if shape.len() != ndim || shape.iter().any(|&n| n < 0) {
        return Err(PyValueError::new_err(
            "from_numpy: the array reports an invalid shape",
        ));
    }
    let shape: Vec<usize> = shape.iter().map(|&n| n as usize).collect();
    let strides: Vec<usize> = if strides.is_empty() {
        contiguous_strides(&shape).to_vec()
    } else if strides.iter().any(|&s| s < 0) {
        return Err(PyValueError::new_err(
            "At least one stride in the given numpy array is negative, and tensors with negative strides are not currently supported. (You can probably work around this by making a copy of your array  with array.copy().) ",
        ));
    } else if strides
        .iter()
        .any(|&s| !(s as usize).is_multiple_of(itemsize))
    {
        return Err(PyValueError::new_err(
            "given numpy array strides not a multiple of the element byte size. Copy the numpy array to reallocate the memory.",
        ));
    } else {
        strides.iter().map(|&s| s as usize / itemsize).collect()
    };
    let addr = v.buf as usize;
    let empty = shape.contains(&0);
    if !empty && !addr.is_multiple_of(itemsize) {
        return match misaligned {
            Misaligned::Refuse => Err(PyValueError::new_err(format!(
                "from_numpy: the array's data at address {addr:#x} is not aligned to its {itemsize}-byte elements (an np.frombuffer at an odd offset?); pass array.copy(), or use torch.tensor to copy it"
            ))),
            Misaligned::Copy => {
                drop(held);
                from_numpy(&array.call_method0("copy")?, Misaligned::Refuse)
            }
        };
    }
    let readonly = v.readonly != 0;
    // SAFETY: the exporter guarantees the memory its shape and strides
    // reach from `buf` is valid while the export is held; the release
    // closure holds it until the last tensor over the memory is dropped.
    let t = unsafe {
        Tensor::from_external(
            "from_numpy",
            addr,
            dtype,
            &shape,
            Some(&strides),
            readonly,
            move || drop(held),
        )
    }
    .py()?;
    match (t.check_bool_bytes("from_numpy"), misaligned) {
        (Ok(()), _) => Ok(t),
        (Err(e), Misaligned::Refuse) => Err(crate::errors::to_py(e)),
        (Err(_), Misaligned::Copy) => {
            // a bool array whose bytes are not all 0/1: import `array != 0`
            drop(t);
            let np = py.import("numpy")?;
            let fixed = np.call_method1("asarray", (np.call_method1("not_equal", (array, 0))?,))?;
            from_numpy(&fixed, Misaligned::Refuse)
        }
    }
}

/// torch's error for a NumPy dtype it has no dtype for, if `array` has one.
fn unsupported_dtype(array: &Bound<'_, PyAny>) -> Option<PyErr> {
    let name = array.getattr("dtype").ok()?.str().ok()?.to_string();
    Some(PyTypeError::new_err(format!(
        "can't convert np.ndarray of type numpy.{name}. The only supported types are: float64, float32, float16, complex64, complex128, int64, int32, int16, int8, uint8, and bool."
    )))
}

fn typestr_of_dtype(d: DType) -> PyResult<&'static str> {
    let e = if cfg!(target_endian = "little") {
        '<'
    } else {
        '>'
    };
    Ok(match (d, e) {
        (DType::F64, '<') => "<f8",
        (DType::F32, '<') => "<f4",
        (DType::F16, '<') => "<f2",
        (DType::I64, '<') => "<i8",
        (DType::I32, '<') => "<i4",
        (DType::I16, '<') => "<i2",
        (DType::C64, '<') => "<c8",
        (DType::C128, '<') => "<c16",
        (DType::C64, _) => ">c8",
        (DType::C128, _) => ">c16",
        (DType::F64, _) => ">f8",
        (DType::F32, _) => ">f4",
        (DType::F16, _) => ">f2",
        (DType::I64, _) => ">i8",
        (DType::I32, _) => ">i4",
        (DType::I16, _) => ">i2",
        (DType::I8, _) => "|i1",
        (DType::U8, _) => "|u1",
        (DType::Bool, _) => "|b1",
        // NumPy has no bfloat16 and no complex of float16s
        (d @ (DType::BF16 | DType::C32), _) => {
            return Err(PyTypeError::new_err(format!(
                "Got unsupported ScalarType {}",
                d.name_title()
            )))
        }
    })
}

/// `t.__array_interface__` for a CPU tensor that does not require grad.
pub fn array_interface<'py>(py: Python<'py>, t: &Tensor) -> PyResult<Bound<'py, PyDict>> {
    if t.is_conj() {
        // NumPy would see the unconjugated memory (Note [The conjugate bit])
        return Err(pyo3::exceptions::PyRuntimeError::new_err(
            "Can't call numpy() on Tensor that has conjugate bit set. Use tensor.resolve_conj().numpy() instead.",
        ));
    }
    if t.requires_grad() {
        return Err(pyo3::exceptions::PyRuntimeError::new_err(
            "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.",
        ));
    }
    let d = PyDict::new(py);
    d.set_item("shape", PyTuple::new(py, t.shape())?)?;
    d.set_item("typestr", typestr_of_dtype(t.dtype())?)?;
    // NumPy reads the address without our locks (Note [Moving a storage
    // into shared memory])
    t.storage().mark_exported();
    d.set_item("data", (t.data_ptr() as usize, t.storage().is_readonly()))?;
    let item = t.element_size();
    let strides: Vec<usize> = t.stride().iter().map(|s| s * item).collect();
    d.set_item("strides", PyTuple::new(py, strides)?)?;
    d.set_item("version", 3)?;
    Ok(d)
}

#[pymethods]
impl crate::tensor::PyTensor {
    /// NumPy's array interface: `np.asarray(t)` shares this tensor's memory.
    #[getter]
    fn __array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        array_interface(py, &self.t)
    }

    /// `t.numpy(force=False)`: an ndarray sharing this tensor's memory;
    /// `force=True` detaches (and would copy off an accelerator).
    #[pyo3(signature = (*, force=false))]
    fn numpy<'py>(slf: &Bound<'py, Self>, force: bool) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let np = py.import("numpy")?;
        if force && slf.borrow().t.requires_grad() {
            let detached = crate::convert::wrap(py, slf.borrow().t.detach())?;
            return np.call_method1("asarray", (detached,));
        }
        np.call_method1("asarray", (slf,))
    }
}

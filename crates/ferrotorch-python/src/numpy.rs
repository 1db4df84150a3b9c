//! Zero-copy exchange with NumPy through the array interface.
//!
//! # Note [NumPy without linking NumPy]
//! The extension does not link NumPy's C API: both directions go through
//! `__array_interface__` (version 3), which every NumPy since 1.x reads and
//! writes. `from_numpy(a)` wraps `a`'s buffer as external storage whose
//! deleter holds a reference to `a`, so the array lives as long as any
//! tensor viewing it; `t.numpy()` hands NumPy this tensor's pointer and
//! strides, and NumPy keeps the tensor alive as the array's base. Either
//! way writes are seen on both sides, as in torch.

use crate::errors::IntoPy;
use ferrotorch_core::storage::Storage;
use ferrotorch_core::tensor::layout::{contiguous_strides, Layout};
use ferrotorch_core::{DType, Tensor};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use std::ptr::NonNull;

/// Whether `obj` is a NumPy array (or anything exposing the array interface).
pub fn is_ndarray(obj: &Bound<'_, PyAny>) -> bool {
    obj.hasattr("__array_interface__").unwrap_or(false)
        && !obj.is_instance_of::<crate::tensor::PyTensor>()
}

fn dtype_of_typestr(typestr: &str) -> PyResult<DType> {
    let little = cfg!(target_endian = "little");
    let (order, code) = typestr.split_at(1);
    let native = match order {
        "|" | "=" => true,
        "<" => little,
        ">" => !little,
        _ => false,
    };
    let dt = match code {
        "f8" => Some(DType::F64),
        "f4" => Some(DType::F32),
        "f2" => Some(DType::F16),
        "i8" => Some(DType::I64),
        "i4" => Some(DType::I32),
        "i2" => Some(DType::I16),
        "i1" => Some(DType::I8),
        "u1" => Some(DType::U8),
        "b1" => Some(DType::Bool),
        _ => None,
    };
    match dt {
        Some(d) if native => Ok(d),
        Some(_) => Err(PyValueError::new_err(
            "given numpy array has byte order different from the native byte order. Conversion between byte orders is currently not supported.",
        )),
        None => Err(PyTypeError::new_err(format!(
            "can't convert np.ndarray of type {typestr}. The only supported types are: float64, float32, float16, int64, int32, int16, int8, uint8, and bool."
        ))),
    }
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
        (DType::F64, _) => ">f8",
        (DType::F32, _) => ">f4",
        (DType::F16, _) => ">f2",
        (DType::I64, _) => ">i8",
        (DType::I32, _) => ">i4",
        (DType::I16, _) => ">i2",
        (DType::I8, _) => "|i1",
        (DType::U8, _) => "|u1",
        (DType::Bool, _) => "|b1",
        (DType::BF16, _) => {
            return Err(PyTypeError::new_err("Got unsupported ScalarType BFloat16"))
        }
    })
}

/// `torch.from_numpy(a)`: a tensor sharing `a`'s memory (Note [NumPy
/// without linking NumPy]).
pub fn from_numpy(array: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    let ai = array.getattr("__array_interface__")?;
    let ai = ai.cast::<PyDict>()?;
    let get = |k: &str| -> PyResult<Bound<'_, PyAny>> {
        ai.get_item(k)?
            .ok_or_else(|| PyValueError::new_err(format!("__array_interface__ has no '{k}'")))
    };
    let shape: Vec<usize> = get("shape")?.extract()?;
    let typestr: String = get("typestr")?.extract()?;
    let dtype = dtype_of_typestr(&typestr)?;
    let (addr, _readonly): (usize, bool) = get("data")?.extract()?;
    let item = dtype.size() as i64;
    let strides: Option<Vec<i64>> = match ai.get_item("strides")? {
        Some(s) if !s.is_none() => Some(s.extract()?),
        _ => None,
    };
    let elem_strides: Option<Vec<usize>> = match strides {
        None => None,
        Some(st) if st.iter().any(|&s| s < 0) => {
            return Err(PyValueError::new_err(
                "At least one stride in the given numpy array is negative, and tensors with negative strides are not currently supported. (You can probably work around this by making a copy of your array  with array.copy().) ",
            ))
        }
        Some(st) if st.iter().any(|&s| s % item != 0) => {
            return Err(PyValueError::new_err(
                "given numpy array strides not a multiple of the element byte size. Copy the numpy array to reallocate the memory.",
            ))
        }
        Some(st) => Some(st.iter().map(|&s| (s / item) as usize).collect()),
    };
    let owner: Py<PyAny> = array.clone().unbind();
    // SAFETY: the array interface promises the memory the shape and strides
    // reach is valid for as long as the array lives; the release closure
    // keeps the array alive until the last tensor over it is dropped.
    unsafe {
        external_tensor(
            "from_numpy",
            addr,
            dtype,
            &shape,
            elem_strides.as_deref(),
            move || drop(owner),
        )
    }
}

/// A tensor viewing memory someone else owns (a NumPy array, a DLPack
/// producer): `shape` and element `strides` (`None`: row-major) from
/// `addr`; `release` runs when the last tensor over the memory drops.
///
/// # Safety
/// Every element the shape and strides reach from `addr` must stay valid
/// for reads and writes until `release` runs.
pub(crate) unsafe fn external_tensor(
    op: &str,
    addr: usize,
    dtype: DType,
    shape: &[usize],
    strides: Option<&[usize]>,
    release: impl FnOnce() + Send + Sync + 'static,
) -> PyResult<Tensor> {
    let strides = strides.map_or_else(|| contiguous_strides(shape).to_vec(), <[usize]>::to_vec);
    let extent = if shape.contains(&0) {
        0
    } else {
        1 + shape
            .iter()
            .zip(&strides)
            .map(|(&n, &s)| (n - 1) * s)
            .sum::<usize>()
    };
    let ptr = NonNull::new(addr as *mut u8).unwrap_or(NonNull::dangling());
    // SAFETY: the caller promises the extent stays valid until `release`.
    let storage = unsafe { Storage::from_external(ptr, extent * dtype.size(), release) };
    let flat =
        Tensor::from_storage(storage, Layout::contiguous(op, &[extent]).py()?, dtype).py()?;
    flat.as_strided(shape, &strides, Some(0)).py()
}

/// `t.__array_interface__` for a CPU tensor that does not require grad.
pub fn array_interface<'py>(py: Python<'py>, t: &Tensor) -> PyResult<Bound<'py, PyDict>> {
    if t.requires_grad() {
        return Err(pyo3::exceptions::PyRuntimeError::new_err(
            "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.",
        ));
    }
    let d = PyDict::new(py);
    d.set_item("shape", PyTuple::new(py, t.shape())?)?;
    d.set_item("typestr", typestr_of_dtype(t.dtype())?)?;
    d.set_item("data", (t.data_ptr() as usize, false))?;
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

//! DLPack exchange: `t.__dlpack__()`, `t.__dlpack_device__()` and
//! `from_dlpack(obj)`, with versioned (1.x) and legacy capsules.
//!
//! # Note [DLPack capsules]
//! An exported capsule owns a boxed `ManagedTensor` whose context holds a
//! clone of the tensor (so the storage outlives the consumer's use) and the
//! shape and stride arrays. The consumer renames the capsule to
//! `used_dltensor[_versioned]` and later calls the deleter; a capsule never
//! consumed is freed by its destructor, which calls the deleter only while
//! the name is unchanged. On import, the producer's deleter runs when the
//! last tensor over the wrapped storage drops, with the GIL held, because
//! producers such as NumPy release Python references in it.

use crate::convert::wrap;
use crate::errors::IntoPy;
use crate::tensor::PyTensor;
use ferrotorch_core::{DType, Device, Tensor};
use pyo3::exceptions::{PyBufferError, PyRuntimeError};
use pyo3::ffi;
use pyo3::prelude::*;
use std::ffi::{c_void, CStr};

const CPU: i32 = 1;
const READ_ONLY: u64 = 1;
const IS_COPIED: u64 = 1 << 1;

const LEGACY: &CStr = c"dltensor";
const LEGACY_USED: &CStr = c"used_dltensor";
const VERSIONED: &CStr = c"dltensor_versioned";
const VERSIONED_USED: &CStr = c"used_dltensor_versioned";

#[repr(C)]
#[derive(Clone, Copy)]
struct DLDevice {
    device_type: i32,
    device_id: i32,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct DLDataType {
    code: u8,
    bits: u8,
    lanes: u16,
}

#[repr(C)]
struct DLTensor {
    data: *mut c_void,
    device: DLDevice,
    ndim: i32,
    dtype: DLDataType,
    shape: *mut i64,
    strides: *mut i64,
    byte_offset: u64,
}

#[repr(C)]
struct DLManagedTensor {
    dl_tensor: DLTensor,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

#[repr(C)]
struct DLManagedTensorVersioned {
    version: [u32; 2],
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    flags: u64,
    dl_tensor: DLTensor,
}

/// What an exported capsule keeps alive.
struct Ctx {
    _tensor: Tensor,
    _shape: Vec<i64>,
    _strides: Vec<i64>,
}

fn dl_dtype(d: DType) -> DLDataType {
    let (code, bits) = match d {
        DType::Bool => (6, 8),
        DType::U8 => (1, 8),
        DType::I8 => (0, 8),
        DType::I16 => (0, 16),
        DType::I32 => (0, 32),
        DType::I64 => (0, 64),
        DType::F16 => (2, 16),
        DType::BF16 => (4, 16),
        DType::F32 => (2, 32),
        DType::F64 => (2, 64),
    };
    DLDataType {
        code,
        bits,
        lanes: 1,
    }
}

fn from_dl_dtype(t: DLDataType) -> PyResult<DType> {
    if t.lanes != 1 {
        return Err(PyBufferError::new_err(format!(
            "from_dlpack: vector dtypes (lanes={}) are not supported",
            t.lanes
        )));
    }
    Ok(match (t.code, t.bits) {
        (6, 8) => DType::Bool,
        (1, 8) => DType::U8,
        (0, 8) => DType::I8,
        (0, 16) => DType::I16,
        (0, 32) => DType::I32,
        (0, 64) => DType::I64,
        (2, 16) => DType::F16,
        (4, 16) => DType::BF16,
        (2, 32) => DType::F32,
        (2, 64) => DType::F64,
        (c, b) => {
            return Err(PyBufferError::new_err(format!(
                "from_dlpack: unsupported DLPack dtype (code {c}, bits {b})"
            )))
        }
    })
}

unsafe extern "C" fn delete_legacy(m: *mut DLManagedTensor) {
    // SAFETY: made by Box::into_raw in `export`, with a boxed Ctx.
    let m = unsafe { Box::from_raw(m) };
    drop(unsafe { Box::from_raw(m.manager_ctx as *mut Ctx) });
}

unsafe extern "C" fn delete_versioned(m: *mut DLManagedTensorVersioned) {
    // SAFETY: as in delete_legacy.
    let m = unsafe { Box::from_raw(m) };
    drop(unsafe { Box::from_raw(m.manager_ctx as *mut Ctx) });
}

unsafe extern "C" fn capsule_destructor_legacy(capsule: *mut ffi::PyObject) {
    // SAFETY: called by Python with the GIL on a capsule we made.
    unsafe {
        if ffi::PyCapsule_IsValid(capsule, LEGACY.as_ptr()) == 1 {
            let m = ffi::PyCapsule_GetPointer(capsule, LEGACY.as_ptr()) as *mut DLManagedTensor;
            if let Some(d) = (*m).deleter {
                d(m);
            }
        }
    }
}

unsafe extern "C" fn capsule_destructor_versioned(capsule: *mut ffi::PyObject) {
    // SAFETY: as above.
    unsafe {
        if ffi::PyCapsule_IsValid(capsule, VERSIONED.as_ptr()) == 1 {
            let m = ffi::PyCapsule_GetPointer(capsule, VERSIONED.as_ptr())
                as *mut DLManagedTensorVersioned;
            if let Some(d) = (*m).deleter {
                d(m);
            }
        }
    }
}

fn export(py: Python<'_>, t: Tensor, versioned: bool, copied: bool) -> PyResult<Py<PyAny>> {
    let shape: Vec<i64> = t.shape().iter().map(|&s| s as i64).collect();
    let strides: Vec<i64> = t.stride().iter().map(|&s| s as i64).collect();
    let mut ctx = Box::new(Ctx {
        _shape: shape,
        _strides: strides,
        _tensor: t.clone(),
    });
    let dl = DLTensor {
        data: t.data_ptr() as *mut c_void,
        device: DLDevice {
            device_type: CPU,
            device_id: 0,
        },
        ndim: t.dim() as i32,
        dtype: dl_dtype(t.dtype()),
        shape: ctx._shape.as_mut_ptr(),
        strides: ctx._strides.as_mut_ptr(),
        byte_offset: 0,
    };
    let ctx = Box::into_raw(ctx) as *mut c_void;
    // SAFETY: the capsule takes ownership of the box; exactly one of the
    // consumer and the capsule destructor runs the deleter.
    let obj = unsafe {
        if versioned {
            let m = Box::into_raw(Box::new(DLManagedTensorVersioned {
                version: [1, 0],
                manager_ctx: ctx,
                deleter: Some(delete_versioned),
                flags: if copied { IS_COPIED } else { 0 },
                dl_tensor: dl,
            }));
            ffi::PyCapsule_New(
                m as *mut c_void,
                VERSIONED.as_ptr(),
                Some(capsule_destructor_versioned),
            )
        } else {
            let m = Box::into_raw(Box::new(DLManagedTensor {
                dl_tensor: dl,
                manager_ctx: ctx,
                deleter: Some(delete_legacy),
            }));
            ffi::PyCapsule_New(
                m as *mut c_void,
                LEGACY.as_ptr(),
                Some(capsule_destructor_legacy),
            )
        }
    };
    // SAFETY: a new reference or null with an exception set.
    unsafe { Bound::from_owned_ptr_or_err(py, obj) }.map(Bound::unbind)
}

#[pymethods]
impl PyTensor {
    /// `t.__dlpack__(stream=None, max_version=None, dl_device=None, copy=None)`.
    #[pyo3(signature = (*, stream=None, max_version=None, dl_device=None, copy=None))]
    fn __dlpack__(
        &self,
        py: Python<'_>,
        stream: Option<&Bound<'_, PyAny>>,
        max_version: Option<(u32, u32)>,
        dl_device: Option<(i32, i32)>,
        copy: Option<bool>,
    ) -> PyResult<Py<PyAny>> {
        if stream.is_some_and(|s| !s.is_none()) {
            return Err(PyBufferError::new_err(
                "__dlpack__: stream must be None for CPU tensors",
            ));
        }
        if self.t.requires_grad() {
            return Err(PyRuntimeError::new_err(
                "Can't export tensors that require gradient, use tensor.detach()",
            ));
        }
        if !matches!(self.t.device(), Device::Cpu) {
            return Err(PyBufferError::new_err(
                "__dlpack__: only CPU tensors can be exported",
            ));
        }
        if let Some((ty, id)) = dl_device {
            if ty != CPU || id != 0 {
                return Err(PyBufferError::new_err(format!(
                    "__dlpack__: cannot export to device ({ty}, {id}) without a copy across devices"
                )));
            }
        }
        let versioned = max_version.is_some_and(|(major, _)| major >= 1);
        let (t, copied) = if copy == Some(true) {
            (self.t.deep_clone().py()?, true)
        } else {
            (self.t.clone(), false)
        };
        export(py, t, versioned, copied)
    }

    /// `(device_type, device_id)`: `(1, 0)` for the CPU.
    fn __dlpack_device__(&self) -> (i32, i32) {
        (CPU, 0)
    }
}

/// Raw capsule contents, consumed (renamed) so the producer will not free them.
struct Imported {
    tensor: *const DLTensor,
    owner: usize,
    versioned: bool,
    read_only: bool,
}

fn consume(capsule: &Bound<'_, PyAny>) -> PyResult<Imported> {
    let p = capsule.as_ptr();
    // SAFETY: capsule API calls with the GIL held on a live object.
    unsafe {
        if ffi::PyCapsule_IsValid(p, VERSIONED.as_ptr()) == 1 {
            let m =
                ffi::PyCapsule_GetPointer(p, VERSIONED.as_ptr()) as *mut DLManagedTensorVersioned;
            if (*m).version[0] != 1 {
                return Err(PyBufferError::new_err(format!(
                    "from_dlpack: unsupported DLPack version {}.{}",
                    (*m).version[0],
                    (*m).version[1]
                )));
            }
            ffi::PyCapsule_SetName(p, VERSIONED_USED.as_ptr());
            return Ok(Imported {
                tensor: &(*m).dl_tensor,
                owner: m as usize,
                versioned: true,
                read_only: (*m).flags & READ_ONLY != 0,
            });
        }
        if ffi::PyCapsule_IsValid(p, LEGACY.as_ptr()) == 1 {
            let m = ffi::PyCapsule_GetPointer(p, LEGACY.as_ptr()) as *mut DLManagedTensor;
            ffi::PyCapsule_SetName(p, LEGACY_USED.as_ptr());
            return Ok(Imported {
                tensor: &(*m).dl_tensor,
                owner: m as usize,
                versioned: false,
                read_only: false,
            });
        }
    }
    Err(PyBufferError::new_err(
        "from_dlpack: expected a DLPack capsule named 'dltensor' or 'dltensor_versioned' (already consumed?)",
    ))
}

fn call_deleter(owner: usize, versioned: bool) {
    Python::attach(|_py| {
        // SAFETY: `owner` is the managed tensor we consumed; its deleter
        // runs once, here.
        unsafe {
            if versioned {
                let m = owner as *mut DLManagedTensorVersioned;
                if let Some(d) = (*m).deleter {
                    d(m);
                }
            } else {
                let m = owner as *mut DLManagedTensor;
                if let Some(d) = (*m).deleter {
                    d(m);
                }
            }
        }
    });
}

/// `ferrotorch.from_dlpack(obj)`: a tensor sharing the memory of any
/// DLPack producer (an object with `__dlpack__`, or a capsule).
#[pyfunction]
pub fn from_dlpack<'py>(
    py: Python<'py>,
    ext_tensor: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let capsule = if ext_tensor.hasattr("__dlpack__")? {
        if let Ok(dev) = ext_tensor.call_method0("__dlpack_device__") {
            let (ty, _id): (i32, i32) = dev.extract()?;
            if ty != CPU {
                return Err(PyBufferError::new_err(format!(
                    "from_dlpack: device type {ty} is not available in this build (only the CPU)"
                )));
            }
        }
        let kwargs = pyo3::types::PyDict::new(py);
        kwargs.set_item("max_version", (1, 0))?;
        match ext_tensor.call_method("__dlpack__", (), Some(&kwargs)) {
            Ok(c) => c,
            Err(e) if e.is_instance_of::<pyo3::exceptions::PyTypeError>(py) => {
                ext_tensor.call_method0("__dlpack__")?
            }
            Err(e) => return Err(e),
        }
    } else {
        ext_tensor.clone()
    };
    let imp = consume(&capsule)?;
    // SAFETY: the capsule's DLTensor stays valid until we call its deleter.
    let dl = unsafe { &*imp.tensor };
    let guard = scopeguard(imp.owner, imp.versioned);
    if dl.device.device_type != CPU {
        return Err(PyBufferError::new_err(format!(
            "from_dlpack: device type {} is not available in this build (only the CPU)",
            dl.device.device_type
        )));
    }
    let dtype = from_dl_dtype(dl.dtype)?;
    // Note [Untrusted array memory]: the producer's fields are checked
    // before they are used (a negative ndim would read past the shape).
    if dl.ndim < 0 || dl.ndim > 64 || (dl.ndim > 0 && dl.shape.is_null()) {
        return Err(PyBufferError::new_err(format!(
            "from_dlpack: invalid tensor of {} dimensions (shape {})",
            dl.ndim,
            if dl.shape.is_null() {
                "missing"
            } else {
                "given"
            }
        )));
    }
    let ndim = dl.ndim as usize;
    // SAFETY: shape/strides hold ndim entries (strides may be null).
    let shape: Vec<i64> = if ndim == 0 {
        vec![]
    } else {
        unsafe { std::slice::from_raw_parts(dl.shape, ndim) }.to_vec()
    };
    if shape.iter().any(|&s| s < 0) {
        return Err(PyBufferError::new_err("from_dlpack: negative size"));
    }
    let strides: Option<Vec<i64>> = if dl.strides.is_null() || ndim == 0 {
        None
    } else {
        Some(unsafe { std::slice::from_raw_parts(dl.strides, ndim) }.to_vec())
    };
    if strides.iter().flatten().any(|&s| s < 0) {
        return Err(PyBufferError::new_err(
            "from_dlpack: negative strides are not supported",
        ));
    }
    let shape: Vec<usize> = shape.iter().map(|&s| s as usize).collect();
    let strides: Option<Vec<usize>> = strides.map(|st| st.iter().map(|&s| s as usize).collect());
    let base = (dl.data as usize)
        .checked_add(dl.byte_offset as usize)
        .ok_or_else(|| PyBufferError::new_err("from_dlpack: data pointer plus offset overflows"))?;
    let (owner, versioned) = guard.release();
    // SAFETY: the producer keeps the memory valid until its deleter runs,
    // which the release closure does (Note [DLPack capsules]).
    let t = unsafe {
        crate::numpy::external_tensor(
            "from_dlpack",
            base,
            dtype,
            &shape,
            strides.as_deref(),
            imp.read_only,
            move || call_deleter(owner, versioned),
        )
    }?;
    t.check_bool_bytes("from_dlpack").py()?;
    // read-only memory is imported as a (writable) copy, as before; the
    // read-only view above only guarantees the copy never writes it
    let t = if imp.read_only {
        t.deep_clone().py()?
    } else {
        t
    };
    wrap(py, t)
}

/// Calls the producer's deleter if the import fails before the storage
/// takes ownership.
struct Guard(Option<(usize, bool)>);

fn scopeguard(owner: usize, versioned: bool) -> Guard {
    Guard(Some((owner, versioned)))
}

impl Guard {
    fn release(mut self) -> (usize, bool) {
        self.0.take().expect("released once")
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some((owner, versioned)) = self.0.take() {
            call_deleter(owner, versioned);
        }
    }
}

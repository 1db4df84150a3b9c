//! DLPack exchange: `t.__dlpack__()`, `t.__dlpack_device__()` and
//! `from_dlpack(obj)`, with versioned (1.x) and legacy capsules.
//!
//! # Note [DLPack capsules]
//! An exported capsule owns a managed tensor from the core's DLPack export
//! (Note [DLPack ownership] in the core). The consumer renames the capsule to
//! `used_dltensor[_versioned]` and later calls the deleter; a capsule never
//! consumed is freed by its destructor, which calls the deleter only while
//! the name is unchanged. On import, the producer's deleter runs when the
//! last tensor over the wrapped storage drops, with the GIL held, because
//! producers such as NumPy release Python references in it.

use crate::convert::wrap;
use crate::errors::IntoPy;
use crate::tensor::PyTensor;
use ferrotorch_core::tensor::dlpack::{
    self, DLManagedTensor, DLManagedTensorVersioned, DLTensor, DL_CPU,
};
use ferrotorch_core::{Device, Tensor};
use pyo3::exceptions::{PyBufferError, PyRuntimeError};
use pyo3::ffi;
use pyo3::prelude::*;
use std::ffi::{c_void, CStr};

const CPU: i32 = DL_CPU;

const LEGACY: &CStr = c"dltensor";
const LEGACY_USED: &CStr = c"used_dltensor";
const VERSIONED: &CStr = c"dltensor_versioned";
const VERSIONED_USED: &CStr = c"used_dltensor_versioned";

/// A core error from DLPack import or export as Python's `BufferError`
/// (torch's class for them), but for the require-grad refusal.
fn buffer_error(e: ferrotorch_core::Error) -> PyErr {
    match e.kind() {
        ferrotorch_core::ErrorKind::Runtime => PyRuntimeError::new_err(e.message().to_string()),
        _ => PyBufferError::new_err(e.message().to_string()),
    }
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
    // SAFETY: the capsule takes ownership of the managed tensor; exactly
    // one of the consumer and the capsule destructor runs its deleter.
    let obj = unsafe {
        if versioned {
            let m = dlpack::export_versioned(&t, copied).map_err(buffer_error)?;
            ffi::PyCapsule_New(
                m as *mut c_void,
                VERSIONED.as_ptr(),
                Some(capsule_destructor_versioned),
            )
        } else {
            let m = dlpack::export_legacy(&t).map_err(buffer_error)?;
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
        if self.t.is_conj() {
            // the consumer would read the unconjugated memory (Note [The conjugate bit])
            return Err(PyBufferError::new_err(
                "Can't export tensors with the conjugate bit set; call resolve_conj() first",
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
                read_only: (*m).flags & dlpack::FLAG_READ_ONLY != 0,
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
    let (owner, versioned) = (imp.owner, imp.versioned);
    // SAFETY: the capsule's DLTensor stays valid until its deleter runs,
    // which the release closure does (Note [DLPack ownership] in the core).
    let t = unsafe {
        dlpack::import(imp.tensor, imp.read_only, move || {
            call_deleter(owner, versioned)
        })
    }
    .map_err(buffer_error)?;
    wrap(py, t)
}

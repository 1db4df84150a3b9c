//! Rust errors and panics become the Python exceptions torch raises.
//!
//! # Note [Errors at the boundary]
//! Every fallible core call returns `ferrotorch_core::Error`, whose
//! `ErrorKind` names the exception class (RuntimeError, IndexError, ...);
//! [`to_py`] maps it and keeps the message. A panic inside a kernel must not
//! take the interpreter down, and PyO3's own `PanicException` derives from
//! BaseException (a bare `except Exception` would not see it), so entry
//! points that run kernels go through [`guarded`], which catches the unwind
//! and raises RuntimeError naming the op instead.

use ferrotorch_core::{Error, ErrorKind};
use pyo3::exceptions::{
    PyIndexError, PyKeyError, PyNotImplementedError, PyOSError, PyRuntimeError, PyTypeError,
    PyValueError,
};
use pyo3::PyErr;

pyo3::create_exception!(
    ferrotorch._C,
    _LinAlgError,
    PyRuntimeError,
    "torch.linalg.LinAlgError: a matrix a factorization or solve cannot take (singular, not positive-definite)."
);

/// The Python exception for a core error; a Python exception that a
/// callback raised inside the core comes back as itself (Note [Foreign
/// errors] in the core).
pub fn to_py(e: Error) -> PyErr {
    if let Some(original) = e.payload::<PyErr>() {
        return pyo3::Python::attach(|py| original.clone_ref(py));
    }
    let msg = e.message().to_string();
    match e.kind() {
        ErrorKind::Runtime => PyRuntimeError::new_err(msg),
        ErrorKind::Index => PyIndexError::new_err(msg),
        ErrorKind::Value => PyValueError::new_err(msg),
        ErrorKind::Type => PyTypeError::new_err(msg),
        ErrorKind::NotImplemented => PyNotImplementedError::new_err(msg),
        ErrorKind::Io => PyOSError::new_err(msg),
        ErrorKind::Key => PyKeyError::new_err(msg),
        ErrorKind::Assertion => pyo3::exceptions::PyAssertionError::new_err(msg),
        ErrorKind::LinAlg => _LinAlgError::new_err(msg),
    }
}

/// `Result<T, Error>` to `PyResult<T>`.
pub trait IntoPy<T> {
    /// Map the error with [`to_py`].
    fn py(self) -> pyo3::PyResult<T>;
}

impl<T> IntoPy<T> for Result<T, Error> {
    fn py(self) -> pyo3::PyResult<T> {
        self.map_err(to_py)
    }
}

/// Run `f`, turning a panic into RuntimeError (Note [Errors at the boundary];
/// the guard is the one every binding shares, Note [One binding layer]).
pub fn guarded<T>(what: &str, f: impl FnOnce() -> Result<T, Error>) -> pyo3::PyResult<T> {
    ferrotorch_core::dispatch::binding::guarded(what, f).py()
}

/// [`guarded`], with the GIL released while `f` runs when `big` (a kernel
/// on tensors of at least `ops::RELEASE_GIL_NUMEL` elements: below that,
/// releasing and retaking the GIL costs more than it frees).
pub fn guarded_detached_if<T: Send>(
    py: pyo3::Python<'_>,
    what: &str,
    big: bool,
    f: impl FnOnce() -> Result<T, Error> + Send,
) -> pyo3::PyResult<T> {
    if big {
        py.detach(|| guarded(what, f))
    } else {
        guarded(what, f)
    }
}

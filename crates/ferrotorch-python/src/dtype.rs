//! `torch.dtype` objects: `ferrotorch.float32`, `.int64`, `.bool`, ...

use ferrotorch_core::DType;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyModule;

/// A dtype, printed as torch prints it (`torch.float32`) so reprs match.
#[pyclass(name = "dtype", module = "ferrotorch", frozen, eq, hash)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PyDType {
    /// The core dtype.
    pub dtype: DType,
}

#[pymethods]
impl PyDType {
    fn __repr__(&self) -> String {
        format!("torch.{}", self.dtype.name())
    }

    /// Whether this is a floating-point dtype.
    #[getter]
    fn is_floating_point(&self) -> bool {
        self.dtype.is_floating_point()
    }

    /// Whether this is a complex dtype.
    #[getter]
    fn is_complex(&self) -> bool {
        self.dtype.is_complex()
    }

    /// The dtype of a complex dtype's parts (`complex64.to_real()` is
    /// `float32`); real dtypes give themselves.
    #[allow(clippy::wrong_self_convention)] // torch's Python name
    fn to_real<'py>(&self, py: Python<'py>) -> Bound<'py, PyDType> {
        dtype_object(py, self.dtype.to_real())
    }

    /// The complex dtype with parts of this float dtype.
    #[allow(clippy::wrong_self_convention)] // torch's Python name
    fn to_complex<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDType>> {
        match self.dtype.to_complex() {
            Some(d) if self.dtype != DType::BF16 => Ok(dtype_object(py, d)),
            _ => Err(pyo3::exceptions::PyRuntimeError::new_err(format!(
                "Unknown Complex ScalarType for {}",
                self.dtype.name_title()
            ))),
        }
    }

    /// Whether this dtype is signed.
    #[getter]
    fn is_signed(&self) -> bool {
        self.dtype.is_signed()
    }

    /// Bytes per element.
    #[getter]
    fn itemsize(&self) -> usize {
        self.dtype.size()
    }

    fn __reduce__(&self) -> (String,) {
        // pickled by name: unpickling looks the attribute up on `ferrotorch`
        (self.dtype.name().to_string(),)
    }
}

/// The attribute names torch gives each dtype (`float32` and `float`, ...).
const ALIASES: &[(&str, DType)] = &[
    ("bool", DType::Bool),
    ("uint8", DType::U8),
    ("int8", DType::I8),
    ("int16", DType::I16),
    ("short", DType::I16),
    ("int32", DType::I32),
    ("int", DType::I32),
    ("int64", DType::I64),
    ("long", DType::I64),
    ("float16", DType::F16),
    ("half", DType::F16),
    ("bfloat16", DType::BF16),
    ("float32", DType::F32),
    ("float", DType::F32),
    ("float64", DType::F64),
    ("double", DType::F64),
    ("complex32", DType::C32),
    ("chalf", DType::C32),
    ("complex64", DType::C64),
    ("cfloat", DType::C64),
    ("complex128", DType::C128),
    ("cdouble", DType::C128),
];

static SINGLETONS: PyOnceLock<Vec<Py<PyDType>>> = PyOnceLock::new();

/// The one Python object of `dtype` (`t.dtype is torch.float32` holds).
pub fn dtype_object(py: Python<'_>, dtype: DType) -> Bound<'_, PyDType> {
    let all = SINGLETONS.get_or_init(py, || {
        DType::ALL
            .iter()
            .map(|&dtype| Py::new(py, PyDType { dtype }).expect("allocating a dtype object"))
            .collect()
    });
    let i = DType::ALL
        .iter()
        .position(|d| *d == dtype)
        .expect("DType::ALL lists every dtype");
    all[i].bind(py).clone()
}

/// Add every dtype to the module under all its torch names.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyDType>()?;
    m.add_function(wrap_pyfunction!(_finfo, m)?)?;
    m.add_function(wrap_pyfunction!(promote_types, m)?)?;
    m.add_function(wrap_pyfunction!(result_type, m)?)?;
    for (name, dtype) in ALIASES {
        m.add(*name, dtype_object(m.py(), *dtype))?;
    }
    Ok(())
}

/// `torch.promote_types(type1, type2)`: the dtype both promote to
/// (the core's promotion lattice).
#[pyfunction]
pub fn promote_types<'py>(
    py: Python<'py>,
    type1: PyRef<'py, PyDType>,
    type2: PyRef<'py, PyDType>,
) -> Bound<'py, PyDType> {
    dtype_object(py, ferrotorch_core::promote_types(type1.dtype, type2.dtype))
}

/// `torch.result_type(tensor, other)`: the dtype an arithmetic op on the
/// two operands computes in (Note [Type promotion]); each is a tensor or
/// a Python number.
#[pyfunction]
pub fn result_type<'py>(
    py: Python<'py>,
    tensor: &Bound<'py, PyAny>,
    other: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyDType>> {
    use ferrotorch_core::ResultTypeArg;
    let arg = |o: &Bound<'py, PyAny>| -> PyResult<ResultTypeArg> {
        if let Ok(t) = o.cast::<crate::tensor::PyTensor>() {
            let t = &t.borrow().t;
            return Ok(ResultTypeArg::Tensor(t.dtype(), t.dim()));
        }
        match crate::convert::to_scalar(o)? {
            Some(s) => Ok(ResultTypeArg::Scalar(s)),
            None => Err(pyo3::exceptions::PyTypeError::new_err(format!(
                "result_type() received an invalid combination of arguments - got ({}, {}), but expected one of:\n * (Tensor tensor, Tensor other)\n * (Tensor tensor, Number other)\n * (Number scalar, Tensor tensor)\n * (Number scalar1, Number scalar2)",
                tensor.get_type().name()?,
                other.get_type().name()?
            ))),
        }
    };
    let args = [arg(tensor)?, arg(other)?];
    Ok(dtype_object(py, ferrotorch_core::result_type(&args)))
}

/// `_C._finfo(dtype)`: `(eps, max, dtype)` of a floating-point dtype
/// (`DType::eps`, `DType::finite_max`), behind `ferrotorch.finfo`; a
/// complex dtype reports its parts' dtype, as torch's `finfo` does.
#[pyfunction]
pub fn _finfo<'py>(
    py: Python<'py>,
    dtype: PyRef<'py, PyDType>,
) -> PyResult<(f64, f64, Bound<'py, PyDType>)> {
    let real = dtype.dtype.to_real();
    match (real.eps(), real.finite_max()) {
        (Some(eps), Some(max)) => Ok((eps, max, dtype_object(py, real))),
        _ => Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "torch.finfo() requires a floating point input type. Use torch.iinfo to handle '{}'",
            PyDType::__repr__(&dtype)
        ))),
    }
}

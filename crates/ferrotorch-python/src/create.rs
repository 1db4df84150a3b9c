//! `ferrotorch.tensor(data)`, `as_tensor`, `from_numpy`: tensors from
//! Python data.

use crate::convert::wrap;
use crate::dtype::PyDType;
use crate::errors::IntoPy;
use crate::numpy;
use crate::tensor::PyTensor;
use ferrotorch_core::{get_default_dtype, DType, Scalar, Tensor};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyInt, PyList, PyTuple};

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Bool,
    Int,
    Float,
    Complex,
}

struct Walk {
    shape: Vec<usize>,
    vals: Vec<f64>,
    /// Imaginary parts, kept once a complex number is seen (zeros before).
    imag: Vec<f64>,
    ints: Vec<i64>,
    kind: Kind,
    seen_any: bool,
    /// An int beyond int64 was seen (kept as a float value): an error
    /// unless the tensor is floating point, as torch's "Overflow when
    /// unpacking long long".
    big_int: bool,
}

fn leaf(w: &mut Walk, s: Scalar, big_int: bool) {
    let k = match s {
        Scalar::Bool(_) => Kind::Bool,
        Scalar::Int(_) => Kind::Int,
        Scalar::Float(_) if big_int => Kind::Int,
        Scalar::Float(_) => Kind::Float,
        Scalar::Complex(..) => Kind::Complex,
    };
    w.big_int |= big_int;
    if !w.seen_any || k > w.kind {
        w.kind = if w.seen_any { w.kind.max(k) } else { k };
    }
    w.seen_any = true;
    if k == Kind::Complex && w.imag.len() < w.vals.len() {
        w.imag.resize(w.vals.len(), 0.0);
    }
    if w.kind == Kind::Complex {
        w.imag.push(s.to_complex().1);
    }
    w.vals.push(s.to_f64());
    w.ints.push(s.to_i64());
}

/// A Python number as a Scalar; `big` is set for an int beyond int64,
/// which comes back as its float value.
fn scalar_of(obj: &Bound<'_, PyAny>, big: &mut bool) -> PyResult<Option<Scalar>> {
    if obj.is_instance_of::<PyBool>() {
        return Ok(Some(Scalar::Bool(obj.extract()?)));
    }
    if obj.is_instance_of::<PyInt>() {
        return Ok(Some(match obj.extract::<i64>() {
            Ok(i) => Scalar::Int(i),
            Err(_) => {
                *big = true;
                Scalar::Float(obj.extract()?)
            }
        }));
    }
    if obj.is_instance_of::<PyFloat>() {
        return Ok(Some(Scalar::Float(obj.extract()?)));
    }
    if let Some((re, im)) = crate::convert::complex_of(obj)? {
        return Ok(Some(Scalar::Complex(re, im)));
    }
    if let Ok(t) = obj.cast::<PyTensor>() {
        let t = &t.borrow().t;
        if t.numel() == 1 && t.dim() == 0 {
            return Ok(Some(t.item().py()?));
        }
        return Ok(None);
    }
    // NumPy scalars: np.bool_, integer types (__index__), float types
    let tname = obj.get_type().name()?.to_string();
    if tname == "bool_" || tname == "bool" {
        return Ok(Some(Scalar::Bool(obj.call_method0("__bool__")?.extract()?)));
    }
    if !obj.is_instance_of::<PyList>()
        && !obj.is_instance_of::<PyTuple>()
        && !numpy::is_ndarray(obj)
    {
        if obj.hasattr("__index__")? {
            return Ok(Some(Scalar::Int(obj.call_method0("__index__")?.extract()?)));
        }
        if obj.hasattr("__float__")? {
            return Ok(Some(Scalar::Float(
                obj.call_method0("__float__")?.extract()?,
            )));
        }
    }
    Ok(None)
}

/// torch's limit on the nesting of `tensor(data)` (its `MAX_DIMS`): deeper
/// data is refused before the walk's recursion could exhaust the stack.
const MAX_DIMS: usize = 128;

fn walk(w: &mut Walk, obj: &Bound<'_, PyAny>, depth: usize) -> PyResult<()> {
    if depth > MAX_DIMS {
        return Err(PyValueError::new_err(format!(
            "too many dimensions '{}'",
            obj.get_type().name()?
        )));
    }
    let mut big = false;
    if let Some(s) = scalar_of(obj, &mut big)? {
        if depth != w.shape.len() && w.seen_any {
            return Err(PyValueError::new_err(format!(
                "expected sequence of length {} at dim {} (got a number)",
                w.shape.get(depth).copied().unwrap_or(0),
                depth
            )));
        }
        if !w.seen_any {
            w.shape.truncate(depth);
        }
        leaf(w, s, big);
        return Ok(());
    }
    if let Ok(t) = obj.cast::<PyTensor>() {
        // a tensor inside a list: its values and shape take part
        let _ = t;
        let list = obj.call_method0("tolist")?;
        return walk(w, &list, depth);
    }
    let items: Vec<Bound<'_, PyAny>> = obj
        .try_iter()
        .map_err(|_| {
            PyTypeError::new_err(format!(
                "Could not infer dtype of {}",
                obj.get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_default()
            ))
        })?
        .collect::<PyResult<_>>()?;
    if w.seen_any || depth < w.shape.len() {
        let want = w.shape.get(depth).copied();
        if want != Some(items.len()) {
            return Err(PyValueError::new_err(format!(
                "expected sequence of length {} at dim {} (got {})",
                want.unwrap_or(0),
                depth,
                items.len()
            )));
        }
    } else {
        if w.shape.len() == MAX_DIMS {
            return Err(PyValueError::new_err(format!(
                "too many dimensions '{}'",
                obj.get_type().name()?
            )));
        }
        w.shape.push(items.len());
    }
    for it in &items {
        walk(w, it, depth + 1)?;
    }
    Ok(())
}

/// torch's range checks on `tensor(data, dtype=...)`: ints beyond int64
/// unless the result is floating point (ValueError), and values outside
/// an integer dtype's range (RuntimeError; floats into float dtypes
/// round to ±inf unchecked, as in torch).
fn check_values_fit(w: &Walk, target: DType) -> PyResult<()> {
    if w.kind == Kind::Complex && !target.is_complex() {
        return Err(PyTypeError::new_err(if target.is_floating_point() {
            "must be real number, not complex"
        } else {
            "can't convert complex to int"
        }));
    }
    if target.is_floating_point() || target.is_complex() || target == DType::Bool {
        return Ok(());
    }
    if w.big_int {
        return Err(PyValueError::new_err("Overflow when unpacking long long"));
    }
    let bad = if w.kind == Kind::Float {
        w.vals.iter().any(|&v| !Scalar::Float(v).fits(target))
    } else {
        w.ints.iter().any(|&i| !Scalar::Int(i).fits(target))
    };
    if bad {
        return Err(pyo3::exceptions::PyRuntimeError::new_err(format!(
            "value cannot be converted to type {} without overflow",
            target.name()
        )));
    }
    Ok(())
}

/// A new tensor holding a copy of `data`: nested sequences of numbers,
/// NumPy arrays and scalars, tensors. `dtype` `None` infers torch's way.
pub fn tensor_from_data(data: &Bound<'_, PyAny>, dtype: Option<DType>) -> PyResult<Tensor> {
    if let Ok(t) = data.cast::<PyTensor>() {
        let t = t.borrow().t.detach().deep_clone().py()?;
        return match dtype {
            Some(d) if d != t.dtype() => t.to_dtype(d).py(),
            _ => Ok(t),
        };
    }
    if numpy::is_ndarray(data) {
        let shared = numpy::from_numpy(data, numpy::Misaligned::Copy)?;
        let t = shared.deep_clone().py()?;
        return match dtype {
            Some(d) if d != t.dtype() => t.to_dtype(d).py(),
            _ => Ok(t),
        };
    }
    let mut w = Walk {
        shape: Vec::new(),
        vals: Vec::new(),
        imag: Vec::new(),
        ints: Vec::new(),
        kind: Kind::Bool,
        seen_any: false,
        big_int: false,
    };
    walk(&mut w, data, 0)?;
    let inferred = if !w.seen_any {
        get_default_dtype()
    } else {
        match w.kind {
            Kind::Bool => DType::Bool,
            Kind::Int => DType::I64,
            Kind::Float => get_default_dtype(),
            Kind::Complex => ferrotorch_core::dtype::default_complex_dtype(),
        }
    };
    let target = dtype.unwrap_or(inferred);
    check_values_fit(&w, target)?;
    let t = if w.kind == Kind::Complex {
        let flat: Vec<f64> = w
            .vals
            .iter()
            .zip(&w.imag)
            .flat_map(|(&a, &b)| [a, b])
            .collect();
        let mut shape = w.shape.clone();
        shape.push(2);
        Tensor::from_vec(flat, &shape).py()?.into_complex().py()?
    } else if w.kind == Kind::Float || !w.seen_any || w.big_int {
        Tensor::from_vec(w.vals, &w.shape).py()?
    } else if w.kind == Kind::Bool {
        Tensor::from_vec(
            w.ints.iter().map(|&i| i != 0).collect::<Vec<bool>>(),
            &w.shape,
        )
        .py()?
    } else {
        Tensor::from_vec(w.ints, &w.shape).py()?
    };
    if t.dtype() == target {
        Ok(t)
    } else {
        t.to_dtype(target).py()
    }
}

/// `ferrotorch.tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False)`.
#[pyfunction]
#[pyo3(signature = (data, *, dtype=None, device=None, requires_grad=false, pin_memory=false))]
pub fn tensor<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    dtype: Option<PyRef<'py, PyDType>>,
    device: Option<&Bound<'py, PyAny>>,
    requires_grad: bool,
    pin_memory: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let _ = pin_memory;
    check_cpu(device)?;
    let t = tensor_from_data(data, dtype.map(|d| d.dtype))?;
    if requires_grad {
        t.requires_grad_(true).py()?;
    }
    wrap(py, t)
}

/// `ferrotorch.as_tensor(data, dtype=None, device=None)`: shares a tensor's
/// or a NumPy array's memory when the dtype already matches.
#[pyfunction]
#[pyo3(signature = (data, dtype=None, device=None))]
pub fn as_tensor<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    dtype: Option<PyRef<'py, PyDType>>,
    device: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    check_cpu(device)?;
    let want = dtype.map(|d| d.dtype);
    let shared = if let Ok(t) = data.cast::<PyTensor>() {
        Some(t.borrow().t.clone())
    } else if numpy::is_ndarray(data) {
        Some(numpy::from_numpy(data, numpy::Misaligned::Copy)?)
    } else {
        None
    };
    let t = match shared {
        Some(t) => match want {
            Some(d) if d != t.dtype() => t.to_dtype(d).py()?,
            _ => t,
        },
        None => tensor_from_data(data, want)?,
    };
    wrap(py, t)
}

/// `ferrotorch.from_numpy(a)`: shares `a`'s memory.
#[pyfunction]
pub fn from_numpy<'py>(
    py: Python<'py>,
    ndarray: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    if !numpy::is_ndarray(ndarray) {
        return Err(PyTypeError::new_err(format!(
            "expected np.ndarray (got {})",
            ndarray.get_type().name()?
        )));
    }
    wrap(py, numpy::from_numpy(ndarray, numpy::Misaligned::Refuse)?)
}

/// Only the CPU exists in this build: a `device` argument (a string or
/// `ferrotorch.device`) must name it. CUDA gets the error a CPU-only torch
/// raises (AssertionError "Torch not compiled with CUDA enabled").
pub fn check_cpu(device: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
    if let Some(d) = device {
        if d.is_none() {
            return Ok(());
        }
        check_device_name(&d.str()?.to_string())?;
    }
    Ok(())
}

/// `_C._check_device(name)`: [`check_device_name`] for the Python modules
/// (`Module.to`, `Module.cuda`).
#[pyfunction]
pub fn _check_device(name: &str) -> PyResult<()> {
    check_device_name(name)
}

/// [`check_cpu`] for a device's name (`"cpu"`, `"cuda:1"`, ...).
pub fn check_device_name(s: &str) -> PyResult<()> {
    if s == "cpu" || s.starts_with("cpu:") {
        return Ok(());
    }
    if s == "cuda" || s.starts_with("cuda:") {
        return Err(pyo3::exceptions::PyAssertionError::new_err(
            "Torch not compiled with CUDA enabled",
        ));
    }
    Err(pyo3::exceptions::PyRuntimeError::new_err(format!(
        "device '{s}' is not available: this build runs on the CPU"
    )))
}

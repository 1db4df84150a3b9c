//! Python values to boxed op arguments ([`IValue`]) and back.
//!
//! The rules are those of torch's Python argument parser: `bool` before
//! `int` (a bool is an int in Python), objects with `__index__` (NumPy
//! integers) as ints, with `__float__` as floats, lists by their elements,
//! NumPy arrays as tensors that share the array's memory.

use crate::dtype::{dtype_object, PyDType};
use crate::numpy;
use crate::tensor::PyTensor;
use ferrotorch_core::dispatch::IValue;
use ferrotorch_core::{Scalar, Tensor};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyComplex, PyFloat, PyInt, PyList, PyString, PyTuple};

/// Convert one Python argument.
pub fn to_ivalue(obj: &Bound<'_, PyAny>) -> PyResult<IValue> {
    if obj.is_none() {
        return Ok(IValue::None);
    }
    if let Ok(t) = obj.cast::<PyTensor>() {
        return Ok(IValue::Tensor(t.borrow().t.clone()));
    }
    if obj.is_instance_of::<PyBool>() {
        return Ok(IValue::Bool(obj.extract()?));
    }
    if obj.is_instance_of::<PyInt>() {
        return Ok(IValue::Int(obj.extract()?));
    }
    if obj.is_instance_of::<PyFloat>() {
        return Ok(IValue::Float(obj.extract()?));
    }
    if let Some((re, im)) = complex_of(obj)? {
        return Ok(IValue::Complex(re, im));
    }
    if obj.is_instance_of::<PyString>() {
        return Ok(IValue::Str(obj.extract()?));
    }
    if let Ok(d) = obj.cast::<PyDType>() {
        return Ok(IValue::DType(d.get().dtype));
    }
    if let Ok(o) = obj.cast::<crate::script_object::PyScriptObject>() {
        return Ok(IValue::Object(o.borrow().o.clone()));
    }
    if let Ok(g) = obj.cast::<crate::generator::PyGenerator>() {
        return Ok(IValue::Generator(g.get().g.clone()));
    }
    if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        let items: Vec<IValue> = obj
            .try_iter()?
            .enumerate()
            .map(|(i, o)| {
                let o = o?;
                if o.is_instance_of::<PyInt>() && o.extract::<i64>().is_err() {
                    // torch's message for a size or int list entry beyond int64
                    return Err(PyTypeError::new_err(format!(
                        "failed to unpack the object at pos {} with error \"Overflow when unpacking long long\"",
                        i + 1
                    )));
                }
                to_ivalue(&o)
            })
            .collect::<PyResult<_>>()?;
        if obj.is_instance_of::<PyTuple>() {
            // a tuple of mixed values (a custom class's state, an
            // `Any` argument) stays a tuple
            let mixed = ferrotorch_core::dispatch::binding::list_value(items.clone());
            return Ok(mixed.unwrap_or(IValue::Tuple(items)));
        }
        return list(items, obj);
    }
    if numpy::is_ndarray(obj) {
        return Ok(IValue::Tensor(numpy::from_numpy(
            obj,
            numpy::Misaligned::Copy,
        )?));
    }
    if obj.hasattr("__index__")? {
        return Ok(IValue::Int(obj.call_method0("__index__")?.extract()?));
    }
    if obj.hasattr("__float__")? {
        return Ok(IValue::Float(obj.call_method0("__float__")?.extract()?));
    }
    if obj.get_type().name()? == "device" {
        // ferrotorch.device("cpu") passes as its string
        return Ok(IValue::Str(obj.str()?.to_string()));
    }
    Err(PyTypeError::new_err(format!(
        "unsupported argument of type {}",
        obj.get_type().name()?
    )))
}

fn list(items: Vec<IValue>, obj: &Bound<'_, PyAny>) -> PyResult<IValue> {
    match ferrotorch_core::dispatch::binding::list_value(items) {
        Some(v) => Ok(v),
        None => Err(PyTypeError::new_err(format!(
            "unsupported list argument {}",
            obj.repr()?
        ))),
    }
}

/// A call's boxed arguments: positional, then keyword by name.
pub type CallArgs = (Vec<IValue>, Vec<(String, IValue)>);

/// A call's positional and keyword arguments as boxed values.
pub fn call_args(
    args: &Bound<'_, PyTuple>,
    kwargs: Option<&Bound<'_, pyo3::types::PyDict>>,
) -> PyResult<CallArgs> {
    let pos: Vec<IValue> = args
        .iter()
        .map(|a| to_ivalue(&a))
        .collect::<PyResult<_>>()?;
    let mut kw: Vec<(String, IValue)> = Vec::new();
    if let Some(k) = kwargs {
        for (key, v) in k.iter() {
            kw.push((key.extract()?, to_ivalue(&v)?));
        }
    }
    Ok((pos, kw))
}

/// Keyword arguments as the dispatcher takes them (`(&str, value)`).
pub fn kw_refs(kw: &[(String, IValue)]) -> Vec<(&str, IValue)> {
    kw.iter().map(|(k, v)| (k.as_str(), v.clone())).collect()
}

/// A Python number as a Scalar, if it is one.
pub fn to_scalar(obj: &Bound<'_, PyAny>) -> PyResult<Option<Scalar>> {
    if obj.is_instance_of::<PyBool>() {
        return Ok(Some(Scalar::Bool(obj.extract()?)));
    }
    if obj.is_instance_of::<PyInt>() {
        return Ok(Some(Scalar::Int(obj.extract()?)));
    }
    if obj.is_instance_of::<PyFloat>() {
        return Ok(Some(Scalar::Float(obj.extract()?)));
    }
    if let Some((re, im)) = complex_of(obj)? {
        return Ok(Some(Scalar::Complex(re, im)));
    }
    Ok(None)
}

/// A Python `complex` or a NumPy complex scalar as `(re, im)`.
pub fn complex_of(obj: &Bound<'_, PyAny>) -> PyResult<Option<(f64, f64)>> {
    if let Ok(c) = obj.cast::<PyComplex>() {
        return Ok(Some((c.real(), c.imag())));
    }
    if obj.get_type().name()?.to_str()?.starts_with("complex") && obj.hasattr("__complex__")? {
        let c = obj.call_method0("__complex__")?;
        let c = c.cast::<PyComplex>()?;
        return Ok(Some((c.real(), c.imag())));
    }
    Ok(None)
}

/// Wrap a core tensor as a Python `Tensor`.
pub fn wrap(py: Python<'_>, t: Tensor) -> PyResult<Bound<'_, PyAny>> {
    Ok(Bound::new(py, PyTensor::new_wrapper(t))?.into_any())
}

/// Convert an op's result.
pub fn from_ivalue(py: Python<'_>, v: IValue) -> PyResult<Bound<'_, PyAny>> {
    Ok(match v {
        IValue::None => py.None().into_bound(py),
        IValue::Tensor(t) => wrap(py, t)?,
        IValue::Bool(b) => PyBool::new(py, b).to_owned().into_any(),
        IValue::Int(i) => i.into_pyobject(py)?.into_any(),
        IValue::Float(f) => f.into_pyobject(py)?.into_any(),
        IValue::Complex(re, im) => PyComplex::from_doubles(py, re, im).into_any(),
        IValue::Str(s) => s.into_pyobject(py)?.into_any(),
        IValue::DType(d) => dtype_object(py, d).into_any(),
        IValue::Generator(g) => Bound::new(py, crate::generator::PyGenerator { g })?.into_any(),
        IValue::IntList(l) => PyList::new(py, l)?.into_any(),
        IValue::FloatList(l) => PyList::new(py, l)?.into_any(),
        IValue::BoolList(l) => PyList::new(py, l)?.into_any(),
        IValue::TensorList(l) => {
            let items: Vec<_> = l
                .into_iter()
                .map(|t| wrap(py, t))
                .collect::<PyResult<_>>()?;
            PyList::new(py, items)?.into_any()
        }
        IValue::OptTensorList(l) => {
            let items: Vec<_> = l
                .into_iter()
                .map(|t| match t {
                    Some(t) => wrap(py, t),
                    None => Ok(py.None().into_bound(py)),
                })
                .collect::<PyResult<_>>()?;
            PyList::new(py, items)?.into_any()
        }
        v @ (IValue::SymInt(_) | IValue::SymIntList(_) | IValue::SymScalar(_)) => {
            from_ivalue(py, v.concrete().map_err(crate::errors::to_py)?)?
        }
        IValue::Object(o) => crate::script_object::object(py, o)?,
        IValue::Tuple(items) => {
            let items: Vec<_> = items
                .into_iter()
                .map(|v| from_ivalue(py, v))
                .collect::<PyResult<_>>()?;
            PyTuple::new(py, items)?.into_any()
        }
    })
}

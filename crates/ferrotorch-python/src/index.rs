//! `t[key]` and `t[key] = value`: ints, slices with steps, `None`, ranges,
//! `Ellipsis`, lists, int/bool tensors and NumPy arrays, alone or in tuples.

use crate::convert::{to_scalar, wrap};
use crate::create::tensor_from_data;
use crate::errors::{guarded, IntoPy};
use crate::numpy;
use crate::tensor::PyTensor;
use ferrotorch_core::tensor::TensorIndex;
use ferrotorch_core::Tensor;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyEllipsis, PyInt, PyList, PyRange, PySlice, PyTuple};

fn opt_i64(obj: &Bound<'_, PyAny>) -> PyResult<Option<i64>> {
    if obj.is_none() {
        Ok(None)
    } else {
        Ok(Some(obj.call_method0("__index__")?.extract()?))
    }
}

fn one(obj: &Bound<'_, PyAny>) -> PyResult<TensorIndex> {
    if obj.is_none() {
        return Ok(TensorIndex::NewAxis);
    }
    if obj.is_instance_of::<PyEllipsis>() {
        return Ok(TensorIndex::Ellipsis);
    }
    if obj.is_instance_of::<PyBool>() {
        let b: bool = obj.extract()?;
        return Ok(TensorIndex::Tensor(Tensor::scalar_tensor(b)));
    }
    if obj.is_instance_of::<PyInt>() {
        return Ok(TensorIndex::Int(obj.extract()?));
    }
    if let Ok(s) = obj.cast::<PySlice>() {
        let step = opt_i64(&s.getattr("step")?)?.unwrap_or(1);
        if step <= 0 {
            return Err(PyValueError::new_err("step must be greater than zero"));
        }
        return Ok(TensorIndex::Slice {
            start: opt_i64(&s.getattr("start")?)?,
            stop: opt_i64(&s.getattr("stop")?)?,
            step,
        });
    }
    if let Ok(t) = obj.cast::<PyTensor>() {
        return Ok(TensorIndex::Tensor(t.borrow().t.clone()));
    }
    if numpy::is_ndarray(obj) {
        return Ok(TensorIndex::Tensor(numpy::from_numpy(
            obj,
            numpy::Misaligned::Copy,
        )?));
    }
    // a list, or a `range` (`x[range(n), y] = v`): an int64 index tensor
    let listed;
    let obj = if obj.is_instance_of::<PyRange>() {
        listed = PyList::new(obj.py(), obj.try_iter()?.collect::<PyResult<Vec<_>>>()?)?.into_any();
        &listed
    } else {
        obj
    };
    if obj.is_instance_of::<PyList>() {
        let t = tensor_from_data(obj, None)?;
        // `t[[]]` selects nothing (an empty list is an int64 index, as in torch)
        let t = if t.numel() == 0 {
            t.to_dtype(ferrotorch_core::DType::I64).py()?
        } else {
            t
        };
        return Ok(TensorIndex::Tensor(t));
    }
    if obj.hasattr("__index__")? {
        return Ok(TensorIndex::Int(obj.call_method0("__index__")?.extract()?));
    }
    Err(PyTypeError::new_err(format!(
        "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid indices (got {})",
        obj.get_type().name()?
    )))
}

/// A Python key as core indices.
pub fn indices(key: &Bound<'_, PyAny>) -> PyResult<Vec<TensorIndex>> {
    if let Ok(t) = key.cast::<PyTuple>() {
        t.iter().map(|o| one(&o)).collect()
    } else {
        Ok(vec![one(key)?])
    }
}

#[pymethods]
impl PyTensor {
    fn __getitem__<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let idx = indices(key)?;
        let t = guarded("index", || self.t.index(&idx))?;
        wrap(py, t)
    }

    fn __setitem__(&self, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let idx = indices(key)?;
        let v = if let Ok(t) = value.cast::<PyTensor>() {
            t.borrow().t.clone()
        } else if let Some(s) = to_scalar(value)? {
            Tensor::full(&[], s, self.t.dtype()).map_err(crate::errors::to_py)?
        } else {
            tensor_from_data(value, Some(self.t.dtype()))?
        };
        guarded("index_put_", || self.t.index_put_(&idx, &v, false))
    }

    /// `iter(t)`: the sub-tensors along the first dim.
    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        if self.t.dim() == 0 {
            return Err(PyTypeError::new_err("iteration over a 0-d tensor"));
        }
        let parts = guarded("unbind", || self.t.unbind(0))?;
        let items = parts
            .into_iter()
            .map(|t| wrap(py, t))
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, items)?.try_iter().map(|i| i.into_any())
    }
}

//! `torch.library` from Python (Note [Custom ops] in the core): a
//! `Library` of one namespace whose ops get Python kernels, autograd
//! formulas and fake functions. The Python half (`ferrotorch/library.py`)
//! builds `custom_op` and schema inference on it.

use crate::autograd::py_err;
use crate::convert::{from_ivalue, to_ivalue};
use crate::errors::IntoPy;
use ferrotorch_core::dispatch::{self, Args, DispatchKey, IValue, Type};
use ferrotorch_core::library::{Kind, Library};
use ferrotorch_core::{Result, Tensor};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use std::sync::{Arc, Mutex};

/// `_C._Library(ns, kind)`: kind "DEF", "FRAGMENT" or "IMPL".
#[pyclass(name = "_Library", module = "ferrotorch._C")]
pub struct PyLibrary {
    lib: Mutex<Library>,
}

fn kind_of(kind: &str) -> PyResult<Kind> {
    match kind {
        "DEF" => Ok(Kind::Def),
        "FRAGMENT" => Ok(Kind::Fragment),
        "IMPL" => Ok(Kind::Impl),
        _ => Err(pyo3::exceptions::PyValueError::new_err(format!(
            "Unsupported kind: {kind} (expected DEF, FRAGMENT or IMPL)"
        ))),
    }
}

/// torch's dispatch key names for a kernel: the backends, with the
/// composite keys meaning "every backend" (here the CPU).
fn key_of(key: &str) -> PyResult<DispatchKey> {
    match key {
        "" | "CPU" | "CompositeExplicitAutograd" | "CompositeImplicitAutograd" | "cpu" => {
            Ok(DispatchKey::Cpu)
        }
        "CUDA" | "cuda" => Ok(DispatchKey::Cuda),
        "PrivateUse1" => Ok(DispatchKey::PrivateUse1),
        _ => Err(pyo3::exceptions::PyValueError::new_err(format!(
            "unsupported dispatch key {key:?} for a kernel (use CPU, CUDA, PrivateUse1 or a Composite key; register_autograd and register_fake for the others)"
        ))),
    }
}

/// The op's outputs from what a Python function returned, by its schema.
fn result_of(py: Python<'_>, returns: &[Type], out: &Bound<'_, PyAny>) -> PyResult<IValue> {
    match returns.len() {
        0 => Ok(IValue::None),
        1 => to_ivalue(out),
        n => {
            let items: Vec<Bound<'_, PyAny>> = out
                .try_iter()
                .map_err(|_| {
                    pyo3::exceptions::PyTypeError::new_err(format!(
                        "the kernel must return a tuple of {n} values"
                    ))
                })?
                .collect::<PyResult<_>>()?;
            if items.len() != n {
                return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                    "the kernel returned {} values, the schema declares {n}",
                    items.len()
                )));
            }
            let _ = py;
            Ok(IValue::Tuple(
                items.iter().map(to_ivalue).collect::<PyResult<_>>()?,
            ))
        }
    }
}

/// Call a Python function with the bound arguments as Python values.
fn call_py(func: &Py<PyAny>, a: &Args) -> Result<IValue> {
    Python::attach(|py| {
        let run = || -> PyResult<IValue> {
            let args = a
                .values()
                .iter()
                .map(|v| from_ivalue(py, v.clone()))
                .collect::<PyResult<Vec<_>>>()?;
            let out = func.call1(py, PyTuple::new(py, args)?)?;
            result_of(py, &a.schema().returns, out.bind(py))
        };
        run().map_err(|e| py_err(py, e))
    })
}

#[pymethods]
impl PyLibrary {
    #[new]
    fn new(ns: &str, kind: &str) -> PyResult<PyLibrary> {
        Ok(PyLibrary {
            lib: Mutex::new(Library::new(ns, kind_of(kind)?).py()?),
        })
    }

    /// `lib.define(schema)`: declare an op; returns its full name.
    fn define(&self, schema: &str) -> PyResult<String> {
        self.lib.lock().unwrap().def(schema).py()
    }

    /// `lib.impl(name, fn, key)`: a Python kernel under a backend key.
    fn impl_py(&self, name: &str, func: Py<PyAny>, key: &str) -> PyResult<()> {
        let key = key_of(key)?;
        self.lib
            .lock()
            .unwrap()
            .impl_(name, key, move |a| call_py(&func, a))
            .py()
            .map(|_| ())
    }

    /// The op's autograd formula in Python: `run(inputs, outputs, grads)`
    /// returns one gradient (or None) per tensor input; the Python half
    /// builds torch's `setup_context(ctx, inputs, output)` and
    /// `backward(ctx, *grads)` on it.
    fn register_autograd(&self, name: &str, run: Py<PyAny>) -> PyResult<()> {
        let run = Arc::new(run);
        self.lib
            .lock()
            .unwrap()
            .impl_autograd(name, move |ctx, grads| {
                Python::attach(|py| {
                    let go = || -> PyResult<Vec<Option<Tensor>>> {
                        let ins = ctx
                            .args()
                            .values()
                            .iter()
                            .map(|v| from_ivalue(py, v.clone()))
                            .collect::<PyResult<Vec<_>>>()?;
                        let outs = ctx
                            .outputs()
                            .iter()
                            .map(|t| crate::convert::wrap(py, t.clone()))
                            .collect::<PyResult<Vec<_>>>()?;
                        let gs = grads
                            .iter()
                            .map(|t| crate::convert::wrap(py, t.clone()))
                            .collect::<PyResult<Vec<_>>>()?;
                        let r = run.call1(
                            py,
                            (
                                PyTuple::new(py, ins)?,
                                PyTuple::new(py, outs)?,
                                PyTuple::new(py, gs)?,
                            ),
                        )?;
                        r.bind(py)
                            .try_iter()?
                            .map(|g| {
                                let g = g?;
                                if g.is_none() {
                                    Ok(None)
                                } else {
                                    Ok(Some(
                                        to_ivalue(&g)?
                                            .into_tensor()
                                            .map_err(crate::errors::to_py)?,
                                    ))
                                }
                            })
                            .collect()
                    };
                    go().map_err(|e| py_err(py, e))
                })
            })
            .py()
            .map(|_| ())
    }

    /// `register_fake`: the op's shape function in Python.
    fn register_fake(&self, name: &str, func: Py<PyAny>) -> PyResult<()> {
        self.lib
            .lock()
            .unwrap()
            .impl_fake(name, move |a| call_py(&func, a))
            .py()
            .map(|_| ())
    }
}

/// `_C._op_exists(name)`: whether an op (full or base name) is registered.
#[pyfunction]
pub fn _op_exists(name: &str) -> bool {
    dispatch::find_op(name).is_some() || !_op_overloads(name).is_empty()
}

/// `_C._call_fake(name, args)`: run an op's fake function.
#[pyfunction]
pub fn _call_fake<'py>(
    py: Python<'py>,
    name: &str,
    args: &Bound<'py, PyTuple>,
) -> PyResult<Bound<'py, PyAny>> {
    let vals: Vec<IValue> = args
        .iter()
        .map(|a| to_ivalue(&a))
        .collect::<PyResult<_>>()?;
    let out = ferrotorch_core::library::call_fake(name, &vals).py()?;
    from_ivalue(py, out)
}

/// `_C._op_schema(name)`: the schema text of an op (full name).
#[pyfunction]
pub fn _op_schema(name: &str) -> PyResult<String> {
    dispatch::find_schema(name)
        .map(|s| s.to_string())
        .ok_or_else(|| {
            pyo3::exceptions::PyRuntimeError::new_err(format!("unknown operator '{name}'"))
        })
}

/// An op's arguments as `_op_arguments` gives them: name, type (schema
/// text), keyword-only.
type OpArgs = Vec<(String, String, bool)>;

/// `_C._op_arguments(name)`: `(arguments, return types)` of an op's
/// schema, for writers of programs (`torch.export.save`).
#[pyfunction]
pub fn _op_arguments(name: &str) -> PyResult<(OpArgs, Vec<String>)> {
    let s = dispatch::find_schema(name).ok_or_else(|| {
        pyo3::exceptions::PyRuntimeError::new_err(format!("unknown operator '{name}'"))
    })?;
    let args = s
        .args
        .iter()
        .map(|a| (a.name.clone(), a.ty.to_string(), a.kwarg_only))
        .collect();
    Ok((args, s.returns.iter().map(|t| t.to_string()).collect()))
}

/// `_C._op_overloads(name)`: `(base, full)` for each overload of a base
/// name.
#[pyfunction]
pub fn _op_overloads(name: &str) -> Vec<(String, String)> {
    dispatch::op_names()
        .into_iter()
        .filter(|n| n.split('.').next() == Some(name))
        .map(|n| (name.to_string(), n))
        .collect()
}

/// `_C._load_library(path)`: `torch.ops.load_library` (Note [Plugin ABI]
/// in `ferrotorch-c`).
#[pyfunction]
pub fn _load_library(py: Python<'_>, path: std::path::PathBuf) -> PyResult<()> {
    py.detach(|| {
        crate::errors::guarded("load_library", || {
            ferrotorch_capi::plugin::load_library(&path)
        })
    })
}

/// `_C._loaded_libraries()`: the plugins loaded so far.
#[pyfunction]
pub fn _loaded_libraries() -> Vec<std::path::PathBuf> {
    ferrotorch_capi::plugin::loaded_libraries()
}

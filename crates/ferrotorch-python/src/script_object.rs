//! Custom class objects in Python (`torch.ScriptObject`,
//! `torch.classes.ns.Name(...)`; Note [Custom classes] in the core).
//!
//! # Note [Identity through objects]
//! In eager PyTorch `tq.push(a); tq.pop() is a` holds: the queue keeps the
//! tensor object, and a tensor has one Python object. Our Python tensors
//! are wrappers made per result, so a tensor that goes into an object is
//! remembered here by its identity (a weak reference to its Python
//! object), and a tensor or object that comes back out of an op on
//! objects is given that same Python object while it lives. Only the ops
//! that use objects pay for this; other results are new wrappers as
//! before.

use crate::convert::{call_args, from_ivalue, kw_refs, to_ivalue, wrap};
use crate::errors::{guarded, IntoPy};
use ferrotorch_core::dispatch::IValue;
use ferrotorch_core::library::{self, ScriptObject};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyCFunction, PyDict, PyList, PyTuple};

/// An object of a custom class (`torch.ScriptObject`).
#[pyclass(name = "ScriptObject", module = "ferrotorch", weakref)]
pub struct PyScriptObject {
    pub(crate) o: ScriptObject,
}

static TABLE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// identity → the Python object, held weakly.
fn table(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    Ok(TABLE
        .get_or_try_init(py, || -> PyResult<Py<PyAny>> {
            Ok(py
                .import("weakref")?
                .getattr("WeakValueDictionary")?
                .call0()?
                .unbind())
        })?
        .bind(py))
}

/// Remember the Python object of every tensor and object in `obj` (an
/// argument of an op on objects).
pub(crate) fn remember(obj: &Bound<'_, PyAny>) -> PyResult<()> {
    let py = obj.py();
    if let Ok(t) = obj.cast::<crate::tensor::PyTensor>() {
        let id = t.borrow().t.object_id();
        table(py)?.set_item(id, obj)?;
    } else if let Ok(o) = obj.cast::<PyScriptObject>() {
        let id = o.borrow().o.object_id();
        table(py)?.set_item(id, obj)?;
    } else if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        for x in obj.try_iter()? {
            remember(&x?)?;
        }
    }
    Ok(())
}

fn recall<'py>(py: Python<'py>, id: usize) -> PyResult<Option<Bound<'py, PyAny>>> {
    let t = table(py)?;
    let got = t.call_method1("get", (id,))?;
    Ok(if got.is_none() { None } else { Some(got) })
}

/// A result of an op on objects as Python values, tensors and objects
/// that went in coming back as the same Python objects (Note [Identity
/// through objects]); a traced int (an object's `size()` while tracing)
/// as its 0-dim tensor, so arithmetic on it is traced.
pub(crate) fn from_ivalue_ids(py: Python<'_>, v: IValue) -> PyResult<Bound<'_, PyAny>> {
    Ok(match v {
        IValue::Tensor(t) => match recall(py, t.object_id())? {
            Some(o)
                if o.cast::<crate::tensor::PyTensor>()
                    .is_ok_and(|p| p.borrow().t.is_same(&t)) =>
            {
                o
            }
            _ => wrap(py, t)?,
        },
        IValue::Object(o) => object(py, o)?,
        IValue::SymInt(t) => wrap(py, t)?,
        IValue::TensorList(l) => {
            let items = l
                .into_iter()
                .map(|t| from_ivalue_ids(py, IValue::Tensor(t)))
                .collect::<PyResult<Vec<_>>>()?;
            PyList::new(py, items)?.into_any()
        }
        IValue::Tuple(items) => {
            let items = items
                .into_iter()
                .map(|v| from_ivalue_ids(py, v))
                .collect::<PyResult<Vec<_>>>()?;
            PyTuple::new(py, items)?.into_any()
        }
        other => from_ivalue(py, other)?,
    })
}

/// The Python object of `o`: the one it already has, or a new one.
pub(crate) fn object(py: Python<'_>, o: ScriptObject) -> PyResult<Bound<'_, PyAny>> {
    if let Some(known) = recall(py, o.object_id())? {
        if known
            .cast::<PyScriptObject>()
            .is_ok_and(|k| k.borrow().o.is_same(&o))
        {
            return Ok(known);
        }
    }
    let id = o.object_id();
    let obj = Bound::new(py, PyScriptObject { o })?.into_any();
    table(py)?.set_item(id, &obj)?;
    Ok(obj)
}

/// Whether any argument is an object (the call then keeps identities).
pub(crate) fn has_object(vals: &[IValue]) -> bool {
    vals.iter().any(|v| matches!(v, IValue::Object(_)))
}

/// A call's arguments, each tensor and object in them remembered.
fn remembered_args(
    args: &Bound<'_, PyTuple>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<crate::convert::CallArgs> {
    remember(args.as_any())?;
    if let Some(k) = kwargs {
        remember(&k.values().into_any())?;
    }
    call_args(args, kwargs)
}

fn call_method<'py>(
    py: Python<'py>,
    o: &ScriptObject,
    name: &str,
    args: &Bound<'py, PyTuple>,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let (pos, kw) = remembered_args(args, kwargs)?;
    let full = format!("{}::{name}", o.class().name());
    let out = guarded(&full, || o.call_method(name, &pos, &kw_refs(&kw)))?;
    from_ivalue_ids(py, out)
}

#[pymethods]
impl PyScriptObject {
    /// A method, bound to this object (`tq.push`).
    fn __getattr__<'py>(slf: &Bound<'py, Self>, name: &str) -> PyResult<Bound<'py, PyAny>> {
        let o = slf.borrow().o.clone();
        if o.class().method(name).is_none() || name.starts_with("__") && name != "__obj_flatten__" {
            return Err(pyo3::exceptions::PyAttributeError::new_err(format!(
                "'{}' object has no attribute or method '{name}'",
                o.class().qualified_name()
            )));
        }
        let name = name.to_string();
        let f = PyCFunction::new_closure(
            slf.py(),
            None,
            None,
            move |args: &Bound<'_, PyTuple>,
                  kwargs: Option<&Bound<'_, PyDict>>|
                  -> PyResult<Py<PyAny>> {
                Ok(call_method(args.py(), &o, &name, args, kwargs)?.unbind())
            },
        )?;
        Ok(f.into_any())
    }

    /// `obj._call_method(name, *args, **kwargs)`.
    #[pyo3(signature = (name, *args, **kwargs))]
    fn _call_method<'py>(
        &self,
        py: Python<'py>,
        name: &str,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        call_method(py, &self.o, name, args, kwargs)
    }

    /// `ns::Name`.
    #[getter]
    fn _class_name(&self) -> String {
        self.o.class().name()
    }

    /// `__torch__.torch.classes.ns.Name` (`tq._type().qualified_name()`).
    #[getter]
    fn _qualified_name(&self) -> String {
        self.o.class().qualified_name().to_string()
    }

    /// The class's method names (`_method_names()`).
    fn _method_names(&self) -> Vec<String> {
        self.o.class().method_names()
    }

    /// Whether the class has `__obj_flatten__`.
    fn _has_method(&self, name: &str) -> bool {
        self.o.class().method(name).is_some()
    }

    /// `__getstate__` of `def_pickle`.
    fn __getstate__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let state = guarded("__getstate__", || self.o.getstate())?;
        from_ivalue_ids(py, state)
    }

    /// Pickling (and `ferrotorch.save`) through `def_pickle`: the class
    /// name and the state; loading runs `__setstate__`.
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let state = self.__getstate__(py)?;
        let rebuild = py
            .import("ferrotorch._C")?
            .getattr("_script_object_from_state")?;
        (rebuild, (self.o.class().name(), state))
            .into_pyobject(py)
            .map(|t| t.into_any())
    }

    /// `copy.deepcopy`: a new object from a copy of the state.
    fn __deepcopy__<'py>(
        &self,
        py: Python<'py>,
        _memo: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let copy = guarded("__deepcopy__", || self.o.deep_copy())?;
        object(py, copy)
    }

    fn __repr__(&self) -> String {
        format!(
            "<torch.ScriptObject object of {} at {:#x}>",
            self.o.class().qualified_name(),
            self.o.object_id()
        )
    }
}

/// `_C._construct_class(name, args, kwargs)`: `torch.classes.ns.Name(...)`.
#[pyfunction]
#[pyo3(signature = (name, args, kwargs=None))]
pub fn _construct_class<'py>(
    py: Python<'py>,
    name: &str,
    args: &Bound<'py, PyTuple>,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let (pos, kw) = remembered_args(args, kwargs)?;
    let o = guarded(name, || library::construct(name, &pos, &kw_refs(&kw)))?;
    object(py, o)
}

/// `_C._script_object_from_state(name, state)`: unpickling.
#[pyfunction]
pub fn _script_object_from_state<'py>(
    py: Python<'py>,
    name: &str,
    state: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let state = to_ivalue(state)?;
    let o = guarded(name, || library::from_state(name, state))?;
    object(py, o)
}

/// `_C._class_exists(name)`: whether `ns::Name` is registered.
#[pyfunction]
pub fn _class_exists(name: &str) -> bool {
    library::find_class(name).is_some()
}

/// `_C._class_names()`: every registered class, `ns::Name`.
#[pyfunction]
pub fn _class_names() -> Vec<String> {
    library::class_names()
}

/// `_C._class_schemas(name)`: `(method, schema)` of each of a class's
/// methods.
#[pyfunction]
pub fn _class_schemas(name: &str) -> PyResult<Vec<(String, String)>> {
    let c = library::find_class(name)
        .ok_or_else(|| pyo3::exceptions::PyRuntimeError::new_err(format!("no class {name}")))?;
    Ok(c.method_names()
        .into_iter()
        .filter_map(|m| c.method(&m).map(|e| (m, e.schema.to_string())))
        .collect())
}

/// `_C._register_test_gil_op()`: register `ft_py_test::gil_held(Tensor x)
/// -> Tensor`, a custom op with a Rust kernel whose result (a 0-dim int64
/// tensor) says whether the calling thread held the GIL: the tests show
/// that a compiled graph calls Rust custom ops without it.
#[pyfunction]
pub fn _register_test_gil_op() -> PyResult<()> {
    static DONE: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    if DONE.get().is_some() {
        return Ok(());
    }
    let mut m = library::Library::new("ft_py_test", library::Kind::Def).py()?;
    m.def_impl("gil_held(Tensor x) -> Tensor", |_| {
        // SAFETY: PyGILState_Check may be called without the GIL.
        let held = unsafe { pyo3::ffi::PyGILState_Check() } == 1;
        Ok(IValue::Tensor(ferrotorch_core::Tensor::scalar_tensor(
            i64::from(held),
        )))
    })
    .py()?;
    let _ = DONE.set(());
    Ok(())
}

/// `_C._register_tensor_queue()`: register seeds/004's worked example,
/// `MyCustomClass::TensorQueue` and `MyCustomClass::for_each_add_`
/// (`ferrotorch_core::library::tensor_queue`).
#[pyfunction]
pub fn _register_tensor_queue() -> PyResult<()> {
    library::tensor_queue::register().py()
}

//! `torch.jit`'s native half: `_C._jit_trace` traces a Python function or
//! module through the dispatcher (every op the Python code calls, by
//! operator, method or function, passes the Tracer key), and
//! `_C.ScriptModule` runs the graph with the interpreter.

use crate::autograd::py_err;
use crate::convert::wrap;
use crate::errors::guarded;
use crate::jit_graph::PyGraph;
use crate::script_object::{self, PyScriptObject};
use crate::tensor::PyTensor;
use ferrotorch_core::dispatch::IValue;
use ferrotorch_core::{Error, ErrorKind, Tensor};
use ferrotorch_jit::ScriptModule;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

/// A traced function or module (`torch.jit.ScriptModule`'s native part).
#[pyclass(name = "ScriptModule", module = "ferrotorch._C")]
pub struct PyScriptModule {
    pub(crate) m: ScriptModule,
}

/// A graph input or output: a tensor or a custom class's object.
fn value_of(o: &Bound<'_, PyAny>) -> PyResult<IValue> {
    if let Ok(t) = o.cast::<PyTensor>() {
        return Ok(IValue::Tensor(t.borrow().t.clone()));
    }
    if let Ok(s) = o.cast::<PyScriptObject>() {
        return Ok(IValue::Object(s.borrow().o.clone()));
    }
    Err(pyo3::exceptions::PyTypeError::new_err(format!(
        "expected a Tensor or a ScriptObject, got {}",
        o.get_type().name()?
    )))
}

/// The values a traced Python function returned: one tensor or object,
/// or a tuple/list of them.
fn outputs_of(o: &Bound<'_, PyAny>) -> PyResult<Vec<IValue>> {
    if let Ok(v) = value_of(o) {
        return Ok(vec![v]);
    }
    o.try_iter()?.map(|x| value_of(&x?)).collect()
}

#[pymethods]
impl PyScriptModule {
    /// Run the graph on tensors: one tensor, or a tuple when the traced
    /// function returned several.
    #[pyo3(signature = (*args))]
    fn forward<'py>(
        &self,
        py: Python<'py>,
        args: &Bound<'py, PyTuple>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let ins: Vec<IValue> = args.iter().map(|a| value_of(&a)).collect::<PyResult<_>>()?;
        let objects = script_object::has_object(&ins);
        if objects {
            script_object::remember(args.as_any())?;
        }
        // the graph runs with the GIL released: its ops (custom ops with
        // Rust kernels included) are native; a Python kernel takes the
        // GIL itself
        let m = &self.m;
        let mut outs = py.detach(|| guarded("ScriptModule.forward", || m.forward_values(&ins)))?;
        let convert = |py, v: IValue| match &v {
            IValue::Tensor(t) if !objects => wrap(py, t.clone()),
            _ => script_object::from_ivalue_ids(py, v),
        };
        if outs.len() == 1 {
            return convert(py, outs.remove(0));
        }
        let items = outs
            .into_iter()
            .map(|t| convert(py, t))
            .collect::<PyResult<Vec<_>>>()?;
        Ok(PyTuple::new(py, items)?.into_any())
    }

    #[pyo3(signature = (*args))]
    fn __call__<'py>(
        &self,
        py: Python<'py>,
        args: &Bound<'py, PyTuple>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.forward(py, args)
    }

    /// The graph (`module.graph`): passes given it (`_jit_pass_dce(g)`)
    /// rewrite this module's graph.
    #[getter]
    fn graph(slf: Py<Self>) -> PyGraph {
        PyGraph::of_module(slf)
    }

    /// A copy of the graph with submodule calls inlined.
    #[getter]
    fn inlined_graph(&self) -> PyResult<PyGraph> {
        let g = guarded("inlined_graph", || self.m.inlined_graph())?;
        Ok(PyGraph::owned(g))
    }

    /// The graph as TorchScript-style source.
    #[getter]
    fn code(&self) -> String {
        self.m.code()
    }

    /// Write the program to `path` (Note [Saved programs]).
    fn save(&self, py: Python<'_>, path: std::path::PathBuf) -> PyResult<()> {
        py.detach(|| guarded("jit.save", || self.m.save(&path)))
    }

    /// The saved program's bytes.
    fn _save_to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyBytes>> {
        // written straight into the bytes object: one copy of the weights
        let file = guarded("jit.save", || {
            ferrotorch_jit::serialize::Encoded::new(&self.m)
        })?;
        let len = guarded("jit.save", || file.len())?;
        let size = pyo3::ffi::Py_ssize_t::try_from(len).map_err(|_| {
            pyo3::exceptions::PyOverflowError::new_err("jit.save: program too large")
        })?;
        // SAFETY: a NULL source makes a bytes object of `size` uninitialised
        // bytes, owned here and filled below before anyone else sees it.
        let obj = unsafe { pyo3::ffi::PyBytes_FromStringAndSize(std::ptr::null(), size) };
        let bytes = unsafe { Bound::from_owned_ptr_or_err(py, obj)? }
            .cast_into::<pyo3::types::PyBytes>()?;
        // SAFETY: the object's buffer is `len` bytes long and not shared yet.
        let raw = unsafe {
            std::slice::from_raw_parts_mut(
                pyo3::ffi::PyBytes_AsString(bytes.as_ptr()) as *mut std::mem::MaybeUninit<u8>,
                len,
            )
        };
        // huge pages for the fresh buffer, then the program straight into it
        let buf = ferrotorch_core::storage::zero_fresh(raw);
        guarded("jit.save", || file.write_into(buf))?;
        Ok(bytes)
    }

    /// A copy with pass `name` run on it: `dce`, `cse`, `peephole`,
    /// `constant_propagation`, `inline`, `fold_convbn`, `fuse`, `fuse_conv`, `freeze`, `optimize` (the default order) or
    /// `optimize_for_inference` (Note [Pass order]).
    fn _run_pass(&self, name: &str) -> PyResult<PyScriptModule> {
        use ferrotorch_jit::passes;
        let mut m = self.m.clone();
        guarded("jit pass", || {
            match name {
                "dce" => {
                    passes::eliminate_dead_code(m.graph_mut());
                }
                "cse" => {
                    passes::eliminate_common_subexpressions(m.graph_mut());
                }
                "peephole" => {
                    passes::peephole(m.graph_mut());
                }
                "constant_propagation" => {
                    passes::fold_constants(m.graph_mut())?;
                }
                "inline" => {
                    passes::inline(m.graph_mut())?;
                }
                "fold_convbn" => {
                    passes::fold_conv_batch_norm(m.graph_mut())?;
                }
                "fuse" => {
                    passes::fuse_elementwise(m.graph_mut());
                }
                "fuse_conv" => {
                    passes::fuse_conv_blocks(m.graph_mut())?;
                }
                "freeze" => passes::freeze(&mut m)?,
                "optimize" => passes::optimize(m.graph_mut())?,
                "optimize_for_inference" => m = passes::optimize_for_inference(&m)?,
                other => ferrotorch_core::bail!(Value, "unknown pass {other:?}"),
            }
            Ok(())
        })?;
        Ok(PyScriptModule { m })
    }

    /// The attributes (parameters and buffers) the graph reads, by name.
    fn _attributes<'py>(&self, py: Python<'py>) -> PyResult<Vec<(String, Bound<'py, PyAny>)>> {
        self.m
            .attributes()
            .iter()
            .map(|(n, a)| Ok((n.clone(), wrap(py, a.tensor())?)))
            .collect()
    }
}

/// `_C._jit_trace(func, inputs, attrs, module_name)`: trace `func(*inputs)`
/// with `attrs` (`[(name, tensor)]`) read as the module's attributes.
#[pyfunction]
#[pyo3(signature = (func, inputs, attrs, module_name=None))]
pub fn _jit_trace(
    func: Py<PyAny>,
    inputs: Vec<Bound<'_, PyAny>>,
    attrs: Vec<(String, PyRef<'_, PyTensor>)>,
    module_name: Option<String>,
) -> PyResult<PyScriptModule> {
    let ins: Vec<IValue> = inputs.iter().map(value_of).collect::<PyResult<_>>()?;
    // objects: the function gets the very Python objects it was given
    let objects = script_object::has_object(&ins);
    if objects {
        for i in &inputs {
            script_object::remember(i)?;
        }
    }
    let attrs: Vec<(String, Tensor)> = attrs.into_iter().map(|(n, t)| (n, t.t.clone())).collect();
    let run = |xs: &[IValue]| -> ferrotorch_core::Result<Vec<IValue>> {
        Python::attach(|py| {
            let args = xs
                .iter()
                .map(|v| match v {
                    IValue::Tensor(t) if !objects => wrap(py, t.clone()),
                    v => script_object::from_ivalue_ids(py, v.clone()),
                })
                .collect::<PyResult<Vec<_>>>()
                .map_err(|e| py_err(py, e))?;
            let args = PyTuple::new(py, args).map_err(|e| py_err(py, e))?;
            let out = func.call1(py, args).map_err(|e| py_err(py, e))?;
            outputs_of(out.bind(py)).map_err(|_| {
                Error::new(
                    ErrorKind::Type,
                    "jit.trace: the traced function must return a tensor or a tuple of tensors (or custom class objects)"
                        .to_string(),
                )
            })
        })
    };
    let m = guarded("jit.trace", || match &module_name {
        Some(name) => ferrotorch_jit::trace_values_with_attributes(name, attrs, &ins, run),
        None => ferrotorch_jit::trace_values(run, &ins),
    })?;
    if !m.trace_warnings().is_empty() {
        Python::attach(|py| -> PyResult<()> {
            let category = py.import("ferrotorch.jit")?.getattr("TracerWarning")?;
            let warnings = py.import("warnings")?;
            for w in m.trace_warnings() {
                warnings.call_method1("warn", (w.as_str(), &category, 2))?;
            }
            Ok(())
        })?;
    }
    Ok(PyScriptModule { m })
}

/// `_C._jit_load(path)`: a saved program, checked before anything runs.
#[pyfunction]
pub fn _jit_load(py: Python<'_>, path: std::path::PathBuf) -> PyResult<PyScriptModule> {
    let m = py.detach(|| guarded("jit.load", || ferrotorch_jit::load(&path)))?;
    Ok(PyScriptModule { m })
}

/// `_C._jit_load_bytes(data)`: [`_jit_load`] from `bytes` or any
/// contiguous byte buffer (a `BytesIO`'s `getbuffer()`, read in place).
#[pyfunction]
pub fn _jit_load_bytes(data: pyo3::buffer::PyBuffer<u8>) -> PyResult<PyScriptModule> {
    if !data.is_c_contiguous() {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "jit.load: the buffer must be contiguous",
        ));
    }
    // SAFETY: a contiguous buffer of `len_bytes()` bytes that `data` keeps
    // alive for this call; the GIL stays held, so no Python code writes to
    // it meanwhile.
    let bytes =
        unsafe { std::slice::from_raw_parts(data.buf_ptr() as *const u8, data.len_bytes()) };
    let m = guarded("jit.load", || ferrotorch_jit::load_bytes(bytes))?;
    Ok(PyScriptModule { m })
}

/// `_C._jit_enter_module(name, type_name, tensors)`: a Python module's
/// `__call__` while tracing (Note [Module hierarchy]); true when
/// `_jit_exit_module` must follow.
#[pyfunction]
pub fn _jit_enter_module(name: &str, type_name: &str, inputs: Vec<PyRef<'_, PyTensor>>) -> bool {
    let ins: Vec<Tensor> = inputs.iter().map(|t| t.t.clone()).collect();
    ferrotorch_jit::enter_module(name, type_name, &ins)
}

/// `_C._jit_exit_module(outputs)`: the call's tensor outputs, or `None`
/// when they are not tensors (the call is then inlined).
#[pyfunction]
#[pyo3(signature = (outputs=None))]
pub fn _jit_exit_module(outputs: Option<Vec<PyRef<'_, PyTensor>>>) -> PyResult<()> {
    let outs: Option<Vec<Tensor>> = outputs.map(|o| o.iter().map(|t| t.t.clone()).collect());
    guarded("jit.trace", || ferrotorch_jit::exit_module(outs.as_deref()))
}

/// `torch.jit.is_tracing()`.
#[pyfunction]
pub fn _jit_is_tracing() -> bool {
    ferrotorch_jit::is_tracing()
}

thread_local! {
    static STATIC_SIZES: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether sizes are plain ints while tracing on this thread.
pub(crate) fn static_sizes() -> bool {
    STATIC_SIZES.with(|s| s.get())
}

/// Trace with sizes as plain ints (`ferrotorch.compile`, which guards
/// on every input's shape, so sizes are constants of its graphs and
/// `math.sqrt(x.size(-1))` is no unsound trace); returns the old value.
#[pyfunction]
pub fn _jit_set_static_sizes(on: bool) -> bool {
    STATIC_SIZES.with(|s| s.replace(on))
}

/// torch's `TracerWarning` when a traced value leaves the graph as a Python
/// value (`item()`, `tolist()`, `bool(t)`, `int(t)`, `float(t)`): the trace
/// treats it as a constant from then on.
pub(crate) fn warn_if_tracing(py: Python<'_>, what: &str) -> PyResult<()> {
    if !ferrotorch_jit::is_tracing() {
        return Ok(());
    }
    let category = py.import("ferrotorch.jit")?.getattr("TracerWarning")?;
    let msg = format!(
        "{what} might cause the trace to be incorrect. We can't record the data flow of Python values, so this value will be treated as a constant in the future. This means that the trace might not generalize to other inputs!"
    );
    py.import("warnings")?
        .call_method1("warn", (msg, category, 2))?;
    Ok(())
}

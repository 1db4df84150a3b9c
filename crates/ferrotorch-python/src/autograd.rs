//! `torch.autograd` entry points and grad-mode switches.
//!
//! Grad mode is thread-local in the core, as in torch. The Python context
//! managers (`no_grad`, `enable_grad`, `inference_mode`) live in
//! `ferrotorch/autograd/grad_mode.py` and flip it through [`_set_modes`],
//! restoring the previous state on exit.

use crate::convert::wrap;
use crate::errors::{guarded, IntoPy};
use crate::tensor::PyTensor;
use ferrotorch_core::autograd::{self, mode, RemovableHandle};
use ferrotorch_core::{Error, ErrorKind, Tensor};
use pyo3::prelude::*;

fn tensors(list: Vec<PyRef<'_, PyTensor>>) -> Vec<Tensor> {
    list.iter().map(|t| t.t.clone()).collect()
}

/// `(grad enabled, inference mode)` on this thread.
#[pyfunction]
pub fn _modes() -> (bool, bool) {
    mode::modes()
}

/// Set both switches on this thread (the context managers restore what
/// [`_modes`] returned on exit).
#[pyfunction]
pub fn _set_modes(grad_enabled: bool, inference: bool) {
    mode::set_modes(grad_enabled, inference)
}

/// Set grad mode on this thread; returns the previous mode.
#[pyfunction]
pub fn _set_grad_enabled(enabled: bool) -> bool {
    let (prev, inference) = mode::modes();
    mode::set_modes(enabled, inference);
    prev
}

/// `torch.is_grad_enabled()`.
#[pyfunction]
pub fn is_grad_enabled() -> bool {
    autograd::is_grad_enabled()
}

/// `torch.is_inference_mode_enabled()`.
#[pyfunction]
pub fn is_inference_mode_enabled() -> bool {
    autograd::is_inference_mode_enabled()
}

/// `torch.autograd.backward(tensors, grad_tensors, retain_graph, create_graph)`.
#[pyfunction]
#[pyo3(signature = (tensors, grad_tensors=None, retain_graph=None, create_graph=false))]
pub fn _backward(
    py: Python<'_>,
    tensors: Vec<PyRef<'_, PyTensor>>,
    grad_tensors: Option<Vec<PyRef<'_, PyTensor>>>,
    retain_graph: Option<bool>,
    create_graph: bool,
) -> PyResult<()> {
    let outs = self::tensors(tensors);
    let grads = grad_tensors.map(self::tensors);
    py.detach(|| {
        guarded("backward", || {
            autograd::backward(&outs, grads.as_deref(), retain_graph, create_graph)
        })
    })
}

/// `torch.autograd.grad(outputs, inputs, grad_outputs, retain_graph,
/// create_graph, allow_unused)`: a tuple with one entry (or None) per input.
#[pyfunction]
#[pyo3(signature = (outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=false, allow_unused=false))]
pub fn _grad<'py>(
    py: Python<'py>,
    outputs: Vec<PyRef<'py, PyTensor>>,
    inputs: Vec<PyRef<'py, PyTensor>>,
    grad_outputs: Option<Vec<PyRef<'py, PyTensor>>>,
    retain_graph: Option<bool>,
    create_graph: bool,
    allow_unused: bool,
) -> PyResult<Vec<Option<Bound<'py, PyAny>>>> {
    let outs = tensors(outputs);
    let ins = tensors(inputs);
    let gos = grad_outputs.map(tensors);
    let got = py.detach(|| {
        guarded("grad", || {
            autograd::grad(
                &outs,
                &ins,
                gos.as_deref(),
                retain_graph,
                create_graph,
                allow_unused,
            )
        })
    })?;
    got.into_iter()
        .map(|g| g.map(|g| wrap(py, g)).transpose())
        .collect()
}

/// The handle `register_hook` returns.
#[pyclass(name = "RemovableHandle", module = "ferrotorch.utils.hooks")]
pub struct PyRemovableHandle {
    pub(crate) handle: Option<RemovableHandle>,
}

#[pymethods]
impl PyRemovableHandle {
    /// Unregister the hook.
    fn remove(&mut self) {
        if let Some(h) = self.handle.take() {
            h.remove();
        }
    }
}

fn call_hook(hook: &Py<PyAny>, grad: &Tensor) -> ferrotorch_core::Result<Option<Tensor>> {
    Python::attach(|py| {
        let arg = wrap(py, grad.clone()).map_err(|e| py_err(py, e))?;
        let out = hook.call1(py, (arg,)).map_err(|e| py_err(py, e))?;
        if out.is_none(py) {
            return Ok(None);
        }
        match out.bind(py).cast::<PyTensor>() {
            Ok(t) => {
                let new = t.borrow().t.clone();
                let name = || -> String {
                    hook.bind(py)
                        .getattr("__name__")
                        .and_then(|n| n.extract())
                        .unwrap_or_else(|_| "hook".into())
                };
                if new.dtype() != grad.dtype() {
                    return Err(Error::new(
                        ErrorKind::Runtime,
                        format!(
                            "hook '{}' has changed the type of value (was torch.{}Tensor got torch.{}Tensor)",
                            name(),
                            grad.dtype().name_title(),
                            new.dtype().name_title()
                        ),
                    ));
                }
                if new.shape() != grad.shape() {
                    return Err(Error::new(
                        ErrorKind::Runtime,
                        format!("hook '{}' has changed the size of value", name()),
                    ));
                }
                Ok(Some(new))
            }
            Err(_) => Err(Error::new(
                ErrorKind::Type,
                "hook must return None or a Tensor".to_string(),
            )),
        }
    })
}

/// A Python exception raised in a callback, carried through the core
/// unchanged (Note [Foreign errors]): `to_py` raises the original again.
pub(crate) fn py_err(py: Python<'_>, e: PyErr) -> Error {
    Error::with_payload(ErrorKind::Runtime, e.value(py).to_string(), e)
}

#[pymethods]
impl PyTensor {
    /// `t.register_hook(hook)`: `hook(grad)` runs when this tensor's
    /// gradient is computed and may return a replacement.
    fn register_hook(&self, hook: Py<PyAny>) -> PyResult<PyRemovableHandle> {
        let h = self.t.register_hook(move |g| call_hook(&hook, g)).py()?;
        Ok(PyRemovableHandle { handle: Some(h) })
    }

    /// `t.register_post_accumulate_grad_hook(hook)`: `hook(t)` runs after
    /// backward accumulated into this leaf's `.grad`, with this very Python
    /// object (parameters are dictionary keys in torch's
    /// optimizer-in-backward recipe). The hook holds the object weakly, so
    /// it does not keep the tensor alive.
    fn register_post_accumulate_grad_hook(
        slf: &Bound<'_, Self>,
        hook: Py<PyAny>,
    ) -> PyResult<PyRemovableHandle> {
        let weak = pyo3::types::PyWeakrefReference::new(slf)?.unbind();
        let h = slf
            .borrow()
            .t
            .register_post_accumulate_grad_hook(move |_| {
                Python::attach(|py| {
                    let obj = weak.bind(py).call0().map_err(|e| py_err(py, e))?;
                    if obj.is_none() {
                        return Ok(());
                    }
                    hook.call1(py, (obj,)).map_err(|e| py_err(py, e))?;
                    Ok(())
                })
            })
            .py()?;
        Ok(PyRemovableHandle { handle: Some(h) })
    }

    /// `t.output_nr`: which output of its `grad_fn` this tensor is (0 for
    /// a leaf).
    #[getter]
    fn output_nr(&self) -> usize {
        self.t.output_nr()
    }
}

/// A Python `autograd.Function` subclass, run as a core custom function:
/// `forward` and `backward` are Python closures over the Python `ctx`.
struct PyFunction {
    name: String,
    forward: Py<PyAny>,
    backward: Py<PyAny>,
}

fn tensors_of(obj: &Bound<'_, PyAny>) -> PyResult<Vec<Option<Tensor>>> {
    obj.try_iter()?
        .map(|o| {
            let o = o?;
            if o.is_none() {
                Ok(None)
            } else {
                Ok(Some(o.cast::<PyTensor>()?.borrow().t.clone()))
            }
        })
        .collect()
}

impl autograd::Function for PyFunction {
    fn forward(
        &self,
        _ctx: &mut autograd::FunctionCtx,
        inputs: &[Tensor],
    ) -> ferrotorch_core::Result<Vec<Tensor>> {
        Python::attach(|py| {
            let args = inputs
                .iter()
                .map(|t| wrap(py, t.clone()))
                .collect::<PyResult<Vec<_>>>()
                .map_err(|e| py_err(py, e))?;
            let out = self.forward.call1(py, (args,)).map_err(|e| py_err(py, e))?;
            let outs = tensors_of(out.bind(py)).map_err(|e| py_err(py, e))?;
            outs.into_iter()
                .map(|t| {
                    t.ok_or_else(|| {
                        Error::new(ErrorKind::Type, "forward must return tensors".to_string())
                    })
                })
                .collect()
        })
    }

    fn backward(
        &self,
        _ctx: &autograd::FunctionCtx,
        grad_outputs: &[Tensor],
    ) -> ferrotorch_core::Result<Vec<Option<Tensor>>> {
        Python::attach(|py| {
            let args = grad_outputs
                .iter()
                .map(|t| wrap(py, t.clone()))
                .collect::<PyResult<Vec<_>>>()
                .map_err(|e| py_err(py, e))?;
            let out = self
                .backward
                .call1(py, (args,))
                .map_err(|e| py_err(py, e))?;
            tensors_of(out.bind(py)).map_err(|e| py_err(py, e))
        })
    }

    fn name(&self) -> String {
        format!("{}Backward", self.name)
    }
}

/// `_C._function_apply(name, forward, backward, inputs)`: run a Python
/// `autograd.Function` through the core's custom-function node.
#[pyfunction]
pub fn _function_apply<'py>(
    py: Python<'py>,
    name: String,
    forward: Py<PyAny>,
    backward: Py<PyAny>,
    inputs: Vec<PyRef<'py, PyTensor>>,
) -> PyResult<Vec<Bound<'py, PyAny>>> {
    let ins = tensors(inputs);
    let f = PyFunction {
        name,
        forward,
        backward,
    };
    let outs = guarded("Function.apply", || autograd::function::apply(f, &ins))?;
    outs.into_iter().map(|t| wrap(py, t)).collect()
}

/// `_C._set_detect_anomaly(on)`: the engine's anomaly mode (NaN checks on
/// every backward formula's outputs, naming the forward op).
#[pyfunction]
pub fn _set_detect_anomaly(on: bool) {
    ferrotorch_core::autograd::set_detect_anomaly(on);
}

/// Whether anomaly mode is on.
#[pyfunction]
pub fn _is_anomaly_enabled() -> bool {
    ferrotorch_core::autograd::is_anomaly_enabled()
}

//! The Python side of `torch.autograd.graph` (Note [Graph hooks] in the
//! core): saved-tensor hooks, node hooks, final callbacks, node-creation
//! hooks and `increment_version`.

use crate::autograd::{py_err, PyRemovableHandle};
use crate::convert::wrap;
use crate::tensor::{node_object, PyTensor};
use ferrotorch_core::autograd::graph_hooks::{self, Packed, SavedTensorHooks};
use ferrotorch_core::autograd::Node;
use ferrotorch_core::{Error, ErrorKind, Result, Tensor};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use std::sync::Arc;

/// `_C._push_saved_tensors_hooks(pack, unpack)`.
#[pyfunction]
fn _push_saved_tensors_hooks(pack: Py<PyAny>, unpack: Py<PyAny>) {
    graph_hooks::push_saved_tensors_hooks(SavedTensorHooks {
        pack: Box::new(move |t: &Tensor| -> Result<Packed> {
            Python::attach(|py| {
                let arg = wrap(py, t.clone()).map_err(|e| py_err(py, e))?;
                let obj = pack.call1(py, (arg,)).map_err(|e| py_err(py, e))?;
                Ok(Arc::new(obj) as Packed)
            })
        }),
        unpack: Box::new(move |p: &Packed| -> Result<Tensor> {
            Python::attach(|py| {
                let Some(obj) = p.downcast_ref::<Py<PyAny>>() else {
                    return Err(Error::new(
                        ErrorKind::Runtime,
                        "saved tensor unpack_hook: the tensor was packed by other hooks",
                    ));
                };
                let out = unpack
                    .call1(py, (obj.clone_ref(py),))
                    .map_err(|e| py_err(py, e))?;
                match out.bind(py).cast::<PyTensor>() {
                    Ok(t) => Ok(t.borrow().t.clone()),
                    Err(_) => Err(Error::new(
                        ErrorKind::Type,
                        format!(
                            "Output of saved tensor unpack_hook expected to be a Tensor but got result of type {}",
                            out.bind(py)
                                .get_type()
                                .name()
                                .map(|n| n.to_string())
                                .unwrap_or_default()
                        ),
                    )),
                }
            })
        }),
    });
}

/// `_C._pop_saved_tensors_hooks()`.
#[pyfunction]
fn _pop_saved_tensors_hooks() -> bool {
    graph_hooks::pop_saved_tensors_hooks()
}

/// `torch.autograd.graph.queue_callback(callback)`.
#[pyfunction]
fn _queue_callback(callback: Py<PyAny>) -> PyResult<()> {
    graph_hooks::queue_callback(move || {
        Python::attach(|py| callback.call0(py).map(|_| ()).map_err(|e| py_err(py, e)))
    })
    .map_err(crate::errors::to_py)
}

/// `_C._push_node_creation_hook(hook)`: `hook(node)` for each node recorded.
#[pyfunction]
fn _push_node_creation_hook(hook: Py<PyAny>) {
    graph_hooks::push_node_creation_hook(Arc::new(move |n: &Arc<Node>| {
        Python::attach(|py| {
            let obj = node_object(py, n.clone()).map_err(|e| py_err(py, e))?;
            hook.call1(py, (obj,))
                .map(|_| ())
                .map_err(|e| py_err(py, e))
        })
    }));
}

/// `_C._pop_node_creation_hook()`.
#[pyfunction]
fn _pop_node_creation_hook() -> bool {
    graph_hooks::pop_node_creation_hook()
}

/// `torch.autograd.graph.increment_version(tensors)`.
#[pyfunction]
fn _increment_version(tensors: Vec<PyRef<'_, PyTensor>>) {
    for t in tensors {
        t.t.increment_version();
    }
}

fn grads_tuple<'py>(py: Python<'py>, grads: &[Option<Tensor>]) -> PyResult<Bound<'py, PyTuple>> {
    let items = grads
        .iter()
        .map(|g| match g {
            Some(g) => wrap(py, g.clone()).map(|t| t.into_any()),
            None => Ok(py.None().into_bound(py)),
        })
        .collect::<PyResult<Vec<_>>>()?;
    PyTuple::new(py, items)
}

/// What a node hook returned: None (keep), or a sequence of `expected`
/// tensors/None.
fn hook_result(
    py: Python<'_>,
    hook: &Py<PyAny>,
    out: Py<PyAny>,
    what: &str,
    expected: usize,
) -> Result<Option<Vec<Option<Tensor>>>> {
    let out = out.bind(py);
    if out.is_none() {
        return Ok(None);
    }
    let items: Vec<Bound<'_, PyAny>> =
        out.try_iter().and_then(|it| it.collect()).map_err(|_| {
            Error::new(
                ErrorKind::Type,
                format!(
                    "{what} hook must return None or a tuple of Tensors (or None), got {}",
                    out.get_type()
                        .name()
                        .map(|n| n.to_string())
                        .unwrap_or_default()
                ),
            )
        })?;
    items
        .iter()
        .map(|x| {
            if x.is_none() {
                return Ok(None);
            }
            x.cast::<PyTensor>().map(|t| Some(t.borrow().t.clone())).map_err(|_| {
                Error::new(
                    ErrorKind::Type,
                    format!("{what} hook must return None or a tuple of Tensors (or None)"),
                )
            })
        })
        .collect::<Result<Vec<_>>>()
        .and_then(|v| {
            if v.len() != expected {
                let name: String = hook
                    .bind(py)
                    .getattr("__name__")
                    .and_then(|n| n.extract())
                    .unwrap_or_else(|_| "hook".into());
                return Err(Error::new(
                    ErrorKind::Runtime,
                    format!(
                        "hook '{name}' has returned an incorrect number of values (got {}, but expected {expected})",
                        v.len()
                    ),
                ));
            }
            Ok(Some(v))
        })
}

pub(crate) fn register_prehook(node: &Arc<Node>, hook: Py<PyAny>) -> PyRemovableHandle {
    let h = node.register_prehook(Arc::new(move |grads: &[Option<Tensor>]| {
        Python::attach(|py| {
            let arg = grads_tuple(py, grads).map_err(|e| py_err(py, e))?;
            let out = hook.call1(py, (arg,)).map_err(|e| py_err(py, e))?;
            hook_result(py, &hook, out, "prehook", grads.len())
        })
    }));
    PyRemovableHandle { handle: Some(h) }
}

pub(crate) fn register_hook(node: &Arc<Node>, hook: Py<PyAny>) -> PyRemovableHandle {
    let h = node.register_hook(Arc::new(
        move |ins: &[Option<Tensor>], outs: &[Option<Tensor>]| {
            Python::attach(|py| {
                let a = grads_tuple(py, ins).map_err(|e| py_err(py, e))?;
                let b = grads_tuple(py, outs).map_err(|e| py_err(py, e))?;
                let out = hook.call1(py, (a, b)).map_err(|e| py_err(py, e))?;
                hook_result(py, &hook, out, "hook", ins.len())
            })
        },
    ));
    PyRemovableHandle { handle: Some(h) }
}

/// `_C._gradient_edge(t)`: `(node, output_nr)` gradients of `t` flow into.
#[pyfunction]
fn _gradient_edge<'py>(
    py: Python<'py>,
    t: PyRef<'py, PyTensor>,
) -> PyResult<(Bound<'py, PyAny>, usize)> {
    let (node, nr) =
        ferrotorch_core::autograd::get_gradient_edge(&t.t).map_err(crate::errors::to_py)?;
    Ok((node_object(py, node)?, nr))
}

/// `_C._grad_edges(outputs, nodes, output_nrs, ...)`: `autograd.grad` with
/// respect to graph edges.
#[pyfunction]
#[pyo3(signature = (outputs, nodes, output_nrs, grad_outputs=None, retain_graph=None, create_graph=false, allow_unused=false))]
#[allow(clippy::too_many_arguments)]
fn _grad_edges<'py>(
    py: Python<'py>,
    outputs: Vec<PyRef<'py, PyTensor>>,
    nodes: Vec<PyRef<'py, crate::tensor::PyNode>>,
    output_nrs: Vec<usize>,
    grad_outputs: Option<Vec<PyRef<'py, PyTensor>>>,
    retain_graph: Option<bool>,
    create_graph: bool,
    allow_unused: bool,
) -> PyResult<Vec<Option<Bound<'py, PyAny>>>> {
    let outs: Vec<Tensor> = outputs.iter().map(|t| t.t.clone()).collect();
    let gos: Option<Vec<Tensor>> = grad_outputs.map(|g| g.iter().map(|t| t.t.clone()).collect());
    let edges: Vec<(Arc<Node>, usize)> = nodes
        .iter()
        .map(|n| n.node.clone())
        .zip(output_nrs)
        .collect();
    let got = py.detach(|| {
        crate::errors::guarded("grad", || {
            ferrotorch_core::autograd::grad_edges(
                &outs,
                &edges,
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

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_gradient_edge, m)?)?;
    m.add_function(wrap_pyfunction!(_grad_edges, m)?)?;
    m.add_function(wrap_pyfunction!(_push_saved_tensors_hooks, m)?)?;
    m.add_function(wrap_pyfunction!(_pop_saved_tensors_hooks, m)?)?;
    m.add_function(wrap_pyfunction!(_queue_callback, m)?)?;
    m.add_function(wrap_pyfunction!(_push_node_creation_hook, m)?)?;
    m.add_function(wrap_pyfunction!(_pop_node_creation_hook, m)?)?;
    m.add_function(wrap_pyfunction!(_increment_version, m)?)?;
    Ok(())
}

//! `torch._C.Graph` and the `torch._C._jit_pass_*` entry points: single
//! passes run on a graph object, rewriting the graph of the module it
//! came from (as in PyTorch, `_jit_pass_dce(traced.graph)` changes
//! `traced`).

use crate::errors::guarded;
use crate::jit::PyScriptModule;
use crate::tensor::PyTensor;
use ferrotorch_jit::ir::{Graph, NodeKind, ValueType};
use ferrotorch_jit::passes;
use pyo3::prelude::*;

/// A graph: a module's own (passes rewrite it) or a detached copy
/// (`inlined_graph`).
#[pyclass(name = "Graph", module = "ferrotorch._C")]
pub struct PyGraph(Source);

/// Where a graph object's graph lives.
enum Source {
    /// The graph of this module: passes rewrite the module.
    Module(Py<PyScriptModule>),
    /// A detached copy.
    Owned(Graph),
}

impl PyGraph {
    pub(crate) fn of_module(m: Py<PyScriptModule>) -> PyGraph {
        PyGraph(Source::Module(m))
    }

    pub(crate) fn owned(g: Graph) -> PyGraph {
        PyGraph(Source::Owned(g))
    }

    /// `f` of the graph it stands for.
    fn read<R>(&self, py: Python<'_>, f: impl FnOnce(&Graph) -> R) -> R {
        match &self.0 {
            Source::Module(m) => f(m.borrow(py).m.graph()),
            Source::Owned(g) => f(g),
        }
    }

    fn text(&self, py: Python<'_>) -> String {
        self.read(py, Graph::to_string)
    }
}

#[pymethods]
impl PyGraph {
    fn __str__(&self, py: Python<'_>) -> String {
        self.text(py)
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        self.text(py)
    }

    fn __eq__(&self, py: Python<'_>, other: PyRef<'_, PyGraph>) -> bool {
        self.text(py) == other.text(py)
    }

    /// TorchScript's node kinds in order (`[n.kind() for n in g.nodes()]`).
    fn node_kinds(&self, py: Python<'_>) -> Vec<String> {
        self.read(py, |g| g.nodes.iter().map(|n| n.kind_name()).collect())
    }

    /// The graph as data, for writers such as TensorBoard's `add_graph`:
    /// `(inputs, nodes, outputs)`, a value being `(name, sizes or None,
    /// dtype name or None)` and a node `(kind, input names, outputs)`.
    fn _describe(&self, py: Python<'_>) -> GraphRows {
        self.read(py, |g| {
            let value = |id: usize| {
                let v = &g.values[id];
                // unique: a debug name may repeat
                let name = match &v.name {
                    Some(n) => format!("{n}_{id}"),
                    None => id.to_string(),
                };
                match &v.ty {
                    ValueType::Tensor { dtype, sizes, .. } => {
                        (name, Some(sizes.clone()), Some(dtype.to_string()))
                    }
                    _ => (name, None, None),
                }
            };
            let nodes = g
                .nodes
                .iter()
                .map(|n| {
                    let ins = n.inputs.iter().map(|&i| value(i).0).collect();
                    (
                        n.kind_name(),
                        ins,
                        n.outputs.iter().map(|&o| value(o)).collect(),
                    )
                })
                .collect();
            let ins = g.inputs.iter().map(|&i| value(i)).collect();
            (ins, nodes, g.outputs.iter().map(|&o| value(o).0).collect())
        })
    }
}

/// One value for `_export_rows`: debug name, type tag, and for a tensor
/// its dtype, sizes, strides and requires_grad; for an object its class.
type ExportValue = (
    Option<String>,
    &'static str,
    Option<String>,
    Vec<usize>,
    Vec<usize>,
    bool,
    Option<String>,
);

/// One node for `_export_rows`: kind, overload, the schema's arguments
/// (name, keyword-only, default: `()` for none), input and output value
/// ids, and the node's attribute (a constant's value, an attribute's
/// name, an op's name, else `None`).
type ExportNode = (
    String,
    String,
    Vec<(String, bool, Py<PyAny>)>,
    Vec<usize>,
    Vec<usize>,
    Py<PyAny>,
);

fn type_tag(t: &ValueType) -> &'static str {
    match t {
        ValueType::Tensor { .. } => "Tensor",
        ValueType::Int => "int",
        ValueType::Float => "float",
        ValueType::Complex => "complex",
        ValueType::Bool => "bool",
        ValueType::Str => "str",
        ValueType::ScalarType => "ScalarType",
        ValueType::None => "None",
        ValueType::Generator => "Generator",
        ValueType::List(inner) => match **inner {
            ValueType::Tensor { .. } => "Tensor[]",
            _ => "list",
        },
        ValueType::OptTensorList => "Tensor?[]",
        ValueType::Module(_) => "Module",
        ValueType::Object(_) => "Object",
        ValueType::Token => "Token",
    }
}

#[pymethods]
impl PyGraph {
    /// The graph as data for `torch.export` (Note [Exported programs] in
    /// `ferrotorch/export`): `(values, inputs, nodes, outputs)`, values
    /// by id.
    #[allow(clippy::type_complexity)]
    fn _export_rows(
        &self,
        py: Python<'_>,
    ) -> PyResult<(Vec<ExportValue>, Vec<usize>, Vec<ExportNode>, Vec<usize>)> {
        self.read(py, |g| {
            let values = g
                .values
                .iter()
                .map(|v| match &v.ty {
                    ValueType::Tensor {
                        dtype,
                        sizes,
                        strides,
                        requires_grad,
                    } => (
                        v.name.clone(),
                        "Tensor",
                        Some(dtype.to_string()),
                        sizes.clone(),
                        strides.clone(),
                        *requires_grad,
                        None,
                    ),
                    t => {
                        let class = match t {
                            ValueType::Object(c) | ValueType::Module(c) => Some(c.clone()),
                            _ => None,
                        };
                        (
                            v.name.clone(),
                            type_tag(t),
                            None,
                            vec![],
                            vec![],
                            false,
                            class,
                        )
                    }
                })
                .collect();
            let mut nodes = Vec::with_capacity(g.nodes.len());
            for n in &g.nodes {
                let (overload, args, attr) = match &n.kind {
                    NodeKind::Op(e) | NodeKind::WithEffects(e) => {
                        let mut args = Vec::with_capacity(e.schema.args.len());
                        for a in &e.schema.args {
                            let default = match &a.default {
                                Some(d) => crate::convert::from_ivalue(py, d.clone())?.unbind(),
                                None => pyo3::types::PyTuple::empty(py).into_any().unbind(),
                            };
                            args.push((a.name.clone(), a.kwarg_only, default));
                        }
                        (
                            e.schema.overload.clone(),
                            args,
                            e.schema.name.clone().into_pyobject(py)?.into_any().unbind(),
                        )
                    }
                    NodeKind::Constant(v) => (
                        String::new(),
                        vec![],
                        crate::convert::from_ivalue(py, v.clone())?.unbind(),
                    ),
                    NodeKind::GetAttr(name) => (
                        String::new(),
                        vec![],
                        name.clone().into_pyobject(py)?.into_any().unbind(),
                    ),
                    _ => (String::new(), vec![], py.None()),
                };
                nodes.push((
                    n.kind_name(),
                    overload,
                    args,
                    n.inputs.clone(),
                    n.outputs.clone(),
                    attr,
                ));
            }
            Ok((values, g.inputs.clone(), nodes, g.outputs.clone()))
        })
    }
}

/// A graph value for `_describe`: name, sizes, dtype.
type ValueRow = (String, Option<Vec<usize>>, Option<String>);
/// `_describe`'s result: inputs, nodes (kind, input names, outputs), outputs.
type GraphRows = (
    Vec<ValueRow>,
    Vec<(String, Vec<String>, Vec<ValueRow>)>,
    Vec<String>,
);

/// Run `f` on the graph `g` stands for.
fn with_graph<R>(
    py: Python<'_>,
    g: &mut PyGraph,
    what: &str,
    f: impl FnOnce(&mut Graph) -> ferrotorch_core::Result<R>,
) -> PyResult<R> {
    match &mut g.0 {
        Source::Module(m) => {
            let mut m = m.borrow_mut(py);
            guarded(what, || f(m.m.graph_mut()))
        }
        Source::Owned(own) => guarded(what, || f(own)),
    }
}

/// `_jit_pass_dce(graph)`: dead-code elimination.
#[pyfunction]
pub fn _jit_pass_dce(py: Python<'_>, mut graph: PyRefMut<'_, PyGraph>) -> PyResult<()> {
    with_graph(py, &mut graph, "_jit_pass_dce", |g| {
        passes::eliminate_dead_code(g);
        Ok(())
    })
}

/// `_jit_pass_cse(graph)`: common-subexpression elimination; whether
/// anything changed.
#[pyfunction]
pub fn _jit_pass_cse(py: Python<'_>, mut graph: PyRefMut<'_, PyGraph>) -> PyResult<bool> {
    with_graph(py, &mut graph, "_jit_pass_cse", |g| {
        Ok(passes::eliminate_common_subexpressions(g) > 0)
    })
}

/// `_jit_pass_constant_propagation(graph)`.
#[pyfunction]
pub fn _jit_pass_constant_propagation(
    py: Python<'_>,
    mut graph: PyRefMut<'_, PyGraph>,
) -> PyResult<()> {
    with_graph(py, &mut graph, "_jit_pass_constant_propagation", |g| {
        passes::fold_constants(g).map(|_| ())
    })
}

/// `_jit_pass_peephole(graph)`.
#[pyfunction]
pub fn _jit_pass_peephole(py: Python<'_>, mut graph: PyRefMut<'_, PyGraph>) -> PyResult<()> {
    with_graph(py, &mut graph, "_jit_pass_peephole", |g| {
        passes::peephole(g);
        Ok(())
    })
}

/// `_jit_pass_inline(graph)`: submodule calls replaced by their bodies.
#[pyfunction]
pub fn _jit_pass_inline(py: Python<'_>, mut graph: PyRefMut<'_, PyGraph>) -> PyResult<()> {
    with_graph(py, &mut graph, "_jit_pass_inline", |g| {
        passes::inline(g).map(|_| ())
    })
}

/// `_jit_pass_fold_convbn(graph)`: eval batch norms folded into the
/// convolutions before them (the graph must be frozen).
#[pyfunction]
pub fn _jit_pass_fold_convbn(py: Python<'_>, mut graph: PyRefMut<'_, PyGraph>) -> PyResult<()> {
    with_graph(py, &mut graph, "_jit_pass_fold_convbn", |g| {
        passes::fold_conv_batch_norm(g).map(|_| ())
    })
}

/// `_jit_pass_fuse(graph)`: elementwise chains grouped into
/// `prim::FusionGroup`s.
#[pyfunction]
pub fn _jit_pass_fuse(py: Python<'_>, mut graph: PyRefMut<'_, PyGraph>) -> PyResult<()> {
    with_graph(py, &mut graph, "_jit_pass_fuse", |g| {
        passes::fuse_elementwise(g);
        Ok(())
    })
}

/// `_jit_pass_complete_shape_analysis(graph, inputs, with_grad)`: the
/// module's graph re-typed for `inputs`' dtypes and shapes.
#[pyfunction]
#[pyo3(signature = (graph, inputs, with_grad=false))]
pub fn _jit_pass_complete_shape_analysis(
    py: Python<'_>,
    graph: PyRef<'_, PyGraph>,
    inputs: Vec<PyRef<'_, PyTensor>>,
    with_grad: bool,
) -> PyResult<()> {
    let _ = with_grad;
    let Source::Module(owner) = &graph.0 else {
        return Err(pyo3::exceptions::PyRuntimeError::new_err(
            "_jit_pass_complete_shape_analysis: the graph must be a module's own graph",
        ));
    };
    let types: Vec<ValueType> = inputs.iter().map(|t| ValueType::of_tensor(&t.t)).collect();
    let mut m = owner.borrow_mut(py);
    guarded("_jit_pass_complete_shape_analysis", || {
        passes::propagate_shapes(&mut m.m, &types)
    })
}

/// Register the graph class and the pass functions on `_C`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyGraph>()?;
    m.add_function(wrap_pyfunction!(_jit_pass_dce, m)?)?;
    m.add_function(wrap_pyfunction!(_jit_pass_cse, m)?)?;
    m.add_function(wrap_pyfunction!(_jit_pass_constant_propagation, m)?)?;
    m.add_function(wrap_pyfunction!(_jit_pass_peephole, m)?)?;
    m.add_function(wrap_pyfunction!(_jit_pass_inline, m)?)?;
    m.add_function(wrap_pyfunction!(_jit_pass_fold_convbn, m)?)?;
    m.add_function(wrap_pyfunction!(_jit_pass_fuse, m)?)?;
    m.add_function(wrap_pyfunction!(_jit_pass_complete_shape_analysis, m)?)?;
    Ok(())
}

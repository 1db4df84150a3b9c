//! Shape and dtype propagation: a graph re-typed for new input types.

use crate::interpreter::{step, AttrFn, Env};
use crate::ir::{Graph, NodeKind, ValueType};
use crate::module::ScriptModule;
use ferrotorch_core::dispatch::IValue;
use ferrotorch_core::{ensure, Result, Tensor};
use std::sync::Arc;

/// Re-type `m`'s graph for inputs of `input_types` (tensor types, one per
/// forward input; strides are taken as contiguous): every value gets the
/// dtype and sizes it has for such inputs, inside submodule calls and
/// fusion groups too (`_jit_pass_complete_shape_analysis`). The graph
/// runs once on zero-filled inputs of those types, so each op's own
/// shape and dtype rules decide; an op that refuses those inputs is an
/// error naming it. A custom op with a fake (shape) function
/// (`Library::impl_fake`, `register_fake`) runs that instead of its
/// kernel.
pub fn propagate_shapes(m: &mut ScriptModule, input_types: &[ValueType]) -> Result<()> {
    let g = &m.graph;
    let has_self = g
        .inputs
        .first()
        .is_some_and(|&i| matches!(g.values[i].ty, ValueType::Module(_)));
    ensure!(
        input_types.len() + usize::from(has_self) == g.inputs.len(),
        Value,
        "propagate_shapes: the graph takes {} inputs, got {} types",
        g.inputs.len() - usize::from(has_self),
        input_types.len()
    );
    let mut inputs = Vec::with_capacity(g.inputs.len());
    if has_self {
        inputs.push(IValue::Str(String::new()));
    }
    for ty in input_types {
        let ValueType::Tensor { dtype, sizes, .. } = ty else {
            ferrotorch_core::bail!(
                Value,
                "propagate_shapes: inputs must be tensor types, got {ty}"
            );
        };
        inputs.push(IValue::Tensor(Tensor::zeros(sizes, *dtype)?));
    }
    let attrs = m.attrs.clone();
    let attr = move |name: &str| -> Result<Tensor> {
        attrs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, a)| a.tensor().detach())
            .ok_or_else(|| {
                ferrotorch_core::Error::new(
                    ferrotorch_core::ErrorKind::Runtime,
                    format!("module has no attribute '{name}'"),
                )
            })
    };
    ferrotorch_core::autograd::with_no_grad(|| propagate(&mut m.graph, inputs, &attr))?;
    Ok(())
}

fn retype(old: &ValueType, v: &IValue) -> ValueType {
    match (old, v) {
        (ValueType::Tensor { requires_grad, .. }, IValue::Tensor(t)) => ValueType::Tensor {
            dtype: t.dtype(),
            sizes: t.shape().to_vec(),
            strides: t.stride().to_vec(),
            requires_grad: *requires_grad,
        },
        (old, _) => old.clone(),
    }
}

fn propagate(g: &mut Graph, inputs: Vec<IValue>, attr: AttrFn<'_>) -> Result<Vec<IValue>> {
    for (&i, x) in g.inputs.iter().zip(&inputs) {
        g.values[i].ty = retype(&g.values[i].ty, x);
    }
    let mut env = Env::new(g, inputs)?;
    for k in 0..g.nodes.len() {
        let args = env.args(&g.nodes[k])?;
        let outs = match &mut g.nodes[k].kind {
            NodeKind::CallMethod { graph, .. } | NodeKind::FusionGroup(graph) => {
                propagate(Arc::make_mut(graph), args, attr)?
            }
            NodeKind::Op(e) if ferrotorch_core::library::has_fake(&e.schema.full_name()) => {
                let name = e.schema.full_name();
                let out = ferrotorch_core::library::call_fake(&name, &args).map_err(|err| {
                    ferrotorch_core::Error::new(
                        err.kind(),
                        format!("propagate_shapes: {name}: {}", err.message()),
                    )
                })?;
                match out {
                    IValue::Tuple(items) if g.nodes[k].outputs.len() > 1 => items,
                    v => vec![v],
                }
            }
            _ => {
                let (graph, node) = (&*g, &g.nodes[k]);
                step(graph, node, args, attr, &mut |_, _| {
                    ferrotorch_core::bail!(Runtime, "calls are propagated separately")
                })
                .map_err(|e| {
                    ferrotorch_core::Error::new(
                        e.kind(),
                        format!("propagate_shapes: {}: {}", node.kind_name(), e.message()),
                    )
                })?
            }
        };
        for (&o, v) in g.nodes[k].outputs.iter().zip(&outs) {
            g.values[o].ty = retype(&g.values[o].ty, v);
        }
        env.set(&g.nodes[k], outs);
    }
    g.outputs.iter().map(|&o| env.get(o)).collect()
}

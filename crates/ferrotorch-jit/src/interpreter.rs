//! Running a graph: each node in order, ops through the dispatcher
//! (`dispatch::call_prebound`, so autograd records as in eager mode and a
//! traced module trains like the original).

use crate::ir::{Graph, NodeKind, ValueType};
use ferrotorch_core::dispatch::{call_prebound, IValue};
use ferrotorch_core::{bail, ensure, Result, Tensor};

/// Build a list value from its elements, by the list's declared type.
fn construct(ty: &ValueType, items: Vec<IValue>) -> Result<IValue> {
    Ok(match ty {
        ValueType::OptTensorList => IValue::OptTensorList(
            items
                .into_iter()
                .map(|v| match v {
                    IValue::None => Ok(None),
                    v => v.into_tensor().map(Some),
                })
                .collect::<Result<_>>()?,
        ),
        ValueType::List(e) if matches!(**e, ValueType::Tensor { .. }) => IValue::TensorList(
            items
                .into_iter()
                .map(IValue::into_tensor)
                .collect::<Result<_>>()?,
        ),
        other => bail!(
            Runtime,
            "prim::ListConstruct: lists of {other} are not supported"
        ),
    })
}

/// Run `g` on `inputs` (one per graph input), reading attributes through
/// `attr`: the graph's outputs.
pub fn run(
    g: &Graph,
    inputs: Vec<IValue>,
    attr: &dyn Fn(&str) -> Result<Tensor>,
) -> Result<Vec<IValue>> {
    ensure!(
        inputs.len() == g.inputs.len(),
        Runtime,
        "forward() expected {} inputs, got {}",
        g.inputs.len(),
        inputs.len()
    );
    let mut env: Vec<Option<IValue>> = vec![None; g.values.len()];
    for (&v, x) in g.inputs.iter().zip(inputs) {
        env[v] = Some(x);
    }
    let get = |env: &Vec<Option<IValue>>, v: usize| -> Result<IValue> {
        env.get(v).cloned().flatten().ok_or_else(|| {
            ferrotorch_core::Error::new(
                ferrotorch_core::ErrorKind::Runtime,
                format!("value %{v} is used before it is defined"),
            )
        })
    };
    for node in &g.nodes {
        let args: Vec<IValue> = node
            .inputs
            .iter()
            .map(|&i| get(&env, i))
            .collect::<Result<_>>()?;
        let outs: Vec<IValue> = match &node.kind {
            NodeKind::Constant(c) => vec![c.clone()],
            NodeKind::GetAttr(name) => vec![IValue::Tensor(attr(name)?)],
            NodeKind::ListConstruct => vec![construct(&g.values[node.outputs[0]].ty, args)?],
            NodeKind::ListUnpack => match args.into_iter().next() {
                Some(IValue::TensorList(ts)) => {
                    ensure!(
                        ts.len() == node.outputs.len(),
                        Runtime,
                        "prim::ListUnpack: expected {} elements, got {}",
                        node.outputs.len(),
                        ts.len()
                    );
                    ts.into_iter().map(IValue::Tensor).collect()
                }
                _ => bail!(Runtime, "prim::ListUnpack expects a list of tensors"),
            },
            NodeKind::Op(e) => {
                // values were bound to this schema when the graph was made
                let out = call_prebound(e, args)?;
                if node.outputs.len() > 1 {
                    match out {
                        IValue::Tuple(items) if items.len() == node.outputs.len() => items,
                        _ => bail!(
                            Runtime,
                            "{}: expected {} results",
                            node.kind_name(),
                            node.outputs.len()
                        ),
                    }
                } else {
                    vec![out]
                }
            }
        };
        for (&o, v) in node.outputs.iter().zip(outs) {
            env[o] = Some(v);
        }
    }
    g.outputs.iter().map(|&o| get(&env, o)).collect()
}

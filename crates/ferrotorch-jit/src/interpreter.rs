//! Running a graph: each node in order, ops through the dispatcher
//! (`dispatch::call_prebound`, so autograd records as in eager mode and a
//! traced module trains like the original).

use crate::ir::{Graph, Node, NodeKind, ValueType};
use ferrotorch_core::dispatch::{call_prebound, IValue};
use ferrotorch_core::{bail, ensure, Error, ErrorKind, Result, Tensor};

/// Reads an attribute by qualified name.
pub type AttrFn<'a> = &'a dyn Fn(&str) -> Result<Tensor>;

/// Runs a call's or fusion group's body on its arguments.
pub(crate) type BodyFn<'a> = &'a mut dyn FnMut(&Graph, Vec<IValue>) -> Result<Vec<IValue>>;

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
        ValueType::List(e) if **e == ValueType::Int => IValue::IntList(
            items
                .into_iter()
                .map(|v| match v {
                    IValue::Int(i) => Ok(i),
                    v => bail!(
                        Runtime,
                        "prim::ListConstruct: an int list got a {}",
                        v.type_name()
                    ),
                })
                .collect::<Result<_>>()?,
        ),
        other => bail!(
            Runtime,
            "prim::ListConstruct: lists of {other} are not supported"
        ),
    })
}

/// Run one node of `g` on its argument values: its outputs. Calls and
/// fusion groups run their bodies through `body`.
pub(crate) fn step(
    g: &Graph,
    node: &Node,
    args: Vec<IValue>,
    attr: AttrFn<'_>,
    body: BodyFn<'_>,
) -> Result<Vec<IValue>> {
    Ok(match &node.kind {
        NodeKind::Constant(c) => vec![c.clone()],
        NodeKind::GetAttr(name) => {
            // a module value is its attribute path (Note [Module hierarchy])
            let path = match args.first() {
                Some(IValue::Str(p)) => format!("{p}{name}"),
                _ => name.clone(),
            };
            if matches!(g.values[node.outputs[0]].ty, ValueType::Module(_)) {
                vec![IValue::Str(format!("{path}."))]
            } else {
                vec![IValue::Tensor(attr(&path)?)]
            }
        }
        NodeKind::CallMethod { graph, .. } => body(graph, args)?,
        NodeKind::FusionGroup(graph) => body(graph, args)?,
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
        NodeKind::WithEffects(e) => {
            // the token in, the next token out (Note [Objects in graphs])
            let out = call_prebound(e, args.into_iter().skip(1).collect())?;
            let mut outs = Vec::with_capacity(node.outputs.len());
            outs.push(IValue::None);
            match (node.outputs.len(), out) {
                (1, _) => {}
                (2, v) => outs.push(v),
                (n, IValue::Tuple(items)) if items.len() == n - 1 => outs.extend(items),
                _ => bail!(
                    Runtime,
                    "{}: expected {} results",
                    e.schema.full_name(),
                    node.outputs.len() - 1
                ),
            }
            outs
        }
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
    })
}

/// The values of a graph being run, by value id.
pub(crate) struct Env(Vec<Option<IValue>>);

impl Env {
    /// `g`'s inputs bound to `inputs`.
    pub(crate) fn new(g: &Graph, inputs: Vec<IValue>) -> Result<Env> {
        ensure!(
            inputs.len() == g.inputs.len(),
            Runtime,
            "forward() expected {} inputs, got {}",
            g.inputs.len(),
            inputs.len()
        );
        let mut env = vec![None; g.values.len()];
        for (&v, x) in g.inputs.iter().zip(inputs) {
            env[v] = Some(x);
        }
        Ok(Env(env))
    }

    pub(crate) fn get(&self, v: usize) -> Result<IValue> {
        self.0.get(v).cloned().flatten().ok_or_else(|| {
            Error::new(
                ErrorKind::Runtime,
                format!("value %{v} is used before it is defined"),
            )
        })
    }

    pub(crate) fn args(&self, node: &Node) -> Result<Vec<IValue>> {
        node.inputs.iter().map(|&i| self.get(i)).collect()
    }

    /// The node's arguments, moving out each value this node uses last
    /// (`last[v]` is the index of the last node reading `v`), so
    /// intermediates are freed as soon as they are dead.
    fn take_args(&mut self, k: usize, node: &Node, last: &[usize]) -> Result<Vec<IValue>> {
        let mut out = Vec::with_capacity(node.inputs.len());
        for (j, &i) in node.inputs.iter().enumerate() {
            let again = node.inputs[j + 1..].contains(&i);
            if last[i] == k && !again {
                match self.0.get_mut(i).and_then(Option::take) {
                    Some(v) => out.push(v),
                    None => out.push(self.get(i)?),
                }
            } else {
                out.push(self.get(i)?);
            }
        }
        Ok(out)
    }

    pub(crate) fn set(&mut self, node: &Node, outs: Vec<IValue>) {
        for (&o, v) in node.outputs.iter().zip(outs) {
            self.0[o] = Some(v);
        }
    }
}

/// Run `g` on `inputs` (one per graph input), reading attributes through
/// `attr`: the graph's outputs.
pub fn run(g: &Graph, inputs: Vec<IValue>, attr: AttrFn<'_>) -> Result<Vec<IValue>> {
    let mut env = Env::new(g, inputs)?;
    // the last node reading each value; outputs are never moved out
    let mut last = vec![usize::MAX; g.values.len()];
    for (k, node) in g.nodes.iter().enumerate() {
        for &i in &node.inputs {
            if let Some(l) = last.get_mut(i) {
                *l = k;
            }
        }
    }
    for &o in &g.outputs {
        if let Some(l) = last.get_mut(o) {
            *l = usize::MAX;
        }
    }
    for (k, node) in g.nodes.iter().enumerate() {
        // the two commonest nodes run here rather than through `step` (100
        // traced adds, a constant and an op per add: 35.0 -> 30.2 us a
        // call; `step` returning its results inline in a SmallVec instead
        // left it at 35 us, so the cost is the general path, not the
        // vector); a constant takes no arguments either
        match (&node.kind, node.outputs.as_slice()) {
            (NodeKind::Constant(c), &[o]) => {
                env.0[o] = Some(c.clone());
                continue;
            }
            (NodeKind::Op(e), &[o]) => {
                let args = env.take_args(k, node, &last)?;
                env.0[o] = Some(match g.prepacked.for_node(g, k, e, &args) {
                    Some(p) => p.scope(|| call_prebound(e, args))?,
                    None => call_prebound(e, args)?,
                });
                continue;
            }
            _ => {}
        }
        let args = env.take_args(k, node, &last)?;
        if let NodeKind::FusionGroup(body) = &node.kind {
            // native code first (Note [Fusion runtime])
            if let Some(outs) = crate::fuser::try_run(body, &args) {
                env.set(node, outs?);
                continue;
            }
        }
        let outs = step(g, node, args, attr, &mut |body, a| run(body, a, attr))?;
        env.set(node, outs);
    }
    g.outputs.iter().map(|&o| env.get(o)).collect()
}

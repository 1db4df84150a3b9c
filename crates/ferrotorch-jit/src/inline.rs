//! Inlining: a `prim::CallMethod` or `prim::FusionGroup` replaced by the
//! nodes of its body (`torch._C._jit_pass_inline`; `inlined_graph`).
//!
//! # Note [Module hierarchy]
//! A traced module's graph keeps each submodule call as one
//! `prim::CallMethod[name="forward"]` node whose body is the submodule's
//! own graph, as TorchScript prints it: the submodule is a
//! `prim::GetAttr` of module type on `%self`, and inside the body its
//! parameters are `prim::GetAttr`s on the body's own `%self`. At run time
//! a module value is its attribute path (`"layer1.0."`), so attributes
//! resolve to the qualified names the script module holds. Inlining
//! rewrites every `GetAttr` inside a body to one on the outer `%self`
//! with the qualified name, which is the flat form passes and saved
//! programs use.

use crate::ir::{Graph, Node, NodeKind, ValueId, ValueType};
use ferrotorch_core::{Error, ErrorKind, Result};
use std::collections::HashMap;

fn undefined(v: ValueId) -> Error {
    Error::new(
        ErrorKind::Runtime,
        format!("inlining: value %{v} is used before it is defined"),
    )
}

/// How values of the graph being copied map into the target graph.
pub(crate) struct Mapping {
    /// Source value → target value.
    pub(crate) values: Vec<Option<ValueId>>,
    /// Source module values → their attribute path from the target's
    /// `%self` (`""` or `"layer1.0."`).
    pub(crate) paths: HashMap<ValueId, String>,
}

impl Mapping {
    /// An empty mapping for a source graph of `n` values.
    pub(crate) fn new(n: usize) -> Mapping {
        Mapping {
            values: vec![None; n],
            paths: HashMap::new(),
        }
    }

    fn get(&self, v: ValueId) -> Result<ValueId> {
        self.values
            .get(v)
            .copied()
            .flatten()
            .ok_or_else(|| undefined(v))
    }
}

/// Append `src`'s nodes to `out`, inlining every call and fusion group in
/// them. `m` maps `src`'s inputs already; `root_self` is `out`'s module
/// input, on which attributes are read.
pub(crate) fn copy_nodes(
    out: &mut Graph,
    src: &Graph,
    m: &mut Mapping,
    root_self: Option<ValueId>,
) -> Result<()> {
    for n in &src.nodes {
        match &n.kind {
            NodeKind::GetAttr(name) if m.paths.contains_key(&n.inputs[0]) => {
                let path = format!("{}{name}", m.paths[&n.inputs[0]]);
                let ty = &src.values[n.outputs[0]].ty;
                if matches!(ty, ValueType::Module(_)) {
                    m.paths.insert(n.outputs[0], format!("{path}."));
                    continue;
                }
                let this = root_self.ok_or_else(|| {
                    Error::new(
                        ErrorKind::Runtime,
                        format!("inlining: attribute '{path}' read outside a module"),
                    )
                })?;
                let v = out.add_node(
                    NodeKind::GetAttr(path.clone()),
                    vec![this],
                    vec![ty.clone()],
                )[0];
                out.values[v].name = Some(path.replace('.', "_"));
                m.values[n.outputs[0]] = Some(v);
            }
            NodeKind::CallMethod { graph: body, .. } => {
                let module = n.inputs.first().and_then(|v| m.paths.get(v)).cloned();
                let Some(module) = module else {
                    return Err(Error::new(
                        ErrorKind::Runtime,
                        "inlining: prim::CallMethod on a value that is not a submodule",
                    ));
                };
                let mut inner = Mapping::new(body.values.len());
                inner.paths.insert(body.inputs[0], module);
                bind_inputs(&mut inner, body, &n.inputs, 1, m)?;
                copy_nodes(out, body, &mut inner, root_self)?;
                bind_outputs(m, n, body, &inner)?;
            }
            NodeKind::FusionGroup(body) => {
                let mut inner = Mapping::new(body.values.len());
                bind_inputs(&mut inner, body, &n.inputs, 0, m)?;
                copy_nodes(out, body, &mut inner, root_self)?;
                bind_outputs(m, n, body, &inner)?;
            }
            kind => {
                let ins = n.inputs.iter().map(|&i| m.get(i)).collect::<Result<_>>()?;
                let tys = n
                    .outputs
                    .iter()
                    .map(|&o| src.values[o].ty.clone())
                    .collect();
                let outs = out.add_node(kind.clone(), ins, tys);
                for (&o, v) in n.outputs.iter().zip(outs) {
                    out.values[v].name = src.values[o].name.clone();
                    m.values[o] = Some(v);
                }
            }
        }
    }
    Ok(())
}

/// Bind `body`'s inputs from `skip` on to the outer values `args[skip..]`.
fn bind_inputs(
    inner: &mut Mapping,
    body: &Graph,
    args: &[ValueId],
    skip: usize,
    outer: &Mapping,
) -> Result<()> {
    if body.inputs.len() != args.len() {
        return Err(Error::new(
            ErrorKind::Runtime,
            format!(
                "inlining: a body of {} inputs called with {}",
                body.inputs.len(),
                args.len()
            ),
        ));
    }
    for (&bi, &a) in body.inputs.iter().zip(args).skip(skip) {
        inner.values[bi] = Some(outer.get(a)?);
    }
    Ok(())
}

fn bind_outputs(outer: &mut Mapping, n: &Node, body: &Graph, inner: &Mapping) -> Result<()> {
    if body.outputs.len() != n.outputs.len() {
        return Err(Error::new(
            ErrorKind::Runtime,
            "inlining: a call's outputs do not match its body's",
        ));
    }
    for (&o, &bo) in n.outputs.iter().zip(&body.outputs) {
        outer.values[o] = Some(inner.get(bo)?);
    }
    Ok(())
}

/// Whether `g` calls submodules or holds fusion groups.
pub fn has_calls(g: &Graph) -> bool {
    g.nodes.iter().any(|n| {
        matches!(
            n.kind,
            NodeKind::CallMethod { .. } | NodeKind::FusionGroup(_)
        )
    })
}

/// `g` with every `prim::CallMethod` and `prim::FusionGroup` replaced by
/// its body (Note [Module hierarchy]): the flat graph.
pub fn inline_calls(g: &Graph) -> Result<Graph> {
    let mut out = Graph::default();
    let mut m = Mapping::new(g.values.len());
    for &i in &g.inputs {
        let v = &g.values[i];
        m.values[i] = Some(out.add_input(v.ty.clone(), v.name.clone()));
    }
    let root_self = g
        .inputs
        .first()
        .filter(|&&i| matches!(g.values[i].ty, ValueType::Module(_)))
        .copied();
    if let Some(s) = root_self {
        m.paths.insert(s, String::new());
    }
    let this = root_self.and_then(|s| m.values[s]);
    copy_nodes(&mut out, g, &mut m, this)?;
    out.outputs = g.outputs.iter().map(|&o| m.get(o)).collect::<Result<_>>()?;
    Ok(out)
}

//! Building a checked graph from a saved program's JSON (Note [Saved
//! programs]): every value defined once and before use, every op with
//! its schema, types that fit.

use super::json::{parse_constant, parse_type, usize_list};
use super::{bad, MAX_VALUES};
use crate::ir::{Graph, Node, NodeKind, Value, ValueType};
use crate::module::{Attr, ScriptModule};
use ferrotorch_core::dispatch::{find_op, Type};
use ferrotorch_core::{bail, ensure, Result};
use ferrotorch_nn::StateDict;
use serde_json::Value as Json;
use std::collections::HashSet;

/// Whether a value of type `t` may feed an argument of type `ty`.
fn fits(t: &ValueType, ty: &Type) -> bool {
    match (ty, t) {
        (Type::Optional(_), ValueType::None) => true,
        (Type::Optional(inner), t) => fits(t, inner),
        (Type::Tensor, ValueType::Tensor { .. }) => true,
        (Type::Tensor, _) => false,
        (Type::List(e, _), ValueType::List(te)) if **e == Type::Tensor => {
            matches!(**te, ValueType::Tensor { .. })
        }
        (Type::List(e, _), ValueType::OptTensorList) => matches!(**e, Type::Optional(_)),
        (Type::Class(q), ValueType::Object(t)) => q == t,
        (Type::Any, _) => true,
        (Type::Class(_), _) => false,
        (_, ValueType::Tensor { .. } | ValueType::Module(_) | ValueType::Object(_)) => false,
        (_, ValueType::Token) => false,
        _ => true, // numbers and lists: the schema's binder checks them when the node runs
    }
}

pub(super) fn decode(g: &Json, tensors: &StateDict) -> Result<ScriptModule> {
    let values = g["values"]
        .as_array()
        .ok_or_else(|| bad("the graph has no values"))?;
    ensure!(
        values.len() <= MAX_VALUES,
        Runtime,
        "jit.load: the graph has {} values",
        values.len()
    );
    let values: Vec<Value> = values
        .iter()
        .map(|v| {
            Ok(Value {
                ty: parse_type(&v["type"], 0)?,
                name: v["name"].as_str().map(str::to_string),
            })
        })
        .collect::<Result<_>>()?;
    let n = values.len();
    let mut defined = vec![false; n];
    let define = |v: usize, defined: &mut Vec<bool>| -> Result<()> {
        ensure!(v < n, Runtime, "jit.load: value %{v} does not exist");
        ensure!(
            !defined[v],
            Runtime,
            "jit.load: value %{v} is defined twice"
        );
        defined[v] = true;
        Ok(())
    };
    let inputs = usize_list(&g["inputs"], "inputs")?;
    for &v in &inputs {
        define(v, &mut defined)?;
    }
    let attributes: Vec<String> = g["attributes"]
        .as_array()
        .ok_or_else(|| bad("the graph has no attribute list"))?
        .iter()
        .map(|a| {
            a.as_str()
                .map(str::to_string)
                .ok_or_else(|| bad("attribute names must be strings"))
        })
        .collect::<Result<_>>()?;
    let params: HashSet<&str> = g["parameters"]
        .as_array()
        .map(|a| a.iter().filter_map(Json::as_str).collect())
        .unwrap_or_default();
    let mut attrs = Vec::with_capacity(attributes.len());
    for name in &attributes {
        let t = tensors
            .get(&format!("attr/{name}"))
            .cloned()
            .ok_or_else(|| bad(format!("the file has no tensor for attribute {name:?}")))?;
        let t = if params.contains(name.as_str()) && t.is_floating_point() {
            t.requires_grad_(true)?
        } else {
            t
        };
        attrs.push((name.clone(), Attr::Tensor(t)));
    }
    let raw_nodes = g["nodes"]
        .as_array()
        .ok_or_else(|| bad("the graph has no nodes"))?;
    ensure!(
        raw_nodes.len() <= MAX_VALUES,
        Runtime,
        "jit.load: the graph has {} nodes",
        raw_nodes.len()
    );
    let mut nodes = Vec::with_capacity(raw_nodes.len());
    for (i, rn) in raw_nodes.iter().enumerate() {
        let ins = usize_list(&rn["inputs"], "node inputs")?;
        let outs = usize_list(&rn["outputs"], "node outputs")?;
        for &v in &ins {
            ensure!(
                v < n && defined[v],
                Runtime,
                "jit.load: node {i} reads value %{v} before it is defined"
            );
        }
        let effects = rn["with_effects"].as_str();
        let kind = if let Some(schema) = rn["op"].as_str().or(effects) {
            let name = schema.split('(').next().unwrap_or_default().trim();
            // an op using objects is threaded by a token, in and out
            // (Note [Objects in graphs])
            let (ins, outs) = match effects {
                Some(_) => {
                    ensure!(
                        !ins.is_empty()
                            && !outs.is_empty()
                            && values[ins[0]].ty == ValueType::Token
                            && values[outs[0]].ty == ValueType::Token,
                        Runtime,
                        "jit.load: node {i}: with_effects takes and gives a token first"
                    );
                    (&ins[1..], &outs[1..])
                }
                None => (&ins[..], &outs[..]),
            };
            let e =
                find_op(name).ok_or_else(|| bad(format!("node {i}: unknown operator {name:?}")))?;
            ensure!(e.schema.to_string() == schema, Runtime, "jit.load: node {i}: operator {name} has schema `{}` in this build but the file expects `{schema}`", e.schema);
            ensure!(
                ins.len() == e.schema.args.len(),
                Runtime,
                "jit.load: node {i}: {name} takes {} arguments, the file gives {}",
                e.schema.args.len(),
                ins.len()
            );
            let want_outs = if effects.is_some() {
                e.schema.returns.len()
            } else {
                e.schema.returns.len().max(1)
            };
            ensure!(
                outs.len() == want_outs,
                Runtime,
                "jit.load: node {i}: {name} has {want_outs} results, the file gives {}",
                outs.len()
            );
            for (a, &v) in e.schema.args.iter().zip(ins) {
                ensure!(fits(&values[v].ty, &a.ty), Runtime, "jit.load: node {i}: argument '{}' of {name} must be {}, got a value of type {}", a.name, a.ty, values[v].ty);
            }
            let uses_objects = crate::passes::uses_objects(&e);
            match effects {
                Some(_) => NodeKind::WithEffects(e),
                None => {
                    ensure!(
                        !uses_objects,
                        Runtime,
                        "jit.load: node {i}: {name} uses an object and must be threaded by a token (with_effects)"
                    );
                    NodeKind::Op(e)
                }
            }
        } else if let Some(c) = rn.get("constant") {
            ensure!(
                ins.is_empty() && outs.len() == 1,
                Runtime,
                "jit.load: node {i}: a constant has no inputs and one output"
            );
            NodeKind::Constant(parse_constant(c, tensors)?)
        } else if let Some(name) = rn["get_attr"].as_str() {
            ensure!(
                ins.len() == 1 && outs.len() == 1,
                Runtime,
                "jit.load: node {i}: GetAttr reads the module and has one output"
            );
            ensure!(
                attributes.iter().any(|a| a == name),
                Runtime,
                "jit.load: node {i}: no attribute {name:?}"
            );
            NodeKind::GetAttr(name.to_string())
        } else if rn.get("list_construct").is_some() {
            ensure!(
                outs.len() == 1,
                Runtime,
                "jit.load: node {i}: ListConstruct has one output"
            );
            ensure!(
                matches!(
                    values[outs[0]].ty,
                    ValueType::List(_) | ValueType::OptTensorList
                ),
                Runtime,
                "jit.load: node {i}: ListConstruct must make a list"
            );
            NodeKind::ListConstruct
        } else if rn.get("list_unpack").is_some() {
            ensure!(
                ins.len() == 1 && matches!(values[ins[0]].ty, ValueType::List(_)),
                Runtime,
                "jit.load: node {i}: ListUnpack reads one list"
            );
            NodeKind::ListUnpack
        } else {
            bail!(Runtime, "jit.load: node {i} has no known kind");
        };
        for &v in &outs {
            define(v, &mut defined)?;
        }
        nodes.push(Node {
            kind,
            inputs: ins,
            outputs: outs,
        });
    }
    let outputs = usize_list(&g["outputs"], "outputs")?;
    for &v in &outputs {
        ensure!(
            v < n && defined[v],
            Runtime,
            "jit.load: output %{v} is not defined"
        );
        ensure!(
            matches!(
                values[v].ty,
                ValueType::Tensor { .. } | ValueType::Object(_)
            ),
            Runtime,
            "jit.load: output %{v} is not a tensor or an object"
        );
    }
    for (k, &v) in inputs.iter().enumerate() {
        let module = matches!(values[v].ty, ValueType::Module(_));
        ensure!(
            matches!(
                values[v].ty,
                ValueType::Tensor { .. } | ValueType::Object(_)
            ) || (module && k == 0),
            Runtime,
            "jit.load: input %{v} must be a tensor or an object (or the module, first)"
        );
    }
    Ok(ScriptModule {
        graph: Graph {
            values,
            inputs,
            nodes,
            outputs,
            prepacked: Default::default(),
        },
        attrs,
        warnings: Vec::new(),
    })
}

//! Printing graphs as TorchScript does (`graph.graph` / `str(graph)`):
//!
//! ```text
//! graph(%self : __torch__.Net,
//!       %x : Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu)):
//!   %weight : Float(4, 3, strides=[3, 1], requires_grad=1, device=cpu) = prim::GetAttr[name="weight"](%self)
//!   %3 : Float(2, 4, strides=[4, 1], requires_grad=1, device=cpu) = aten::linear(%x, %weight, %bias)
//!   return (%3)
//! ```

use crate::ir::{Graph, NodeKind, ValueId, ValueType};
use ferrotorch_core::dispatch::IValue;
use std::collections::HashMap;
use std::fmt;

impl fmt::Display for ValueType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ValueType::Tensor {
                dtype,
                sizes,
                strides,
                requires_grad,
            } => {
                let join = |v: Vec<String>| v.join(", ");
                // 0-dim tensors print no sizes or strides, as in TorchScript
                let dims = if sizes.is_empty() {
                    String::new()
                } else {
                    format!(
                        "{}, strides=[{}], ",
                        join(sizes.iter().map(|s| s.to_string()).collect()),
                        join(strides.iter().map(|s| s.to_string()).collect())
                    )
                };
                write!(
                    f,
                    "{}({dims}requires_grad={}, device=cpu)",
                    dtype.name_title(),
                    u8::from(*requires_grad)
                )
            }
            ValueType::Int => write!(f, "int"),
            ValueType::Float => write!(f, "float"),
            ValueType::Complex => write!(f, "complex"),
            ValueType::Bool => write!(f, "bool"),
            ValueType::Str => write!(f, "str"),
            ValueType::ScalarType => write!(f, "ScalarType"),
            ValueType::None => write!(f, "NoneType"),
            ValueType::Generator => write!(f, "Generator"),
            ValueType::List(t) => match t.as_ref() {
                ValueType::Tensor { .. } => write!(f, "Tensor[]"),
                t => write!(f, "{t}[]"),
            },
            ValueType::OptTensorList => write!(f, "Tensor?[]"),
            ValueType::Module(n) => write!(f, "__torch__.{n}"),
            ValueType::Object(q) => write!(f, "{q}"),
            ValueType::Token => write!(f, "Token"),
        }
    }
}

/// A float as Python prints it (`1.`, `0.5`, `inf`, `nan`), as TorchScript
/// does in constants.
fn py_float(x: f64) -> String {
    if x.is_nan() {
        "nan".into()
    } else if x.is_infinite() {
        if x > 0.0 { "inf" } else { "-inf" }.into()
    } else if x == x.trunc() && x.abs() < 1e16 {
        format!("{x:.0}.")
    } else {
        format!("{x}")
    }
}

/// A constant as a literal (`1`, `0.5`, `[1, 2]`, `None`).
pub(crate) fn literal(v: &IValue) -> String {
    let list = |items: Vec<String>| format!("[{}]", items.join(", "));
    match v {
        IValue::None => "None".into(),
        IValue::Int(i) => i.to_string(),
        IValue::Float(x) => py_float(*x),
        IValue::Complex(re, im) => format!(
            "{}{}{}j",
            py_float(*re),
            if *im < 0.0 { "-" } else { "+" },
            py_float(im.abs())
        ),
        IValue::Bool(b) => if *b { "True" } else { "False" }.into(),
        IValue::Str(s) => format!("{s:?}"),
        IValue::DType(d) => d.to_string(),
        IValue::IntList(l) => list(l.iter().map(|i| i.to_string()).collect()),
        IValue::FloatList(l) => list(l.iter().map(|x| py_float(*x)).collect()),
        IValue::BoolList(l) => list(l.iter().map(|b| literal(&IValue::Bool(*b))).collect()),
        _ => "<value>".into(),
    }
}

/// A constant's `[value=...]` attribute (empty for `None`).
fn constant_attr(v: &IValue) -> String {
    let list = |items: Vec<String>| format!("[{}]", items.join(", "));
    let value = match v {
        IValue::None => return String::new(),
        IValue::Int(i) => i.to_string(),
        IValue::Float(x) => py_float(*x),
        IValue::Complex(..) => literal(v),
        IValue::Bool(b) => u8::from(*b).to_string(),
        IValue::Str(s) => format!("{s:?}"),
        IValue::DType(d) => d.to_string(),
        IValue::IntList(l) => list(l.iter().map(|i| i.to_string()).collect()),
        IValue::FloatList(l) => list(l.iter().map(|x| py_float(*x)).collect()),
        IValue::BoolList(l) => list(l.iter().map(|b| u8::from(*b).to_string()).collect()),
        IValue::Tensor(_) => "<Tensor>".into(),
        IValue::Object(_) => "<ScriptObject>".into(),
        _ => "<value>".into(),
    };
    format!("[value={value}]")
}

/// Names for printing: a value's own name when no other value has it,
/// otherwise its index (TorchScript's `%x`, `%7`).
pub(crate) fn names(g: &Graph) -> Vec<String> {
    let mut count: HashMap<&str, usize> = HashMap::new();
    for v in &g.values {
        if let Some(n) = &v.name {
            *count.entry(n.as_str()).or_default() += 1;
        }
    }
    g.values
        .iter()
        .enumerate()
        .map(|(i, v)| match &v.name {
            Some(n) if count[n.as_str()] == 1 && !n.chars().all(|c| c.is_ascii_digit()) => {
                n.clone()
            }
            _ => i.to_string(),
        })
        .collect()
}

impl fmt::Display for Graph {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut groups = Vec::new();
        self.write_graph(f, &mut groups)?;
        // fusion groups' bodies follow, as TorchScript prints them
        let mut k = 0;
        while k < groups.len() {
            write!(f, "with prim::FusionGroup_{k} = ")?;
            let body = groups[k].clone();
            body.write_graph(f, &mut groups)?;
            k += 1;
        }
        Ok(())
    }
}

impl Graph {
    fn write_graph(
        &self,
        f: &mut fmt::Formatter<'_>,
        groups: &mut Vec<std::sync::Arc<Graph>>,
    ) -> fmt::Result {
        let n = names(self);
        let v = |id: ValueId| format!("%{}", n[id]);
        let typed = |id: ValueId| format!("%{} : {}", n[id], self.values[id].ty);
        let ins: Vec<String> = self.inputs.iter().map(|&i| typed(i)).collect();
        writeln!(f, "graph({}):", ins.join(",\n      "))?;
        for node in &self.nodes {
            let outs: Vec<String> = node.outputs.iter().map(|&o| typed(o)).collect();
            let attr = match &node.kind {
                NodeKind::Constant(c) => constant_attr(c),
                NodeKind::GetAttr(name) | NodeKind::CallMethod { name, .. } => {
                    format!("[name={name:?}]")
                }
                NodeKind::WithEffects(e) => format!("[op={:?}]", e.schema.full_name()),
                _ => String::new(),
            };
            let kind = match &node.kind {
                NodeKind::FusionGroup(body) => {
                    groups.push(body.clone());
                    format!("prim::FusionGroup_{}", groups.len() - 1)
                }
                _ => node.kind_name(),
            };
            let args: Vec<String> = node.inputs.iter().map(|&i| v(i)).collect();
            writeln!(
                f,
                "  {} = {kind}{attr}({})",
                outs.join(", "),
                args.join(", ")
            )?;
        }
        let outs: Vec<String> = self.outputs.iter().map(|&o| v(o)).collect();
        writeln!(f, "  return ({})", outs.join(", "))
    }
}

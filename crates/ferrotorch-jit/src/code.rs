//! `module.code`: a graph printed as the Python-like source TorchScript
//! shows for traced modules, one statement per node, constants written
//! in place, tensor constants as `CONSTANTS.c0`, `CONSTANTS.c1`, ...
//!
//! ```text
//! def forward(self,
//!     x: Tensor) -> Tensor:
//!   weight = self.weight
//!   _0 = torch.linear(x, weight, None)
//!   return _0
//! ```

use crate::ir::{Graph, NodeKind, ValueId, ValueType};
use crate::print::{literal, names};
use ferrotorch_core::dispatch::IValue;
use std::collections::HashMap;
use std::fmt::Write;

fn type_name(t: &ValueType) -> String {
    match t {
        ValueType::Tensor { .. } => "Tensor".into(),
        ValueType::List(e) => format!("List[{}]", type_name(e)),
        ValueType::OptTensorList => "List[Optional[Tensor]]".into(),
        other => other.to_string(),
    }
}

/// The source of `g` as `def forward(...)`.
pub fn code(g: &Graph) -> String {
    let names = names(g);
    let var = |v: ValueId| {
        let n = &names[v];
        if n.chars().all(|c| c.is_ascii_digit()) {
            format!("_{n}")
        } else {
            n.clone()
        }
    };
    // constants are written where they are used
    let mut consts: HashMap<ValueId, String> = HashMap::new();
    let mut tensor_consts = 0;
    let mut body = String::new();
    let mut groups = 0;
    let arg = |consts: &HashMap<ValueId, String>, v: ValueId| {
        consts.get(&v).cloned().unwrap_or_else(|| var(v))
    };
    for n in &g.nodes {
        let args: Vec<String> = n.inputs.iter().map(|&i| arg(&consts, i)).collect();
        let outs: Vec<String> = n.outputs.iter().map(|&o| var(o)).collect();
        let lhs = if outs.len() == 1 {
            outs[0].clone()
        } else {
            format!("{}, ", outs.join(", "))
        };
        let rhs = match &n.kind {
            NodeKind::Constant(c) => {
                let text = match c {
                    IValue::Tensor(_) => {
                        tensor_consts += 1;
                        format!("CONSTANTS.c{}", tensor_consts - 1)
                    }
                    c => literal(c),
                };
                consts.insert(n.outputs[0], text);
                continue;
            }
            NodeKind::GetAttr(name)
                if name.contains('.') || name.starts_with(|c: char| c.is_ascii_digit()) =>
            {
                format!("getattr({}, {name:?})", args[0])
            }
            NodeKind::GetAttr(name) => format!("{}.{name}", args[0]),
            NodeKind::Op(e) if e.schema.name == "Int" => format!("int({})", args.join(", ")),
            NodeKind::WithEffects(e) => format!(
                "torch.ops.higher_order.with_effects({}, ops.{}, {})",
                args[0],
                e.schema.full_name().replace("::", "."),
                args[1..].join(", ")
            ),
            NodeKind::Op(e) => match e.schema.name.split_once("::") {
                Some((ns, name)) => format!("ops.{ns}.{name}({})", args.join(", ")),
                None => format!("torch.{}({})", e.schema.name, args.join(", ")),
            },
            NodeKind::ListConstruct => format!("[{}]", args.join(", ")),
            NodeKind::ListUnpack => args[0].clone(),
            NodeKind::CallMethod { name, .. } => {
                format!("({}).{name}({})", args[0], args[1..].join(", "))
            }
            NodeKind::FusionGroup(_) => {
                groups += 1;
                format!("prim.FusionGroup_{}({})", groups - 1, args.join(", "))
            }
        };
        let _ = writeln!(body, "  {lhs} = {rhs}");
    }
    let ins: Vec<String> = g
        .inputs
        .iter()
        .map(|&i| match &g.values[i].ty {
            ValueType::Module(_) => var(i),
            t => format!("{}: {}", var(i), type_name(t)),
        })
        .collect();
    let rets: Vec<String> = g.outputs.iter().map(|&o| arg(&consts, o)).collect();
    let ret_ty = if g.outputs.len() == 1 {
        type_name(&g.values[g.outputs[0]].ty)
    } else {
        let tys: Vec<String> = g
            .outputs
            .iter()
            .map(|&o| type_name(&g.values[o].ty))
            .collect();
        format!("Tuple[{}]", tys.join(", "))
    };
    let ret = if rets.len() == 1 {
        rets[0].clone()
    } else {
        format!("({})", rets.join(", "))
    };
    format!(
        "def forward({}) -> {ret_ty}:\n{body}  return {ret}\n",
        ins.join(",\n    ")
    )
}

//! The graph of a saved program as JSON and back: value types,
//! constants (tensor constants go to the file's tensors) and the whole
//! graph (Note [Saved programs]).

use super::{bad, MAX_LIST};
use crate::ir::{NodeKind, ValueType};
use crate::module::{Attr, ScriptModule};
use ferrotorch_core::dispatch::IValue;
use ferrotorch_core::{bail, ensure, DType, Result};
use ferrotorch_nn::StateDict;
use serde_json::{json, Value as Json};

pub(super) fn dtype_name(d: DType) -> String {
    d.to_string().trim_start_matches("torch.").to_string()
}

pub(super) fn type_json(t: &ValueType) -> Json {
    match t {
        ValueType::Tensor {
            dtype,
            sizes,
            strides,
            requires_grad,
        } => {
            json!({"tensor": {"dtype": dtype_name(*dtype), "sizes": sizes, "strides": strides, "requires_grad": requires_grad}})
        }
        ValueType::Int => json!("int"),
        ValueType::Float => json!("float"),
        ValueType::Complex => json!("complex"),
        ValueType::Bool => json!("bool"),
        ValueType::Str => json!("str"),
        ValueType::ScalarType => json!("ScalarType"),
        ValueType::None => json!("NoneType"),
        ValueType::Generator => json!("Generator"),
        ValueType::List(e) => json!({"list": type_json(e)}),
        ValueType::OptTensorList => json!("Tensor?[]"),
        ValueType::Module(n) => json!({"module": n}),
        ValueType::Object(q) => json!({"object": q}),
        ValueType::Token => json!("Token"),
    }
}

pub(super) fn usize_list(v: &Json, what: &str) -> Result<Vec<usize>> {
    let a = v
        .as_array()
        .ok_or_else(|| bad(format!("{what} must be a list")))?;
    ensure!(
        a.len() <= MAX_LIST,
        Runtime,
        "jit.load: {what} has {} entries",
        a.len()
    );
    a.iter()
        .map(|x| {
            x.as_u64()
                .map(|x| x as usize)
                .ok_or_else(|| bad(format!("{what} must hold non-negative integers")))
        })
        .collect()
}

pub(super) fn parse_type(v: &Json, depth: usize) -> Result<ValueType> {
    ensure!(depth < 4, Runtime, "jit.load: a type is nested too deeply");
    if let Some(s) = v.as_str() {
        return Ok(match s {
            "int" => ValueType::Int,
            "float" => ValueType::Float,
            "complex" => ValueType::Complex,
            "bool" => ValueType::Bool,
            "str" => ValueType::Str,
            "ScalarType" => ValueType::ScalarType,
            "NoneType" => ValueType::None,
            "Generator" => ValueType::Generator,
            "Tensor?[]" => ValueType::OptTensorList,
            "Token" => ValueType::Token,
            other => return Err(bad(format!("unknown type {other:?}"))),
        });
    }
    if let Some(t) = v.get("tensor") {
        let dtype = t["dtype"]
            .as_str()
            .and_then(DType::from_name)
            .ok_or_else(|| bad("a tensor type has no known dtype"))?;
        let sizes = usize_list(&t["sizes"], "sizes")?;
        let strides = usize_list(&t["strides"], "strides")?;
        ensure!(
            sizes.len() == strides.len(),
            Runtime,
            "jit.load: a tensor type has {} sizes but {} strides",
            sizes.len(),
            strides.len()
        );
        let requires_grad = t["requires_grad"]
            .as_bool()
            .ok_or_else(|| bad("a tensor type has no requires_grad"))?;
        return Ok(ValueType::Tensor {
            dtype,
            sizes,
            strides,
            requires_grad,
        });
    }
    if let Some(e) = v.get("list") {
        return Ok(ValueType::List(Box::new(parse_type(e, depth + 1)?)));
    }
    if let Some(n) = v.get("module").and_then(Json::as_str) {
        return Ok(ValueType::Module(n.to_string()));
    }
    if let Some(q) = v.get("object").and_then(Json::as_str) {
        // loading checks the class is registered here (Note [Objects in
        // graphs])
        let class = ferrotorch_core::library::find_class(q).ok_or_else(|| {
            bad(format!(
                "the program uses the custom class {q}, which is not registered in this process (register it, or load its library, first)"
            ))
        })?;
        return Ok(ValueType::Object(class.qualified_name().to_string()));
    }
    Err(bad(format!("unknown type {v}")))
}

pub(super) fn float_json(x: f64) -> Json {
    if x.is_finite() {
        json!(x)
    } else {
        json!(if x.is_nan() {
            "nan"
        } else if x > 0.0 {
            "inf"
        } else {
            "-inf"
        })
    }
}

pub(super) fn parse_float(v: &Json) -> Result<f64> {
    match v {
        Json::String(s) if s == "nan" => Ok(f64::NAN),
        Json::String(s) if s == "inf" => Ok(f64::INFINITY),
        Json::String(s) if s == "-inf" => Ok(f64::NEG_INFINITY),
        v => v
            .as_f64()
            .ok_or_else(|| bad("a float constant is not a number")),
    }
}

/// Deepest nesting of tuples and objects in a constant.
const MAX_DEPTH: usize = 16;

/// A constant as JSON; tensors go to `tensors` under `const/<n>`, a
/// custom class's object as its class and its `__getstate__` state.
pub(super) fn constant_json(v: &IValue, tensors: &mut StateDict) -> Result<Json> {
    Ok(match v {
        IValue::Tuple(items) => json!({"tuple": items
            .iter()
            .map(|x| constant_json(x, tensors))
            .collect::<Result<Vec<_>>>()?}),
        IValue::TensorList(l) => json!({"tensor_list": l
            .iter()
            .map(|t| constant_json(&IValue::Tensor(t.clone()), tensors))
            .collect::<Result<Vec<_>>>()?}),
        IValue::Object(o) => {
            let state = o.getstate()?;
            json!({"object": {"class": o.class().qualified_name(), "state": constant_json(&state, tensors)?}})
        }
        IValue::None => json!("None"),
        IValue::Int(i) => json!({"int": i}),
        IValue::Float(x) => json!({"float": float_json(*x)}),
        IValue::Complex(re, im) => json!({"complex": [float_json(*re), float_json(*im)]}),
        IValue::Bool(b) => json!({"bool": b}),
        IValue::Str(s) => json!({"str": s}),
        IValue::DType(d) => json!({"dtype": dtype_name(*d)}),
        IValue::IntList(l) => json!({"int_list": l}),
        IValue::FloatList(l) => {
            json!({"float_list": l.iter().map(|x| float_json(*x)).collect::<Vec<_>>()})
        }
        IValue::BoolList(l) => json!({"bool_list": l}),
        IValue::Tensor(t) => {
            let key = format!("const/{}", tensors.len());
            tensors.insert(key.clone(), t.detach().contiguous()?);
            json!({"tensor": key})
        }
        other => bail!(
            Runtime,
            "jit.save: constants of type {} cannot be saved",
            other.type_name()
        ),
    })
}

pub(super) fn parse_constant(v: &Json, tensors: &StateDict) -> Result<IValue> {
    parse_constant_at(v, tensors, 0)
}

fn parse_constant_at(v: &Json, tensors: &StateDict, depth: usize) -> Result<IValue> {
    ensure!(
        depth < MAX_DEPTH,
        Runtime,
        "jit.load: a constant is nested too deeply"
    );
    if v.as_str() == Some("None") {
        return Ok(IValue::None);
    }
    let obj = v
        .as_object()
        .filter(|o| o.len() == 1)
        .ok_or_else(|| bad(format!("bad constant {v}")))?;
    let (k, x) = obj.iter().next().expect("one entry");
    Ok(match k.as_str() {
        "int" => IValue::Int(
            x.as_i64()
                .ok_or_else(|| bad("an int constant is not an integer"))?,
        ),
        "float" => IValue::Float(parse_float(x)?),
        "complex" => match x.as_array().map(Vec::as_slice) {
            Some([re, im]) => IValue::Complex(parse_float(re)?, parse_float(im)?),
            _ => return Err(bad("a complex constant is not a [re, im] pair")),
        },
        "bool" => IValue::Bool(
            x.as_bool()
                .ok_or_else(|| bad("a bool constant is not a boolean"))?,
        ),
        "str" => IValue::Str(
            x.as_str()
                .ok_or_else(|| bad("a str constant is not a string"))?
                .to_string(),
        ),
        "dtype" => IValue::DType(
            x.as_str()
                .and_then(DType::from_name)
                .ok_or_else(|| bad("unknown dtype constant"))?,
        ),
        "int_list" | "float_list" | "bool_list" => {
            let a = x
                .as_array()
                .ok_or_else(|| bad("a list constant is not a list"))?;
            ensure!(
                a.len() <= MAX_LIST,
                Runtime,
                "jit.load: a list constant has {} elements",
                a.len()
            );
            match k.as_str() {
                "int_list" => IValue::IntList(
                    a.iter()
                        .map(|e| e.as_i64().ok_or_else(|| bad("int list element")))
                        .collect::<Result<_>>()?,
                ),
                "float_list" => {
                    IValue::FloatList(a.iter().map(parse_float).collect::<Result<_>>()?)
                }
                _ => IValue::BoolList(
                    a.iter()
                        .map(|e| e.as_bool().ok_or_else(|| bad("bool list element")))
                        .collect::<Result<_>>()?,
                ),
            }
        }
        "tuple" | "tensor_list" => {
            let a = x
                .as_array()
                .ok_or_else(|| bad("a tuple constant is not a list"))?;
            ensure!(
                a.len() <= MAX_LIST,
                Runtime,
                "jit.load: a tuple constant has {} elements",
                a.len()
            );
            let items = a
                .iter()
                .map(|e| parse_constant_at(e, tensors, depth + 1))
                .collect::<Result<Vec<_>>>()?;
            if k == "tuple" {
                IValue::Tuple(items)
            } else {
                IValue::TensorList(
                    items
                        .into_iter()
                        .map(|t| {
                            t.into_tensor()
                                .map_err(|_| bad("a tensor list holds a non-tensor"))
                        })
                        .collect::<Result<_>>()?,
                )
            }
        }
        "object" => {
            let class = x["class"]
                .as_str()
                .ok_or_else(|| bad("an object constant has no class"))?;
            ensure!(
                ferrotorch_core::library::find_class(class).is_some(),
                Runtime,
                "jit.load: the program holds an object of the custom class {class}, which is not registered in this process"
            );
            let state = parse_constant_at(&x["state"], tensors, depth + 1)?;
            IValue::Object(
                ferrotorch_core::library::from_state(class, state).map_err(|e| {
                    bad(format!(
                        "the state of a {class} object does not load: {}",
                        e.message()
                    ))
                })?,
            )
        }
        "tensor" => {
            let key = x
                .as_str()
                .ok_or_else(|| bad("a tensor constant has no name"))?;
            IValue::Tensor(
                tensors
                    .get(key)
                    .cloned()
                    .ok_or_else(|| bad(format!("the file has no tensor {key:?}")))?,
            )
        }
        other => return Err(bad(format!("unknown constant kind {other:?}"))),
    })
}

/// The tensors and the graph of `m`'s file.
pub(super) fn encode(m: &ScriptModule) -> Result<(StateDict, Json)> {
    // saved programs hold the flat graph (Note [Module hierarchy])
    let g = &crate::inline::inline_calls(&m.graph)?;
    let mut tensors = StateDict::new();
    let mut params = Vec::new();
    for (name, a) in &m.attrs {
        tensors.insert(format!("attr/{name}"), a.tensor().detach().contiguous()?);
        if matches!(a, Attr::Parameter(_)) || a.tensor().requires_grad() {
            params.push(name.clone());
        }
    }
    let mut nodes = Vec::with_capacity(g.nodes.len());
    for n in &g.nodes {
        let mut o = json!({"inputs": n.inputs, "outputs": n.outputs});
        match &n.kind {
            NodeKind::Op(e) => o["op"] = json!(e.schema.to_string()),
            NodeKind::WithEffects(e) => o["with_effects"] = json!(e.schema.to_string()),
            NodeKind::Constant(c) => o["constant"] = constant_json(c, &mut tensors)?,
            NodeKind::GetAttr(name) => o["get_attr"] = json!(name),
            NodeKind::ListConstruct => o["list_construct"] = json!(true),
            NodeKind::ListUnpack => o["list_unpack"] = json!(true),
            NodeKind::CallMethod { .. } | NodeKind::FusionGroup(_) => {
                ferrotorch_core::bail!(
                    Runtime,
                    "jit.save: the graph still has calls after inlining"
                )
            }
        }
        nodes.push(o);
    }
    let values: Vec<Json> = g
        .values
        .iter()
        .map(|v| json!({"type": type_json(&v.ty), "name": v.name}))
        .collect();
    let graph = json!({
        "values": values,
        "inputs": g.inputs,
        "outputs": g.outputs,
        "nodes": nodes,
        "attributes": m.attrs.iter().map(|(n, _)| n).collect::<Vec<_>>(),
        "parameters": params,
    });
    Ok((tensors, graph))
}

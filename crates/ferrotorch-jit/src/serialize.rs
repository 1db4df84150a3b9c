//! Saved programs: a traced module as one zip archive (Note [Program
//! archives] in `zip.rs`) holding
//!
//! - `archive/version`: the format version, as text;
//! - `archive/graph.json`: the format name, its version and the graph;
//! - `archive/data.safetensors`: the module's attributes and the graph's
//!   tensor constants.
//!
//! Version 1 files (one safetensors file with the graph in its metadata)
//! still load.
//!
//! # Note [Saved programs]
//! A file is data, never code: it names ops by their schema, and loading
//! only runs ops this build registered with the same schema text. Loading
//! trusts nothing (the zip layer checks every offset, length and CRC, the
//! safetensors layer the header, dtypes, shapes and offsets, before any
//! tensor is made): the format and version must be
//! known, the graph JSON is bounded (values, nodes, list lengths) before it
//! is walked, every value is defined exactly once and before it is used,
//! every op exists with the recorded schema and gets as many arguments as
//! the schema declares, values feeding tensor arguments are tensors,
//! constants and attributes name tensors the file holds, and outputs are
//! defined. Anything else is an error naming what is wrong. PyTorch's
//! archives are zips of pickles and code; ours keep the same parts
//! (version, graph, constants, weights) without either.

use crate::ir::{Graph, Node, NodeKind, Value, ValueType};
use crate::module::{Attr, ScriptModule};
use ferrotorch_core::dispatch::{find_op, IValue, Type};
use ferrotorch_core::{bail, ensure, DType, Error, ErrorKind, Result};
use ferrotorch_nn::safetensors;
use ferrotorch_nn::StateDict;
use serde_json::{json, Value as Json};
use std::collections::HashSet;
use std::path::Path;

/// The format name in a file's metadata.
pub const FORMAT: &str = "ferrotorch.jit";
/// The format version this build writes; it reads this and older ones.
pub const VERSION: u64 = 2;
/// Bounds checked before a graph is built from a file.
const MAX_VALUES: usize = 1 << 20;
const MAX_LIST: usize = 1 << 16;

fn bad(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::Runtime, format!("jit.load: {}", msg.into()))
}

fn dtype_name(d: DType) -> String {
    d.to_string().trim_start_matches("torch.").to_string()
}

fn type_json(t: &ValueType) -> Json {
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
        ValueType::Bool => json!("bool"),
        ValueType::Str => json!("str"),
        ValueType::ScalarType => json!("ScalarType"),
        ValueType::None => json!("NoneType"),
        ValueType::Generator => json!("Generator"),
        ValueType::List(e) => json!({"list": type_json(e)}),
        ValueType::OptTensorList => json!("Tensor?[]"),
        ValueType::Module(n) => json!({"module": n}),
    }
}

fn usize_list(v: &Json, what: &str) -> Result<Vec<usize>> {
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

fn parse_type(v: &Json, depth: usize) -> Result<ValueType> {
    ensure!(depth < 4, Runtime, "jit.load: a type is nested too deeply");
    if let Some(s) = v.as_str() {
        return Ok(match s {
            "int" => ValueType::Int,
            "float" => ValueType::Float,
            "bool" => ValueType::Bool,
            "str" => ValueType::Str,
            "ScalarType" => ValueType::ScalarType,
            "NoneType" => ValueType::None,
            "Generator" => ValueType::Generator,
            "Tensor?[]" => ValueType::OptTensorList,
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
    Err(bad(format!("unknown type {v}")))
}

fn float_json(x: f64) -> Json {
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

fn parse_float(v: &Json) -> Result<f64> {
    match v {
        Json::String(s) if s == "nan" => Ok(f64::NAN),
        Json::String(s) if s == "inf" => Ok(f64::INFINITY),
        Json::String(s) if s == "-inf" => Ok(f64::NEG_INFINITY),
        v => v
            .as_f64()
            .ok_or_else(|| bad("a float constant is not a number")),
    }
}

/// A constant as JSON; tensors go to `tensors` under `const/<n>`.
fn constant_json(v: &IValue, tensors: &mut StateDict) -> Result<Json> {
    Ok(match v {
        IValue::None => json!("None"),
        IValue::Int(i) => json!({"int": i}),
        IValue::Float(x) => json!({"float": float_json(*x)}),
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

fn parse_constant(v: &Json, tensors: &StateDict) -> Result<IValue> {
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

/// `m`'s file as bytes (what [`save`] writes).
pub fn save_bytes(m: &ScriptModule) -> Result<Vec<u8>> {
    let e = Encoded::new(m)?;
    let mut out = vec![0u8; e.len()?];
    e.write_into(&mut out)?;
    Ok(out)
}

const VERSION_ENTRY: &str = "archive/version";
const GRAPH_ENTRY: &str = "archive/graph.json";
const DATA_ENTRY: &str = "archive/data.safetensors";

/// A program ready to write into a buffer someone else allocates (a
/// Python `bytes`), each tensor copied once.
pub struct Encoded {
    tensors: StateDict,
    version: String,
    graph: String,
}

impl Encoded {
    /// `m`'s file, laid out.
    pub fn new(m: &ScriptModule) -> Result<Encoded> {
        let (tensors, graph) = encode(m)?;
        let graph = json!({"format": FORMAT, "version": VERSION, "graph": graph});
        Ok(Encoded {
            tensors,
            version: format!("{VERSION}\n"),
            graph: graph.to_string(),
        })
    }

    fn layout(&self, data_len: usize) -> Result<crate::zip::Layout> {
        crate::zip::Layout::new(&[
            (VERSION_ENTRY, self.version.len()),
            (GRAPH_ENTRY, self.graph.len()),
            (DATA_ENTRY, data_len),
        ])
    }

    /// The file's length in bytes.
    pub fn len(&self) -> Result<usize> {
        let data = safetensors::encode(&self.tensors, None)?;
        Ok(self.layout(data.len())?.len())
    }

    /// Whether the file is empty (never: it has a header).
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Write the file into `out`, exactly [`Encoded::len`] bytes.
    pub fn write_into(&self, out: &mut [u8]) -> Result<()> {
        let data = safetensors::encode(&self.tensors, None)?;
        let lay = self.layout(data.len())?;
        ensure!(
            out.len() == lay.len(),
            Value,
            "jit.save: a buffer of {} bytes for a program of {}",
            out.len(),
            lay.len()
        );
        out[lay.data_range(0)].copy_from_slice(self.version.as_bytes());
        out[lay.data_range(1)].copy_from_slice(self.graph.as_bytes());
        data.write_into(&mut out[lay.data_range(2)])?;
        lay.finish(out);
        Ok(())
    }
}

/// Write `m` to `path` (atomically: a failure leaves an old file whole).
pub fn save(m: &ScriptModule, path: impl AsRef<Path>) -> Result<()> {
    safetensors::write_file_atomic(path.as_ref(), &save_bytes(m)?)
}

/// The tensors and the graph of `m`'s file.
fn encode(m: &ScriptModule) -> Result<(StateDict, Json)> {
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

/// Load a program from its bytes, checking everything (Note [Saved
/// programs]).
pub fn load_bytes(bytes: &[u8]) -> Result<ScriptModule> {
    if !crate::zip::is_zip(bytes) {
        return load_v1(bytes);
    }
    let entries = crate::zip::entries(bytes)?;
    let entry = |name: &str| {
        entries
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, d)| *d)
            .ok_or_else(|| bad(format!("the archive has no {name:?}")))
    };
    let version: u64 = std::str::from_utf8(entry(VERSION_ENTRY)?)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| bad("the archive's version is not a number"))?;
    ensure!(version <= VERSION, Runtime, "jit.load: the file has format version {version}; this build reads versions up to {VERSION}");
    let head: Json = serde_json::from_slice(entry(GRAPH_ENTRY)?)
        .map_err(|e| bad(format!("{GRAPH_ENTRY} is not valid JSON: {e}")))?;
    ensure!(
        head["format"].as_str() == Some(FORMAT),
        Runtime,
        "jit.load: not a ferrotorch program (no \"format\": \"{FORMAT}\" in {GRAPH_ENTRY})"
    );
    ensure!(
        head["version"].as_u64() == Some(version),
        Runtime,
        "jit.load: {GRAPH_ENTRY} and {VERSION_ENTRY} disagree on the version"
    );
    ensure!(
        head["graph"].is_object(),
        Runtime,
        "jit.load: {GRAPH_ENTRY} has no graph"
    );
    let tensors = safetensors::load(entry(DATA_ENTRY)?)?;
    decode(&head["graph"], &tensors)
}

/// A version 1 file: one safetensors file with the graph in its metadata.
fn load_v1(bytes: &[u8]) -> Result<ScriptModule> {
    let meta = safetensors::metadata(bytes)?;
    ensure!(
        meta.get("format").map(String::as_str) == Some(FORMAT),
        Runtime,
        "jit.load: not a ferrotorch program (no \"format\": \"{FORMAT}\" in its metadata)"
    );
    let version: u64 = meta
        .get("version")
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| bad("the file has no format version"))?;
    ensure!(
        version == 1,
        Runtime,
        "jit.load: a safetensors program must have format version 1, not {version}"
    );
    let tensors = safetensors::load(bytes)?;
    let graph: Json = serde_json::from_str(
        meta.get("graph")
            .ok_or_else(|| bad("the file has no graph"))?,
    )
    .map_err(|e| bad(format!("the graph is not valid JSON: {e}")))?;
    decode(&graph, &tensors)
}

/// Load a program from `path` (`torch.jit.load`).
pub fn load(path: impl AsRef<Path>) -> Result<ScriptModule> {
    let bytes = std::fs::read(path.as_ref())
        .map_err(|e| bad(format!("cannot read {}: {e}", path.as_ref().display())))?;
    load_bytes(&bytes)
}

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
        (_, ValueType::Tensor { .. } | ValueType::Module(_)) => false,
        _ => true, // numbers and lists: the schema's binder checks them when the node runs
    }
}

fn decode(g: &Json, tensors: &StateDict) -> Result<ScriptModule> {
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
        let kind = if let Some(schema) = rn["op"].as_str() {
            let name = schema.split('(').next().unwrap_or_default().trim();
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
            let want_outs = e.schema.returns.len().max(1);
            ensure!(
                outs.len() == want_outs,
                Runtime,
                "jit.load: node {i}: {name} has {want_outs} results, the file gives {}",
                outs.len()
            );
            for (a, &v) in e.schema.args.iter().zip(&ins) {
                ensure!(fits(&values[v].ty, &a.ty), Runtime, "jit.load: node {i}: argument '{}' of {name} must be {}, got a value of type {}", a.name, a.ty, values[v].ty);
            }
            NodeKind::Op(e)
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
            matches!(values[v].ty, ValueType::Tensor { .. }),
            Runtime,
            "jit.load: output %{v} is not a tensor"
        );
    }
    for (k, &v) in inputs.iter().enumerate() {
        let module = matches!(values[v].ty, ValueType::Module(_));
        ensure!(
            matches!(values[v].ty, ValueType::Tensor { .. }) || (module && k == 0),
            Runtime,
            "jit.load: input %{v} must be a tensor (or the module, first)"
        );
    }
    Ok(ScriptModule {
        graph: Graph {
            values,
            inputs,
            nodes,
            outputs,
        },
        attrs,
        warnings: Vec::new(),
    })
}

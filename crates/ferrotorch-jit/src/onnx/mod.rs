//! `torch.onnx.export` from the IR: a traced module's graph written as an
//! ONNX model (opset 18, IR version 10) through ONNX's own protobuf schema
//! (`proto.rs`, generated once from `onnx.proto` by
//! `scripts/gen_onnx_proto.sh`; the build needs no protoc).
//!
//! # Note [ONNX export]
//! The module is traced (Note [Tracing through the dispatcher]) and its
//! graph inlined; parameters and buffers (`prim::GetAttr`) become
//! initializers under their names (`fc.weight`), tensor constants
//! initializers of their own. Each value becomes a tensor of the ONNX
//! graph, a constant known at export, or a list of those (`emit::V`), so
//! arguments such as `stride` become attributes while sizes the tracer
//! recorded (`x.size(0)`, Note [Traced sizes]) become `Shape`/`Gather`
//! nodes: a `view(x.size(0), -1)` follows the batch size the model is run
//! with, which is what makes a symbolic batch dimension (`dynamic_axes`)
//! correct. Each ATen op maps to ONNX nodes in `ops.rs` (recurrent layers
//! in `rnn.rs`); an op with no mapping is an error naming it. Numbers
//! take their tensor operand's dtype, since ONNX does not promote.

mod emit;
mod nn;
mod ops;
#[allow(missing_docs, clippy::all, clippy::pedantic, unreachable_pub)]
pub mod proto;
mod rnn;

use crate::ir::{NodeKind, ValueType};
use crate::ScriptModule;
use emit::{err, onnx_type, Emitter, V};
use ferrotorch_core::dispatch::IValue;
use ferrotorch_core::Result;
use prost::Message;
use proto::{tensor_shape_proto, type_proto, ModelProto, OperatorSetIdProto, ValueInfoProto};
use std::collections::HashMap;

/// The opset the exporter writes unless told otherwise.
pub const DEFAULT_OPSET: i64 = 18;
/// ONNX's IR version the files carry.
pub const IR_VERSION: i64 = 10;

/// How to export (`torch.onnx.export`'s arguments).
#[derive(Clone, Debug, Default)]
pub struct ExportOptions {
    /// Names of the graph's inputs, in order (default `input_0`, ...).
    pub input_names: Vec<String>,
    /// Names of its outputs (default `output_0`, ...).
    pub output_names: Vec<String>,
    /// Symbolic dimensions: for an input or output name, (axis, dim name).
    pub dynamic_axes: Vec<(String, Vec<(usize, String)>)>,
    /// The ONNX opset (18 when `None`; 18 through 21 are written).
    pub opset_version: Option<i64>,
}

/// A traced module as an ONNX model's bytes (Note [ONNX export]).
pub fn export(m: &ScriptModule, opts: &ExportOptions) -> Result<Vec<u8>> {
    let opset = opts.opset_version.unwrap_or(DEFAULT_OPSET);
    if !(18..=21).contains(&opset) {
        return Err(err(format!(
            "onnx.export: opset_version {opset} is not supported (18 through 21 are)"
        )));
    }
    let g = m.inlined_graph()?;
    let attrs: HashMap<String, ferrotorch_core::Tensor> = m
        .attributes()
        .iter()
        .map(|(n, a)| (n.clone(), a.tensor()))
        .collect();
    let mut e = Emitter::new(&g, attrs);
    let dynamic: HashMap<&str, &Vec<(usize, String)>> = opts
        .dynamic_axes
        .iter()
        .map(|(n, v)| (n.as_str(), v))
        .collect();
    let any_dynamic = !opts.dynamic_axes.is_empty();
    let mut inputs = Vec::new();
    let tensor_inputs: Vec<usize> = g
        .inputs
        .iter()
        .copied()
        .filter(|&i| !matches!(g.values[i].ty, ValueType::Module(_)))
        .collect();
    for (k, &id) in tensor_inputs.iter().enumerate() {
        let name = opts
            .input_names
            .get(k)
            .cloned()
            .unwrap_or_else(|| format!("input_{k}"));
        e.claim(&name)?;
        inputs.push(value_info(
            &name,
            &g.values[id].ty,
            dynamic.get(name.as_str()).copied(),
            false,
        )?);
        e.vals.insert(id, V::T(name));
    }
    if opts.input_names.len() > tensor_inputs.len() {
        return Err(err(format!(
            "onnx.export: {} input names for {} inputs",
            opts.input_names.len(),
            tensor_inputs.len()
        )));
    }
    for n in &g.nodes {
        match &n.kind {
            NodeKind::Constant(IValue::Tensor(t)) => {
                let c = e.constant(t)?;
                e.vals.insert(n.outputs[0], V::T(c));
            }
            NodeKind::Constant(v) => {
                e.vals.insert(n.outputs[0], V::C(v.clone()));
            }
            NodeKind::GetAttr(name) => {
                if matches!(g.values[n.outputs[0]].ty, ValueType::Tensor { .. }) {
                    let init = e.attribute(name)?;
                    e.vals.insert(n.outputs[0], V::T(init));
                }
            }
            NodeKind::ListConstruct => {
                let items = n
                    .inputs
                    .iter()
                    .map(|&i| e.value(i).cloned())
                    .collect::<Result<Vec<_>>>()?;
                e.vals.insert(n.outputs[0], V::L(items));
            }
            NodeKind::ListUnpack => match e.value(n.inputs[0])?.clone() {
                V::L(items) if items.len() == n.outputs.len() => {
                    for (o, v) in n.outputs.iter().zip(items) {
                        e.vals.insert(*o, v);
                    }
                }
                other => {
                    return Err(err(format!(
                        "onnx.export: cannot unpack {other:?} into {} values",
                        n.outputs.len()
                    )))
                }
            },
            _ => ops::lower(&mut e, n)?,
        }
    }
    let mut outputs = Vec::new();
    for (k, &id) in g.outputs.iter().enumerate() {
        let name = opts
            .output_names
            .get(k)
            .cloned()
            .unwrap_or_else(|| format!("output_{k}"));
        let src = e.tensor(id, "the graph's output")?;
        e.claim(&name)?;
        e.nodes.push(proto::NodeProto {
            input: vec![src],
            output: vec![name.clone()],
            name: Some(format!("output_{k}")),
            op_type: Some("Identity".into()),
            ..Default::default()
        });
        let dims = dynamic.get(name.as_str()).copied();
        outputs.push(value_info(&name, &g.values[id].ty, dims, any_dynamic)?);
    }
    // weights only a regrouped copy reads (recurrent layers) are dropped
    let used: std::collections::HashSet<&String> = e.nodes.iter().flat_map(|n| &n.input).collect();
    let inits: Vec<(String, ferrotorch_core::Tensor)> = e
        .inits
        .iter()
        .filter(|(n, _)| used.contains(n))
        .cloned()
        .collect();
    let graph = proto::GraphProto {
        node: std::mem::take(&mut e.nodes),
        name: Some("main_graph".into()),
        input: inputs,
        output: outputs,
        ..Default::default()
    };
    let model = ModelProto {
        ir_version: Some(IR_VERSION),
        opset_import: vec![OperatorSetIdProto {
            domain: Some(String::new()),
            version: Some(opset),
        }],
        producer_name: Some("ferrotorch".into()),
        producer_version: Some(env!("CARGO_PKG_VERSION").into()),
        graph: Some(graph),
        ..Default::default()
    };
    let weights: usize = inits
        .iter()
        .map(|(_, t)| t.numel() * t.element_size() + 64)
        .sum();
    let mut out = Vec::with_capacity(model.encoded_len() + weights);
    model
        .encode(&mut out)
        .map_err(|e| err(format!("onnx.export: {e}")))?;
    for (name, t) in &inits {
        append_initializer(&mut out, name, t)?;
    }
    Ok(out)
}

/// # Note [Initializers written once]
/// A model's weights are most of its bytes. Protobuf merges a repeated
/// occurrence of an embedded message field (`ModelProto.graph`, field 7)
/// into the first, concatenating its repeated fields, so each initializer
/// is appended after the encoded model as one more `graph` holding just
/// that `TensorProto` (`initializer`, field 5), its `raw_data` (field 9)
/// copied once from the tensor straight into the output — where encoding
/// the tensors inside the model would copy each twice more. ONNX's
/// parsers (protobuf's, as onnx and onnxruntime use) read the same model.
fn append_initializer(out: &mut Vec<u8>, name: &str, t: &ferrotorch_core::Tensor) -> Result<()> {
    use prost::encoding::{encode_key, encode_varint, WireType};
    let head = proto::TensorProto {
        name: Some(name.into()),
        dims: t.shape().iter().map(|&s| s as i64).collect(),
        data_type: Some(onnx_type(t.dtype())?),
        ..Default::default()
    };
    let nbytes = t.numel() * t.element_size();
    let raw_key_len = 1 + prost::encoding::encoded_len_varint(nbytes as u64);
    let tensor_len = head.encoded_len() + raw_key_len + nbytes;
    let graph_len = 1 + prost::encoding::encoded_len_varint(tensor_len as u64) + tensor_len;
    encode_key(7, WireType::LengthDelimited, out);
    encode_varint(graph_len as u64, out);
    encode_key(5, WireType::LengthDelimited, out);
    encode_varint(tensor_len as u64, out);
    head.encode(out)
        .map_err(|e| err(format!("onnx.export: {e}")))?;
    encode_key(9, WireType::LengthDelimited, out);
    encode_varint(nbytes as u64, out);
    let before = out.len();
    t.append_bytes(out)?;
    if out.len() - before != nbytes {
        return Err(err(format!(
            "onnx.export: {name}: wrote {} bytes of {nbytes}",
            out.len() - before
        )));
    }
    Ok(())
}

/// An input's or output's type: dtype and shape, the axes `dynamic` names
/// symbolic; with `unknown_rest` (an output of a graph with symbolic
/// inputs) the other sizes are left open too.
fn value_info(
    name: &str,
    ty: &ValueType,
    dynamic: Option<&Vec<(usize, String)>>,
    unknown_rest: bool,
) -> Result<ValueInfoProto> {
    let (dtype, sizes) = match ty {
        ValueType::Tensor { dtype, sizes, .. } => (*dtype, sizes.clone()),
        other => {
            return Err(err(format!(
                "onnx.export: {name} is a {other:?}; inputs and outputs must be tensors"
            )))
        }
    };
    let mut dims = Vec::new();
    for (axis, &s) in sizes.iter().enumerate() {
        let named = dynamic.and_then(|d| d.iter().find(|(a, _)| *a == axis));
        let value = match named {
            Some((_, p)) => Some(tensor_shape_proto::dimension::Value::DimParam(p.clone())),
            None if unknown_rest => None,
            None => Some(tensor_shape_proto::dimension::Value::DimValue(s as i64)),
        };
        dims.push(tensor_shape_proto::Dimension {
            value,
            ..Default::default()
        });
    }
    if let Some(d) = dynamic {
        if let Some((a, _)) = d.iter().find(|(a, _)| *a >= sizes.len()) {
            return Err(err(format!(
                "onnx.export: dynamic axis {a} of {name}, which has {} dims",
                sizes.len()
            )));
        }
    }
    Ok(ValueInfoProto {
        name: Some(name.into()),
        r#type: Some(proto::TypeProto {
            value: Some(type_proto::Value::TensorType(type_proto::Tensor {
                elem_type: Some(onnx_type(dtype)?),
                shape: Some(proto::TensorShapeProto { dim: dims }),
            })),
            ..Default::default()
        }),
        ..Default::default()
    })
}

/// [`export`] written to `path`.
pub fn export_to(
    m: &ScriptModule,
    path: impl AsRef<std::path::Path>,
    opts: &ExportOptions,
) -> Result<()> {
    let bytes = export(m, opts)?;
    std::fs::write(path.as_ref(), bytes).map_err(|e| {
        err(format!(
            "onnx.export: cannot write {}: {e}",
            path.as_ref().display()
        ))
    })
}

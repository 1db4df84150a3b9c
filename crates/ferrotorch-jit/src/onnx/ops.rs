//! Each ATen op of a traced graph as ONNX opset-18 nodes. An op with no
//! mapping is an error naming it.

use super::emit::{attr_float, attr_int, attr_ints, attr_tensor, err, tensor_proto, Emitter, V};
use super::nn::{adaptive_avg_pool, attention, batch_norm, conv, gelu, linear, opt_or, pool};
use crate::ir::{Node, NodeKind};
use ferrotorch_core::dispatch::IValue;
use ferrotorch_core::{DType, Result, Tensor};

const UNARY: &[(&str, &str)] = &[
    ("relu", "Relu"),
    ("tanh", "Tanh"),
    ("sigmoid", "Sigmoid"),
    ("exp", "Exp"),
    ("log", "Log"),
    ("sqrt", "Sqrt"),
    ("neg", "Neg"),
    ("abs", "Abs"),
    ("erf", "Erf"),
    ("sin", "Sin"),
    ("cos", "Cos"),
    ("reciprocal", "Reciprocal"),
    ("floor", "Floor"),
    ("ceil", "Ceil"),
    ("logical_not", "Not"),
    ("softplus", "Softplus"),
];

const BINARY: &[(&str, &str)] = &[
    ("add", "Add"),
    ("sub", "Sub"),
    ("mul", "Mul"),
    ("div", "Div"),
    ("pow", "Pow"),
    ("eq", "Equal"),
    ("lt", "Less"),
    ("gt", "Greater"),
    ("le", "LessOrEqual"),
    ("ge", "GreaterOrEqual"),
    ("maximum", "Max"),
    ("minimum", "Min"),
    ("logical_and", "And"),
    ("logical_or", "Or"),
];

/// Ops that only change how a value is seen: the input, renamed.
const IDENTITY: &[&str] = &[
    "contiguous",
    "detach",
    "clone",
    "alias",
    "dropout",
    "feature_dropout",
];

pub(crate) fn set(e: &mut Emitter, n: &Node, name: String) {
    e.vals.insert(n.outputs[0], V::T(name));
}

/// Lower one node.
pub(crate) fn lower(e: &mut Emitter, n: &Node) -> Result<()> {
    let entry = match &n.kind {
        NodeKind::Op(entry) => entry.clone(),
        _ => {
            return Err(err(format!(
                "onnx.export: {} cannot be exported",
                n.kind_name()
            )))
        }
    };
    let full = n.kind_name();
    let mut op = full.strip_prefix("aten::").unwrap_or(&full).to_string();
    // an in-place op's result is a new value of the graph (SSA): the
    // out-of-place op computes it
    if op.ends_with('_') && !op.starts_with('_') {
        op.pop();
    }
    let ins = &n.inputs;
    let what = full.as_str();
    if let Some((_, ty)) = UNARY.iter().find(|(a, _)| *a == op) {
        let x = e.tensor(ins[0], what)?;
        let y = e.op1(ty, vec![x], vec![]);
        set(e, n, y);
        return Ok(());
    }
    if let Some((_, ty)) = BINARY.iter().find(|(a, _)| *a == op) {
        return binary(e, n, ty, what);
    }
    if IDENTITY.contains(&op.as_str()) {
        let v = e.value(ins[0])?.clone();
        e.vals.insert(n.outputs[0], v);
        return Ok(());
    }
    match op.as_str() {
        // sizes: int64 scalars of the graph, so they follow the input
        "size" => {
            let x = e.tensor(ins[0], what)?;
            let shape = e.op1("Shape", vec![x], vec![]);
            let d = e.int(ins[1], what)?;
            let rank = e.rank(ins[0], what)? as i64;
            let idx = e.constant(
                &Tensor::scalar_tensor(if d < 0 { d + rank } else { d }).to_dtype(DType::I64)?,
            )?;
            let s = e.op1("Gather", vec![shape, idx], vec![attr_int("axis", 0)]);
            set(e, n, s);
        }
        "prim::NumToTensor" | "Int" | "ScalarImplicit" => {
            let v = e.value(ins[0])?.clone();
            e.vals.insert(n.outputs[0], v);
        }
        "floor_divide" => {
            let dt = e.dtype(ins[0]).unwrap_or(DType::I64);
            let (a, b) = (
                e.tensor(ins[0], what)?,
                e.tensor_or_scalar(ins[1], dt, what)?,
            );
            let q = e.op1("Div", vec![a, b], vec![]);
            let y = if dt.is_floating_point() {
                e.op1("Floor", vec![q], vec![])
            } else {
                q
            };
            set(e, n, y);
        }
        "rsqrt" => {
            let x = e.tensor(ins[0], what)?;
            let s = e.op1("Sqrt", vec![x], vec![]);
            let y = e.op1("Reciprocal", vec![s], vec![]);
            set(e, n, y);
        }
        "silu" => {
            let x = e.tensor(ins[0], what)?;
            let s = e.op1("Sigmoid", vec![x.clone()], vec![]);
            let y = e.op1("Mul", vec![x, s], vec![]);
            set(e, n, y);
        }
        "gelu" => gelu(e, n, what)?,
        "leaky_relu" => {
            let x = e.tensor(ins[0], what)?;
            let a = if ins.len() > 1 {
                e.float(ins[1], what)?
            } else {
                0.01
            };
            let y = e.op1("LeakyRelu", vec![x], vec![attr_float("alpha", a)]);
            set(e, n, y);
        }
        "linear" => linear(e, n, what)?,
        "clamp" | "hardtanh" | "relu6" => {
            let dt = e.dtype(ins[0]).unwrap_or(DType::F32);
            let x = e.tensor(ins[0], what)?;
            let (lo, hi) = match op.as_str() {
                "relu6" => (Some(0.0), Some(6.0)),
                "hardtanh" => (
                    Some(if ins.len() > 1 {
                        e.float(ins[1], what)?
                    } else {
                        -1.0
                    }),
                    Some(if ins.len() > 2 {
                        e.float(ins[2], what)?
                    } else {
                        1.0
                    }),
                ),
                _ => (
                    ins.get(1)
                        .filter(|&&i| !e.is_none(i))
                        .map(|&i| e.float(i, what))
                        .transpose()?,
                    ins.get(2)
                        .filter(|&&i| !e.is_none(i))
                        .map(|&i| e.float(i, what))
                        .transpose()?,
                ),
            };
            let lo = lo.map(|v| e.scalar(v, dt)).transpose()?.unwrap_or_default();
            let hi = hi.map(|v| e.scalar(v, dt)).transpose()?.unwrap_or_default();
            let y = e.op1("Clip", vec![x, lo, hi], vec![]);
            set(e, n, y);
        }
        "matmul" | "mm" | "bmm" => {
            let (a, b) = (e.tensor(ins[0], what)?, e.tensor(ins[1], what)?);
            let y = e.op1("MatMul", vec![a, b], vec![]);
            set(e, n, y);
        }
        "addmm" => {
            let (c, a, b) = (
                e.tensor(ins[0], what)?,
                e.tensor(ins[1], what)?,
                e.tensor(ins[2], what)?,
            );
            let y = e.op1("Gemm", vec![a, b, c], vec![]);
            set(e, n, y);
        }
        "conv1d" | "conv2d" | "conv3d" | "convolution" | "_convolution" => conv(e, n, &op, what)?,
        "batch_norm" => batch_norm(e, n, what)?,
        "layer_norm" => {
            let x = e.tensor(ins[0], what)?;
            let shape = e.int_list(ins[1], what)?;
            let dt = e.dtype(ins[0]).unwrap_or(DType::F32);
            let dims: Vec<usize> = shape.iter().map(|&s| s as usize).collect();
            let w = opt_or(e, ins.get(2).copied(), &dims, 1.0, dt, what)?;
            let b = opt_or(e, ins.get(3).copied(), &dims, 0.0, dt, what)?;
            let eps = if ins.len() > 4 {
                e.float(ins[4], what)?
            } else {
                1e-5
            };
            let attrs = vec![
                attr_int("axis", -(shape.len() as i64)),
                attr_float("epsilon", eps),
            ];
            let y = e.op1("LayerNormalization", vec![x, w, b], attrs);
            set(e, n, y);
        }
        "softmax" | "log_softmax" => {
            let x = e.tensor(ins[0], what)?;
            let dim = e.int(ins[1], what)?;
            let ty = if op == "softmax" {
                "Softmax"
            } else {
                "LogSoftmax"
            };
            let y = e.op1(ty, vec![x], vec![attr_int("axis", dim)]);
            set(e, n, y);
        }
        "max_pool2d" | "max_pool1d" => pool(e, n, "MaxPool", what)?,
        "avg_pool2d" | "avg_pool1d" => pool(e, n, "AveragePool", what)?,
        "adaptive_avg_pool2d" => adaptive_avg_pool(e, n, what)?,
        "flatten" => flatten(e, n, what)?,
        "view" | "reshape" | "_unsafe_view" => {
            let x = e.tensor(ins[0], what)?;
            let s = e.shape_tensor(ins[1], what)?;
            let y = e.op1("Reshape", vec![x, s], vec![]);
            set(e, n, y);
        }
        "t" | "transpose" | "permute" => {
            let rank = e.rank(ins[0], what)?;
            let mut perm: Vec<i64> = (0..rank as i64).collect();
            if op == "permute" {
                perm = e
                    .int_list(ins[1], what)?
                    .iter()
                    .map(|&d| norm(d, rank))
                    .collect();
            } else if rank >= 2 {
                let (a, b) = if op == "t" {
                    (0, 1)
                } else {
                    (
                        norm(e.int(ins[1], what)?, rank),
                        norm(e.int(ins[2], what)?, rank),
                    )
                };
                perm.swap(a as usize, b as usize);
            }
            let x = e.tensor(ins[0], what)?;
            let y = e.op1("Transpose", vec![x], vec![attr_ints("perm", &perm)]);
            set(e, n, y);
        }
        "unsqueeze" | "squeeze" => {
            let x = e.tensor(ins[0], what)?;
            let mut inputs = vec![x];
            if ins.len() > 1 {
                let rank = e.rank(ins[0], what)? + usize::from(op == "unsqueeze");
                let d = e
                    .int_list(ins[1], what)?
                    .iter()
                    .map(|&d| norm(d, rank))
                    .collect::<Vec<_>>();
                inputs.push(e.ints_const(&d)?);
            }
            let ty = if op == "unsqueeze" {
                "Unsqueeze"
            } else {
                "Squeeze"
            };
            let y = e.op1(ty, inputs, vec![]);
            set(e, n, y);
        }
        "expand" => {
            let x = e.tensor(ins[0], what)?;
            let sizes = e.int_list(ins[1], what).ok();
            let s = match sizes {
                // -1 keeps a size: 1 broadcasts to it
                Some(v) => e.ints_const(
                    &v.iter()
                        .map(|&s| if s < 0 { 1 } else { s })
                        .collect::<Vec<_>>(),
                )?,
                None => e.shape_tensor(ins[1], what)?,
            };
            let y = e.op1("Expand", vec![x, s], vec![]);
            set(e, n, y);
        }
        "slice" => slice(e, n, what)?,
        "select" => {
            let x = e.tensor(ins[0], what)?;
            let rank = e.rank(ins[0], what)?;
            let dim = norm(e.int(ins[1], what)?, rank);
            let idx = index_scalar(e, ins[2], what)?;
            let y = e.op1("Gather", vec![x, idx], vec![attr_int("axis", dim)]);
            set(e, n, y);
        }
        "split" | "chunk" => split(e, n, &op, what)?,
        "cat" | "concat" => {
            let items = list_tensors(e, ins[0], what)?;
            let rank = e.g.values[n.outputs[0]].ty.clone();
            let r = match rank {
                crate::ir::ValueType::Tensor { sizes, .. } => sizes.len(),
                _ => 1,
            };
            let dim = if ins.len() > 1 {
                norm(e.int(ins[1], what)?, r)
            } else {
                0
            };
            let y = e.op1("Concat", items, vec![attr_int("axis", dim)]);
            set(e, n, y);
        }
        "embedding" => {
            let (w, idx) = (e.tensor(ins[0], what)?, e.tensor(ins[1], what)?);
            let y = e.op1("Gather", vec![w, idx], vec![attr_int("axis", 0)]);
            set(e, n, y);
        }
        "masked_fill" => {
            let dt = e.dtype(ins[0]).unwrap_or(DType::F32);
            let x = e.tensor(ins[0], what)?;
            let m = e.tensor(ins[1], what)?;
            let v = e.tensor_or_scalar(ins[2], dt, what)?;
            let y = e.op1("Where", vec![m, v, x], vec![]);
            set(e, n, y);
        }
        "where" => {
            let dt = e.dtype(n.outputs[0]).unwrap_or(DType::F32);
            let c = e.tensor(ins[0], what)?;
            let a = e.tensor_or_scalar(ins[1], dt, what)?;
            let b = e.tensor_or_scalar(ins[2], dt, what)?;
            let y = e.op1("Where", vec![c, a, b], vec![]);
            set(e, n, y);
        }
        "ne" => {
            binary(e, n, "Equal", what)?;
            let eq = e.tensor(n.outputs[0], what)?;
            let y = e.op1("Not", vec![eq], vec![]);
            set(e, n, y);
        }
        "zeros" | "ones" | "full" => {
            let shape = e.shape_tensor(ins[0], what)?;
            let dt = e.dtype(n.outputs[0]).unwrap_or(DType::F32);
            let v = match op.as_str() {
                "zeros" => 0.0,
                "ones" => 1.0,
                _ => e.float(ins[1], what)?,
            };
            let value = tensor_proto("value", &Tensor::from_vec(vec![v], &[1])?.to_dtype(dt)?)?;
            let y = e.op1(
                "ConstantOfShape",
                vec![shape],
                vec![attr_tensor("value", value)],
            );
            set(e, n, y);
        }
        "mean" | "sum" if ins.len() >= 2 => {
            let x = e.tensor(ins[0], what)?;
            let rank = e.rank(ins[0], what)?;
            let dims: Vec<i64> = e
                .int_list(ins[1], what)?
                .iter()
                .map(|&d| norm(d, rank))
                .collect();
            let keep = if ins.len() > 2 {
                e.flag(ins[2], what)?
            } else {
                false
            };
            let axes = e.ints_const(&dims)?;
            let ty = if op == "mean" {
                "ReduceMean"
            } else {
                "ReduceSum"
            };
            let y = e.op1(ty, vec![x, axes], vec![attr_int("keepdims", keep as i64)]);
            set(e, n, y);
        }
        "to" | "type_as" => {
            let dt = e.dtype(n.outputs[0]).unwrap_or(DType::F32);
            let x = e.tensor(ins[0], what)?;
            let y = e.op1(
                "Cast",
                vec![x],
                vec![attr_int("to", super::emit::onnx_type(dt)? as i64)],
            );
            set(e, n, y);
        }
        "lstm" | "gru" => super::rnn::lower(e, n, &op, entry.schema.overload.as_str())?,
        "scaled_dot_product_attention" => attention(e, n, what)?,
        _ => {
            return Err(err(format!(
                "onnx.export: {full} has no ONNX mapping (opset 18); it cannot be exported"
            )))
        }
    }
    Ok(())
}

fn norm(d: i64, rank: usize) -> i64 {
    if d < 0 {
        d + rank as i64
    } else {
        d
    }
}

fn binary(e: &mut Emitter, n: &Node, ty: &str, what: &str) -> Result<()> {
    let ins = &n.inputs;
    // a number's dtype is the tensor operand's (ONNX does not promote)
    let dt = e
        .dtype(ins[0])
        .filter(|_| matches!(e.value(ins[0]), Ok(V::T(_))))
        .or_else(|| e.dtype(ins[1]))
        .unwrap_or(DType::F32);
    let a = e.tensor_or_scalar(ins[0], dt, what)?;
    let mut b = e.tensor_or_scalar(ins[1], dt, what)?;
    if ins.len() > 2 && (ty == "Add" || ty == "Sub") {
        let alpha = e.float(ins[2], what)?;
        if alpha != 1.0 {
            let s = e.scalar(alpha, dt)?;
            b = e.op1("Mul", vec![b, s], vec![]);
        }
    }
    let y = e.op1(ty, vec![a, b], vec![]);
    set(e, n, y);
    Ok(())
}

fn flatten(e: &mut Emitter, n: &Node, what: &str) -> Result<()> {
    let ins = &n.inputs;
    let s = e
        .sizes(ins[0])
        .ok_or_else(|| err(format!("{what}: input shape unknown")))?;
    let rank = s.len().max(1);
    let start = if ins.len() > 1 {
        norm(e.int(ins[1], what)?, rank)
    } else {
        0
    } as usize;
    let end = if ins.len() > 2 {
        norm(e.int(ins[2], what)?, rank)
    } else {
        rank as i64 - 1
    } as usize;
    let x = e.tensor(ins[0], what)?;
    let y = if start == 1 && end == rank - 1 {
        e.op1("Flatten", vec![x], vec![attr_int("axis", 1)])
    } else {
        // dims before `start` kept as they come (0), the rest as traced
        let mut shape: Vec<i64> = vec![0; start];
        shape.push(-1);
        shape.extend(s[end + 1..].iter().map(|&d| d as i64));
        let c = e.ints_const(&shape)?;
        e.op1("Reshape", vec![x, c], vec![])
    };
    set(e, n, y);
    Ok(())
}

/// A 1-element int64 tensor of an int input (constant or traced).
fn one_int(e: &mut Emitter, id: usize, default: i64, what: &str) -> Result<String> {
    if e.is_none(id) {
        return e.ints_const(&[default]);
    }
    match e.value(id)?.clone() {
        V::C(IValue::Int(i)) => e.ints_const(&[i]),
        V::T(t) => {
            let axes = e.ints_const(&[0])?;
            Ok(e.op1("Unsqueeze", vec![t, axes], vec![]))
        }
        other => Err(err(format!(
            "onnx.export: {what}: expected an int, got {other:?}"
        ))),
    }
}

fn index_scalar(e: &mut Emitter, id: usize, what: &str) -> Result<String> {
    match e.value(id)?.clone() {
        V::C(IValue::Int(i)) => e.constant(&Tensor::scalar_tensor(i).to_dtype(DType::I64)?),
        V::T(t) => Ok(t),
        other => Err(err(format!(
            "onnx.export: {what}: expected an index, got {other:?}"
        ))),
    }
}

fn slice(e: &mut Emitter, n: &Node, what: &str) -> Result<()> {
    let ins = &n.inputs;
    let rank = e.rank(ins[0], what)?;
    let dim = if ins.len() > 1 {
        norm(e.int(ins[1], what)?, rank)
    } else {
        0
    };
    let x = e.tensor(ins[0], what)?;
    let start = if ins.len() > 2 {
        one_int(e, ins[2], 0, what)?
    } else {
        e.ints_const(&[0])?
    };
    let end = if ins.len() > 3 {
        one_int(e, ins[3], i64::MAX, what)?
    } else {
        e.ints_const(&[i64::MAX])?
    };
    let axes = e.ints_const(&[dim])?;
    let step = if ins.len() > 4 {
        e.int(ins[4], what)?
    } else {
        1
    };
    let steps = e.ints_const(&[step])?;
    let y = e.op1("Slice", vec![x, start, end, axes, steps], vec![]);
    set(e, n, y);
    Ok(())
}

fn list_tensors(e: &mut Emitter, id: usize, what: &str) -> Result<Vec<String>> {
    match e.value(id)?.clone() {
        V::L(items) => items
            .into_iter()
            .map(|v| match v {
                V::T(t) => Ok(t),
                other => Err(err(format!(
                    "onnx.export: {what}: a list item {other:?} is not a tensor"
                ))),
            })
            .collect(),
        other => Err(err(format!(
            "onnx.export: {what}: expected a list of tensors, got {other:?}"
        ))),
    }
}

fn split(e: &mut Emitter, n: &Node, op: &str, what: &str) -> Result<()> {
    let ins = &n.inputs;
    let s = e
        .sizes(ins[0])
        .ok_or_else(|| err(format!("{what}: input shape unknown")))?;
    let rank = s.len();
    let dim = if ins.len() > 2 {
        norm(e.int(ins[2], what)?, rank)
    } else {
        0
    } as usize;
    let total = s[dim] as i64;
    let sizes: Vec<i64> = match (op, e.konst(ins[1])) {
        ("split", Some(IValue::Int(size))) if size > 0 => {
            let mut v = vec![size; (total / size) as usize];
            if total % size != 0 {
                v.push(total % size);
            }
            v
        }
        ("split", Some(IValue::IntList(v))) => v,
        ("chunk", Some(IValue::Int(chunks))) if chunks > 0 => {
            let size = (total + chunks - 1) / chunks;
            let mut v = vec![size; (total / size) as usize];
            if total % size != 0 {
                v.push(total % size);
            }
            v
        }
        // a traced size: the pieces as the trace cut them
        _ => match unpacked_sizes(e, n.outputs[0], dim) {
            Some(v) => v,
            None => {
                return Err(err(format!(
                    "onnx.export: {what}: split sizes must be constants"
                )))
            }
        },
    };
    let x = e.tensor(ins[0], what)?;
    let sz = e.ints_const(&sizes)?;
    let outs = e.op(
        "Split",
        vec![x, sz],
        sizes.len(),
        vec![attr_int("axis", dim as i64)],
    );
    e.vals
        .insert(n.outputs[0], V::L(outs.into_iter().map(V::T).collect()));
    Ok(())
}

/// The sizes along `dim` of the tensors a list was unpacked into.
fn unpacked_sizes(e: &Emitter, list: usize, dim: usize) -> Option<Vec<i64>> {
    let un =
        e.g.nodes
            .iter()
            .find(|m| matches!(m.kind, NodeKind::ListUnpack) && m.inputs.first() == Some(&list))?;
    un.outputs
        .iter()
        .map(|&o| e.sizes(o).and_then(|s| s.get(dim).map(|&d| d as i64)))
        .collect()
}

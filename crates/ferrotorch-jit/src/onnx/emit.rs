//! Building an ONNX graph: what each IR value became (a tensor of the
//! ONNX graph, a constant known at export, or a list of either), fresh
//! names, nodes and initializers.

use super::proto::{self, attribute_proto::AttributeType, AttributeProto, NodeProto, TensorProto};
use crate::ir::{Graph, ValueId, ValueType};
use ferrotorch_core::dispatch::IValue;
use ferrotorch_core::{DType, Error, ErrorKind, Result, Tensor};
use std::collections::{HashMap, HashSet};

/// What an IR value is in the ONNX graph.
#[derive(Clone, Debug)]
pub(crate) enum V {
    /// A tensor of the graph, by name.
    T(String),
    /// A value known at export (ints, floats, lists of them, None, ...).
    C(IValue),
    /// A list whose items are either (`prim::ListConstruct`).
    L(Vec<V>),
}

/// ONNX's `TensorProto.DataType` of a dtype.
pub(crate) fn onnx_type(d: DType) -> Result<i32> {
    use proto::tensor_proto::DataType as D;
    Ok(match d {
        DType::F32 => D::Float,
        DType::F64 => D::Double,
        DType::F16 => D::Float16,
        DType::BF16 => D::Bfloat16,
        DType::U8 => D::Uint8,
        DType::I8 => D::Int8,
        DType::I16 => D::Int16,
        DType::I32 => D::Int32,
        DType::I64 => D::Int64,
        DType::Bool => D::Bool,
        d => {
            return Err(Error::new(
                ErrorKind::Type,
                format!("onnx.export: dtype {d} has no ONNX tensor type"),
            ))
        }
    } as i32)
}

pub(crate) fn err(msg: String) -> Error {
    Error::new(ErrorKind::Runtime, msg)
}

pub(crate) fn attr_int(name: &str, v: i64) -> AttributeProto {
    AttributeProto {
        name: Some(name.into()),
        r#type: Some(AttributeType::Int as i32),
        i: Some(v),
        ..Default::default()
    }
}

pub(crate) fn attr_ints(name: &str, v: &[i64]) -> AttributeProto {
    AttributeProto {
        name: Some(name.into()),
        r#type: Some(AttributeType::Ints as i32),
        ints: v.to_vec(),
        ..Default::default()
    }
}

pub(crate) fn attr_float(name: &str, v: f64) -> AttributeProto {
    AttributeProto {
        name: Some(name.into()),
        r#type: Some(AttributeType::Float as i32),
        f: Some(v as f32),
        ..Default::default()
    }
}

pub(crate) fn attr_string(name: &str, v: &str) -> AttributeProto {
    AttributeProto {
        name: Some(name.into()),
        r#type: Some(AttributeType::String as i32),
        s: Some(v.as_bytes().to_vec()),
        ..Default::default()
    }
}

pub(crate) fn attr_strings(name: &str, v: &[&str]) -> AttributeProto {
    AttributeProto {
        name: Some(name.into()),
        r#type: Some(AttributeType::Strings as i32),
        strings: v.iter().map(|s| s.as_bytes().to_vec()).collect(),
        ..Default::default()
    }
}

pub(crate) fn attr_tensor(name: &str, t: TensorProto) -> AttributeProto {
    AttributeProto {
        name: Some(name.into()),
        r#type: Some(AttributeType::Tensor as i32),
        t: Some(t),
        ..Default::default()
    }
}

/// A tensor as an initializer (raw little-endian data).
pub(crate) fn tensor_proto(name: &str, t: &Tensor) -> Result<TensorProto> {
    Ok(TensorProto {
        name: Some(name.into()),
        dims: t.shape().iter().map(|&s| s as i64).collect(),
        data_type: Some(onnx_type(t.dtype())?),
        raw_data: Some(t.detach().to_bytes()?),
        ..Default::default()
    })
}

/// The graph being built.
pub(crate) struct Emitter<'g> {
    pub g: &'g Graph,
    pub nodes: Vec<NodeProto>,
    /// initializers: name and tensor (their bytes are written once, at
    /// the end: Note [Initializers written once])
    pub inits: Vec<(String, Tensor)>,
    pub vals: HashMap<ValueId, V>,
    /// the module's attributes by name (initializers, made on first use)
    pub attrs: HashMap<String, Tensor>,
    made_attrs: HashSet<String>,
    names: HashSet<String>,
    counter: usize,
}

impl<'g> Emitter<'g> {
    pub fn new(g: &'g Graph, attrs: HashMap<String, Tensor>) -> Self {
        Emitter {
            g,
            nodes: Vec::new(),
            inits: Vec::new(),
            vals: HashMap::new(),
            attrs,
            made_attrs: HashSet::new(),
            names: HashSet::new(),
            counter: 0,
        }
    }

    /// A name not used before, from `base`.
    pub fn fresh(&mut self, base: &str) -> String {
        loop {
            self.counter += 1;
            let n = format!("{base}_{}", self.counter);
            if self.names.insert(n.clone()) {
                return n;
            }
        }
    }

    /// Claim `name` (an input's or output's).
    pub fn claim(&mut self, name: &str) -> Result<()> {
        if !self.names.insert(name.to_string()) {
            return Err(err(format!("onnx.export: the name {name:?} is used twice")));
        }
        Ok(())
    }

    /// A node of `ty` with `n_out` fresh outputs.
    pub fn op(
        &mut self,
        ty: &str,
        inputs: Vec<String>,
        n_out: usize,
        attrs: Vec<AttributeProto>,
    ) -> Vec<String> {
        let base = format!("/{ty}");
        let outs: Vec<String> = (0..n_out).map(|_| self.fresh(&base)).collect();
        let name = self.fresh(&format!("node_{ty}"));
        self.nodes.push(NodeProto {
            input: inputs,
            output: outs.clone(),
            name: Some(name),
            op_type: Some(ty.into()),
            attribute: attrs,
            ..Default::default()
        });
        outs
    }

    /// One-output [`Emitter::op`].
    pub fn op1(&mut self, ty: &str, inputs: Vec<String>, attrs: Vec<AttributeProto>) -> String {
        self.op(ty, inputs, 1, attrs).remove(0)
    }

    /// An initializer holding `t`.
    pub fn constant(&mut self, t: &Tensor) -> Result<String> {
        let name = self.fresh("const");
        onnx_type(t.dtype())?;
        self.inits.push((name.clone(), t.detach()));
        Ok(name)
    }

    /// A 1-D int64 constant.
    pub fn ints_const(&mut self, v: &[i64]) -> Result<String> {
        self.constant(&Tensor::from_vec(v.to_vec(), &[v.len()])?)
    }

    /// A 0-dim constant of dtype `d`.
    pub fn scalar(&mut self, v: f64, d: DType) -> Result<String> {
        let t = Tensor::scalar_tensor(v).to_dtype(d)?;
        self.constant(&t)
    }

    /// The initializer of the module attribute `name`.
    pub fn attribute(&mut self, name: &str) -> Result<String> {
        if self.made_attrs.insert(name.to_string()) {
            let t = self
                .attrs
                .get(name)
                .ok_or_else(|| err(format!("onnx.export: the module has no attribute {name:?}")))?
                .clone();
            self.names.insert(name.to_string());
            onnx_type(t.dtype())?;
            self.inits.push((name.to_string(), t.detach()));
        }
        Ok(name.to_string())
    }

    pub fn value(&self, id: ValueId) -> Result<&V> {
        self.vals.get(&id).ok_or_else(|| {
            err(format!(
                "onnx.export: value %{id} is used before it is defined"
            ))
        })
    }

    /// The tensor name of an op's input.
    pub fn tensor(&mut self, id: ValueId, what: &str) -> Result<String> {
        match self.value(id)?.clone() {
            V::T(n) => Ok(n),
            V::C(IValue::Tensor(t)) => self.constant(&t),
            other => Err(err(format!(
                "onnx.export: {what} expects a tensor, got {other:?}"
            ))),
        }
    }

    /// The tensor name of an input that may be a number (`add(x, 2)`):
    /// a number becomes a 0-dim constant of `like`'s dtype.
    pub fn tensor_or_scalar(&mut self, id: ValueId, like: DType, what: &str) -> Result<String> {
        match self.value(id)?.clone() {
            V::C(IValue::Int(i)) => self.scalar(i as f64, like),
            V::C(IValue::Float(f)) => self.scalar(f, like),
            V::C(IValue::Bool(b)) => self.scalar(b as i64 as f64, like),
            _ => self.tensor(id, what),
        }
    }

    /// A constant input's value.
    pub fn konst(&self, id: ValueId) -> Option<IValue> {
        match self.vals.get(&id)? {
            V::C(v) => Some(v.clone()),
            V::L(items) => {
                let mut out = Vec::new();
                for it in items {
                    match it {
                        V::C(IValue::Int(i)) => out.push(*i),
                        _ => return None,
                    }
                }
                Some(IValue::IntList(out))
            }
            V::T(_) => None,
        }
    }

    pub fn int(&self, id: ValueId, what: &str) -> Result<i64> {
        match self.konst(id) {
            Some(IValue::Int(i)) => Ok(i),
            Some(IValue::Bool(b)) => Ok(b as i64),
            other => Err(err(format!(
                "onnx.export: {what} must be a constant int, got {other:?}"
            ))),
        }
    }

    pub fn float(&self, id: ValueId, what: &str) -> Result<f64> {
        match self.konst(id) {
            Some(IValue::Float(f)) => Ok(f),
            Some(IValue::Int(i)) => Ok(i as f64),
            other => Err(err(format!(
                "onnx.export: {what} must be a constant number, got {other:?}"
            ))),
        }
    }

    pub fn flag(&self, id: ValueId, what: &str) -> Result<bool> {
        match self.konst(id) {
            Some(IValue::Bool(b)) => Ok(b),
            Some(IValue::Int(i)) => Ok(i != 0),
            other => Err(err(format!(
                "onnx.export: {what} must be a constant bool, got {other:?}"
            ))),
        }
    }

    pub fn int_list(&self, id: ValueId, what: &str) -> Result<Vec<i64>> {
        match self.konst(id) {
            Some(IValue::IntList(v)) => Ok(v),
            Some(IValue::Int(i)) => Ok(vec![i]),
            other => Err(err(format!(
                "onnx.export: {what} must be a constant list of ints, got {other:?}"
            ))),
        }
    }

    pub fn is_none(&self, id: ValueId) -> bool {
        matches!(self.vals.get(&id), Some(V::C(IValue::None)))
    }

    /// A list of ints (sizes) as a 1-D int64 tensor: constants folded,
    /// traced sizes joined with `Concat`.
    pub fn shape_tensor(&mut self, id: ValueId, what: &str) -> Result<String> {
        if let Ok(v) = self.int_list(id, what) {
            return self.ints_const(&v);
        }
        let items = match self.value(id)?.clone() {
            V::L(items) => items,
            V::T(n) => return Ok(n),
            other => {
                return Err(err(format!(
                    "onnx.export: {what} must be a list of sizes, got {other:?}"
                )))
            }
        };
        let mut parts = Vec::new();
        for it in items {
            parts.push(match it {
                V::C(IValue::Int(i)) => self.ints_const(&[i])?,
                V::T(n) => {
                    let axes = self.ints_const(&[0])?;
                    self.op1("Unsqueeze", vec![n, axes], vec![])
                }
                other => {
                    return Err(err(format!(
                        "onnx.export: {what}: a size {other:?} is not an int"
                    )))
                }
            });
        }
        Ok(self.op1("Concat", parts, vec![attr_int("axis", 0)]))
    }

    /// The traced type of a value.
    pub fn ty(&self, id: ValueId) -> &ValueType {
        &self.g.values[id].ty
    }

    pub fn dtype(&self, id: ValueId) -> Option<DType> {
        match self.ty(id) {
            ValueType::Tensor { dtype, .. } => Some(*dtype),
            _ => None,
        }
    }

    pub fn sizes(&self, id: ValueId) -> Option<Vec<usize>> {
        match self.ty(id) {
            ValueType::Tensor { sizes, .. } => Some(sizes.clone()),
            _ => None,
        }
    }

    pub fn rank(&self, id: ValueId, what: &str) -> Result<usize> {
        self.sizes(id)
            .map(|s| s.len())
            .ok_or_else(|| err(format!("onnx.export: {what}: the input's rank is unknown")))
    }
}

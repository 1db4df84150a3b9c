//! The graph IR: SSA values with types, nodes naming ops by their schema,
//! in execution order (TorchScript's `Graph`, flat: tracing records one
//! path, so there are no blocks yet).

use ferrotorch_core::dispatch::{IValue, OpEntry};
use ferrotorch_core::{DType, Tensor};
use std::sync::Arc;

/// A value's index in its graph.
pub type ValueId = usize;

/// What a value holds.
#[derive(Clone, Debug, PartialEq)]
pub enum ValueType {
    /// A tensor as traced: dtype, sizes, strides, requires_grad.
    Tensor {
        /// Element type.
        dtype: DType,
        /// Sizes.
        sizes: Vec<usize>,
        /// Strides, in elements.
        strides: Vec<usize>,
        /// Whether it required grad when traced.
        requires_grad: bool,
    },
    /// `int`
    Int,
    /// `float`
    Float,
    /// `complex`
    Complex,
    /// `bool`
    Bool,
    /// `str`
    Str,
    /// `ScalarType`
    ScalarType,
    /// `NoneType`
    None,
    /// `Generator`
    Generator,
    /// `T[]`
    List(Box<ValueType>),
    /// `Tensor?[]`
    OptTensorList,
    /// The module a graph's attributes are read from (`%self`).
    Module(String),
    /// An object of a custom class, by its qualified name
    /// (`__torch__.torch.classes.ns.Name`).
    Object(String),
    /// An effect token: orders the calls that use objects (Note
    /// [Objects in graphs]).
    Token,
}

impl ValueType {
    /// The type of a value seen while tracing.
    pub fn of(v: &IValue) -> ValueType {
        match v {
            IValue::Tensor(t) => ValueType::of_tensor(t),
            IValue::Int(_) | IValue::SymInt(_) => ValueType::Int,
            IValue::SymScalar(t) if t.is_floating_point() => ValueType::Float,
            IValue::SymScalar(t) if t.dtype() == DType::Bool => ValueType::Bool,
            IValue::SymScalar(_) => ValueType::Int,
            IValue::Float(_) => ValueType::Float,
            IValue::Complex(..) => ValueType::Complex,
            IValue::Bool(_) => ValueType::Bool,
            IValue::Str(_) => ValueType::Str,
            IValue::DType(_) => ValueType::ScalarType,
            IValue::None => ValueType::None,
            IValue::Generator(_) => ValueType::Generator,
            IValue::IntList(_) | IValue::SymIntList(_) => ValueType::List(Box::new(ValueType::Int)),
            IValue::FloatList(_) => ValueType::List(Box::new(ValueType::Float)),
            IValue::BoolList(_) => ValueType::List(Box::new(ValueType::Bool)),
            IValue::TensorList(_) => ValueType::List(Box::new(ValueType::Tensor {
                dtype: DType::F32,
                sizes: Vec::new(),
                strides: Vec::new(),
                requires_grad: false,
            })),
            IValue::OptTensorList(_) => ValueType::OptTensorList,
            IValue::Tuple(_) => ValueType::None,
            IValue::Object(o) => ValueType::Object(o.class().qualified_name().to_string()),
        }
    }

    /// The type of a tensor as it is now.
    pub fn of_tensor(t: &Tensor) -> ValueType {
        ValueType::Tensor {
            dtype: t.dtype(),
            sizes: t.shape().to_vec(),
            strides: t.stride().to_vec(),
            requires_grad: t.requires_grad(),
        }
    }
}

/// What a node does.
#[derive(Clone)]
pub enum NodeKind {
    /// A registered op (`aten::add`), resolved to its entry.
    Op(Arc<OpEntry>),
    /// `prim::Constant`: a value known when the graph was made.
    Constant(IValue),
    /// `prim::GetAttr[name=...]`: a parameter or buffer of the module.
    GetAttr(String),
    /// `prim::ListConstruct`: a list from its inputs.
    ListConstruct,
    /// `prim::ListUnpack`: a list's elements as outputs.
    ListUnpack,
    /// `prim::CallMethod[name=...]`: a submodule's method, its graph kept
    /// as traced (Note [Module hierarchy]). Inputs: the submodule (a
    /// `prim::GetAttr` of module type), its arguments, then the outer
    /// values its body reads.
    CallMethod {
        /// The method (`forward`).
        name: String,
        /// Its body; input 0 is the submodule.
        graph: Arc<Graph>,
    },
    /// `prim::FusionGroup`: a chain of elementwise ops as one node, run
    /// as its subgraph (the code generator compiles it).
    FusionGroup(Arc<Graph>),
    /// `prim::with_effects[op=...]`: an op that uses a custom class's
    /// object (a method call or a custom op taking one), threaded by an
    /// effect token: inputs are the token then the op's arguments,
    /// outputs the next token then the op's results (Note [Objects in
    /// graphs]).
    WithEffects(Arc<OpEntry>),
}

/// One node: `outputs = kind(inputs)`.
#[derive(Clone)]
pub struct Node {
    /// What it does.
    pub kind: NodeKind,
    /// The values it reads.
    pub inputs: Vec<ValueId>,
    /// The values it defines.
    pub outputs: Vec<ValueId>,
}

impl Node {
    /// TorchScript's name for the node's kind (`aten::linear`,
    /// `prim::Constant`).
    pub fn kind_name(&self) -> String {
        match &self.kind {
            // namespaced ops (`prim::NumToTensor`) carry their namespace
            NodeKind::Op(e) if e.schema.name.contains("::") => e.schema.name.clone(),
            NodeKind::Op(e) => format!("aten::{}", e.schema.name),
            NodeKind::Constant(_) => "prim::Constant".into(),
            NodeKind::GetAttr(_) => "prim::GetAttr".into(),
            NodeKind::ListConstruct => "prim::ListConstruct".into(),
            NodeKind::ListUnpack => "prim::ListUnpack".into(),
            NodeKind::CallMethod { .. } => "prim::CallMethod".into(),
            NodeKind::FusionGroup(_) => "prim::FusionGroup".into(),
            NodeKind::WithEffects(_) => "prim::with_effects".into(),
        }
    }
}

/// A value: its type and, where known, a debug name (`x`, `weight`).
#[derive(Clone, Debug)]
pub struct Value {
    /// Its type.
    pub ty: ValueType,
    /// A name for printing, if it has one.
    pub name: Option<String>,
}

/// A graph: its inputs, nodes in execution order and outputs.
#[derive(Clone, Default)]
pub struct Graph {
    /// Every value, indexed by [`ValueId`].
    pub values: Vec<Value>,
    /// The graph's inputs (the module itself first when it has one).
    pub inputs: Vec<ValueId>,
    /// Nodes, each after the nodes defining its inputs.
    pub nodes: Vec<Node>,
    /// The returned values.
    pub outputs: Vec<ValueId>,
    /// Transforms of constant convolution filters kept by the interpreter
    /// (Note [Prepacked convolution filters] in ferrotorch-core).
    pub(crate) prepacked: crate::prepack::Prepacked,
}

impl Graph {
    /// A new value of type `ty`.
    pub fn add_value(&mut self, ty: ValueType, name: Option<String>) -> ValueId {
        self.values.push(Value { ty, name });
        self.values.len() - 1
    }

    /// A new graph input.
    pub fn add_input(&mut self, ty: ValueType, name: Option<String>) -> ValueId {
        let v = self.add_value(ty, name);
        self.inputs.push(v);
        v
    }

    /// Append a node reading `inputs` and defining one value per type in
    /// `outputs`; returns the new values.
    pub fn add_node(
        &mut self,
        kind: NodeKind,
        inputs: Vec<ValueId>,
        outputs: Vec<ValueType>,
    ) -> Vec<ValueId> {
        let outs: Vec<ValueId> = outputs
            .into_iter()
            .map(|t| self.add_value(t, None))
            .collect();
        self.nodes.push(Node {
            kind,
            inputs,
            outputs: outs.clone(),
        });
        outs
    }
}

//! Tracing: run a function once with the Tracer dispatch key included and
//! record every op it calls as a node (`torch.jit.trace`).
//!
//! # Note [Tracing through the dispatcher]
//! The tracer is the Tracer key's fallback (Note [Dispatch keys] in
//! `ferrotorch-core`): every op call on the tracing thread — a typed
//! method, a boxed call, a binding's call — reaches it once, with the op's
//! entry and bound arguments. It maps each argument to a graph value
//! (tensors by object identity; a module's parameters and buffers become
//! `prim::GetAttr`; any other tensor a `prim::Constant`; numbers and lists
//! constants), runs the op below the modes, and maps the results to the
//! node's outputs. Composites are recorded as the op that was called,
//! since their parts run below the modes. An in-place op's result is its
//! written argument, which from then on maps to the new value (SSA).
//! The state holds every tensor it maps, so an identity is never reused
//! by a new tensor while tracing.
//!
//! # Note [Traced sizes]
//! `x.view(x.size(0), -1)` must follow the batch size the graph is run
//! with, not the one it was traced with. As in `torch.jit.trace`, while
//! tracing a binding's `size()` / `shape` gives each size as a 0-dim int64
//! tensor recorded as `aten::size` + `prim::NumToTensor` ([`size`]);
//! arithmetic on it is traced like any tensor op. Where an op takes an
//! `int`, `int[]` or `Scalar` (`arange(n)`) and gets such a tensor, the
//! schema binder keeps it as
//! an `IValue::SymInt` / `SymIntList` (only while the tracer will see the
//! call; a float one in a `Scalar` argument as `IValue::SymScalar`); the
//! tracer records `aten::Int` (or `aten::ScalarImplicit`) of it and a
//! `prim::ListConstruct`, then passes the kernel the plain ints
//! ([`Args::concrete`]). Rust's `shape()` is `&[usize]`, so sizes a Rust
//! closure reads are constants of the graph: write `-1`, `flatten` or
//! `view_as` where the size should follow the input.

//!
//! # Note [Objects in graphs]
//! A custom class's object (Note [Custom classes] in `ferrotorch-core`)
//! can be a traced function's input or output, or a constant (an object
//! the function holds, saved by its `def_pickle` state). Every op that
//! takes or makes an object — its methods, its constructor, custom ops
//! such as `for_each_add_` — has effects the schema does not describe, so
//! it is recorded as `prim::with_effects[op=...]`, threaded by an effect
//! token (one chain per graph, begun by a `Token` constant): the token
//! orders the calls, and no pass removes, merges or moves them
//! (`passes::uses_objects`). The graph is not functionalised: the
//! interpreter calls the methods on the real object with the real
//! tensors, so the seed's three PyTorch limitations do not arise — a
//! tensor written in place after `push` is the tensor the queue holds
//! (eager's answer), `tq.pop() is a` holds while tracing as in eager, and
//! an `int` result (`tq.size()`) is a traced value
//! (`prim::NumToTensor` of the node's output; `IValue::SymInt` to the
//! caller while tracing) rather than a constant. After such a call every
//! mapped tensor takes its current version, since the object may have
//! written the tensors it holds (the graph repeats those writes when it
//! runs). Loading a program checks that each class it names is registered.

mod calls;

use crate::ir::{Graph, NodeKind, ValueId, ValueType};
use calls::{arg_name, module_call};
pub use calls::{enter_module, exit_module};
use ferrotorch_core::dispatch::keys::{set_fallback, Fallback};
use ferrotorch_core::dispatch::{
    redispatch, Args, DispatchKey, DispatchKeySet, ExcludeGuard, IValue, IncludeGuard, OpEntry,
    Type,
};
use ferrotorch_core::library::ScriptObject;
use ferrotorch_core::{Result, Tensor};
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Arc, Once};

/// One module call being traced: its own graph and the tensors mapped
/// in it (Note [Module hierarchy]). Frame 0 is the traced function.
struct Frame {
    graph: Graph,
    /// tensor object → (the tensor, its value, its storage version when
    /// mapped)
    env: HashMap<usize, (Tensor, ValueId, u64)>,
    /// `%self`, for a module.
    self_value: Option<ValueId>,
    /// This module's attribute path from the root (`""`, `"layer1.0."`).
    prefix: String,
    /// The outer frame's values for this frame's inputs after `%self`:
    /// the call's arguments, then the outer values its body read.
    call_inputs: Vec<ValueId>,
    /// The body wrote a tensor the caller can see: it is inlined into the
    /// caller rather than kept as a call.
    writes_outer: bool,
    /// Custom class objects mapped in this graph: object → (it, its value).
    objects: HashMap<usize, (ScriptObject, ValueId)>,
    /// The first and the latest effect token of this graph (Note
    /// [Objects in graphs]).
    tokens: Option<(ValueId, ValueId)>,
}

impl Frame {
    fn new(self_value: Option<ValueId>, graph: Graph, prefix: String) -> Frame {
        Frame {
            graph,
            env: HashMap::new(),
            self_value,
            prefix,
            call_inputs: Vec::new(),
            writes_outer: false,
            objects: HashMap::new(),
            tokens: None,
        }
    }
}

pub(crate) struct TracingState {
    frames: Vec<Frame>,
    attrs: HashMap<usize, String>,
    /// Submodules by (address, type name) → qualified name.
    modules: HashMap<(usize, String), String>,
    /// Qualified name → type name.
    module_types: HashMap<String, String>,
    /// Set when a tensor came from an op the tracer did not see.
    unseen: Option<String>,
    /// Storages made from here on were made during the trace.
    start_serial: u64,
    /// Tensors made during the trace by ops the tracer did not record,
    /// baked in as constants (`TracerWarning`s).
    warnings: Vec<String>,
}

thread_local! {
    static STATE: RefCell<Option<TracingState>> = const { RefCell::new(None) };
}

/// Whether this thread is tracing (`torch.jit.is_tracing()`).
pub fn is_tracing() -> bool {
    STATE.with(|s| s.borrow().is_some())
}

impl TracingState {
    fn top(&mut self) -> &mut Frame {
        self.frames.last_mut().expect("a trace has a root frame")
    }

    fn constant(&mut self, v: IValue) -> ValueId {
        let ty = ValueType::of(&v);
        self.top()
            .graph
            .add_node(NodeKind::Constant(v), vec![], vec![ty])[0]
    }

    fn tensor(&mut self, t: &Tensor) -> ValueId {
        self.tensor_at(self.frames.len() - 1, t)
    }

    /// The value for `t` in frame `d`: mapped there, read from an outer
    /// frame (a new input of this frame), an attribute, or a constant.
    fn tensor_at(&mut self, d: usize, t: &Tensor) -> ValueId {
        let id = t.object_id();
        if let Some((_, v, version)) = self.frames[d].env.get(&id) {
            if t.version() != *version && self.unseen.is_none() {
                // written in place since it was mapped, and no recorded
                // op did it
                self.unseen = Some(format!(
                    "jit.trace: a traced value of shape {:?} was modified in place by an op the tracer did not record; trace through ops that have schemas",
                    t.shape()
                ));
            }
            return *v;
        }
        let attr = self.attrs.get(&id).cloned();
        let own_attr = attr
            .as_deref()
            .and_then(|n| n.strip_prefix(self.frames[d].prefix.as_str()))
            .filter(|_| self.frames[d].self_value.is_some())
            .map(str::to_string);
        let outer = d > 0
            && ((attr.is_some() && own_attr.is_none())
                || self.frames[..d].iter().any(|f| f.env.contains_key(&id)));
        if outer {
            let v_outer = self.tensor_at(d - 1, t);
            let f = &mut self.frames[d];
            let v = f.graph.add_input(ValueType::of_tensor(t), None);
            f.call_inputs.push(v_outer);
            f.env.insert(id, (t.clone(), v, t.version()));
            return v;
        }
        if self.unseen.is_none() && attr.is_none() {
            // a view of a traced value that no recorded op made: an op
            // the tracer did not see; baking it in as a constant would
            // make a graph that ignores its inputs
            let src = self.frames.iter().find_map(|f| {
                f.env
                    .values()
                    .find(|(s, _, _)| s.storage().is_same(t.storage()))
                    .map(|(s, _, _)| s.shape().to_vec())
            });
            if let Some(src) = src {
                self.unseen = Some(format!(
                    "jit.trace: a tensor of shape {:?} shares memory with a traced value of shape {src:?} but was made by an op the tracer did not record; trace through ops that have schemas",
                    t.shape(),
                ));
            }
        }
        let f = &mut self.frames[d];
        let v = match (own_attr, f.self_value) {
            (Some(name), Some(this)) => {
                let v = f.graph.add_node(
                    NodeKind::GetAttr(name.clone()),
                    vec![this],
                    vec![ValueType::of_tensor(t)],
                )[0];
                f.graph.values[v].name = Some(name.replace('.', "_"));
                v
            }
            _ => {
                // a constant carries no gradient: the graph will not
                // give the one eager gives (torch refuses such a trace;
                // a warning lets a compiled function run eagerly instead)
                if t.requires_grad() {
                    self.warnings.push(format!(
                        "jit.trace: a tensor of shape {:?} that requires grad is captured as a constant; gradients will not reach it (trace a module, or pass it as an input)",
                        t.shape()
                    ));
                }
                if t.storage().serial() >= self.start_serial {
                    self.warnings.push(format!(
                        "jit.trace: a {} tensor of shape {:?} was made during the trace by an op the tracer did not record; it is a constant in the graph and will not change with the inputs",
                        t.dtype().name_title(),
                        t.shape()
                    ));
                }
                let f = &mut self.frames[d];
                let v = IValue::Tensor(t.detach());
                let ty = ValueType::of(&v);
                f.graph.add_node(NodeKind::Constant(v), vec![], vec![ty])[0]
            }
        };
        let f = &mut self.frames[d];
        f.env.insert(id, (t.clone(), v, t.version()));
        v
    }

    /// The graph value for an argument.
    fn value_of(&mut self, v: &IValue) -> ValueId {
        match v {
            IValue::Tensor(t) => self.tensor(t),
            IValue::TensorList(ts) => {
                let ins = ts.iter().map(|t| self.tensor(t)).collect();
                self.top()
                    .graph
                    .add_node(NodeKind::ListConstruct, ins, vec![ValueType::of(v)])[0]
            }
            IValue::OptTensorList(ts) => {
                let ins = ts
                    .iter()
                    .map(|t| match t {
                        Some(t) => self.tensor(t),
                        None => self.constant(IValue::None),
                    })
                    .collect();
                self.top().graph.add_node(
                    NodeKind::ListConstruct,
                    ins,
                    vec![ValueType::OptTensorList],
                )[0]
            }
            IValue::SymInt(t) => self.int_of(t),
            IValue::Object(o) => self.object_at(self.frames.len() - 1, o),
            IValue::SymScalar(t) => {
                let tv = self.tensor(t);
                let op = prim_op("ScalarImplicit");
                self.top()
                    .graph
                    .add_node(NodeKind::Op(op), vec![tv], vec![ValueType::of(v)])[0]
            }
            IValue::SymIntList(items) => {
                let ins = items
                    .iter()
                    .map(|item| match item {
                        IValue::Tensor(t) | IValue::SymInt(t) => self.int_of(t),
                        other => self.constant(other.clone()),
                    })
                    .collect();
                self.top()
                    .graph
                    .add_node(NodeKind::ListConstruct, ins, vec![ValueType::of(v)])[0]
            }
            other => self.constant(other.clone()),
        }
    }

    /// The value for object `o` in frame `d`: mapped there, read from an
    /// outer frame (a new input of this frame), or a constant (an object
    /// made before the trace and not passed in: saved by its state).
    fn object_at(&mut self, d: usize, o: &ScriptObject) -> ValueId {
        let id = o.object_id();
        if let Some((_, v)) = self.frames[d].objects.get(&id) {
            return *v;
        }
        let ty = ValueType::Object(o.class().qualified_name().to_string());
        let outer = d > 0 && self.frames[..d].iter().any(|f| f.objects.contains_key(&id));
        let f_v = if outer {
            let v_outer = self.object_at(d - 1, o);
            let f = &mut self.frames[d];
            let v = f.graph.add_input(ty, None);
            f.call_inputs.push(v_outer);
            v
        } else {
            self.frames[d].graph.add_node(
                NodeKind::Constant(IValue::Object(o.clone())),
                vec![],
                vec![ty],
            )[0]
        };
        self.frames[d].objects.insert(id, (o.clone(), f_v));
        f_v
    }

    /// Record `e`, an op using objects, threaded by the frame's effect
    /// token (Note [Objects in graphs]). An `int` result becomes a traced
    /// int (`prim::NumToTensor` of the node's output), so `x + tq.size()`
    /// follows the object's size when the graph runs.
    fn record_effect(&mut self, e: &Arc<OpEntry>, ins: Vec<ValueId>, out: IValue) -> IValue {
        let top = self.frames.len() - 1;
        // a call inside a submodule is inlined into its caller, so the
        // token chain is one per graph
        for f in &mut self.frames[1..] {
            f.writes_outer = true;
        }
        let f = &mut self.frames[top];
        let token = match f.tokens {
            Some((_, last)) => last,
            None => {
                let t = f.graph.add_node(
                    NodeKind::Constant(IValue::None),
                    vec![],
                    vec![ValueType::Token],
                )[0];
                f.graph.values[t].name = Some("token".into());
                t
            }
        };
        let mut inputs = vec![token];
        inputs.extend(ins);
        let results: Vec<IValue> = match (&out, e.schema.returns.len()) {
            (_, 0) => vec![],
            (IValue::Tuple(items), n) if n > 1 => items.clone(),
            (v, _) => vec![v.clone()],
        };
        let mut tys = vec![ValueType::Token];
        tys.extend(results.iter().map(ValueType::of));
        let outs = f
            .graph
            .add_node(NodeKind::WithEffects(e.clone()), inputs, tys);
        let first = f.tokens.map_or(token, |(first, _)| first);
        f.tokens = Some((first, outs[0]));
        let int_result = results.len() == 1 && e.schema.returns[0] == Type::Int;
        for (r, &v) in results.iter().zip(&outs[1..]) {
            match r {
                IValue::Tensor(t) => {
                    self.top()
                        .env
                        .insert(t.object_id(), (t.clone(), v, t.version()));
                }
                IValue::TensorList(ts) => {
                    let tys = ts.iter().map(ValueType::of_tensor).collect();
                    let vs = self
                        .top()
                        .graph
                        .add_node(NodeKind::ListUnpack, vec![v], tys);
                    for (t, v) in ts.iter().zip(vs) {
                        self.bind_result(&IValue::Tensor(t.clone()), v);
                    }
                }
                IValue::Object(o) => {
                    self.top().objects.insert(o.object_id(), (o.clone(), v));
                }
                _ => {}
            }
        }
        if let (true, IValue::Int(n)) = (int_result, &out) {
            let t = Tensor::scalar_tensor(*n);
            let g = &mut self.top().graph;
            let tv = g.add_node(
                NodeKind::Op(prim_op("prim::NumToTensor.Scalar")),
                vec![outs[1]],
                vec![ValueType::of_tensor(&t)],
            )[0];
            self.bind_result(&IValue::Tensor(t.clone()), tv);
            return IValue::SymInt(t);
        }
        out
    }

    /// An op using objects ran: the tensors they hold may have been
    /// written by it, which the graph repeats when it runs, so every
    /// mapped tensor takes its current version.
    fn refresh_all_versions(&mut self) {
        for f in &mut self.frames {
            for (t, _, version) in f.env.values_mut() {
                *version = t.version();
            }
        }
    }

    /// `aten::Int(%t)`: a traced int's tensor back to the int an op takes
    /// (Note [Traced sizes]).
    fn int_of(&mut self, t: &Tensor) -> ValueId {
        let tv = self.tensor(t);
        let op = prim_op("Int.Tensor");
        self.top()
            .graph
            .add_node(NodeKind::Op(op), vec![tv], vec![ValueType::Int])[0]
    }

    /// Record `aten::size(%t, dim)` and `prim::NumToTensor` of it, with
    /// `out` (the size as a 0-dim tensor) as the latter's value.
    fn size(&mut self, t: &Tensor, dim: i64, out: &Tensor) {
        let tv = self.tensor(t);
        let d = self.constant(IValue::Int(dim));
        let g = &mut self.top().graph;
        let n = g.add_node(
            NodeKind::Op(prim_op("size.int")),
            vec![tv, d],
            vec![ValueType::Int],
        )[0];
        let v = g.add_node(
            NodeKind::Op(prim_op("prim::NumToTensor.Scalar")),
            vec![n],
            vec![ValueType::of_tensor(out)],
        )[0];
        self.bind_result(&IValue::Tensor(out.clone()), v);
    }

    /// Map a result value to `v`.
    fn bind_result(&mut self, out: &IValue, v: ValueId) {
        match out {
            IValue::Tensor(t) => {
                self.top()
                    .env
                    .insert(t.object_id(), (t.clone(), v, t.version()));
            }
            IValue::Object(o) => {
                self.top().objects.insert(o.object_id(), (o.clone(), v));
            }
            _ => {}
        }
    }

    /// A recorded op wrote `written` in place: every mapped tensor on its
    /// storage (its views) saw a recorded write, so take their versions.
    /// A write that outer frames can see keeps the frames it crossed from
    /// becoming calls.
    fn refresh_versions(&mut self, written: &[Tensor]) {
        let top = self.frames.len() - 1;
        let mut lowest: Option<usize> = None;
        for (d, f) in self.frames.iter_mut().enumerate() {
            for (t, _, version) in f.env.values_mut() {
                if written.iter().any(|w| w.storage().is_same(t.storage())) {
                    *version = t.version();
                    if d < top {
                        lowest = Some(lowest.map_or(d, |x| x.min(d)));
                    }
                }
            }
        }
        if let Some(d) = lowest {
            for f in &mut self.frames[d + 1..] {
                f.writes_outer = true;
            }
        }
    }

    fn record(&mut self, e: &Arc<OpEntry>, ins: Vec<ValueId>, out: &IValue) {
        let returns = &e.schema.returns;
        let list_return = returns.len() == 1 && matches!(returns[0], Type::List(..));
        let op = NodeKind::Op(e.clone());
        match out {
            IValue::Tuple(items) if returns.len() > 1 => {
                let tys = items.iter().map(ValueType::of).collect();
                let vs = self.top().graph.add_node(op, ins, tys);
                for (item, v) in items.iter().zip(vs) {
                    self.bind_result(item, v);
                }
            }
            IValue::TensorList(ts) if list_return => {
                let g = &mut self.top().graph;
                let list = g.add_node(op, ins, vec![ValueType::of(out)])[0];
                let tys = ts.iter().map(ValueType::of_tensor).collect();
                let vs = g.add_node(NodeKind::ListUnpack, vec![list], tys);
                for (t, v) in ts.iter().zip(vs) {
                    self.bind_result(&IValue::Tensor(t.clone()), v);
                }
            }
            _ => {
                let v = self.top().graph.add_node(op, ins, vec![ValueType::of(out)])[0];
                self.bind_result(out, v);
            }
        }
    }
}

/// The Tracer key's fallback (Note [Tracing through the dispatcher]).
fn record_call(e: &Arc<OpEntry>, a: &Args, below: DispatchKeySet) -> Result<IValue> {
    // the tracer's own tensor work (detaching constants) is not traced
    let quiet = || ExcludeGuard::new(DispatchKey::Tracer);
    let guard = quiet();
    let ins = STATE.with(|s| {
        s.borrow_mut().as_mut().map(|st| {
            a.values()
                .iter()
                .map(|v| st.value_of(v))
                .collect::<Vec<_>>()
        })
    });
    drop(guard);
    // kernels take traced ints as their values
    let lowered = a.concrete()?;
    let out = redispatch(e, lowered.as_ref().unwrap_or(a), below)?;
    let _guard = quiet();
    if crate::passes::uses_objects(e) {
        return Ok(STATE.with(|s| match s.borrow_mut().as_mut() {
            Some(st) => {
                st.refresh_all_versions();
                match ins {
                    Some(ins) => st.record_effect(e, ins, out),
                    None => out,
                }
            }
            None => out,
        }));
    }
    if let Some(ins) = ins {
        let written: Vec<Tensor> = e
            .schema
            .mutated_args()
            .filter_map(|i| match &a.values()[i] {
                IValue::Tensor(t) => Some(t.clone()),
                _ => None,
            })
            .collect();
        STATE.with(|s| {
            if let Some(st) = s.borrow_mut().as_mut() {
                st.refresh_versions(&written);
                st.record(e, ins, &out);
            }
        });
    }
    Ok(out)
}

/// A built-in op the tracer records itself.
fn prim_op(name: &str) -> Arc<OpEntry> {
    ferrotorch_core::dispatch::find_op(name)
        .unwrap_or_else(|| panic!("built-in op {name} is registered"))
}

/// `t.size(dim)` while tracing: the size as a 0-dim int64 tensor recorded
/// as `aten::size` and `prim::NumToTensor`, as `torch.jit.trace` gives
/// Python code (Note [Traced sizes]); a plain 0-dim tensor when not
/// tracing.
pub fn size(t: &Tensor, dim: i64) -> Result<Tensor> {
    let n = t.size_at(dim)?;
    let _quiet = ExcludeGuard::new(DispatchKey::Tracer);
    let out = Tensor::scalar_tensor(n as i64);
    STATE.with(|s| {
        if let Some(st) = s.borrow_mut().as_mut() {
            st.size(t, dim, &out);
        }
    });
    Ok(out)
}

fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let f: Fallback = Arc::new(record_call);
        set_fallback(DispatchKey::Tracer, Some(f));
        ferrotorch_nn::set_module_call_hook(module_call);
    });
}

/// Ends the trace on drop, so a failing traced function leaves no state.
struct Session;

impl Drop for Session {
    fn drop(&mut self) {
        STATE.with(|s| s.borrow_mut().take());
    }
}

/// What a trace reads as a module: its name, its attributes, and its
/// submodules (by address and type name → qualified name, with each
/// qualified name's type) for the call hierarchy.
#[derive(Default)]
pub(crate) struct ModuleInfo<'a> {
    pub(crate) name: Option<&'a str>,
    pub(crate) attrs: &'a [(String, Tensor)],
    pub(crate) modules: HashMap<(usize, String), String>,
}

/// Trace `f` on `inputs`: the graph of the ops it ran. `module.attrs`
/// names the tensors to read as module attributes (parameters, buffers);
/// any other tensor the function uses becomes a constant.
pub(crate) fn trace_graph(
    module: ModuleInfo<'_>,
    inputs: &[Tensor],
    f: impl FnOnce(&[Tensor]) -> Result<Vec<Tensor>>,
) -> Result<(Graph, Vec<String>)> {
    let values: Vec<IValue> = inputs.iter().cloned().map(IValue::Tensor).collect();
    trace_values(module, &values, |_| {
        Ok(f(inputs)?.into_iter().map(IValue::Tensor).collect())
    })
}

/// [`trace_graph`] of a function of values: tensors and custom class
/// objects in, tensors and objects out (Note [Objects in graphs]).
pub(crate) fn trace_values(
    module: ModuleInfo<'_>,
    inputs: &[IValue],
    f: impl FnOnce(&[IValue]) -> Result<Vec<IValue>>,
) -> Result<(Graph, Vec<String>)> {
    ferrotorch_core::ensure!(
        !is_tracing(),
        Runtime,
        "jit.trace: already tracing on this thread (nested traces are not supported)"
    );
    install();
    let module_types = module
        .modules
        .iter()
        .map(|((_, ty), name)| (name.clone(), ty.clone()))
        .collect();
    let mut root = Frame::new(None, Graph::default(), String::new());
    let mut keep = Vec::new();
    if let Some(name) = module.name {
        root.self_value = Some(
            root.graph
                .add_input(ValueType::Module(name.to_string()), Some("self".into())),
        );
        keep.extend(module.attrs.iter().map(|(_, t)| t.clone()));
    }
    for (i, x) in inputs.iter().enumerate() {
        let name = Some(arg_name(i, inputs.len()));
        match x {
            IValue::Tensor(t) => {
                let v = root.graph.add_input(ValueType::of_tensor(t), name);
                root.env.insert(t.object_id(), (t.clone(), v, t.version()));
            }
            IValue::Object(o) => {
                let v = root.graph.add_input(ValueType::of(x), name);
                root.objects.insert(o.object_id(), (o.clone(), v));
            }
            other => ferrotorch_core::bail!(
                Type,
                "jit.trace: example inputs must be tensors or custom class objects, got {}",
                other.type_name()
            ),
        }
    }
    let st = TracingState {
        frames: vec![root],
        attrs: module
            .attrs
            .iter()
            .map(|(n, t)| (t.object_id(), n.clone()))
            .collect(),
        modules: module.modules,
        module_types,
        unseen: None,
        start_serial: ferrotorch_core::storage::Storage::next_serial(),
        warnings: Vec::new(),
    };
    STATE.with(|s| *s.borrow_mut() = Some(st));
    let session = Session;
    let outs = {
        let _mode = IncludeGuard::new(DispatchKey::Tracer);
        f(inputs)?
    };
    let mut st = STATE
        .with(|s| s.borrow_mut().take())
        .expect("the trace is still open");
    drop(session);
    while st.frames.len() > 1 {
        // a binding that entered a call and never left it
        st.exit(None)?;
    }
    let outputs: Vec<ValueId> = outs
        .iter()
        .map(|x| match x {
            IValue::Tensor(t) => Ok(st.tensor(t)),
            IValue::Object(o) => Ok(st.object_at(0, o)),
            other => ferrotorch_core::bail!(
                Type,
                "jit.trace: a traced function must return tensors or custom class objects, got {}",
                other.type_name()
            ),
        })
        .collect::<Result<_>>()?;
    let mut graph = std::mem::take(&mut st.frames[0].graph);
    graph.outputs = outputs;
    crate::passes::eliminate_dead_code(&mut graph);
    drop(keep);
    if let Some(msg) = st.unseen {
        ferrotorch_core::bail!(Runtime, "{msg}");
    }
    Ok((graph, st.warnings))
}

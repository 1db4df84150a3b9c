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

use crate::ir::{Graph, NodeKind, ValueId, ValueType};
use ferrotorch_core::dispatch::keys::{set_fallback, Fallback};
use ferrotorch_core::dispatch::{
    redispatch, Args, DispatchKey, DispatchKeySet, IValue, IncludeGuard, OpEntry, Type,
};
use ferrotorch_core::{Result, Tensor};
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Arc, Once};

pub(crate) struct TracingState {
    pub(crate) graph: Graph,
    /// tensor object → (the tensor, its value, its storage version when
    /// mapped)
    env: HashMap<usize, (Tensor, ValueId, u64)>,
    attrs: HashMap<usize, String>,
    self_value: Option<ValueId>,
    /// Set when a tensor came from an op the tracer did not see.
    unseen: Option<String>,
}

thread_local! {
    static STATE: RefCell<Option<TracingState>> = const { RefCell::new(None) };
}

/// Whether this thread is tracing (`torch.jit.is_tracing()`).
pub fn is_tracing() -> bool {
    STATE.with(|s| s.borrow().is_some())
}

impl TracingState {
    fn constant(&mut self, v: IValue) -> ValueId {
        let ty = ValueType::of(&v);
        self.graph.add_node(NodeKind::Constant(v), vec![], vec![ty])[0]
    }

    fn tensor(&mut self, t: &Tensor) -> ValueId {
        let id = t.object_id();
        if let Some((_, v, version)) = self.env.get(&id) {
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
        if self.unseen.is_none() && !self.attrs.contains_key(&id) {
            // a view of a traced value that no recorded op made: an op
            // the tracer did not see; baking it in as a constant would
            // make a graph that ignores its inputs
            if let Some((src, _, _)) = self
                .env
                .values()
                .find(|(s, _, _)| s.storage().is_same(t.storage()))
            {
                self.unseen = Some(format!(
                    "jit.trace: a tensor of shape {:?} shares memory with a traced value of shape {:?} but was made by an op the tracer did not record; trace through ops that have schemas",
                    t.shape(),
                    src.shape()
                ));
            }
        }
        let v = match (self.attrs.get(&id).cloned(), self.self_value) {
            (Some(name), Some(this)) => {
                let v = self.graph.add_node(
                    NodeKind::GetAttr(name.clone()),
                    vec![this],
                    vec![ValueType::of_tensor(t)],
                )[0];
                self.graph.values[v].name = Some(name.replace('.', "_"));
                v
            }
            _ => self.constant(IValue::Tensor(t.detach())),
        };
        self.env.insert(id, (t.clone(), v, t.version()));
        v
    }

    /// The graph value for an argument.
    fn value_of(&mut self, v: &IValue) -> ValueId {
        match v {
            IValue::Tensor(t) => self.tensor(t),
            IValue::TensorList(ts) => {
                let ins = ts.iter().map(|t| self.tensor(t)).collect();
                self.graph
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
                self.graph
                    .add_node(NodeKind::ListConstruct, ins, vec![ValueType::OptTensorList])[0]
            }
            other => self.constant(other.clone()),
        }
    }

    /// Map a result value to `v`.
    fn bind_result(&mut self, out: &IValue, v: ValueId) {
        if let IValue::Tensor(t) = out {
            self.env.insert(t.object_id(), (t.clone(), v, t.version()));
        }
    }

    /// A recorded op wrote `written` in place: every mapped tensor on its
    /// storage (its views) saw a recorded write, so take their versions.
    fn refresh_versions(&mut self, written: &[Tensor]) {
        for (t, _, version) in self.env.values_mut() {
            if written.iter().any(|w| w.storage().is_same(t.storage())) {
                *version = t.version();
            }
        }
    }

    fn record(&mut self, e: &Arc<OpEntry>, ins: Vec<ValueId>, out: &IValue) {
        let returns = &e.schema.returns;
        let list_return = returns.len() == 1 && matches!(returns[0], Type::List(..));
        match out {
            IValue::Tuple(items) if returns.len() > 1 => {
                let tys = items.iter().map(ValueType::of).collect();
                let vs = self.graph.add_node(NodeKind::Op(e.clone()), ins, tys);
                for (item, v) in items.iter().zip(vs) {
                    self.bind_result(item, v);
                }
            }
            IValue::TensorList(ts) if list_return => {
                let list =
                    self.graph
                        .add_node(NodeKind::Op(e.clone()), ins, vec![ValueType::of(out)])[0];
                let tys = ts.iter().map(ValueType::of_tensor).collect();
                let vs = self.graph.add_node(NodeKind::ListUnpack, vec![list], tys);
                for (t, v) in ts.iter().zip(vs) {
                    self.env.insert(t.object_id(), (t.clone(), v, t.version()));
                }
            }
            _ => {
                let v = self
                    .graph
                    .add_node(NodeKind::Op(e.clone()), ins, vec![ValueType::of(out)])[0];
                self.bind_result(out, v);
            }
        }
    }
}

/// The Tracer key's fallback (Note [Tracing through the dispatcher]).
fn record_call(e: &Arc<OpEntry>, a: &Args, below: DispatchKeySet) -> Result<IValue> {
    let ins = STATE.with(|s| {
        s.borrow_mut().as_mut().map(|st| {
            a.values()
                .iter()
                .map(|v| st.value_of(v))
                .collect::<Vec<_>>()
        })
    });
    let out = redispatch(e, a, below)?;
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

fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let f: Fallback = Arc::new(record_call);
        set_fallback(DispatchKey::Tracer, Some(f));
    });
}

/// Ends the trace on drop, so a failing traced function leaves no state.
struct Session;

impl Drop for Session {
    fn drop(&mut self) {
        STATE.with(|s| s.borrow_mut().take());
    }
}

/// Trace `f` on `inputs`: the graph of the ops it ran. `attrs` names the
/// tensors to read as module attributes (parameters, buffers); any other
/// tensor the function uses becomes a constant.
pub(crate) fn trace_graph(
    module: Option<&str>,
    attrs: &[(String, Tensor)],
    inputs: &[Tensor],
    f: impl FnOnce(&[Tensor]) -> Result<Vec<Tensor>>,
) -> Result<Graph> {
    ferrotorch_core::ensure!(
        !is_tracing(),
        Runtime,
        "jit.trace: already tracing on this thread (nested traces are not supported)"
    );
    install();
    let mut st = TracingState {
        graph: Graph::default(),
        env: HashMap::new(),
        attrs: attrs
            .iter()
            .map(|(n, t)| (t.object_id(), n.clone()))
            .collect(),
        self_value: None,
        unseen: None,
    };
    let mut keep = Vec::new();
    if let Some(name) = module {
        st.self_value = Some(
            st.graph
                .add_input(ValueType::Module(name.to_string()), Some("self".into())),
        );
        keep.extend(attrs.iter().map(|(_, t)| t.clone()));
    }
    for (i, t) in inputs.iter().enumerate() {
        let v = st.graph.add_input(
            ValueType::of_tensor(t),
            Some(if inputs.len() == 1 {
                "x".into()
            } else {
                format!("x{i}")
            }),
        );
        st.env.insert(t.object_id(), (t.clone(), v, t.version()));
    }
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
    let outputs: Vec<ValueId> = outs.iter().map(|t| st.tensor(t)).collect();
    st.graph.outputs = outputs;
    drop(keep);
    if let Some(msg) = st.unseen {
        ferrotorch_core::bail!(Runtime, "{msg}");
    }
    Ok(st.graph)
}

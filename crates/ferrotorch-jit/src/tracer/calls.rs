//! Module calls while tracing (Note [Module hierarchy]): each submodule
//! call gets a frame of its own, kept as a `prim::CallMethod` or inlined
//! into its caller when it ends.

use super::{Frame, TracingState, STATE};
use crate::inline::{copy_nodes, Mapping};
use crate::ir::{Graph, NodeKind, ValueId, ValueType};
use ferrotorch_core::dispatch::{DispatchKey, ExcludeGuard};
use ferrotorch_core::{Result, Tensor};
use ferrotorch_nn::Module;
use std::sync::Arc;

impl TracingState {
    /// Start recording a call of the submodule `name` (its qualified
    /// name) on `inputs` in a frame of its own; false when it is recorded
    /// in the caller's frame instead (no module being traced, or not a
    /// submodule of the caller).
    pub(super) fn enter(&mut self, name: &str, type_name: &str, inputs: &[Tensor]) -> bool {
        let prefix = format!("{name}.");
        let parent = self.top();
        if name.is_empty() || parent.self_value.is_none() || !prefix.starts_with(&parent.prefix) {
            return false;
        }
        let args: Vec<ValueId> = inputs.iter().map(|t| self.tensor(t)).collect();
        let mut g = Graph::default();
        let this = g.add_input(
            ValueType::Module(type_name.to_string()),
            Some("self".into()),
        );
        self.module_types
            .entry(name.to_string())
            .or_insert_with(|| type_name.to_string());
        let mut f = Frame::new(Some(this), g, prefix);
        for (i, t) in inputs.iter().enumerate() {
            let v = f
                .graph
                .add_input(ValueType::of_tensor(t), Some(arg_name(i, inputs.len())));
            f.env.insert(t.object_id(), (t.clone(), v, t.version()));
        }
        f.call_inputs = args;
        self.frames.push(f);
        true
    }

    /// End the innermost module call: a `prim::CallMethod` in the
    /// caller's graph, or its nodes inlined there when its body wrote a
    /// tensor the caller sees or its outputs are not tensors (`None`).
    pub(super) fn exit(&mut self, outputs: Option<&[Tensor]>) -> Result<()> {
        let d = self.frames.len() - 1;
        if d == 0 {
            return Ok(());
        }
        let outs: Option<Vec<ValueId>> =
            outputs.map(|ts| ts.iter().map(|t| self.tensor_at(d, t)).collect());
        let mut child = self.frames.pop().expect("d > 0");
        let types = &self.module_types;
        let parent = self.frames.last_mut().expect("a trace has a root frame");
        let rel = child.prefix[parent.prefix.len()..]
            .trim_end_matches('.')
            .to_string();
        match (outs, outputs) {
            (Some(outs), Some(ts)) if !child.writes_outer => {
                child.graph.outputs = outs;
                // as torch's tracer: sizes read and not used, and other
                // results nobody used, leave no nodes
                crate::passes::eliminate_dead_code(&mut child.graph);
                let mut m = parent.self_value.expect("entered under a module");
                let mut path = parent.prefix.clone();
                for part in rel.split('.') {
                    path.push_str(part);
                    let ty = types
                        .get(&path)
                        .map_or("Module", String::as_str)
                        .to_string();
                    path.push('.');
                    m = parent.graph.add_node(
                        NodeKind::GetAttr(part.to_string()),
                        vec![m],
                        vec![ValueType::Module(ty)],
                    )[0];
                    // TorchScript's names for submodules `0`, `1`: `%_0`, `%_1`
                    parent.graph.values[m].name =
                        Some(if part.starts_with(|c: char| c.is_ascii_digit()) {
                            format!("_{part}")
                        } else {
                            part.to_string()
                        });
                }
                let mut ins = vec![m];
                ins.extend(&child.call_inputs);
                let tys = ts.iter().map(ValueType::of_tensor).collect();
                let call = NodeKind::CallMethod {
                    name: "forward".into(),
                    graph: Arc::new(child.graph),
                };
                let vs = parent.graph.add_node(call, ins, tys);
                for (t, v) in ts.iter().zip(vs) {
                    parent
                        .env
                        .insert(t.object_id(), (t.clone(), v, t.version()));
                }
            }
            _ => {
                let mut map = Mapping::new(child.graph.values.len());
                map.paths.insert(child.graph.inputs[0], format!("{rel}."));
                for (&bi, &a) in child.graph.inputs[1..].iter().zip(&child.call_inputs) {
                    map.values[bi] = Some(a);
                }
                let this = parent.self_value;
                copy_nodes(&mut parent.graph, &child.graph, &mut map, this)?;
                for (id, (t, v, version)) in child.env {
                    if let Some(pv) = map.values[v] {
                        parent.env.insert(id, (t, pv, version));
                    }
                }
                for (id, (o, v)) in child.objects {
                    if let Some(pv) = map.values[v] {
                        parent.objects.insert(id, (o, pv));
                    }
                }
                // one token chain per graph: the body's chain continues
                // the caller's (Note [Objects in graphs])
                if let Some((first, last)) = child.tokens {
                    let (first, last) = (map.values[first], map.values[last]);
                    if let (Some(first), Some(last)) = (first, last) {
                        parent.tokens = Some(match parent.tokens {
                            Some((p_first, p_last)) => {
                                crate::passes::replace_uses(&mut parent.graph, first, p_last);
                                (p_first, last)
                            }
                            None => (first, last),
                        });
                    }
                }
            }
        }
        Ok(())
    }
}

pub(super) fn arg_name(i: usize, n: usize) -> String {
    if n == 1 {
        "x".into()
    } else {
        format!("x{i}")
    }
}

/// Enter a call of the submodule with qualified name `name`
/// (Note [Module hierarchy]); a binding calls it from its modules'
/// `__call__` while tracing. Returns whether [`exit_module`] must follow.
pub fn enter_module(name: &str, type_name: &str, inputs: &[Tensor]) -> bool {
    let _quiet = ExcludeGuard::new(DispatchKey::Tracer);
    STATE.with(|s| {
        s.borrow_mut()
            .as_mut()
            .is_some_and(|st| st.enter(name, type_name, inputs))
    })
}

/// End the call [`enter_module`] began, with its tensor outputs (`None`
/// when they are not tensors or the call failed).
pub fn exit_module(outputs: Option<&[Tensor]>) -> Result<()> {
    let _quiet = ExcludeGuard::new(DispatchKey::Tracer);
    STATE.with(|s| match s.borrow_mut().as_mut() {
        Some(st) => st.exit(outputs),
        None => Ok(()),
    })
}

/// The nn crate's hook for `Forward::call` while a mode is on.
pub(super) fn module_call(
    m: &dyn Module,
    x: &Tensor,
    run: &dyn Fn(&Tensor) -> Result<Tensor>,
) -> Result<Tensor> {
    let key = (
        m as *const dyn Module as *const u8 as usize,
        m.type_name().to_string(),
    );
    let name = STATE.with(|s| {
        s.borrow()
            .as_ref()
            .and_then(|st| st.modules.get(&key).cloned())
    });
    let Some(name) = name else { return run(x) };
    if !enter_module(&name, &key.1, std::slice::from_ref(x)) {
        return run(x);
    }
    let out = run(x);
    exit_module(out.as_ref().ok().map(std::slice::from_ref))?;
    out
}

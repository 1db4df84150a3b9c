//! Graph passes, each a function of a graph, and the order they run in.
//!
//! # Note [Pass order]
//! [`optimize`] runs, in this order: inlining of submodule calls
//! ([`inline`]: the others see one flat graph), constant folding (ops
//! whose inputs are all constants run once, now), peephole simplification
//! (`x * 1`, `x + 0`, `x - 0`, `x / 1`, a transpose of a transpose),
//! common subexpression elimination, dead-code elimination. Folding first
//! gives the peephole and CSE more constants to see; DCE last removes
//! what the others left unused. [`optimize_for_inference`] first freezes
//! (attributes become constants, as `torch.jit.freeze`) so folding
//! reaches the weights, fuses eval convolution blocks (`conv2d →
//! batch_norm (→ + residual) (→ relu)`, [`fuse_conv_blocks`]) into the
//! fused convolution the eager ResNet runs, folds the remaining eval
//! batch norms into the convolutions before them
//! ([`fold_conv_batch_norm`]; both on constants only), runs
//! [`optimize`], and last groups elementwise chains into
//! `prim::FusionGroup`s ([`fuse_elementwise`]), since the other passes
//! do not look inside groups. Shape and dtype propagation
//! ([`propagate_shapes`]) is separate: it re-types a graph for new input
//! shapes.
//!
//! The passes are conservative where tensors may alias: ops that write an
//! argument in place, and random ops, are never folded, merged or removed,
//! and CSE and the peephole leave graphs that contain in-place ops alone
//! (the trace is SSA for the written tensor but not for its views).

mod conv_fuse;
mod freeze;
mod fusion;
mod shapes;

pub use conv_fuse::fuse_conv_blocks;
pub use freeze::{fold_conv_batch_norm, freeze};
pub use fusion::fuse_elementwise;
pub use shapes::propagate_shapes;

use crate::ir::{Graph, Node, NodeKind, ValueId};
use crate::module::ScriptModule;
use ferrotorch_core::dispatch::{call_bound, IValue, OpEntry};
use ferrotorch_core::Result;
use std::collections::HashMap;

/// Ops whose results depend on more than their arguments.
const RANDOM: &[&str] = &[
    "rand",
    "randn",
    "randint",
    "randperm",
    "rand_like",
    "randn_like",
    "randint_like",
    "bernoulli",
    "multinomial",
    "normal",
    "dropout",
    "uniform_",
    "normal_",
    "bernoulli_",
    "exponential_",
    "random_",
    "poisson",
    "feature_dropout",
    "alpha_dropout",
    "rrelu",
];

pub(crate) fn pure(e: &OpEntry) -> bool {
    e.schema.mutated_args().next().is_none()
        && !RANDOM.contains(&e.schema.name.as_str())
        && !uses_objects(e)
}

/// Whether an op takes or makes a custom class's object: its effects on the
/// object are not in its schema, so it is never moved, merged or removed
/// (Note [Objects in graphs]).
pub(crate) fn uses_objects(e: &OpEntry) -> bool {
    e.schema.args.iter().any(|a| a.ty.class_name().is_some())
        || e.schema.returns.iter().any(|t| t.class_name().is_some())
}

pub(crate) fn has_inplace(g: &Graph) -> bool {
    g.nodes.iter().any(|n| match &n.kind {
        NodeKind::Op(e) => e.schema.mutated_args().next().is_some(),
        NodeKind::WithEffects(_) => true,
        _ => false,
    })
}

/// Point every use of `old` at `new`.
pub fn replace_uses(g: &mut Graph, old: ValueId, new: ValueId) {
    for n in &mut g.nodes {
        for i in &mut n.inputs {
            if *i == old {
                *i = new;
            }
        }
    }
    for o in &mut g.outputs {
        if *o == old {
            *o = new;
        }
    }
}

/// Dead-code elimination: drop nodes none of whose outputs is used
/// (in-place and random ops stay). Returns how many were removed.
pub fn eliminate_dead_code(g: &mut Graph) -> usize {
    let mut used = vec![false; g.values.len()];
    for &o in &g.outputs {
        used[o] = true;
    }
    let mut keep = vec![false; g.nodes.len()];
    for (k, n) in g.nodes.iter().enumerate().rev() {
        let effect = match &n.kind {
            NodeKind::Op(e) => !pure(e),
            NodeKind::WithEffects(_) => true,
            _ => false,
        };
        if effect || n.outputs.iter().any(|&o| used[o]) {
            keep[k] = true;
            for &i in &n.inputs {
                used[i] = true;
            }
        }
    }
    let before = g.nodes.len();
    let mut k = 0;
    g.nodes.retain(|_| {
        k += 1;
        keep[k - 1]
    });
    before - g.nodes.len()
}

/// A key for constants that compare by value (not tensors, generators or
/// lists of tensors). Floats compare by their bits.
fn constant_key(v: &IValue) -> Option<String> {
    match v {
        IValue::Tensor(_)
        | IValue::Generator(_)
        | IValue::TensorList(_)
        | IValue::OptTensorList(_)
        | IValue::Tuple(_) => None,
        IValue::Float(x) => Some(format!("f{:?}", x.to_bits())),
        IValue::FloatList(l) => Some(format!(
            "fl{:?}",
            l.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
        )),
        other => Some(crate::print::literal(other)),
    }
}

/// Common-subexpression elimination: equal constants and pure ops on the
/// same values compute once. Returns how many nodes were merged.
pub fn eliminate_common_subexpressions(g: &mut Graph) -> usize {
    let ops_too = !has_inplace(g);
    let mut seen: HashMap<String, Vec<ValueId>> = HashMap::new();
    let mut merged = 0;
    for k in 0..g.nodes.len() {
        let n = &g.nodes[k];
        let key = match &n.kind {
            NodeKind::Constant(c) => {
                constant_key(c).map(|s| format!("const {s} {}", g.values[n.outputs[0]].ty))
            }
            NodeKind::Op(e) if ops_too && pure(e) => Some(format!("{} {:?}", e.schema, n.inputs)),
            NodeKind::GetAttr(name) => Some(format!("attr {name} {:?}", n.inputs)),
            _ => None,
        };
        let Some(key) = key else { continue };
        match seen.get(&key) {
            Some(first) if first.len() == n.outputs.len() => {
                let (olds, news) = (n.outputs.clone(), first.clone());
                for (o, f) in olds.into_iter().zip(news) {
                    replace_uses(g, o, f);
                }
                merged += 1;
            }
            _ => {
                seen.insert(key, n.outputs.clone());
            }
        }
    }
    eliminate_dead_code(g);
    merged
}

/// Each value's defining node, by index.
pub(crate) fn producers(g: &Graph) -> HashMap<ValueId, usize> {
    g.nodes
        .iter()
        .enumerate()
        .flat_map(|(k, n)| n.outputs.iter().map(move |&o| (o, k)))
        .collect()
}

/// Each value's readers, by node index (`usize::MAX` for a graph output).
pub(crate) fn users(g: &Graph) -> HashMap<ValueId, Vec<usize>> {
    let mut users: HashMap<ValueId, Vec<usize>> = HashMap::new();
    for (k, n) in g.nodes.iter().enumerate() {
        for &i in &n.inputs {
            users.entry(i).or_default().push(k);
        }
    }
    for &o in &g.outputs {
        users.entry(o).or_default().push(usize::MAX);
    }
    users
}

/// The one node reading `v`, when exactly one node (and not the graph's
/// outputs) reads it.
pub(crate) fn sole_user(users: &HashMap<ValueId, Vec<usize>>, v: ValueId) -> Option<usize> {
    match users.get(&v).map(Vec::as_slice) {
        Some([k]) if *k != usize::MAX => Some(*k),
        _ => None,
    }
}

/// A constant node for `c` and its new value; passes collect them and put
/// them first with [`prepend`] (a constant has no inputs, so every node
/// may read it from there).
pub(crate) fn constant_node(g: &mut Graph, c: IValue) -> Node {
    let v = g.add_value(crate::ir::ValueType::of(&c), None);
    Node {
        kind: NodeKind::Constant(c),
        inputs: vec![],
        outputs: vec![v],
    }
}

/// Put `nodes` ahead of every other node.
pub(crate) fn prepend(g: &mut Graph, nodes: Vec<Node>) {
    g.nodes.splice(0..0, nodes);
}

/// The constant `v` holds, through the map from values to their nodes.
pub(crate) fn constant_of<'g>(
    g: &'g Graph,
    producer: &HashMap<ValueId, usize>,
    v: ValueId,
) -> Option<&'g IValue> {
    match &g.nodes[*producer.get(&v)?].kind {
        NodeKind::Constant(c) => Some(c),
        _ => None,
    }
}

fn is_number(v: Option<&IValue>, x: f64) -> bool {
    match v {
        Some(IValue::Int(i)) => *i as f64 == x,
        Some(IValue::Float(f)) => *f == x,
        Some(IValue::Tensor(t)) if t.dim() == 0 => t.item_f64().is_ok_and(|f| f == x),
        _ => false,
    }
}

/// Peephole simplification: `x * 1`, `x / 1`, `x + 0`, `x - 0` (with
/// alpha 1) and `transpose(transpose(x, a, b), a, b)` / `t(t(x))` become
/// `x` where the result has `x`'s type. Returns how many were rewritten.
pub fn peephole(g: &mut Graph) -> usize {
    if has_inplace(g) {
        return 0;
    }
    let producer = producers(g);
    let mut rewrites = 0;
    // one node at a time, each rewrite applied before the next node is
    // looked at, so chains (`x * 1 + 0`) collapse in one pass
    for k in 0..g.nodes.len() {
        let n = &g.nodes[k];
        let NodeKind::Op(e) = &n.kind else { continue };
        let (name, ins) = (e.schema.name.as_str(), &n.inputs);
        let unit = |i: usize, x: f64| {
            ins.get(i)
                .is_some_and(|&v| is_number(constant_of(g, &producer, v), x))
        };
        let alpha_one = ins.len() < 3 || unit(2, 1.0);
        let simplified = match name {
            "mul" if unit(1, 1.0) => Some(ins[0]),
            "mul" if unit(0, 1.0) => Some(ins[1]),
            "div" if ins.len() == 2 && unit(1, 1.0) => Some(ins[0]),
            "add" if alpha_one && unit(1, 0.0) => Some(ins[0]),
            "sub" if alpha_one && unit(1, 0.0) => Some(ins[0]),
            "t" => producer.get(&ins[0]).and_then(|&p| match &g.nodes[p].kind {
                NodeKind::Op(pe) if pe.schema.name == "t" => Some(g.nodes[p].inputs[0]),
                _ => None,
            }),
            "transpose" => producer.get(&ins[0]).and_then(|&p| {
                let pn = &g.nodes[p];
                // the same constant dims (transpose's are ints)
                let same = |a: usize| {
                    matches!(
                        (constant_of(g, &producer, pn.inputs[a]), constant_of(g, &producer, ins[a])),
                        (Some(IValue::Int(x)), Some(IValue::Int(y))) if x == y
                    )
                };
                match &pn.kind {
                    NodeKind::Op(pe) if pe.schema.name == "transpose" && same(1) && same(2) => {
                        Some(pn.inputs[0])
                    }
                    _ => None,
                }
            }),
            _ => None,
        };
        let out = n.outputs[0];
        if let Some(x) = simplified {
            if g.values[x].ty == g.values[out].ty {
                replace_uses(g, out, x);
                rewrites += 1;
            }
        }
    }
    eliminate_dead_code(g);
    rewrites
}

/// Constant folding: pure ops whose inputs are all constants run now and
/// become constants. Returns how many nodes were folded.
pub fn fold_constants(g: &mut Graph) -> Result<usize> {
    let mut known: HashMap<ValueId, IValue> = HashMap::new();
    let mut folded = 0;
    for k in 0..g.nodes.len() {
        let n = &g.nodes[k];
        match &n.kind {
            NodeKind::Constant(c) => {
                known.insert(n.outputs[0], c.clone());
            }
            NodeKind::Op(e)
                if pure(e)
                    && n.outputs.len() == 1
                    && n.inputs.iter().all(|i| known.contains_key(i)) =>
            {
                let args = n.inputs.iter().map(|i| known[i].clone()).collect();
                // an op that fails on these constants fails at run time too:
                // leave it in the graph
                let Ok(out) = ferrotorch_core::autograd::with_no_grad(|| call_bound(e, args))
                else {
                    continue;
                };
                if matches!(out, IValue::Tuple(_) | IValue::TensorList(_)) {
                    continue;
                }
                let out = match out {
                    IValue::Tensor(t) => IValue::Tensor(t.detach()),
                    v => v,
                };
                known.insert(n.outputs[0], out.clone());
                let node = &mut g.nodes[k];
                node.kind = NodeKind::Constant(out);
                node.inputs.clear();
                folded += 1;
            }
            _ => {}
        }
    }
    eliminate_dead_code(g);
    Ok(folded)
}

/// Inline every submodule call and fusion group (`_jit_pass_inline`).
/// Returns how many there were at the top level.
pub fn inline(g: &mut Graph) -> Result<usize> {
    let calls = g
        .nodes
        .iter()
        .filter(|n| {
            matches!(
                n.kind,
                NodeKind::CallMethod { .. } | NodeKind::FusionGroup(_)
            )
        })
        .count();
    if calls > 0 {
        *g = crate::inline::inline_calls(g)?;
    }
    Ok(calls)
}

/// The default pipeline (Note [Pass order]).
pub fn optimize(g: &mut Graph) -> Result<()> {
    inline(g)?;
    fold_constants(g)?;
    peephole(g);
    eliminate_common_subexpressions(g);
    eliminate_dead_code(g);
    Ok(())
}

/// `torch.jit.optimize_for_inference`: freeze, then [`optimize`].
pub fn optimize_for_inference(m: &ScriptModule) -> Result<ScriptModule> {
    let mut out = m.clone();
    freeze(&mut out)?;
    fuse_conv_blocks(&mut out.graph)?;
    fold_conv_batch_norm(&mut out.graph)?;
    optimize(&mut out.graph)?;
    fuse_elementwise(&mut out.graph);
    Ok(out)
}

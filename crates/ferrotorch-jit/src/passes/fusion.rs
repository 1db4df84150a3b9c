//! Grouping elementwise chains into `prim::FusionGroup` nodes, each a
//! subgraph the code generator (a later issue) compiles to one loop; the
//! interpreter runs a group's body node by node.

use super::{has_inplace, pure};
use crate::fuser::rows::{row_op, Arg};
use crate::ir::{Graph, Node, NodeKind, ValueId, ValueType};
use ferrotorch_codegen::expr::Binary;
use ferrotorch_core::dispatch::IValue;
use ferrotorch_core::rows;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// Elementwise ops without a pointwise row the lowering still compiles:
/// `clamp`'s (tensor or number bounds), compositions written in the
/// lowering, compares and `where`. The rest fuse because their row has a
/// value (Note [Pointwise rows]).
const ELEMENTWISE: &[&str] = &[
    "clamp",
    "square",
    "clamp_min",
    "clamp_max",
    "gt",
    "lt",
    "ge",
    "le",
    "eq",
    "ne",
    "where",
];

/// Whether op `name` is computed element by element from broadcast
/// inputs: it has a pointwise or activation row with a value, or is one
/// of [`ELEMENTWISE`].
fn elementwise_op(name: &str) -> bool {
    rows::unary(name).is_some_and(|r| r.value().is_some())
        || rows::binary(name).is_some_and(|r| r.prim.is_some())
        || rows::act(name).is_some()
        || ELEMENTWISE.contains(&name)
}

/// Whether elementwise op `name` needs a polynomial or host function.
fn transcendental_op(name: &str) -> bool {
    rows::unary(name).is_some_and(|r| r.transcendental())
        || rows::binary(name).is_some_and(|r| r.prim == Some(Binary::Pow))
        || rows::act(name).is_some_and(|r| r.transcendental())
}

fn is_elementwise(n: &Node) -> bool {
    matches!(&n.kind, NodeKind::Op(e)
        if pure(e) && n.outputs.len() == 1 && elementwise_op(e.schema.name.as_str()))
}

/// Group each run of two or more consecutive elementwise ops (constants
/// between them moved to the front of the graph), or of one or more
/// followed by a reduction over the last dimension (softmax, log-softmax,
/// sum, mean, amax, layer norm) of their result, into one
/// `prim::FusionGroup` whose body holds them, the scalar constants they
/// read copied in. Graphs with in-place ops are left alone (aliasing).
/// Returns how many groups were made.
pub fn fuse_elementwise(g: &mut Graph) -> usize {
    if has_inplace(g) {
        return 0;
    }
    // constants have no inputs: hoisting them keeps the order valid and
    // makes elementwise chains contiguous
    let (consts, rest): (Vec<Node>, Vec<Node>) = std::mem::take(&mut g.nodes)
        .into_iter()
        .partition(|n| matches!(n.kind, NodeKind::Constant(_)));
    let const_of: HashMap<ValueId, Node> =
        consts.iter().map(|n| (n.outputs[0], n.clone())).collect();
    g.nodes = consts;
    let mut groups = 0;
    let mut k = 0;
    while k < rest.len() {
        let mut end = k;
        while end < rest.len() && is_elementwise(&rest[end]) {
            end += 1;
        }
        // a run ending in a reduction over the last dimension takes it in
        // (Note [Row kernels] in ferrotorch-codegen)
        if end > k
            && end < rest.len()
            && row_tail(g, &const_of, &rest[k..end], &rest[end], &rest[end + 1..])
        {
            end += 1;
        } else if end - k < 2 {
            g.nodes.push(rest[k].clone());
            k += 1;
            continue;
        }
        let members = &rest[k..end];
        let used_later: HashSet<ValueId> = rest[end..]
            .iter()
            .flat_map(|n| n.inputs.iter().copied())
            .chain(g.outputs.iter().copied())
            .collect();
        let node = group(g, members, &const_of, &used_later);
        g.nodes.push(node);
        groups += 1;
        k = end;
    }
    // the hoisted scalar constants the groups copied in are dead outside
    if groups > 0 {
        super::eliminate_dead_code(g);
    }
    groups
}

/// Whether `row` may end the elementwise run `run`: it is a row op
/// (`fuser::rows`) on a value the run computes, its other tensors come
/// from outside the run, and nothing after it reads another value of
/// the run than the row op's input (a row group returns the row op's
/// result, and its input too where later nodes read it: a residual
/// stream before its layer norm).
fn row_tail(
    g: &Graph,
    const_of: &HashMap<ValueId, Node>,
    run: &[Node],
    row: &Node,
    after: &[Node],
) -> bool {
    let NodeKind::Op(e) = &row.kind else {
        return false;
    };
    if !pure(e) || row.outputs.len() != 1 {
        return false;
    }
    // a row kernel evaluates its prologue in 128-bit registers: a
    // transcendental there costs more than the eager kernels' wide loops
    // save (layer_norm(gelu(x)) ran 5x slower fused): such a run is
    // fused without the reduction (Note [Blocked kernels])
    if run
        .iter()
        .any(|n| matches!(&n.kind, NodeKind::Op(e) if transcendental_op(&e.schema.name)))
    {
        return false;
    }
    let defined: HashSet<ValueId> = run.iter().flat_map(|n| n.outputs.clone()).collect();
    let Some(&x) = row.inputs.first() else {
        return false;
    };
    if !defined.contains(&x) || row.inputs[1..].iter().any(|i| defined.contains(i)) {
        return false;
    }
    let later = after
        .iter()
        .flat_map(|n| n.inputs.iter())
        .chain(g.outputs.iter());
    if later.clone().any(|v| *v != x && defined.contains(v)) {
        return false;
    }
    let ValueType::Tensor { sizes, .. } = &g.values[x].ty else {
        return false;
    };
    let mut args = Vec::with_capacity(e.schema.args.len());
    for (i, a) in e.schema.args.iter().enumerate() {
        let arg = match row.inputs.get(i) {
            Some(v) => match (const_of.get(v), &g.values[*v].ty) {
                // a tensor constant (a frozen weight) is a group input
                (Some(c), _) => match &c.kind {
                    NodeKind::Constant(IValue::Tensor(_)) => Arg::Tensor,
                    NodeKind::Constant(c) => Arg::Const(c.clone()),
                    _ => return false,
                },
                (None, ValueType::Tensor { .. }) => Arg::Tensor,
                _ => return false,
            },
            None => match &a.default {
                Some(d) => Arg::Const(d.clone()),
                None => return false,
            },
        };
        args.push(arg);
    }
    let last = sizes.last().copied().unwrap_or(0);
    row_op(&e.schema.name, &args, sizes.len(), last).is_some()
}

/// One fusion group for `members`.
fn group(
    g: &Graph,
    members: &[Node],
    const_of: &HashMap<ValueId, Node>,
    used_later: &HashSet<ValueId>,
) -> Node {
    let defined: HashSet<ValueId> = members.iter().flat_map(|n| n.outputs.clone()).collect();
    let mut body = Graph::default();
    let mut map: HashMap<ValueId, ValueId> = HashMap::new();
    let mut inputs = Vec::new();
    for n in members {
        for &i in &n.inputs {
            if defined.contains(&i) || map.contains_key(&i) {
                continue;
            }
            let ty = g.values[i].ty.clone();
            match const_of.get(&i) {
                // scalars are copied in; tensor constants stay outside
                Some(c) if !matches!(ty, crate::ir::ValueType::Tensor { .. }) => {
                    map.insert(i, body.add_node(c.kind.clone(), vec![], vec![ty])[0]);
                }
                _ => {
                    map.insert(i, body.add_input(ty, g.values[i].name.clone()));
                    inputs.push(i);
                }
            }
        }
        let ins = n.inputs.iter().map(|i| map[i]).collect();
        let tys = n.outputs.iter().map(|&o| g.values[o].ty.clone()).collect();
        let outs = body.add_node(n.kind.clone(), ins, tys);
        for (&o, b) in n.outputs.iter().zip(outs) {
            map.insert(o, b);
        }
    }
    let outputs: Vec<ValueId> = members
        .iter()
        .flat_map(|n| n.outputs.iter().copied())
        .filter(|o| used_later.contains(o))
        .collect();
    body.outputs = outputs.iter().map(|o| map[o]).collect();
    Node {
        kind: NodeKind::FusionGroup(Arc::new(body)),
        inputs,
        outputs,
    }
}

//! Fusing eval convolution blocks of frozen graphs into one
//! `_conv2d_affine` node: `conv2d → batch_norm (→ add residual) (→ relu)`
//! becomes the fused convolution the eager ResNet uses (Note [Fused eval
//! convolutions] in ferrotorch-core), with the batch norm's scale and
//! shift computed now, as the eager layer computes them.

use super::{constant_of, eliminate_dead_code};
use crate::ir::{Graph, Node, NodeKind, ValueId, ValueType};
use ferrotorch_core::dispatch::{find_op, IValue};
use ferrotorch_core::{DType, Result, Tensor};
use std::collections::HashMap;

fn op_named(n: &Node, name: &str, arity: usize) -> bool {
    matches!(&n.kind, NodeKind::Op(e) if e.schema.name == name && n.inputs.len() == arity)
}

/// One block found: the nodes it replaces and the fused node's inputs.
struct Block {
    nodes: Vec<usize>,
    conv: usize,
    bn: usize,
    residual: Option<ValueId>,
    relu: bool,
    out: ValueId,
}

/// Fuse every `conv2d → batch_norm(training=False) (→ add) (→ relu |
/// relu_)` chain whose convolution and batch-norm parameters are
/// constants (a frozen graph) and whose intermediate values have no other
/// use. Returns how many blocks were fused.
pub fn fuse_conv_blocks(g: &mut Graph) -> Result<usize> {
    let Some(fused_op) = find_op("_conv2d_affine") else {
        return Ok(0);
    };
    let producer = super::producers(g);
    let mut users: HashMap<ValueId, Vec<usize>> = HashMap::new();
    for (k, n) in g.nodes.iter().enumerate() {
        for &i in &n.inputs {
            users.entry(i).or_default().push(k);
        }
    }
    for &o in &g.outputs {
        users.entry(o).or_default().push(usize::MAX);
    }
    // the only user of `v`, when it has exactly one
    let sole = |v: ValueId| match users.get(&v).map(Vec::as_slice) {
        Some([k]) if *k != usize::MAX => Some(*k),
        _ => None,
    };
    let c = |v: ValueId| constant_of(g, &producer, v);
    let mut blocks = Vec::new();
    // a residual add joins two blocks' outputs: the first block claims it
    let mut claimed = std::collections::HashSet::new();
    for (k, n) in g.nodes.iter().enumerate() {
        if !op_named(n, "conv2d", 7) || !matches!(c(n.inputs[1]), Some(IValue::Tensor(_))) {
            continue;
        }
        let Some(bk) = sole(n.outputs[0]) else {
            continue;
        };
        let bn = &g.nodes[bk];
        if !op_named(bn, "batch_norm", 9)
            || bn.inputs[0] != n.outputs[0]
            || !matches!(c(bn.inputs[5]), Some(IValue::Bool(false)))
            || !matches!(c(bn.inputs[3]), Some(IValue::Tensor(_)))
            || !matches!(c(bn.inputs[4]), Some(IValue::Tensor(_)))
            || !matches!(c(bn.inputs[7]), Some(IValue::Float(_)))
            || ![1, 2]
                .iter()
                .all(|&i| matches!(c(bn.inputs[i]), Some(IValue::Tensor(_) | IValue::None)))
            || !matches!(c(n.inputs[2]), Some(IValue::Tensor(_) | IValue::None))
        {
            continue;
        }
        let mut b = Block {
            nodes: vec![k, bk],
            conv: k,
            bn: bk,
            residual: None,
            relu: false,
            out: bn.outputs[0],
        };
        if let Some(ak) = sole(b.out).filter(|k| !claimed.contains(k)) {
            let add = &g.nodes[ak];
            let is_add = matches!(&add.kind, NodeKind::Op(e) if e.schema.name == "add"
                && e.schema.overload == "Tensor")
                && (2..=3).contains(&add.inputs.len());
            let alpha_one = is_add
                && (add.inputs.len() == 2
                    || matches!(c(add.inputs[2]), Some(IValue::Int(1)))
                    || matches!(c(add.inputs[2]), Some(IValue::Float(x)) if *x == 1.0));
            if is_add && alpha_one && add.inputs[..2].contains(&b.out) {
                let other = if add.inputs[0] == b.out {
                    add.inputs[1]
                } else {
                    add.inputs[0]
                };
                // the residual must be a tensor of the output's type
                if other != b.out && g.values[other].ty == g.values[add.outputs[0]].ty {
                    b.residual = Some(other);
                    b.nodes.push(ak);
                    b.out = add.outputs[0];
                }
            }
        }
        if let Some(rk) = sole(b.out).filter(|k| !claimed.contains(k)) {
            let r = &g.nodes[rk];
            if op_named(r, "relu", 1) || op_named(r, "relu_", 1) {
                b.relu = true;
                b.nodes.push(rk);
                b.out = r.outputs[0];
            }
        }
        claimed.extend(b.nodes.iter().copied());
        blocks.push(b);
    }
    let tensor = |v: ValueId| match c(v) {
        Some(IValue::Tensor(t)) => Some(t.clone()),
        _ => None,
    };
    let mut replace: HashMap<usize, Node> = HashMap::new();
    let mut drop = vec![false; g.nodes.len()];
    let mut new_consts = Vec::new();
    for b in &blocks {
        let (conv, bn) = (&g.nodes[b.conv], &g.nodes[b.bn]);
        let Some(IValue::Float(eps)) = c(bn.inputs[7]) else {
            continue;
        };
        let (Some(_weight), Some(mean), Some(var)) = (
            tensor(conv.inputs[1]),
            tensor(bn.inputs[3]),
            tensor(bn.inputs[4]),
        ) else {
            continue;
        };
        let (gamma, beta) = (tensor(bn.inputs[1]), tensor(bn.inputs[2]));
        let (scale, mut shift) = Tensor::batch_norm_eval_affine(
            &mean,
            &var,
            gamma.as_ref(),
            beta.as_ref(),
            *eps,
            DType::F32,
        )?;
        if let Some(bias) = tensor(conv.inputs[2]) {
            // bn(conv + b) = conv·scale + (b·scale + shift)
            shift = bias.to_dtype(DType::F32)?.mul(&scale)?.add(&shift)?;
        }
        let mut inputs = vec![conv.inputs[0], conv.inputs[1]];
        for t in [scale, shift] {
            let v = g.values.len() + new_consts.len();
            new_consts.push((v, t));
            inputs.push(v);
        }
        inputs.extend_from_slice(&conv.inputs[3..7]);
        let last = *b.nodes.iter().max().expect("a block has nodes");
        replace.insert(
            last,
            Node {
                kind: NodeKind::Op(fused_op.clone()),
                inputs,
                outputs: vec![b.out],
            },
        );
        // residual and relu arguments are appended once the constants for
        // them exist (below)
        for &k in &b.nodes {
            if k != last {
                drop[k] = true;
            }
        }
    }
    if replace.is_empty() {
        return Ok(0);
    }
    // materialise the scale/shift constants, then the None/False/True
    // constants the fused nodes read
    let mut front = Vec::new();
    for (v, t) in new_consts {
        let id = g.add_value(ValueType::of_tensor(&t), None);
        debug_assert_eq!(id, v);
        front.push(Node {
            kind: NodeKind::Constant(IValue::Tensor(t)),
            inputs: vec![],
            outputs: vec![id],
        });
    }
    let none = g.add_value(ValueType::None, None);
    let yes = g.add_value(ValueType::Bool, None);
    let no = g.add_value(ValueType::Bool, None);
    for (v, c) in [
        (none, IValue::None),
        (yes, IValue::Bool(true)),
        (no, IValue::Bool(false)),
    ] {
        front.push(Node {
            kind: NodeKind::Constant(c),
            inputs: vec![],
            outputs: vec![v],
        });
    }
    let count = replace.len();
    for b in &blocks {
        let last = *b.nodes.iter().max().expect("a block has nodes");
        if let Some(n) = replace.get_mut(&last) {
            n.inputs.push(b.residual.unwrap_or(none));
            n.inputs.push(if b.relu { yes } else { no });
        }
    }
    let old = std::mem::take(&mut g.nodes);
    g.nodes = front;
    for (k, n) in old.into_iter().enumerate() {
        if let Some(f) = replace.remove(&k) {
            g.nodes.push(f);
        } else if !drop[k] {
            g.nodes.push(n);
        }
    }
    // the fused node defines the block's last value itself: nothing to
    // rewire; the batch norms' constants are now unused
    eliminate_dead_code(g);
    Ok(count)
}

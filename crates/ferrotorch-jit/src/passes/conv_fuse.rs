//! Fusing eval convolution blocks of frozen graphs into one
//! `_conv2d_affine` node: `conv2d → batch_norm (→ add residual) (→ relu)`
//! becomes the fused convolution the eager ResNet uses (Note [Fused eval
//! convolutions] in ferrotorch-core), with the batch norm's scale and
//! shift computed now, as the eager layer computes them.

use super::{constant_node, constant_of, eliminate_dead_code, prepend, sole_user};
use crate::ir::{Graph, Node, NodeKind, ValueId};
use ferrotorch_core::dispatch::{find_op, IValue};
use ferrotorch_core::{DType, Result, Tensor};
use std::collections::{HashMap, HashSet};

fn op_named(n: &Node, name: &str, arity: usize) -> bool {
    matches!(&n.kind, NodeKind::Op(e) if e.schema.name == name && n.inputs.len() == arity)
}

/// One block found: the nodes it replaces and what the fused node reads.
struct Block {
    /// The nodes it replaces; the fused node takes the last one's place.
    nodes: Vec<usize>,
    /// The convolution's input, weight, stride, padding, dilation, groups.
    conv_args: Vec<ValueId>,
    scale: Tensor,
    shift: Tensor,
    residual: Option<ValueId>,
    relu: bool,
    /// The block's result, which the fused node defines.
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
    let users = super::users(g);
    let c = |v: ValueId| constant_of(g, &producer, v);
    let tensor = |v: ValueId| match c(v) {
        Some(IValue::Tensor(t)) => Some(t.clone()),
        _ => None,
    };
    let mut blocks = Vec::new();
    // a residual add joins two blocks' outputs: the first block claims it
    let mut claimed = HashSet::new();
    for (k, n) in g.nodes.iter().enumerate() {
        if !op_named(n, "conv2d", 7) || tensor(n.inputs[1]).is_none() {
            continue;
        }
        let Some(bk) = sole_user(&users, n.outputs[0]) else {
            continue;
        };
        let bn = &g.nodes[bk];
        if !op_named(bn, "batch_norm", 9)
            || bn.inputs[0] != n.outputs[0]
            || !matches!(c(bn.inputs[5]), Some(IValue::Bool(false)))
            || ![1, 2]
                .iter()
                .all(|&i| matches!(c(bn.inputs[i]), Some(IValue::Tensor(_) | IValue::None)))
            || !matches!(c(n.inputs[2]), Some(IValue::Tensor(_) | IValue::None))
        {
            continue;
        }
        let (Some(mean), Some(var), Some(IValue::Float(eps))) =
            (tensor(bn.inputs[3]), tensor(bn.inputs[4]), c(bn.inputs[7]))
        else {
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
        if let Some(bias) = tensor(n.inputs[2]) {
            // bn(conv + b) = conv·scale + (b·scale + shift)
            shift = bias.to_dtype(DType::F32)?.mul(&scale)?.add(&shift)?;
        }
        let mut conv_args = vec![n.inputs[0], n.inputs[1]];
        conv_args.extend_from_slice(&n.inputs[3..7]);
        let mut b = Block {
            nodes: vec![k, bk],
            conv_args,
            scale,
            shift,
            residual: None,
            relu: false,
            out: bn.outputs[0],
        };
        if let Some(ak) = sole_user(&users, b.out).filter(|k| !claimed.contains(k)) {
            let add = &g.nodes[ak];
            let is_add = matches!(&add.kind, NodeKind::Op(e) if e.schema.name == "add"
                && e.schema.overload == "Tensor")
                && (2..=3).contains(&add.inputs.len());
            let alpha_one = is_add
                && (add.inputs.len() == 2
                    || matches!(c(add.inputs[2]), Some(IValue::Int(1)))
                    || matches!(c(add.inputs[2]), Some(IValue::Float(x)) if *x == 1.0));
            if alpha_one {
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
        if let Some(rk) = sole_user(&users, b.out).filter(|k| !claimed.contains(k)) {
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
    if blocks.is_empty() {
        return Ok(0);
    }
    let mut front = Vec::new();
    let mut constant = |g: &mut Graph, v: IValue| {
        let n = constant_node(g, v);
        let id = n.outputs[0];
        front.push(n);
        id
    };
    let (none, yes, no) = (
        constant(g, IValue::None),
        constant(g, IValue::Bool(true)),
        constant(g, IValue::Bool(false)),
    );
    // the fused node takes the place of the block's last node and defines
    // its result, so nothing needs rewiring
    let mut fused: HashMap<usize, Node> = HashMap::new();
    let mut drop = vec![false; g.nodes.len()];
    let count = blocks.len();
    for b in blocks {
        let mut inputs = b.conv_args[..2].to_vec();
        inputs.push(constant(g, IValue::Tensor(b.scale)));
        inputs.push(constant(g, IValue::Tensor(b.shift)));
        inputs.extend_from_slice(&b.conv_args[2..]);
        inputs.push(b.residual.unwrap_or(none));
        inputs.push(if b.relu { yes } else { no });
        let last = *b.nodes.iter().max().expect("a block has nodes");
        for &k in &b.nodes {
            drop[k] = k != last;
        }
        fused.insert(
            last,
            Node {
                kind: NodeKind::Op(fused_op.clone()),
                inputs,
                outputs: vec![b.out],
            },
        );
    }
    let old = std::mem::take(&mut g.nodes);
    g.nodes = old
        .into_iter()
        .enumerate()
        .filter(|(k, _)| !drop[*k])
        .map(|(k, n)| fused.remove(&k).unwrap_or(n))
        .collect();
    prepend(g, front);
    // the batch norms' parameters are now unused
    eliminate_dead_code(g);
    Ok(count)
}

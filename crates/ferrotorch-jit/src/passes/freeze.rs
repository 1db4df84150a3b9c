//! Freezing (attributes become constants) and, on frozen graphs, folding
//! eval-mode batch norms into the convolutions that feed them.

use super::{constant_of, eliminate_dead_code, replace_uses};
use crate::inline::inline_calls;
use crate::ir::{Graph, NodeKind, ValueId, ValueType};
use crate::module::ScriptModule;
use ferrotorch_core::dispatch::IValue;
use ferrotorch_core::{Result, Tensor};
use std::collections::HashMap;

/// Freezing (`torch.jit.freeze`): submodule calls are inlined and the
/// attributes become constants holding their current values, detached,
/// so later passes can fold over them.
pub fn freeze(m: &mut ScriptModule) -> Result<()> {
    m.graph = inline_calls(&m.graph)?;
    let values: HashMap<String, Tensor> = m
        .attrs
        .iter()
        .map(|(n, a)| (n.clone(), a.tensor().detach()))
        .collect();
    for n in &mut m.graph.nodes {
        if let NodeKind::GetAttr(name) = &n.kind {
            if let Some(t) = values.get(name) {
                n.kind = NodeKind::Constant(IValue::Tensor(t.clone()));
                n.inputs.clear();
            }
        }
    }
    for v in &mut m.graph.values {
        if let ValueType::Tensor { requires_grad, .. } = &mut v.ty {
            *requires_grad = false;
        }
    }
    m.attrs.clear();
    Ok(())
}

fn const_tensor(c: Option<&IValue>) -> Option<Option<Tensor>> {
    match c? {
        IValue::Tensor(t) => Some(Some(t.clone())),
        IValue::None => Some(None),
        _ => None,
    }
}

/// `conv2d(x, w, b) → batch_norm(·, γ, β, μ, σ², training=False, eps)`
/// with every parameter a constant becomes one `conv2d(x, w', b')`, where
/// `w' = w · γ/√(σ²+ε)` per output channel and
/// `b' = (b − μ) · γ/√(σ²+ε) + β` (what `torch.jit.freeze` does for eval
/// models). The convolution's result must have no other use. Returns how
/// many pairs were folded.
pub fn fold_conv_batch_norm(g: &mut Graph) -> Result<usize> {
    let producer = super::producers(g);
    let users = super::users(g);
    let mut folds = Vec::new();
    for (k, n) in g.nodes.iter().enumerate() {
        let NodeKind::Op(e) = &n.kind else { continue };
        if e.schema.name != "batch_norm" || !e.schema.overload.is_empty() || n.inputs.len() != 9 {
            continue;
        }
        let Some(&ck) = producer.get(&n.inputs[0]) else {
            continue;
        };
        let conv = &g.nodes[ck];
        let is_conv = matches!(&conv.kind, NodeKind::Op(ce) if ce.schema.name == "conv2d" && ce.schema.overload.is_empty() && conv.inputs.len() == 7);
        if !is_conv || super::sole_user(&users, conv.outputs[0]) != Some(k) {
            continue;
        }
        let c = |v: ValueId| constant_of(g, &producer, v);
        let (Some(Some(w)), Some(b)) = (
            const_tensor(c(conv.inputs[1])),
            const_tensor(c(conv.inputs[2])),
        ) else {
            continue;
        };
        let (Some(gamma), Some(beta), Some(Some(mean)), Some(Some(var))) = (
            const_tensor(c(n.inputs[1])),
            const_tensor(c(n.inputs[2])),
            const_tensor(c(n.inputs[3])),
            const_tensor(c(n.inputs[4])),
        ) else {
            continue;
        };
        let (Some(IValue::Bool(false)), Some(IValue::Float(eps))) =
            (c(n.inputs[5]), c(n.inputs[7]))
        else {
            continue;
        };
        // the eval batch norm as the affine map eager computes
        let (scale, shift) = Tensor::batch_norm_eval_affine(
            &mean,
            &var,
            gamma.as_ref(),
            beta.as_ref(),
            *eps,
            w.dtype(),
        )?;
        let mut per_channel = vec![1i64; w.dim()];
        per_channel[0] = w.shape()[0] as i64;
        let w2 = w.mul(&scale.reshape(&per_channel)?)?.contiguous()?;
        let b2 = match &b {
            Some(b) => b.mul(&scale)?.add(&shift)?,
            None => shift,
        };
        folds.push((k, ck, w2, b2));
    }
    let count = folds.len();
    let mut front = Vec::with_capacity(2 * count);
    for (k, ck, w2, b2) in folds {
        for (i, t) in [(1, w2), (2, b2)] {
            let node = super::constant_node(g, IValue::Tensor(t.detach()));
            g.nodes[ck].inputs[i] = node.outputs[0];
            front.push(node);
        }
        let (conv_out, bn_out) = (g.nodes[ck].outputs[0], g.nodes[k].outputs[0]);
        replace_uses(g, bn_out, conv_out);
    }
    if count > 0 {
        super::prepend(g, front);
        eliminate_dead_code(g);
    }
    Ok(count)
}

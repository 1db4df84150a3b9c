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
    let mut uses: HashMap<ValueId, usize> = HashMap::new();
    for n in &g.nodes {
        for &i in &n.inputs {
            *uses.entry(i).or_default() += 1;
        }
    }
    for &o in &g.outputs {
        *uses.entry(o).or_default() += 1;
    }
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
        if !is_conv || uses.get(&conv.outputs[0]) != Some(&1) {
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
        folds.push((k, ck, w, b, gamma, beta, mean, var, *eps));
    }
    let count = folds.len();
    for (done, (k, ck, w, b, gamma, beta, mean, var, eps)) in folds.into_iter().enumerate() {
        let scale = var.add(eps)?.rsqrt()?;
        let scale = match &gamma {
            Some(gm) => scale.mul(gm)?,
            None => scale,
        };
        let cout = w.shape()[0];
        let mut per_channel = vec![1i64; w.dim()];
        per_channel[0] = cout as i64;
        let w2 = w.mul(&scale.reshape(&per_channel)?)?.contiguous()?;
        let shifted = match &b {
            Some(b) => b.sub(&mean)?,
            None => mean.neg()?,
        };
        let mut b2 = shifted.mul(&scale)?;
        if let Some(beta) = &beta {
            b2 = b2.add(beta)?;
        }
        let wv = g.add_node(
            NodeKind::Constant(IValue::Tensor(w2.detach())),
            vec![],
            vec![ValueType::of_tensor(&w2)],
        )[0];
        let bv = g.add_node(
            NodeKind::Constant(IValue::Tensor(b2.detach())),
            vec![],
            vec![ValueType::of_tensor(&b2)],
        )[0];
        // the new constants go first, so they are defined before the conv
        let consts: Vec<_> = g.nodes.drain(g.nodes.len() - 2..).collect();
        g.nodes.splice(0..0, consts);
        // every fold so far put two nodes in front
        let (ck, k) = (ck + 2 * (done + 1), k + 2 * (done + 1));
        g.nodes[ck].inputs[1] = wv;
        g.nodes[ck].inputs[2] = bv;
        let (conv_out, bn_out) = (g.nodes[ck].outputs[0], g.nodes[k].outputs[0]);
        replace_uses(g, bn_out, conv_out);
    }
    if count > 0 {
        eliminate_dead_code(g);
    }
    Ok(count)
}

//! Submodule calls kept as `prim::CallMethod` (Note [Module hierarchy]):
//! in-place writes the caller sees, shared modules, tied weights read
//! from outside a submodule, and the inline pass.

#![allow(clippy::cloned_ref_to_slice_refs)]

use ferrotorch_core::native::random::manual_seed;
use ferrotorch_core::{autograd, DType, Result, Tensor};
use ferrotorch_jit::ir::{Graph, NodeKind};
use ferrotorch_jit::passes::inline;
use ferrotorch_jit::trace_module;
use ferrotorch_nn as nn;
use nn::{Forward, Module};

fn kinds(g: &Graph) -> Vec<String> {
    g.nodes
        .iter()
        .filter(|n| !matches!(n.kind, NodeKind::GetAttr(_) | NodeKind::Constant(_)))
        .map(|n| n.kind_name())
        .collect()
}

fn randn(s: &[usize]) -> Tensor {
    Tensor::randn(s, DType::F32).unwrap()
}

fn params(m: &dyn Module) -> Vec<Tensor> {
    m.parameters().iter().map(|p| p.tensor()).collect()
}

/// Gradients of `sum(y²)` for the module's parameters.
fn grads(y: &Tensor, ps: &[Tensor]) -> Result<Vec<Vec<f32>>> {
    autograd::grad(&[y.pow(2.0)?.sum()?], ps, None, None, false, false)?
        .into_iter()
        .map(|g| g.unwrap().to_vec::<f32>())
        .collect()
}

#[test]
fn an_inplace_submodule_is_inlined_into_its_caller() -> Result<()> {
    manual_seed(11);
    let net = nn::Sequential::new()
        .append(nn::Linear::new(3, 4, true)?)
        .append(nn::ReLU::inplace())
        .append(nn::Linear::new(4, 2, true)?);
    let m = trace_module(&net, &[randn(&[2, 3])], |n, t| Ok(vec![n.forward(&t[0])?]))?;
    // ReLU(inplace) writes the value its caller holds: its relu_ is
    // recorded in the caller; the Linears stay calls
    assert_eq!(
        kinds(m.graph()),
        ["prim::CallMethod", "aten::relu_", "prim::CallMethod"]
    );
    let x = randn(&[5, 3]);
    let (want, got) = (net.forward(&x)?, m.forward(&[x.clone()])?.remove(0));
    assert_eq!(got.to_vec::<f32>()?, want.to_vec::<f32>()?);
    assert_eq!(grads(&got, &params(&net))?, grads(&want, &params(&net))?);
    Ok(())
}

#[derive(nn::Module)]
#[module(crate = "ferrotorch_nn")]
struct Tied {
    a: nn::Linear,
    b: nn::Linear,
}

impl Forward for Tied {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        // a is called twice; b reads a's weight (tied)
        let h = self.a.call(x)?.tanh()?;
        let h = self.a.call(&h)?;
        self.b.call(&h)
    }
}

#[test]
fn shared_modules_and_tied_weights() -> Result<()> {
    manual_seed(12);
    let a = nn::Linear::new(4, 4, true)?;
    let mut b = nn::Linear::new(4, 4, false)?;
    b.weight = a.weight.clone();
    let net = Tied { a, b };
    // the tied weight is listed once, under a
    let names: Vec<String> = net.named_parameters().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["a.weight", "a.bias"]);
    let m = trace_module(&net, &[randn(&[2, 4])], |n, t| Ok(vec![n.forward(&t[0])?]))?;
    assert_eq!(
        kinds(m.graph()),
        [
            "prim::CallMethod",
            "aten::tanh",
            "prim::CallMethod",
            "prim::CallMethod"
        ]
    );
    // b's body reads the tied weight as an extra input, from a.weight
    let calls: Vec<_> = m
        .graph()
        .nodes
        .iter()
        .filter(|n| matches!(n.kind, NodeKind::CallMethod { .. }))
        .collect();
    assert_eq!(calls[2].inputs.len(), 3);
    let text = m.graph().to_string();
    assert!(
        text.contains("prim::GetAttr[name=\"a.weight\"](%self)"),
        "{text}"
    );
    let x = randn(&[3, 4]);
    let (want, got) = (net.forward(&x)?, m.forward(&[x.clone()])?.remove(0));
    assert_eq!(got.to_vec::<f32>()?, want.to_vec::<f32>()?);
    assert_eq!(grads(&got, &params(&net))?, grads(&want, &params(&net))?);
    // the inline pass: three calls at the top, none after; the same values
    let mut flat = m.clone();
    assert_eq!(inline(flat.graph_mut())?, 3);
    assert_eq!(
        kinds(flat.graph()),
        ["aten::linear", "aten::tanh", "aten::linear", "aten::linear"]
    );
    let attrs: Vec<String> = flat
        .graph()
        .nodes
        .iter()
        .filter_map(|n| match &n.kind {
            NodeKind::GetAttr(name) => Some(name.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        attrs,
        // b's read of the tied weight happens in the caller, before b's call
        ["a.weight", "a.bias", "a.weight", "a.bias", "a.weight"]
    );
    assert_eq!(
        flat.forward(&[x.clone()])?[0].to_vec::<f32>()?,
        want.to_vec::<f32>()?
    );
    assert_eq!(inline(flat.graph_mut())?, 0);
    Ok(())
}

//! Tracing to the IR and running it: golden IR text, outputs equal to eager
//! bit for bit, gradients through a traced module equal to eager, views,
//! lists and in-place ops recorded as such, and the tracer's state.

#![allow(clippy::cloned_ref_to_slice_refs)]

use ferrotorch_core::native::cat;
use ferrotorch_core::native::random::manual_seed;
use ferrotorch_core::{autograd, DType, Result, Tensor};
use ferrotorch_jit::ir::NodeKind;
use ferrotorch_jit::{is_tracing, trace, trace_module};
use ferrotorch_nn as nn;
use nn::{Forward, Module};

fn randn(shape: &[usize]) -> Tensor {
    Tensor::randn(shape, DType::F32).unwrap()
}

/// The op nodes of a traced graph, in order.
fn aten_ops(m: &ferrotorch_jit::ScriptModule) -> Vec<String> {
    m.graph()
        .nodes
        .iter()
        .map(|n| n.kind_name())
        .filter(|k| k.starts_with("aten"))
        .collect()
}

fn mlp() -> nn::Sequential {
    nn::Sequential::new()
        .append(nn::Linear::new(3, 4, true).unwrap())
        .append(nn::ReLU::new())
        .append(nn::Linear::new(4, 2, true).unwrap())
}

#[test]
fn traced_mlp_prints_runs_and_trains_like_eager() -> Result<()> {
    manual_seed(0);
    let net = mlp();
    let x = randn(&[2, 3]);
    let m = trace_module(&net, &[x.clone()], |n, t| Ok(vec![n.forward(&t[0])?]))?;
    // submodule calls are kept as calls (Note [Module hierarchy])
    let want = "\
graph(%self : __torch__.Sequential,
      %x : Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu)):
  %_0 : __torch__.Linear = prim::GetAttr[name=\"0\"](%self)
  %3 : Float(2, 4, strides=[4, 1], requires_grad=1, device=cpu) = prim::CallMethod[name=\"forward\"](%_0, %x)
  %_1 : __torch__.ReLU = prim::GetAttr[name=\"1\"](%self)
  %5 : Float(2, 4, strides=[4, 1], requires_grad=1, device=cpu) = prim::CallMethod[name=\"forward\"](%_1, %3)
  %_2 : __torch__.Linear = prim::GetAttr[name=\"2\"](%self)
  %7 : Float(2, 2, strides=[2, 1], requires_grad=1, device=cpu) = prim::CallMethod[name=\"forward\"](%_2, %5)
  return (%7)
";
    assert_eq!(m.graph().to_string(), want);
    let want = "\
def forward(self,
    x: Tensor) -> Tensor:
  _0 = getattr(self, \"0\")
  _3 = (_0).forward(x)
  _1 = getattr(self, \"1\")
  _5 = (_1).forward(_3)
  _2 = getattr(self, \"2\")
  _7 = (_2).forward(_5)
  return _7
";
    assert_eq!(m.code(), want);
    // the body of the first call: the Linear's own graph
    let NodeKind::CallMethod { graph: body, .. } = &m.graph().nodes[1].kind else {
        panic!("expected a call");
    };
    let want = "\
graph(%self : __torch__.Linear,
      %x : Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu)):
  %weight : Float(4, 3, strides=[3, 1], requires_grad=1, device=cpu) = prim::GetAttr[name=\"weight\"](%self)
  %bias : Float(4, strides=[1], requires_grad=1, device=cpu) = prim::GetAttr[name=\"bias\"](%self)
  %4 : Float(2, 4, strides=[4, 1], requires_grad=1, device=cpu) = aten::linear(%x, %weight, %bias)
  return (%4)
";
    assert_eq!(body.to_string(), want);
    let want = "\
graph(%self : __torch__.Sequential,
      %x : Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu)):
  %0_weight : Float(4, 3, strides=[3, 1], requires_grad=1, device=cpu) = prim::GetAttr[name=\"0.weight\"](%self)
  %0_bias : Float(4, strides=[1], requires_grad=1, device=cpu) = prim::GetAttr[name=\"0.bias\"](%self)
  %4 : Float(2, 4, strides=[4, 1], requires_grad=1, device=cpu) = aten::linear(%x, %0_weight, %0_bias)
  %5 : Float(2, 4, strides=[4, 1], requires_grad=1, device=cpu) = aten::relu(%4)
  %2_weight : Float(2, 4, strides=[4, 1], requires_grad=1, device=cpu) = prim::GetAttr[name=\"2.weight\"](%self)
  %2_bias : Float(2, strides=[1], requires_grad=1, device=cpu) = prim::GetAttr[name=\"2.bias\"](%self)
  %8 : Float(2, 2, strides=[2, 1], requires_grad=1, device=cpu) = aten::linear(%5, %2_weight, %2_bias)
  return (%8)
";
    assert_eq!(m.inlined_graph()?.to_string(), want);
    // other inputs, other batch size: the same values as eager, bit for bit
    let x2 = randn(&[5, 3]);
    let eager = net.forward(&x2)?;
    let traced = m.forward(&[x2.clone()])?.remove(0);
    assert_eq!(traced.to_vec::<f32>()?, eager.to_vec::<f32>()?);
    // gradients through the traced module reach the module's own parameters
    let params: Vec<Tensor> = net.parameters().iter().map(|p| p.tensor()).collect();
    let ge = autograd::grad(&[eager.pow(2.0)?.sum()?], &params, None, None, false, false)?;
    let gt = autograd::grad(
        &[traced.pow(2.0)?.sum()?],
        &params,
        None,
        None,
        false,
        false,
    )?;
    for (a, b) in ge.iter().zip(&gt) {
        assert_eq!(
            a.as_ref().unwrap().to_vec::<f32>()?,
            b.as_ref().unwrap().to_vec::<f32>()?
        );
    }
    Ok(())
}

#[test]
fn traced_cnn_matches_eager() -> Result<()> {
    manual_seed(1);
    let conv = nn::Conv2d::new(
        2,
        4,
        3,
        nn::ConvOptions {
            padding: 1.into(),
            ..Default::default()
        },
    )?;
    let head = nn::Linear::new(4 * 4 * 4, 3, true)?;
    let f = |x: &Tensor| -> Result<Tensor> {
        let y = conv
            .forward(x)?
            .relu()?
            .max_pool2d(&[2, 2], &[2, 2], &[0, 0], &[1, 1], false)?;
        head.forward(&y.flatten(1, -1)?)?.log_softmax(-1, None)
    };
    let x = randn(&[2, 2, 8, 8]);
    let m = trace(|t| Ok(vec![f(&t[0])?]), &[x.clone()])?;
    let kinds = aten_ops(&m);
    assert_eq!(
        kinds,
        [
            "aten::conv2d",
            "aten::relu",
            "aten::max_pool2d",
            "aten::flatten",
            "aten::linear",
            "aten::log_softmax"
        ]
    );
    let x2 = randn(&[3, 2, 8, 8]);
    assert_eq!(
        m.forward(&[x2.clone()])?[0].to_vec::<f32>()?,
        f(&x2)?.to_vec::<f32>()?
    );
    Ok(())
}

#[test]
fn lists_views_and_inplace_ops_are_recorded_as_such() -> Result<()> {
    let x = randn(&[4, 6]);
    let f = |t: &[Tensor]| -> Result<Vec<Tensor>> {
        let parts = t[0].split(3, 1)?;
        let y = cat(&[parts[1].clone(), parts[0].clone()], 0)?; // [8, 3]
        let z = y.t()?.contiguous()?;
        z.mul_(2.0)?;
        Ok(vec![z.add(1.0)?])
    };
    let m = trace(f, &[x.clone()])?;
    let text = m.graph().to_string();
    for k in [
        "aten::split",
        "prim::ListUnpack",
        "prim::ListConstruct",
        "aten::cat",
        "aten::t",
        "aten::contiguous",
        "aten::mul_",
        "aten::add",
    ] {
        assert!(text.contains(k), "{k} missing from\n{text}");
    }
    // the in-place result is a new value that the add reads (SSA)
    let g = m.graph();
    let mul = g
        .nodes
        .iter()
        .find(|n| n.kind_name() == "aten::mul_")
        .unwrap();
    let add = g
        .nodes
        .iter()
        .find(|n| n.kind_name() == "aten::add")
        .unwrap();
    assert_eq!(add.inputs[0], mul.outputs[0]);
    let x2 = randn(&[4, 6]);
    assert_eq!(
        m.forward(&[x2.clone()])?[0].to_vec::<f32>()?,
        f(&[x2])?[0].to_vec::<f32>()?
    );
    Ok(())
}

#[test]
fn tracing_state_is_per_call_and_cleaned_up() -> Result<()> {
    let x = randn(&[3]);
    assert!(!is_tracing());
    let e = trace(
        |t| {
            assert!(is_tracing());
            let inner = trace(|u| Ok(vec![u[0].exp()?]), t);
            assert!(inner.err().unwrap().to_string().contains("already tracing"));
            ferrotorch_core::bail!(Value, "user error inside the traced function")
        },
        &[x.clone()],
    )
    .err()
    .unwrap();
    assert!(e.to_string().contains("user error"));
    assert!(!is_tracing());
    // ops after a trace are not recorded anywhere and run as usual
    assert_eq!(x.exp()?.to_vec::<f32>()?.len(), 3);
    // another thread is never tracing
    let m = trace(
        |t| {
            std::thread::spawn(|| assert!(!is_tracing()))
                .join()
                .unwrap();
            Ok(vec![t[0].sin()?])
        },
        &[x.clone()],
    )?;
    assert_eq!(m.graph().nodes.len(), 1);
    // a wrong number of inputs is an error, not a panic
    assert!(m.forward(&[]).is_err());
    Ok(())
}

/// A view of a traced value made where the tracer cannot see it (here:
/// with the Tracer key excluded, as an op without a schema would be) is an
/// error naming the problem, not a constant that silently ignores the
/// input.
#[test]
fn values_from_unseen_ops_are_refused() -> Result<()> {
    use ferrotorch_core::dispatch::{DispatchKey, ExcludeGuard};
    let x = randn(&[4, 3]);
    let e = trace(
        |t| {
            let hidden = {
                let _off = ExcludeGuard::new(DispatchKey::Tracer);
                t[0].t()?
            };
            Ok(vec![hidden.exp()?])
        },
        &[x.clone()],
    )
    .err()
    .unwrap();
    assert!(
        e.to_string()
            .contains("made by an op the tracer did not record"),
        "{e}"
    );
    Ok(())
}

/// ResNet-18 (eval mode) traced, then run on another input: the same
/// values as eager, bit for bit.
#[test]
fn traced_resnet18_matches_eager() -> Result<()> {
    manual_seed(5);
    let net = nn::models::resnet18(10)?;
    net.eval();
    let m = trace_module(&net, &[randn(&[1, 3, 32, 32])], |n, t| {
        Ok(vec![n.forward(&t[0])?])
    })?;
    assert!(m.trace_warnings().is_empty(), "{:?}", m.trace_warnings());
    let x = randn(&[2, 3, 32, 32]);
    assert_eq!(
        m.forward(&[x.clone()])?[0].to_vec::<f32>()?,
        net.forward(&x)?.to_vec::<f32>()?
    );
    Ok(())
}

/// An LSTM (two layers, bidirectional, batch first) is recorded as one
/// `aten::lstm` node (after its zero initial states) and runs like eager.
#[test]
fn traced_lstm_matches_eager() -> Result<()> {
    manual_seed(6);
    let o = nn::RNNOptions {
        num_layers: 2,
        bidirectional: true,
        batch_first: true,
        ..Default::default()
    };
    let lstm = nn::LSTM::new(4, 5, o)?;
    let m = trace_module(&lstm, &[randn(&[3, 6, 4])], |l, t| {
        let (y, (h, c)) = l.forward(&t[0], None)?;
        Ok(vec![y, h, c])
    })?;
    let ops = aten_ops(&m);
    // the zero initial states are recorded as ops, as PyTorch does
    assert_eq!(ops, ["aten::zeros", "aten::zeros", "aten::lstm"]);
    assert!(m.trace_warnings().is_empty(), "{:?}", m.trace_warnings());
    // the zero initial states are made from the batch size as a number,
    // which the trace keeps as a constant (sizes are not traced yet): the
    // same batch, another sequence length
    let x = randn(&[3, 7, 4]);
    let got = m.forward(&[x.clone()])?;
    let (y, (h, c)) = lstm.forward(&x, None)?;
    for (a, b) in got.iter().zip([y, h, c]) {
        assert_eq!(a.to_vec::<f32>()?, b.to_vec::<f32>()?);
    }
    Ok(())
}

/// Random ops are recorded as ops: each run of the graph draws anew, and
/// the passes keep them.
#[test]
fn random_ops_are_recorded_not_baked_in() -> Result<()> {
    let x = randn(&[4]);
    let m = trace(
        |t| Ok(vec![t[0].add(&Tensor::randn(&[4], DType::F32)?)?]),
        &[x.clone()],
    )?;
    assert_eq!(aten_ops(&m), ["aten::randn", "aten::add"]);
    let (a, b) = (m.forward(&[x.clone()])?, m.forward(&[x.clone()])?);
    assert_ne!(a[0].to_vec::<f32>()?, b[0].to_vec::<f32>()?);
    let opt = ferrotorch_jit::passes::optimize_for_inference(&m)?;
    assert_eq!(aten_ops(&opt), ["aten::randn", "aten::add"]);
    Ok(())
}

/// Typed methods whose schemas have keyword-only arguments (`gelu`'s
/// `approximate`, `sum`'s `dtype`) box every argument in schema order.
#[test]
fn keyword_only_arguments_are_boxed_in_order() -> Result<()> {
    let x = randn(&[3, 5]);
    let f = |t: &[Tensor]| -> Result<Vec<Tensor>> {
        let y = t[0].gelu("tanh")?.softmax(-1, None)?;
        Ok(vec![
            y.sum()?.add(&y.mean()?)?,
            y.layer_norm(&[5], None, None, 1e-5)?,
        ])
    };
    let m = trace(f, &[x.clone()])?;
    assert_eq!(
        aten_ops(&m),
        [
            "aten::gelu",
            "aten::softmax",
            "aten::sum",
            "aten::mean",
            "aten::add",
            "aten::layer_norm"
        ]
    );
    let x2 = randn(&[3, 5]);
    for (a, b) in m.forward(&[x2.clone()])?.iter().zip(f(&[x2])?) {
        assert_eq!(a.to_vec::<f32>()?, b.to_vec::<f32>()?);
    }
    Ok(())
}

/// Note [Traced sizes]: a size read through `jit::size` and passed to an
/// op as an int (here by name, as the bindings do) is recorded as
/// `aten::size` → `prim::NumToTensor` → `aten::Int`, so the graph
/// reshapes by the size it is run with.
#[test]
fn traced_sizes_follow_the_input() -> Result<()> {
    use ferrotorch_core::dispatch::{call, IValue};
    let m = trace(
        |t| {
            let n = ferrotorch_jit::size(&t[0], 0)?;
            let sizes = IValue::SymIntList(vec![n.into(), IValue::Int(-1)]);
            Ok(vec![
                call("view", &[t[0].clone().into(), sizes], &[])?.into_tensor()?
            ])
        },
        &[randn(&[2, 3, 4])],
    )?;
    let kinds: Vec<String> = m.graph().nodes.iter().map(|n| n.kind_name()).collect();
    for k in [
        "aten::size",
        "prim::NumToTensor",
        "aten::Int",
        "prim::ListConstruct",
    ] {
        assert!(kinds.iter().any(|x| x == k), "{k} in {kinds:?}");
    }
    let out = m.forward(&[randn(&[5, 3, 4])])?;
    assert_eq!(out[0].shape(), &[5, 12]);
    // outside a trace the same call takes the size's value
    let x = randn(&[4, 3]);
    let n = ferrotorch_jit::size(&x, 0)?;
    let v = call(
        "view",
        &[
            x.into(),
            IValue::SymIntList(vec![n.into(), IValue::Int(-1)]),
        ],
        &[],
    )?;
    assert_eq!(v.into_tensor()?.shape(), &[4, 3]);
    Ok(())
}

//! The inference passes: conv + batch-norm folding on frozen graphs,
//! elementwise fusion groups, and shape/dtype propagation; IR before and
//! after, and outputs against eager.

#![allow(clippy::cloned_ref_to_slice_refs)]

use ferrotorch_core::native::random::manual_seed;
use ferrotorch_core::{DType, Result, Tensor};
use ferrotorch_jit::ir::{Graph, NodeKind, ValueType};
use ferrotorch_jit::passes::{
    fold_conv_batch_norm, freeze, fuse_elementwise, inline, optimize_for_inference,
    propagate_shapes,
};
use ferrotorch_jit::{trace, trace_module};
use ferrotorch_nn as nn;
use nn::{Forward, Module};

fn ops(g: &Graph) -> Vec<String> {
    g.nodes
        .iter()
        .filter(|n| !matches!(n.kind, NodeKind::Constant(_) | NodeKind::GetAttr(_)))
        .map(|n| n.kind_name())
        .collect()
}

fn randn(s: &[usize]) -> Tensor {
    Tensor::randn(s, DType::F32).unwrap()
}

fn assert_close(a: &Tensor, b: &Tensor, tol: f32) -> Result<()> {
    assert_eq!(a.shape(), b.shape());
    for (x, y) in a.to_vec::<f32>()?.iter().zip(b.to_vec::<f32>()?) {
        assert!((x - y).abs() <= tol * (1.0 + y.abs()), "{x} vs {y}");
    }
    Ok(())
}

fn conv(cin: usize, cout: usize, bias: bool) -> nn::Conv2d {
    nn::Conv2d::new(
        cin,
        cout,
        3,
        nn::ConvOptions {
            padding: 1.into(),
            bias,
            ..Default::default()
        },
    )
    .unwrap()
}

#[test]
fn eval_batch_norms_fold_into_convolutions() -> Result<()> {
    manual_seed(21);
    let bn = |c| nn::BatchNorm2d::new(c, Default::default()).unwrap();
    let net = nn::Sequential::new()
        .append(conv(3, 4, true))
        .append(bn(4))
        .append(nn::ReLU::new())
        .append(conv(4, 5, false))
        .append(bn(5));
    // running statistics that are not 0 and 1
    for _ in 0..3 {
        net.forward(&randn(&[4, 3, 6, 6]).mul(3.0)?.add(1.0)?)?;
    }
    net.eval();
    let x = randn(&[2, 3, 6, 6]);
    let m = trace_module(&net, &[x.clone()], |n, t| Ok(vec![n.forward(&t[0])?]))?;
    // unfrozen, the weights are attributes: nothing to fold
    let mut g = m.graph().clone();
    inline(&mut g)?;
    assert_eq!(fold_conv_batch_norm(&mut g)?, 0);
    let mut frozen = m.clone();
    freeze(&mut frozen)?;
    assert_eq!(
        ops(frozen.graph()),
        [
            "aten::conv2d",
            "aten::batch_norm",
            "aten::relu",
            "aten::conv2d",
            "aten::batch_norm"
        ]
    );
    assert_eq!(fold_conv_batch_norm(frozen.graph_mut())?, 2);
    assert_eq!(
        ops(frozen.graph()),
        ["aten::conv2d", "aten::relu", "aten::conv2d"]
    );
    let x2 = randn(&[3, 3, 6, 6]);
    let want = net.forward(&x2)?;
    assert_close(&frozen.forward(&[x2.clone()])?[0], &want, 1e-5)?;
    let inf = optimize_for_inference(&m)?;
    assert!(!ops(inf.graph()).contains(&"aten::batch_norm".to_string()));
    assert_close(&inf.forward(&[x2.clone()])?[0], &want, 1e-5)?;
    // in training mode the batch norm uses batch statistics: not folded
    net.train(true);
    let m = trace_module(&net, &[x.clone()], |n, t| Ok(vec![n.forward(&t[0])?]))?;
    let mut frozen = m.clone();
    freeze(&mut frozen)?;
    assert_eq!(fold_conv_batch_norm(frozen.graph_mut())?, 0);
    Ok(())
}

#[test]
fn elementwise_chains_become_fusion_groups() -> Result<()> {
    manual_seed(22);
    let w = randn(&[3, 4]);
    let f = |x: &Tensor| -> Result<Tensor> {
        let y = x.mul(2.0)?.add(1.0)?.relu()?;
        let z = y.matmul(&w)?;
        z.sigmoid()?.mul(&z)
    };
    let x = randn(&[2, 3]);
    let m = trace(|t| Ok(vec![f(&t[0])?]), &[x.clone()])?;
    let mut g = m.graph().clone();
    assert_eq!(fuse_elementwise(&mut g), 2);
    assert_eq!(
        ops(&g),
        ["prim::FusionGroup", "aten::matmul", "prim::FusionGroup"]
    );
    let want = "\
graph(%x : Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu)):
  %6 : Float(3, 4, strides=[4, 1], requires_grad=0, device=cpu) = prim::Constant[value=<Tensor>]()
  %5 : Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu) = prim::FusionGroup_0(%x)
  %7 : Float(2, 4, strides=[4, 1], requires_grad=0, device=cpu) = aten::matmul(%5, %6)
  %9 : Float(2, 4, strides=[4, 1], requires_grad=0, device=cpu) = prim::FusionGroup_1(%7)
  return (%9)
with prim::FusionGroup_0 = graph(%x : Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu)):
  %1 : float = prim::Constant[value=2.]()
  %2 : Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu) = aten::mul(%x, %1)
  %3 : float = prim::Constant[value=1.]()
  %4 : Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu) = aten::add(%2, %3)
  %5 : Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu) = aten::relu(%4)
  return (%5)
with prim::FusionGroup_1 = graph(%0 : Float(2, 4, strides=[4, 1], requires_grad=0, device=cpu)):
  %1 : Float(2, 4, strides=[4, 1], requires_grad=0, device=cpu) = aten::sigmoid(%0)
  %2 : Float(2, 4, strides=[4, 1], requires_grad=0, device=cpu) = aten::mul(%1, %0)
  return (%2)
";
    assert_eq!(g.to_string(), want);
    let mut fused = m.clone();
    *fused.graph_mut() = g;
    let x2 = randn(&[5, 3]);
    assert_eq!(
        fused.forward(&[x2.clone()])?[0].to_vec::<f32>()?,
        f(&x2)?.to_vec::<f32>()?
    );
    // inlining a fusion group gives back the plain chain
    let mut flat = fused.graph().clone();
    assert_eq!(inline(&mut flat)?, 2);
    assert_eq!(
        ops(&flat),
        [
            "aten::mul",
            "aten::add",
            "aten::relu",
            "aten::matmul",
            "aten::sigmoid",
            "aten::mul"
        ]
    );
    // a single elementwise op is not a group; in-place graphs are left alone
    let m = trace(|t| Ok(vec![t[0].exp()?]), &[x.clone()])?;
    assert_eq!(fuse_elementwise(&mut m.graph().clone()), 0);
    let m = trace(
        |t| {
            let y = t[0].exp()?.mul(2.0)?;
            y.add_(1.0)?;
            Ok(vec![y])
        },
        &[x.clone()],
    )?;
    assert_eq!(fuse_elementwise(&mut m.graph().clone()), 0);
    Ok(())
}

fn tensor_type(dtype: DType, sizes: &[usize]) -> ValueType {
    ValueType::Tensor {
        dtype,
        sizes: sizes.to_vec(),
        strides: Vec::new(),
        requires_grad: false,
    }
}

#[test]
fn shapes_and_dtypes_propagate_through_calls() -> Result<()> {
    manual_seed(23);
    let net = nn::Sequential::new()
        .append(nn::Linear::new(3, 4, true)?)
        .append(nn::ReLU::new())
        .append(nn::Linear::new(4, 2, true)?);
    let mut m = trace_module(&net, &[randn(&[2, 3])], |n, t| Ok(vec![n.forward(&t[0])?]))?;
    propagate_shapes(&mut m, &[tensor_type(DType::F32, &[7, 3])])?;
    let text = m.graph().to_string();
    assert!(text.contains("%x : Float(7, 3, strides=[3, 1]"), "{text}");
    assert!(
        text.contains("%7 : Float(7, 2, strides=[2, 1], requires_grad=1"),
        "{text}"
    );
    assert!(!text.contains("Float(2, "), "{text}");
    // inside the first Linear's body too
    let NodeKind::CallMethod { graph: body, .. } = &m.graph().nodes[1].kind else {
        panic!("expected a call");
    };
    assert!(body.to_string().contains("aten::linear") && body.to_string().contains("Float(7, 4"));
    // the module itself is untouched
    assert_eq!(m.forward(&[randn(&[7, 3])])?[0].shape(), &[7, 2]);
    // dtypes: a float function given doubles gives doubles
    let f = trace(|t| Ok(vec![t[0].mul(2.0)?.sum()?]), &[randn(&[4])])?;
    let mut f64m = f.clone();
    propagate_shapes(&mut f64m, &[tensor_type(DType::F64, &[5, 2])])?;
    let text = f64m.graph().to_string();
    assert!(text.contains("%4 : Double(requires_grad=0"), "{text}");
    // bad input types are errors naming what is wrong
    let e = propagate_shapes(&mut f.clone(), &[])
        .unwrap_err()
        .to_string();
    assert!(e.contains("takes 1 inputs, got 0 types"), "{e}");
    let e = propagate_shapes(&mut m.clone(), &[tensor_type(DType::F32, &[7, 5])])
        .unwrap_err()
        .to_string();
    assert!(e.contains("propagate_shapes: aten::linear"), "{e}");
    Ok(())
}

#[test]
fn resnet_blocks_fuse_into_the_eager_fused_convolution() -> Result<()> {
    manual_seed(24);
    let net = nn::models::resnet18(10)?;
    // running statistics that are not 0 and 1
    net.forward(&randn(&[2, 3, 32, 32]))?;
    net.eval();
    let m = trace_module(&net, &[randn(&[1, 3, 32, 32])], |n, t| {
        Ok(vec![n.forward(&t[0])?])
    })?;
    let inf = optimize_for_inference(&m)?;
    let kinds = ops(inf.graph());
    let fused = kinds
        .iter()
        .filter(|k| *k == "aten::_conv2d_affine")
        .count();
    // 17 convolutions on the main path and 3 downsamples
    assert_eq!(fused, 20, "{kinds:?}");
    for gone in [
        "aten::batch_norm",
        "aten::relu",
        "aten::relu_",
        "aten::conv2d",
    ] {
        assert!(!kinds.contains(&gone.to_string()), "{gone} left: {kinds:?}");
    }
    // the eager model in eval mode runs the same fused kernel, but the
    // frozen graph's 3×3 layers may take the Winograd path with their
    // filters prepacked (Note [Prepacked convolution filters]): equal up to
    // rounding, and the same bits call after call
    let x = randn(&[2, 3, 32, 32]);
    let want = net.forward(&x)?;
    let first = inf.forward(&[x.clone()])?.remove(0);
    assert_close(&first, &want, 1e-4)?;
    assert_eq!(
        inf.forward(&[x.clone()])?[0].to_vec::<f32>()?,
        first.to_vec::<f32>()?
    );
    // and with gradients wanted the op runs unfused, to the same values
    let xg = x.detach().requires_grad_(true)?;
    let y = inf.forward(&[xg.clone()])?.remove(0);
    assert_close(&y, &want, 1e-5)?;
    y.sum()?.backward()?;
    assert!(xg.grad().is_some());
    Ok(())
}

/// A frozen graph keeps its 3×3 filters' Winograd transforms between calls
/// (Note [Prepacked convolution filters]); an in-place write to a filter
/// (here through the module's parameter, which the frozen constant
/// shares) is seen by the next call, not answered from the old transform.
#[test]
fn prepacked_filters_follow_in_place_writes() -> Result<()> {
    manual_seed(25);
    // 7×7: Note [Winograd for few tiles] (AVX-512); 16×16: the plain
    // Winograd path, both with prepacked filters
    for hw in [7, 16] {
        let net = conv(32, 40, true);
        net.eval();
        let x = randn(&[1, 32, hw, hw]);
        let m = trace_module(&net, &[x.clone()], |n, t| Ok(vec![n.forward(&t[0])?]))?;
        let inf = optimize_for_inference(&m)?;
        let _g = ferrotorch_core::autograd::no_grad();
        let y1 = inf.forward(&[x.clone()])?.remove(0);
        assert_close(&y1, &net.forward(&x)?, 1e-4)?;
        // a second call, with the kept transform: the same bits
        assert_eq!(
            inf.forward(&[x.clone()])?[0].to_vec::<f32>()?,
            y1.to_vec::<f32>()?
        );
        let w = net.parameters()[0].tensor();
        assert_eq!(w.shape(), [40, 32, 3, 3]);
        w.copy_(&randn(&[40, 32, 3, 3]))?;
        let want = net.forward(&x)?;
        let y2 = inf.forward(&[x.clone()])?.remove(0);
        assert_close(&y2, &want, 1e-4)?;
    }
    Ok(())
}

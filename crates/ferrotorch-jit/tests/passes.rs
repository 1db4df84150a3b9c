//! Each pass on a small traced graph: the IR before and after (the aten
//! nodes left), and the same outputs as the unoptimised graph.

#![allow(clippy::cloned_ref_to_slice_refs)]

use ferrotorch_core::native::random::manual_seed;
use ferrotorch_core::{DType, Result, Tensor};
use ferrotorch_jit::ir::{Graph, NodeKind, ValueType};
use ferrotorch_jit::passes::{
    eliminate_common_subexpressions, eliminate_dead_code, fold_constants, freeze, optimize,
    optimize_for_inference, peephole,
};
use ferrotorch_jit::{trace, trace_module};
use ferrotorch_nn as nn;
use nn::Forward;

fn ops(g: &Graph) -> Vec<String> {
    g.nodes
        .iter()
        .filter(|n| matches!(n.kind, NodeKind::Op(_)))
        .map(|n| n.kind_name())
        .collect()
}

fn randn(s: &[usize]) -> Tensor {
    Tensor::randn(s, DType::F32).unwrap()
}

#[test]
fn dead_code_and_common_subexpressions() -> Result<()> {
    let x = randn(&[3, 4]);
    // as torch's tracer, a trace keeps no node whose result goes unused
    let t = trace(
        |t| {
            let _unused = t[0].exp()?.sin()?;
            Ok(vec![t[0].tanh()?])
        },
        &[x.clone()],
    )?;
    assert_eq!(ops(t.graph()), ["aten::tanh"]);
    let m = trace(
        |t| {
            let side = t[0].exp()?.sin()?;
            let a = t[0].tanh()?.mul(2.0)?;
            let b = t[0].tanh()?.mul(2.0)?; // the same computation again
            Ok(vec![a.add(&b)?, side])
        },
        &[x.clone()],
    )?;
    let mut g = m.graph().clone();
    // drop the second output: its nodes become dead
    g.outputs.pop();
    assert_eq!(
        ops(&g),
        [
            "aten::exp",
            "aten::sin",
            "aten::tanh",
            "aten::mul",
            "aten::tanh",
            "aten::mul",
            "aten::add"
        ]
    );
    assert_eq!(eliminate_dead_code(&mut g), 2);
    assert_eq!(
        ops(&g),
        [
            "aten::tanh",
            "aten::mul",
            "aten::tanh",
            "aten::mul",
            "aten::add"
        ]
    );
    assert!(eliminate_common_subexpressions(&mut g) >= 2);
    assert_eq!(ops(&g), ["aten::tanh", "aten::mul", "aten::add"]);
    let add = g
        .nodes
        .iter()
        .find(|n| n.kind_name() == "aten::add")
        .unwrap();
    assert_eq!(add.inputs[0], add.inputs[1]);
    let want = m.forward(&[x.clone()])?;
    let mut opt = m.clone();
    optimize(opt_graph(&mut opt))?;
    assert_eq!(
        opt.forward(&[x.clone()])?[0].to_vec::<f32>()?,
        want[0].to_vec::<f32>()?
    );
    // constants of one type but different values are not merged (ints,
    // int lists, strings and dtypes used to compare by their type alone)
    let f = |x: &Tensor| -> Result<Tensor> {
        let y = x.mul(2)?.add(1)?.sum_dim(Some(&[0]), false, None)?;
        let z = x.mul(3)?.sum_dim(Some(&[1]), false, None)?.gelu("tanh")?;
        let w = x
            .gelu("none")?
            .sum_dim(Some(&[1]), false, Some(DType::F64))?;
        y.sum()?.add(&z.sum()?)?.add(&w.sum()?)
    };
    let m = trace(|t| Ok(vec![f(&t[0])?]), &[x.clone()])?;
    let mut g = m.graph().clone();
    eliminate_common_subexpressions(&mut g);
    let mut cse = m.clone();
    *cse.graph_mut() = g;
    let x2 = randn(&[3, 4]);
    assert_eq!(
        cse.forward(&[x2.clone()])?[0].to_vec::<f64>()?,
        f(&x2)?.to_vec::<f64>()?
    );
    Ok(())
}

/// The graph of a script module, to run passes on in place.
fn opt_graph(m: &mut ferrotorch_jit::ScriptModule) -> &mut Graph {
    m.graph_mut()
}

#[test]
fn peephole_removes_identities() -> Result<()> {
    let x = randn(&[2, 3]);
    let m = trace(
        |t| {
            let y = t[0].mul(1.0)?.add(0.0)?.sub(0.0)?.div(1.0)?;
            let z = y.t()?.t()?.transpose(0, 1)?.transpose(0, 1)?;
            Ok(vec![z.relu()?])
        },
        &[x.clone()],
    )?;
    let mut g = m.graph().clone();
    assert_eq!(peephole(&mut g), 6);
    assert_eq!(ops(&g), ["aten::relu"]);
    assert_eq!(
        g.nodes
            .iter()
            .find(|n| n.kind_name() == "aten::relu")
            .unwrap()
            .inputs[0],
        g.inputs[0]
    );
    // an int tensor times 1.0 becomes float: not an identity, kept
    let i = Tensor::from_vec(vec![1i64, 2], &[2])?;
    let m = trace(|t| Ok(vec![t[0].mul(1.0)?]), &[i])?;
    let mut g = m.graph().clone();
    assert_eq!(peephole(&mut g), 0);
    // graphs with in-place ops are left alone
    let m = trace(
        |t| {
            let y = t[0].mul(1.0)?;
            y.add_(1.0)?;
            Ok(vec![y])
        },
        &[x.clone()],
    )?;
    let mut g = m.graph().clone();
    assert_eq!(peephole(&mut g), 0);
    Ok(())
}

#[test]
fn freezing_and_constant_folding() -> Result<()> {
    manual_seed(3);
    let lin = nn::Linear::new(4, 3, true)?;
    let x = randn(&[2, 4]);
    let m = trace_module(&lin, &[x.clone()], |l, t| {
        // a computation on the weight alone: foldable once frozen
        let w2 = l.weight.tensor().mul(2.0)?;
        Ok(vec![t[0].matmul(&w2.t()?)?])
    })?;
    assert_eq!(ops(m.graph()), ["aten::mul", "aten::t", "aten::matmul"]);
    let mut frozen = m.clone();
    freeze(&mut frozen)?;
    assert!(frozen.attributes().is_empty());
    assert_eq!(fold_constants(frozen.graph_mut())?, 2);
    assert_eq!(ops(frozen.graph()), ["aten::matmul"]);
    let want = m.forward(&[x.clone()])?[0].to_vec::<f32>()?;
    assert_eq!(frozen.forward(&[x.clone()])?[0].to_vec::<f32>()?, want);
    let inf = optimize_for_inference(&m)?;
    assert_eq!(ops(inf.graph()), ["aten::matmul"]);
    assert_eq!(inf.forward(&[x.clone()])?[0].to_vec::<f32>()?, want);
    // random ops are never folded or removed
    let m = trace(
        |t| Ok(vec![t[0].dropout(0.5, true, None)?.mul(0.0)?]),
        &[x.clone()],
    )?;
    let mut g = m.graph().clone();
    optimize(&mut g)?;
    assert!(ops(&g).contains(&"aten::dropout".to_string()));
    Ok(())
}

#[test]
fn optimized_mlp_matches_eager() -> Result<()> {
    manual_seed(4);
    let net = nn::Sequential::new()
        .append(nn::Linear::new(3, 8, true)?)
        .append(nn::ReLU::new())
        .append(nn::Linear::new(8, 2, true)?);
    let m = trace_module(&net, &[randn(&[2, 3])], |n, t| Ok(vec![n.forward(&t[0])?]))?;
    let inf = optimize_for_inference(&m)?;
    let x = randn(&[6, 3]);
    assert_eq!(
        inf.forward(&[x.clone()])?[0].to_vec::<f32>()?,
        net.forward(&x)?.to_vec::<f32>()?
    );
    Ok(())
}

/// Shape propagation runs a custom op's fake function, not its kernel
/// (a kernel may be slow, have effects, or refuse the zero-filled
/// inputs): here the kernel counts its calls and the fake halves the
/// last dimension.
#[test]
fn shape_propagation_uses_custom_op_fakes() -> Result<()> {
    use ferrotorch_core::dispatch::call;
    use ferrotorch_core::library::{Kind, Library};
    use std::sync::atomic::{AtomicUsize, Ordering};
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let mut m = Library::new("ft_shapes_test", Kind::Def)?;
    m.def_impl("halve(Tensor x) -> Tensor", |a| {
        CALLS.fetch_add(1, Ordering::SeqCst);
        let x = a.tensor(0)?;
        let n = x.shape()[x.dim() - 1] / 2;
        Ok(x.narrow(-1, 0, n)?.contiguous()?.into())
    })?;
    m.impl_fake("halve", |a| {
        let x = a.tensor(0)?;
        let mut s = x.shape().to_vec();
        let last = s.len() - 1;
        s[last] /= 2;
        Ok(Tensor::zeros(&s, x.dtype())?.into())
    })?;
    let f = |t: &[Tensor]| -> Result<Vec<Tensor>> {
        Ok(vec![call(
            "ft_shapes_test::halve",
            &[t[0].clone().into()],
            &[],
        )?
        .into_tensor()?
        .exp()?])
    };
    let mut traced = ferrotorch_jit::trace(f, &[Tensor::zeros(&[2, 8], DType::F32)?])?;
    let before = CALLS.load(Ordering::SeqCst);
    let ty = ValueType::Tensor {
        dtype: DType::F64,
        sizes: vec![3, 10],
        strides: vec![10, 1],
        requires_grad: false,
    };
    ferrotorch_jit::passes::propagate_shapes(&mut traced, &[ty])?;
    assert_eq!(CALLS.load(Ordering::SeqCst), before, "the kernel ran");
    let out = traced.graph().outputs[0];
    match &traced.graph().values[out].ty {
        ValueType::Tensor { dtype, sizes, .. } => {
            assert_eq!((*dtype, sizes.as_slice()), (DType::F64, &[3usize, 5][..]));
        }
        t => panic!("{t}"),
    }
    Ok(())
}

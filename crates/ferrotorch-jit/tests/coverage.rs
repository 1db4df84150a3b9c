//! Every typed method with a schema is recorded as its op: for each, the
//! traced graph holds the op, tracing left no constants made by
//! unrecorded ops (`trace_warnings`), and the graph run on new inputs
//! equals eager.

#![allow(clippy::cloned_ref_to_slice_refs)]

use ferrotorch_core::native::random::manual_seed;
use ferrotorch_core::{DType, Result, Tensor};
use ferrotorch_jit::ir::NodeKind;
use ferrotorch_jit::trace;

type Case = (&'static str, fn(&Tensor) -> Result<Tensor>);

thread_local! {
    static INDICES: std::cell::RefCell<std::collections::HashMap<Vec<i64>, Tensor>> =
        Default::default();
}

/// An index tensor, made on the first (eager) call so that traces see it
/// as a constant made before them.
fn idx(v: &[i64]) -> Tensor {
    INDICES.with(|m| {
        m.borrow_mut()
            .entry(v.to_vec())
            .or_insert_with(|| Tensor::from_vec(v.to_vec(), &[v.len()]).unwrap())
            .clone()
    })
}

const CASES: &[Case] = &[
    ("amax", |x| x.amax(&[1], false)),
    ("amin", |x| x.amin(&[0], true)),
    ("max", |x| x.max()),
    ("min", |x| x.min()),
    ("argmax", |x| x.argmax(Some(1), false)),
    ("argmin", |x| x.argmin(None, false)),
    ("all", |x| x.gt(0.0)?.all_dim(Some(&[1]), false)),
    ("any", |x| x.gt(0.0)?.any_dim(Some(&[0]), true)),
    ("var", |x| x.var(Some(&[1]), Some(1.0), false)),
    ("std", |x| x.std(None, Some(0.0), false)),
    ("logsumexp", |x| x.logsumexp(&[1], true)),
    ("median", |x| x.median()),
    ("argsort", |x| x.argsort(1, true)),
    ("index_select", |x| x.index_select(1, &idx(&[3, 0, 0]))),
    ("gather", |x| {
        x.gather(1, &idx(&[1, 0, 2, 0, 0, 3]).reshape(&[3, 2])?)
    }),
    ("scatter", |x| {
        x.zeros_like()?
            .scatter(1, &idx(&[1, 0, 2]).reshape(&[3, 1])?, x)
    }),
    ("scatter_add", |x| {
        x.scatter_add(1, &idx(&[1, 0, 2]).reshape(&[3, 1])?, x)
    }),
    ("take_along_dim", |x| {
        x.take_along_dim(&idx(&[0, 1, 2, 0]).reshape(&[1, 4])?, Some(0))
    }),
    ("masked_select", |x| x.masked_select(&x.gt(0.0)?)),
    ("repeat", |x| x.repeat(&[2, 1])),
    ("tile", |x| x.tile(&[1, 2])),
    ("flip", |x| x.flip(&[0, 1])),
    ("roll", |x| x.roll(&[1], &[1])),
    ("tril", |x| x.tril(0)),
    ("triu", |x| x.triu(1)),
    ("mm", |x| x.mm(&x.t()?)),
    ("bmm", |x| x.unsqueeze(0)?.bmm(&x.t()?.unsqueeze(0)?)),
    ("mv", |x| x.mv(&x.select(0, 0)?)),
    ("dot", |x| x.select(0, 0)?.dot(&x.select(0, 1)?)),
    ("addmm", |x| x.select(1, 0)?.addmm(x, &x.t()?, 0.5, 2.0)),
    ("baddbmm", |x| {
        let b = x.unsqueeze(0)?;
        b.matmul(&b.transpose(1, 2)?)?
            .baddbmm(&b, &b.transpose(1, 2)?, 1.0, 1.0)
    }),
    ("cumsum", |x| x.cumsum(1, None)),
    ("cumprod", |x| x.cumprod(0, Some(DType::F64))),
    ("nan_to_num", |x| x.log()?.nan_to_num(Some(0.0), None, None)),
    ("avg_pool2d", |x| {
        x.reshape(&[1, 1, 3, 4])?
            .avg_pool2d(&[2, 2], &[1, 1], &[0, 0], false, true, None)
    }),
    ("one_hot", |x| x.argmax(Some(1), false)?.one_hot(4)),
    ("scaled_dot_product_attention", |x| {
        let q = x.reshape(&[1, 3, 4])?;
        q.scaled_dot_product_attention(&q, &q, None, 0.0, true, None)
    }),
    ("conv1d", |x| {
        let w = x.select(0, 0)?.reshape(&[1, 1, 4])?;
        x.reshape(&[3, 1, 4])?.conv1d(&w, None, 1, 1, 1, 1)
    }),
    ("conv_transpose2d", |x| {
        let w = x.reshape(&[1, 1, 3, 4])?;
        x.reshape(&[1, 1, 3, 4])?
            .conv_transpose2d(&w, None, &[1, 1], &[0, 0], &[0, 0], 1, &[1, 1])
    }),
    ("elu", |x| x.elu(1.0, 1.0, 1.0)),
    ("silu", |x| x.silu()),
    ("selu", |x| x.selu()),
    ("group_norm", |x| {
        x.reshape(&[1, 2, 6])?.group_norm(2, None, None, 1e-5)
    }),
    ("movedim", |x| x.movedim(&[0], &[1])),
    ("narrow", |x| x.narrow(1, 1, 2)),
    ("slice", |x| x.slice(1, Some(1), None, 2)),
    ("squeeze", |x| x.unsqueeze(0)?.squeeze()),
    ("squeeze", |x| x.unsqueeze(2)?.squeeze_dims(&[2])),
    ("unflatten", |x| x.unflatten(1, &[2, 2])),
    ("diagonal", |x| x.diagonal(0, 0, 1)),
    ("to", |x| x.to_dtype(DType::F64)),
    ("logical_not", |x| x.gt(0.0)?.logical_not()),
    ("gt", |x| x.gt(0.5)),
    ("le", |x| x.le(&x.flip(&[0])?)),
    ("eq", |x| x.eq(0.0)),
    ("logical_and", |x| x.gt(0.0)?.logical_and(&x.lt(1.0)?)),
    ("bitwise_and", |x| x.gt(0.0)?.bitwise_and(&x.lt(1.0)?)),
    ("isnan", |x| x.log()?.isnan()),
    ("isinf", |x| x.div(0.0)?.isinf()),
    ("isfinite", |x| x.div(0.0)?.isfinite()),
    ("frac", |x| x.mul(3.3)?.frac()),
    ("detach", |x| Ok(x.exp()?.detach())),
    ("clone", |x| x.exp()?.deep_clone()),
    ("zeros", |x| Tensor::zeros(&[3, 4], DType::F32)?.add(x)),
    ("ones", |x| Tensor::ones(&[3, 4], DType::F32)?.add(x)),
    ("full", |x| Tensor::full(&[3, 4], 2.5, DType::F32)?.mul(x)),
    ("arange", |x| Tensor::arange(0, 4, 1, DType::F32)?.mul(x)),
    ("zeros_like", |x| x.zeros_like()?.add(x)),
    ("ones_like", |x| x.ones_like()?.sub(x)),
    ("full_like", |x| x.full_like(3)?.mul(x)),
    ("prod", |x| x.prod()),
    ("prod", |x| x.prod_dim(Some(&[1]), true, None)),
    ("all", |x| x.gt(0.0)?.all()),
    ("any", |x| x.gt(0.0)?.any()),
    ("norm", |x| x.norm(2.0, None, false)),
    ("norm", |x| x.norm(1.0, Some(&[1]), false)),
    ("norm", |x| x.norm(3.0, None, true)),
    ("clamp_min", |x| x.clamp_min(0.1)),
    ("clamp_max", |x| x.clamp_max(&x.flip(&[0])?)),
    ("lerp", |x| x.lerp(&x.exp()?, 0.25)),
    ("addcmul", |x| x.addcmul(x, &x.exp()?, 0.5)),
    ("addcdiv", |x| x.addcdiv(x, &x.exp()?, 2)),
    ("floor_divide", |x| x.mul(10.0)?.floor_divide(3.0)),
    ("div", |x| x.mul(10.0)?.div_mode(&x.exp()?, Some("trunc"))),
    ("pad", |x| x.pad(&[1, 2], "constant", 0.5)),
    ("upsample_nearest2d", |x| {
        x.reshape(&[1, 1, 3, 4])?
            .interpolate(&[6, 8], "nearest", false)
    }),
    ("upsample_bilinear2d", |x| {
        x.reshape(&[1, 1, 3, 4])?
            .interpolate(&[5, 5], "bilinear", true)
    }),
    ("lerp_", |x| {
        let y = x.mul(2.0)?;
        y.lerp_(&x.exp()?, 0.5)?;
        Ok(y)
    }),
    ("addcmul_", |x| {
        let y = x.mul(2.0)?;
        y.addcmul_(x, x, 0.5)?;
        Ok(y)
    }),
    ("addcdiv_", |x| {
        let y = x.mul(2.0)?;
        y.addcdiv_(x, &x.exp()?, 1)?;
        Ok(y)
    }),
    ("masked_fill_", |x| {
        let y = x.mul(2.0)?;
        y.masked_fill_(&x.gt(0.0)?, -1.0)?;
        Ok(y)
    }),
    ("index_put_", |x| {
        let y = x.mul(2.0)?;
        let rows = idx(&[2, 0]);
        y.index_put_(&[rows.into()], &x.select(0, 1)?, true)?;
        Ok(y)
    }),
    ("index_put", |x| {
        let cols = idx(&[1, 3]);
        x.index_put(&[(..).into(), cols.into()], &x.narrow(1, 0, 2)?, false)
    }),
    ("copy_", |x| {
        let y = x.zeros_like()?;
        y.copy_(&x.exp()?)?;
        Ok(y)
    }),
    ("fill_", |x| {
        let y = x.mul(2.0)?;
        y.narrow(1, 0, 1)?.fill_(7.0)?;
        Ok(y)
    }),
    ("zero_", |x| {
        let y = x.mul(2.0)?;
        y.select(0, 1)?.zero_()?;
        Ok(y)
    }),
];

#[test]
fn every_typed_method_traces_as_its_op() -> Result<()> {
    manual_seed(31);
    let x = Tensor::randn(&[3, 4], DType::F32)?;
    let x2 = Tensor::randn(&[3, 4], DType::F32)?;
    let mut failures = Vec::new();
    for (op, f) in CASES {
        f(&x)?; // makes its index tensors
        let m = match trace(|t| Ok(vec![f(&t[0])?]), &[x.clone()]) {
            Ok(m) => m,
            Err(e) => {
                failures.push(format!("{op}: trace failed: {e}"));
                continue;
            }
        };
        let recorded = m.graph().nodes.iter().any(|n| match &n.kind {
            NodeKind::Op(e) => e.schema.name == *op,
            _ => false,
        });
        if !recorded {
            failures.push(format!("{op}: not recorded:\n{}", m.graph()));
        }
        if !m.trace_warnings().is_empty() {
            failures.push(format!("{op}: {:?}", m.trace_warnings()));
        }
        let (got, want) = (m.forward(&[x2.clone()])?.remove(0), f(&x2)?);
        let same = got.shape() == want.shape()
            && got.dtype() == want.dtype()
            && got
                .to_dtype(DType::F64)?
                .to_vec::<f64>()?
                .iter()
                .zip(want.to_dtype(DType::F64)?.to_vec::<f64>()?)
                .all(|(a, b)| a == &b || (a.is_nan() && b.is_nan()));
        if !same {
            failures.push(format!("{op}: traced output differs from eager"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    Ok(())
}

#[test]
fn tensors_made_by_unrecorded_code_are_reported() -> Result<()> {
    let x = Tensor::randn(&[4], DType::F32)?;
    // data leaves the graph through to_vec and comes back as a new tensor:
    // a constant that will not follow the inputs
    let m = trace(
        |t| {
            let v: Vec<f32> = t[0].to_vec()?;
            let doubled = Tensor::from_vec(v.iter().map(|a| a * 2.0).collect(), &[4])?;
            Ok(vec![t[0].add(&doubled)?])
        },
        &[x.clone()],
    )?;
    assert_eq!(m.trace_warnings().len(), 1, "{:?}", m.trace_warnings());
    assert!(m.trace_warnings()[0].contains("Float tensor of shape [4] was made during the trace"));
    // a tensor made before the trace is a genuine constant: no warning
    let c = Tensor::randn(&[4], DType::F32)?;
    let m = trace(|t| Ok(vec![t[0].add(&c)?]), &[x.clone()])?;
    assert!(m.trace_warnings().is_empty());
    Ok(())
}

/// Random in-place ops are recorded as ops, not baked in: each run draws
/// anew, and from the same seed draws what eager draws.
#[test]
fn random_inplace_ops_are_recorded() -> Result<()> {
    let f = |x: &Tensor| -> Result<Tensor> {
        let u = x.zeros_like()?;
        u.uniform_(-1.0, 1.0, None)?;
        let n = x.zeros_like()?;
        n.normal_(0.0, 2.0, None)?;
        let b = x.zeros_like()?;
        b.bernoulli_(0.5, None)?;
        x.add(&u)?.add(&n)?.add(&b)
    };
    let x = Tensor::randn(&[3, 4], DType::F32)?;
    let m = trace(|t| Ok(vec![f(&t[0])?]), &[x.clone()])?;
    for op in ["uniform_", "normal_", "bernoulli_"] {
        assert!(
            m.graph()
                .nodes
                .iter()
                .any(|n| matches!(&n.kind, NodeKind::Op(e) if e.schema.name == op)),
            "{op} not recorded:\n{}",
            m.graph()
        );
    }
    let a = m.forward(&[x.clone()])?.remove(0).to_vec::<f32>()?;
    let b = m.forward(&[x.clone()])?.remove(0).to_vec::<f32>()?;
    assert_ne!(a, b);
    manual_seed(9);
    let traced = m.forward(&[x.clone()])?.remove(0).to_vec::<f32>()?;
    manual_seed(9);
    assert_eq!(traced, f(&x)?.to_vec::<f32>()?);
    Ok(())
}

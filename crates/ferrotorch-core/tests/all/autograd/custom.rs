//! Custom functions (ctx API), checkpointing, `autograd::functional` and
//! anomaly mode, against analytic values.

use super::input;
use ferrotorch_core::autograd::function::{apply, Function, FunctionCtx};
use ferrotorch_core::autograd::{self, checkpoint, functional};
use ferrotorch_core::{Result, Tensor};

fn v(t: &Tensor) -> Vec<f64> {
    t.to_vec::<f64>().unwrap()
}

fn close(a: &[f64], b: &[f64]) {
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() < 1e-9 * (1.0 + y.abs()), "{a:?} vs {b:?}");
    }
}

/// `y = x * w`, `idx = argmax(x)` (non-differentiable), with the scale
/// kept as plain data.
struct ScaledMul;
impl Function for ScaledMul {
    fn forward(&self, ctx: &mut FunctionCtx, x: &[Tensor]) -> Result<Vec<Tensor>> {
        ctx.save_for_backward(&[x[0].clone(), x[1].clone()]);
        ctx.save_data(2.0f64);
        let idx = x[0].argmax(None, false)?;
        ctx.mark_non_differentiable(&[idx.clone()]);
        Ok(vec![x[0].mul(&x[1])?.mul(2.0)?, idx])
    }
    fn backward(&self, ctx: &FunctionCtx, g: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        let s = *ctx.data::<f64>().unwrap();
        let (x, w) = (&ctx.saved_tensors()[0], &ctx.saved_tensors()[1]);
        Ok(vec![
            if ctx.needs_input_grad(0) {
                Some(g[0].mul(w)?.mul(s)?)
            } else {
                None
            },
            if ctx.needs_input_grad(1) {
                Some(g[0].mul(x)?.mul(s)?)
            } else {
                None
            },
        ])
    }
}

/// In place: `x.mul_(3)`, returned as its own output.
struct TripleInPlace;
impl Function for TripleInPlace {
    fn forward(&self, ctx: &mut FunctionCtx, x: &[Tensor]) -> Result<Vec<Tensor>> {
        x[0].mul_(3.0)?;
        ctx.mark_dirty(&[x[0].clone()]);
        Ok(vec![x[0].clone()])
    }
    fn backward(&self, _: &FunctionCtx, g: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        Ok(vec![Some(g[0].mul(3.0)?)])
    }
}

struct WrongCount;
impl Function for WrongCount {
    fn forward(&self, _: &mut FunctionCtx, x: &[Tensor]) -> Result<Vec<Tensor>> {
        Ok(vec![x[0].add(&x[1])?])
    }
    fn backward(&self, _: &FunctionCtx, g: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        Ok(vec![Some(g[0].clone())])
    }
}

#[test]
fn custom_function_ctx_follows_pytorch() {
    let x = Tensor::from_slice(&[1.0f64, 3.0, 2.0])
        .requires_grad_(true)
        .unwrap();
    let w = Tensor::from_slice(&[0.5f64, -1.0, 4.0]);
    let out = apply(ScaledMul, &[x.clone(), w.clone()]).unwrap();
    assert_eq!(out[0].grad_fn().unwrap().name(), "ScaledMulBackward");
    assert!(!out[1].requires_grad(), "marked non-differentiable");
    assert_eq!(out[1].to_vec::<i64>().unwrap(), vec![1]);
    out[0].sum().unwrap().backward().unwrap();
    close(&v(&x.grad().unwrap()), &[1.0, -2.0, 8.0]);
    assert!(w.grad().is_none());

    // gradcheck through the custom backward
    let f = |t: &[Tensor]| Ok(vec![apply(ScaledMul, t)?.remove(0)]);
    let ins = [input(&[3], -1.0, 1.0, 71), input(&[3], -1.0, 1.0, 72)];
    autograd::gradcheck(f, &ins, Default::default()).unwrap();
    autograd::gradgradcheck(f, &ins, Default::default()).unwrap();

    // saved input modified in place before backward
    let a = input(&[3], 0.5, 1.0, 73);
    let b = a.mul(1.0).unwrap();
    let y = apply(ScaledMul, &[b.clone(), w.clone()]).unwrap().remove(0);
    b.add_(1.0).unwrap();
    let e = y.sum().unwrap().backward().unwrap_err().to_string();
    assert!(e.contains("modified by an inplace operation"), "{e}");

    // wrong number of gradients
    let p = input(&[2], 0.0, 1.0, 74);
    let y = apply(WrongCount, &[p.clone(), p.clone()])
        .unwrap()
        .remove(0);
    let e = y.sum().unwrap().backward().unwrap_err().to_string();
    assert!(
        e.contains("returned an incorrect number of gradients (expected 2, got 1)"),
        "{e}"
    );
}

#[test]
fn mark_dirty_rebases_the_input() {
    let x = input(&[3], 0.0, 1.0, 75);
    let h = x.mul(2.0).unwrap();
    let out = apply(TripleInPlace, &[h.clone()]).unwrap().remove(0);
    assert!(out.is_same(&h), "the dirty input is the output");
    assert_eq!(h.grad_fn().unwrap().name(), "TripleInPlaceBackward");
    h.sum().unwrap().backward().unwrap();
    close(&v(&x.grad().unwrap()), &[6.0, 6.0, 6.0]);
    // on a leaf that requires grad: PyTorch's error
    let e = apply(TripleInPlace, &[x.clone()]).unwrap_err().to_string();
    assert!(e.contains("leaf Variable that requires grad"), "{e}");
}

#[test]
fn checkpoint_recomputes_and_matches_plain_gradients() {
    let seg = |t: &[Tensor]| -> Result<Vec<Tensor>> {
        Ok(vec![t[0]
            .tanh()?
            .mul(&t[1])?
            .dropout(0.5, true, None)?
            .exp()?])
    };
    let x = input(&[16], -1.0, 1.0, 76);
    let w = input(&[16], -1.0, 1.0, 77);
    let _rng = crate::rng_lock();
    ferrotorch_core::native::random::manual_seed(5);
    let y = checkpoint(seg, &[x.clone(), w.clone()]).unwrap().remove(0);
    assert_eq!(y.grad_fn().unwrap().name(), "CheckpointFunctionBackward");
    // only the output and the inputs are kept: no tanh/mul/exp nodes
    assert!(y
        .grad_fn()
        .unwrap()
        .next_functions()
        .iter()
        .flatten()
        .all(|(n, _)| n.name() == "AccumulateGrad"));
    y.sum().unwrap().backward().unwrap();
    let (gx, gw) = (v(&x.grad().unwrap()), v(&w.grad().unwrap()));

    let (x2, w2) = (
        x.detach().requires_grad_(true).unwrap(),
        w.detach().requires_grad_(true).unwrap(),
    );
    ferrotorch_core::native::random::manual_seed(5);
    let y2 = seg(&[x2.clone(), w2.clone()]).unwrap().remove(0);
    close(&v(&y), &v(&y2));
    y2.sum().unwrap().backward().unwrap();
    close(&gx, &v(&x2.grad().unwrap()));
    close(&gw, &v(&w2.grad().unwrap()));
}

#[test]
fn functional_jacobians_hessians_and_products() {
    // f(x, y) = [x0 y0, x1² + y1]
    let f = |t: &[Tensor]| -> Result<Vec<Tensor>> {
        let (x, y) = (&t[0], &t[1]);
        let a = x.select(0, 0)?.mul(&y.select(0, 0)?)?;
        let b = x.select(0, 1)?.pow(2.0)?.add(&y.select(0, 1)?)?;
        Ok(vec![ferrotorch_core::native::stack(&[a, b], 0)?])
    };
    let x = Tensor::from_slice(&[2.0f64, 3.0]);
    let y = Tensor::from_slice(&[5.0f64, 7.0]);
    let j = functional::jacobian(f, &[x.clone(), y.clone()], false).unwrap();
    assert_eq!(j[0][0].shape(), &[2, 2]);
    close(&v(&j[0][0]), &[5.0, 0.0, 0.0, 6.0]);
    close(&v(&j[0][1]), &[2.0, 0.0, 0.0, 1.0]);
    assert!(!j[0][0].requires_grad());

    let (out, vj) = functional::vjp(
        f,
        &[x.clone(), y.clone()],
        Some(&[Tensor::from_slice(&[1.0f64, 10.0])]),
        false,
    )
    .unwrap();
    close(&v(&out[0]), &[10.0, 16.0]);
    close(&v(&vj[0]), &[5.0, 60.0]);
    close(&v(&vj[1]), &[2.0, 10.0]);

    let (_, jv) = functional::jvp(
        f,
        &[x.clone(), y.clone()],
        &[
            Tensor::from_slice(&[1.0f64, 1.0]),
            Tensor::from_slice(&[0.0f64, 2.0]),
        ],
        false,
    )
    .unwrap();
    close(&v(&jv[0]), &[5.0, 8.0]);

    // g(x) = Σ x³ + x0 x1: H = diag(6x) + offdiag 1
    let g = |t: &[Tensor]| -> Result<Vec<Tensor>> {
        Ok(vec![t[0].pow(3.0)?.sum()?.add(&t[0].prod()?)?])
    };
    let h = functional::hessian(g, &[x.clone()], false).unwrap();
    close(&v(&h[0][0]), &[12.0, 1.0, 1.0, 18.0]);
    let (val, hv) = functional::hvp(
        g,
        &[x.clone()],
        &[Tensor::from_slice(&[1.0f64, -1.0])],
        false,
    )
    .unwrap();
    close(&v(&val), &[8.0 + 27.0 + 6.0]);
    close(&v(&hv[0]), &[11.0, -17.0]);
    let (_, vh) = functional::vhp(
        g,
        &[x.clone()],
        &[Tensor::from_slice(&[1.0f64, -1.0])],
        false,
    )
    .unwrap();
    close(&v(&vh[0]), &[11.0, -17.0]);
    // create_graph keeps the result differentiable
    let (_, hv) =
        functional::hvp(g, &[x.clone()], &[Tensor::from_slice(&[1.0f64, 0.0])], true).unwrap();
    assert!(hv[0].requires_grad());
    // errors
    assert!(functional::hvp(f, &[x.clone(), y.clone()], &[x.clone(), y.clone()], false).is_err());
    assert!(functional::jvp(f, &[x.clone(), y.clone()], &[x.clone()], false).is_err());
}

#[test]
fn anomaly_mode_names_the_forward_op_of_a_nan_gradient() {
    let x = Tensor::from_slice(&[0.0f64, 1.0])
        .requires_grad_(true)
        .unwrap();
    autograd::set_detect_anomaly(true);
    let y = x.sqrt().unwrap().mul(0.0).unwrap().sum().unwrap();
    let r = y.backward();
    autograd::set_detect_anomaly(false);
    let e = r.unwrap_err().to_string();
    assert!(
        e.contains("Function 'SqrtBackward0' returned nan values in its 0th output"),
        "{e}"
    );
    assert!(e.contains("The forward op was called at"), "{e}");
    assert!(
        e.contains("anomaly_mode_names_the_forward_op_of_a_nan_gradient"),
        "the trace points at this test: {e}"
    );
    // without anomaly mode the NaN simply propagates
    let y = x.sqrt().unwrap().mul(0.0).unwrap().sum().unwrap();
    y.backward().unwrap();
    assert!(v(&x.grad().unwrap())[0].is_nan());
}

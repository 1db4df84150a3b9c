//! The autograd engine's behaviour: `grad_fn` names, leaves and `.grad`,
//! retain_graph, version checks, what nodes save, in-place ops on views,
//! higher-order gradients, hooks and modes, backward on several threads,
//! against values worked out by hand or printed by PyTorch.

#![allow(
    clippy::cloned_ref_to_slice_refs,
    clippy::needless_borrows_for_generic_args
)]
use super::v;
use ferrotorch_core::autograd;
use ferrotorch_core::dtype::Element;
use ferrotorch_core::{DType, Tensor};

/// A one-dimensional leaf requiring grad holding `values` (their dtype).
fn leaf<T: Element>(values: &[T]) -> Tensor {
    Tensor::from_vec(values.to_vec(), &[values.len()])
        .unwrap()
        .requires_grad_(true)
        .unwrap()
}

#[test]
fn grad_fn_names_leaves_and_grads_follow_pytorch() {
    let x = leaf(&[1.0f32, 2.0, 3.0]);
    assert!(x.is_leaf() && x.requires_grad() && x.grad_fn().is_none());
    let y = x.mul(&x).unwrap();
    assert_eq!(y.grad_fn().unwrap().name(), "MulBackward0");
    assert!(!y.is_leaf());
    assert_eq!(x.exp().unwrap().grad_fn().unwrap().name(), "ExpBackward0");
    assert_eq!(
        x.pow(2.0).unwrap().grad_fn().unwrap().name(),
        "PowBackward0"
    );
    assert_eq!(x.sum().unwrap().grad_fn().unwrap().name(), "SumBackward0");
    assert_eq!(
        x.view(&[3, 1]).unwrap().grad_fn().unwrap().name(),
        "ViewBackward0"
    );
    let acc = y.grad_fn().unwrap().next_functions();
    assert_eq!(acc[0].as_ref().unwrap().0.name(), "AccumulateGrad");
    // integer outputs and detached tensors do not require grad
    assert!(!x.argmax(None, false).unwrap().requires_grad());
    assert!(!x.detach().requires_grad());
    // only floating tensors can require grad
    let e = Tensor::from_vec(vec![1i64], &[1])
        .unwrap()
        .requires_grad_(true)
        .unwrap_err();
    assert!(e.message().contains("floating point"));
    // grads accumulate across backward calls
    x.mul(2.0).unwrap().sum().unwrap().backward().unwrap();
    x.mul(3.0).unwrap().sum().unwrap().backward().unwrap();
    assert_eq!(v(&x.grad().unwrap()), vec![5.0, 5.0, 5.0]);
    // non-scalar outputs need a gradient
    let e = x.mul(2.0).unwrap().backward().unwrap_err();
    assert_eq!(
        e.message(),
        "grad can be implicitly created only for scalar outputs"
    );
}

#[test]
fn second_backward_needs_retain_graph() {
    let x = leaf(&[0.5, 1.0]);
    let y = x.exp().unwrap().sum().unwrap();
    y.backward_with(None, Some(true), false).unwrap();
    y.backward().unwrap();
    let e = y.backward().unwrap_err();
    assert!(
        e.message()
            .starts_with("Trying to backward through the graph a second time"),
        "{}",
        e.message()
    );
    let want: Vec<f64> = [0.5f64, 1.0].iter().map(|v| 2.0 * v.exp()).collect();
    assert_eq!(v(&x.grad().unwrap()), want);
}

#[test]
fn modifying_a_saved_tensor_is_caught_by_the_version_counter() {
    let x = leaf(&[1.0f32, 2.0, 3.0]);
    let a = x.exp().unwrap();
    let b = a.sin().unwrap(); // saves a
    a.add_(1.0).unwrap();
    let e = b.sum().unwrap().backward().unwrap_err();
    assert_eq!(
        e.message(),
        "one of the variables needed for gradient computation has been modified by an inplace operation: [torch.FloatTensor [3]], which is output 0 of ExpBackward0, is at version 1; expected version 0 instead. Hint: enable anomaly detection to find the operation that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True)."
    );
    // in-place on a leaf that requires grad
    let e = x.mul_(2.0).unwrap_err();
    assert!(e
        .message()
        .contains("a leaf Variable that requires grad is being used in an in-place operation."));
    // ... allowed under no_grad, and it bumps the version
    let before = x.version();
    autograd::with_no_grad(|| x.mul_(2.0)).unwrap();
    assert_eq!(x.version(), before + 1);
    assert_eq!(v(&x), vec![2.0, 4.0, 6.0]);
}

/// Ops whose formula reads nothing (`neg`, `floor`, `y * 2.0`) save
/// nothing, as in torch (`derivatives.yaml`), so changing their input in
/// place afterwards is allowed (`neg` saved its input, and failed here).
#[test]
fn ops_that_read_nothing_save_nothing() {
    let x = leaf(&[1.5f32, -2.0]);
    let a = x.mul(1.0).unwrap();
    let n = a.neg().unwrap();
    let f = a.floor().unwrap();
    let m = a.mul(2.0).unwrap();
    a.add_(1.0).unwrap();
    let loss = n.add(&f).unwrap().add(&m).unwrap().sum().unwrap();
    loss.backward().unwrap();
    // d/dx (-x + floor(x) + 2x) = -1 + 0 + 2
    assert_eq!(v(&x.grad().unwrap()), vec![1.0, 1.0]);
}

#[test]
fn leaf_grad_never_aliases_a_gradient_someone_else_holds() {
    // AccumulateGrad keeps an unshared gradient as it is and copies the
    // rest: the gradient passed to backward (here straight into the leaf)
    // and the one a hook kept stay independent of `.grad`.
    let x = leaf(&[1.0, 2.0]);
    let g = Tensor::from_vec(vec![3.0f64, 4.0], &[2]).unwrap();
    x.backward_with(Some(&g), None, false).unwrap();
    g.add_(10.0).unwrap();
    assert_eq!(v(&x.grad().unwrap()), vec![3.0, 4.0]);

    let z = leaf(&[1.0, 2.0]);
    let y = z.mul(2.0).unwrap();
    let kept = std::sync::Arc::new(std::sync::Mutex::new(None));
    let k = kept.clone();
    y.register_hook(move |g: &Tensor| {
        *k.lock().unwrap() = Some(g.clone());
        Ok(None)
    })
    .unwrap();
    let w = Tensor::from_vec(vec![1.0f64, 3.0], &[2]).unwrap();
    y.mul(&w).unwrap().sum().unwrap().backward().unwrap();
    assert_eq!(v(&z.grad().unwrap()), vec![2.0, 6.0]);
    // the unshared product (g·w)·2 became z.grad without a copy; writing
    // the hook's tensor (y's gradient g·w) must not touch it
    kept.lock().unwrap().as_ref().unwrap().add_(5.0).unwrap();
    assert_eq!(v(&z.grad().unwrap()), vec![2.0, 6.0]);
}

#[test]
fn a_linear_weight_gradient_becomes_grad_without_a_copy() {
    // The weight of `x · wᵀ` gets its gradient as the transpose of a
    // product computed transposed (Note [Gradient layout]): a view whose
    // base nothing else holds, which AccumulateGrad keeps without copying.
    let x = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
    let w = Tensor::from_vec((0..12).map(f64::from).collect(), &[4, 3])
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(0usize));
    let s = seen.clone();
    w.register_hook(move |g: &Tensor| {
        *s.lock().unwrap() = g.data_ptr() as usize;
        Ok(None)
    })
    .unwrap();
    let backward = || {
        x.matmul(&w.t().unwrap())
            .unwrap()
            .sum()
            .unwrap()
            .backward()
            .unwrap()
    };
    backward();
    let g = w.grad().unwrap();
    assert_eq!(g.data_ptr() as usize, *seen.lock().unwrap());
    assert!(!g.is_view() && g.is_contiguous());
    // d/dw sum(x wᵀ) = ones[2, 4]ᵀ · x: every row is x's column sums
    assert_eq!(v(&g), [5.0, 7.0, 9.0].repeat(4));
    // accumulating a second backward writes into that same buffer
    backward();
    assert_eq!(w.grad().unwrap().data_ptr(), g.data_ptr());
    assert_eq!(v(&w.grad().unwrap()), [10.0, 14.0, 18.0].repeat(4));
}

#[test]
fn mul_and_div_save_only_the_operands_their_gradients_read() {
    // As in PyTorch: `a * 2.0` and `a / c` (c not requiring grad) save
    // nothing of `a`, so changing `a` afterwards is harmless; `a * c` saves
    // `c`, so changing `c` is caught.
    let x = leaf(&[1.0, 2.0]);
    let c = Tensor::from_vec(vec![3.0f64, 4.0], &[2]).unwrap();
    let a = x.mul(1.0).unwrap();
    let by_number = a.mul(2.0).unwrap();
    let by_tensor = a.div(&c).unwrap();
    a.add_(1.0).unwrap();
    by_number
        .add(&by_tensor)
        .unwrap()
        .sum()
        .unwrap()
        .backward()
        .unwrap();
    assert_eq!(v(&x.grad().unwrap()), vec![2.0 + 1.0 / 3.0, 2.0 + 0.25]);

    let a = x.mul(1.0).unwrap();
    let y = a.mul(&c).unwrap();
    c.add_(1.0).unwrap();
    let e = y.sum().unwrap().backward().unwrap_err();
    assert!(e.message().contains("is at version 1; expected version 0"));
}

#[test]
fn in_place_ops_on_views_of_non_leaves_give_pytorchs_gradients() {
    // y = x * 2; y[1:3] *= 3; y.sum().backward()  ->  x.grad = [2, 6, 6, 2]
    let x = leaf(&[1.0f32, 2.0, 3.0, 4.0]);
    let y = x.mul(2.0).unwrap();
    y.narrow(0, 1, 2).unwrap().mul_(3.0).unwrap();
    assert_eq!(v(&y), vec![2.0, 12.0, 18.0, 8.0]);
    assert_eq!(y.grad_fn().unwrap().name(), "CopySlices");
    y.sum().unwrap().backward().unwrap();
    assert_eq!(v(&x.grad().unwrap()), vec![2.0, 6.0, 6.0, 2.0]);
    // an in-place op whose old value matters: z = x*1; z *= x*1 -> d/dx = 2x
    let x2 = leaf(&[1.0, -2.0]);
    let z = x2.mul(1.0).unwrap();
    z.mul_(&x2.mul(1.0).unwrap()).unwrap();
    assert_eq!(z.grad_fn().unwrap().name(), "MulBackward0");
    z.sum().unwrap().backward().unwrap();
    assert_eq!(v(&x2.grad().unwrap()), vec![2.0, -4.0]);
    // PyTorch refuses this one: the saved operand shares z's version counter
    let x3 = leaf(&[1.0]);
    let z3 = x3.mul(1.0).unwrap();
    z3.mul_(&z3.detach()).unwrap();
    assert!(z3.sum().unwrap().backward().is_err());
    // a view of a leaf that requires grad cannot be modified in place
    let e = x.narrow(0, 0, 1).unwrap().add_(1.0).unwrap_err();
    assert!(e.message().contains("view of a leaf Variable"));
}

#[test]
fn higher_order_gradients_penalty_and_hvp() {
    // third derivative of sin is -cos
    let x = leaf(&[0.3, 1.1]);
    let y = x.sin().unwrap().sum().unwrap();
    let g1 = autograd::grad(&[y], &[x.clone()], None, None, true, false).unwrap()[0]
        .clone()
        .unwrap();
    let g2 = autograd::grad(&[g1.sum().unwrap()], &[x.clone()], None, None, true, false).unwrap()
        [0]
    .clone()
    .unwrap();
    let g3 = autograd::grad(&[g2.sum().unwrap()], &[x.clone()], None, None, false, false).unwrap()
        [0]
    .clone()
    .unwrap();
    for (got, x) in v(&g3).iter().zip([0.3f64, 1.1]) {
        assert!((got + x.cos()).abs() < 1e-12);
    }
    // gradient penalty: w -> || d/dx (w·x)^2 ||^2 = ||2 (w·x) w||^2 = 4 (w·x)^2 |w|^2
    let w = leaf(&[0.5, -1.0, 2.0]);
    let xin = leaf(&[1.0, 2.0, 0.5]);
    let f = w.mul(&xin).unwrap().sum().unwrap().pow(2.0).unwrap();
    let gx = autograd::grad(&[f], &[xin.clone()], None, None, true, false).unwrap()[0]
        .clone()
        .unwrap();
    let penalty = gx.mul(&gx).unwrap().sum().unwrap();
    penalty.backward().unwrap();
    // d/dw [4 s^2 |w|^2] with s = w·x: 8 s |w|^2 x + 8 s^2 w
    let (wv, xv) = ([0.5f64, -1.0, 2.0], [1.0f64, 2.0, 0.5]);
    let s: f64 = wv.iter().zip(xv).map(|(a, b)| a * b).sum();
    let n2: f64 = wv.iter().map(|a| a * a).sum();
    let want: Vec<f64> = (0..3)
        .map(|i| 8.0 * s * n2 * xv[i] + 8.0 * s * s * wv[i])
        .collect();
    for (g, w) in v(&w.grad().unwrap()).iter().zip(want) {
        assert!((g - w).abs() < 1e-10, "{g} vs {w}");
    }
    // Hessian-vector product of f(x) = sum(x^3): H = diag(6x), Hv = 6 x v
    let x = leaf(&[1.0, -2.0, 0.5]);
    let vv = Tensor::from_vec(vec![1.0f64, 0.5, -1.0], &[3]).unwrap();
    let g = autograd::grad(
        &[x.pow(3.0).unwrap().sum().unwrap()],
        &[x.clone()],
        None,
        None,
        true,
        false,
    )
    .unwrap()[0]
        .clone()
        .unwrap();
    let hv = autograd::grad(
        &[g.mul(&vv).unwrap().sum().unwrap()],
        &[x.clone()],
        None,
        None,
        false,
        false,
    )
    .unwrap()[0]
        .clone()
        .unwrap();
    assert_eq!(v(&hv), vec![6.0, -6.0, -3.0]);
}

#[test]
fn hooks_retain_grad_and_modes() {
    let x = leaf(&[1.0f32, 2.0]);
    let y = x.mul(3.0).unwrap();
    y.retain_grad().unwrap();
    // a hook on the non-leaf doubles the gradient flowing through it
    let h = y.register_hook(|g| Ok(Some(g.mul(2.0)?))).unwrap();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(0usize));
    let s2 = seen.clone();
    let _p = x
        .register_post_accumulate_grad_hook(move |_| {
            *s2.lock().unwrap() += 1;
            Ok(())
        })
        .unwrap();
    y.sum().unwrap().backward().unwrap();
    assert_eq!(v(&x.grad().unwrap()), vec![6.0, 6.0]);
    assert_eq!(v(&y.grad().unwrap()), vec![2.0, 2.0]);
    assert_eq!(*seen.lock().unwrap(), 1);
    h.remove();
    x.set_grad(None).unwrap();
    x.mul(3.0).unwrap().sum().unwrap().backward().unwrap();
    assert_eq!(v(&x.grad().unwrap()), vec![3.0, 3.0]);
    // no_grad / enable_grad / inference mode
    {
        let _g = autograd::no_grad();
        assert!(!x.mul(2.0).unwrap().requires_grad());
        let _e = autograd::enable_grad();
        assert!(x.mul(2.0).unwrap().requires_grad());
    }
    let t = {
        let _i = autograd::inference_mode();
        Tensor::ones(&[2], DType::F32).unwrap()
    };
    assert!(t.is_inference());
    let e = x.mul(&t).unwrap_err();
    assert!(e
        .message()
        .starts_with("Inference tensors cannot be saved for backward"));
    // allow_unused
    let z = Tensor::ones(&[1], DType::F32)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let r = autograd::grad(
        &[x.sum().unwrap()],
        &[x.clone(), z.clone()],
        None,
        None,
        false,
        true,
    )
    .unwrap();
    assert!(r[1].is_none());
    let e = autograd::grad(&[x.sum().unwrap()], &[z], None, None, false, false).unwrap_err();
    assert!(e
        .message()
        .contains("appears to not have been used in the graph"));
}

#[test]
fn independent_graphs_run_backward_on_threads_at_once() {
    // the sum of x's gradient through 50 tanh layers, x all k + 1
    let run = |k: usize| -> f64 {
        let x = Tensor::from_vec(vec![k as f64 + 1.0; 64], &[8, 8])
            .unwrap()
            .requires_grad_(true)
            .unwrap();
        let mut y = x.clone();
        for _ in 0..50 {
            y = y.mul(1.01).unwrap().tanh().unwrap();
        }
        y.sum().unwrap().backward().unwrap();
        x.grad().unwrap().sum().unwrap().item().unwrap().to_f64()
    };
    let handles: Vec<_> = (0..4).map(|k| std::thread::spawn(move || run(k))).collect();
    let got: Vec<f64> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    // each against the same computation run alone
    for (k, g) in got.iter().enumerate() {
        assert_eq!(*g, run(k));
    }
}

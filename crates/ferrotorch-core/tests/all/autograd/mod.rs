//! Autograd: every derivative against central finite differences
//! (gradcheck / gradgradcheck in f64), plus the engine's behaviour
//! (names, retain_graph, version checks, hooks, in-place on views, modes)
//! against values worked out by hand or printed by PyTorch.

#![allow(
    clippy::cloned_ref_to_slice_refs,
    clippy::needless_borrows_for_generic_args
)]
use ferrotorch_core::autograd::{self, gradcheck, gradgradcheck, GradcheckOptions};
use ferrotorch_core::{DType, Result, Tensor};

mod custom;
mod data_movement;
mod nn_ops;
mod recurrent;
mod reductions;

type F = fn(&[Tensor]) -> Result<Vec<Tensor>>;

/// Deterministic f64 input in [lo, hi).
fn input(shape: &[usize], lo: f64, hi: f64, seed: usize) -> Tensor {
    let n: usize = shape.iter().product();
    let v: Vec<f64> = (0..n)
        .map(|i| lo + (hi - lo) * ((((i + 1) * 7919 + seed * 104729) % 997) as f64 / 997.0))
        .collect();
    Tensor::from_vec(v, shape)
        .unwrap()
        .requires_grad_(true)
        .unwrap()
}

fn check(name: &str, f: F, inputs: &[Tensor], second: bool) {
    let o = GradcheckOptions::default();
    gradcheck(f, inputs, o).unwrap_or_else(|e| panic!("gradcheck {name}: {e}"));
    if second {
        gradgradcheck(f, inputs, o).unwrap_or_else(|e| panic!("gradgradcheck {name}: {e}"));
    }
}

#[test]
fn unary_derivatives_match_finite_differences() {
    let x = || vec![input(&[2, 3], -0.9, 0.9, 1)];
    let pos = || vec![input(&[2, 3], 0.2, 2.0, 2)];
    let cases: Vec<(&str, F, Vec<Tensor>)> = vec![
        ("neg", |x| Ok(vec![x[0].neg()?]), x()),
        ("abs", |x| Ok(vec![x[0].abs()?]), x()),
        ("exp", |x| Ok(vec![x[0].exp()?]), x()),
        ("exp2", |x| Ok(vec![x[0].exp2()?]), x()),
        ("expm1", |x| Ok(vec![x[0].expm1()?]), x()),
        ("log", |x| Ok(vec![x[0].log()?]), pos()),
        ("log2", |x| Ok(vec![x[0].log2()?]), pos()),
        ("log10", |x| Ok(vec![x[0].log10()?]), pos()),
        ("log1p", |x| Ok(vec![x[0].log1p()?]), pos()),
        ("sqrt", |x| Ok(vec![x[0].sqrt()?]), pos()),
        ("rsqrt", |x| Ok(vec![x[0].rsqrt()?]), pos()),
        ("reciprocal", |x| Ok(vec![x[0].reciprocal()?]), pos()),
        ("sin", |x| Ok(vec![x[0].sin()?]), x()),
        ("cos", |x| Ok(vec![x[0].cos()?]), x()),
        ("tan", |x| Ok(vec![x[0].tan()?]), x()),
        ("asin", |x| Ok(vec![x[0].asin()?]), x()),
        ("acos", |x| Ok(vec![x[0].acos()?]), x()),
        ("atan", |x| Ok(vec![x[0].atan()?]), x()),
        ("sinh", |x| Ok(vec![x[0].sinh()?]), x()),
        ("cosh", |x| Ok(vec![x[0].cosh()?]), x()),
        ("tanh", |x| Ok(vec![x[0].tanh()?]), x()),
        ("asinh", |x| Ok(vec![x[0].asinh()?]), x()),
        ("acosh", |x| Ok(vec![x[0].add(1.5)?.acosh()?]), pos()),
        ("atanh", |x| Ok(vec![x[0].atanh()?]), x()),
        ("sigmoid", |x| Ok(vec![x[0].sigmoid()?]), x()),
        ("erf", |x| Ok(vec![x[0].erf()?]), x()),
        ("erfc", |x| Ok(vec![x[0].erfc()?]), x()),
        ("erfinv", |x| Ok(vec![x[0].erfinv()?]), x()),
        ("lgamma", |x| Ok(vec![x[0].lgamma()?]), pos()),
        ("relu", |x| Ok(vec![x[0].relu()?]), x()),
        ("silu", |x| Ok(vec![x[0].silu()?]), x()),
        ("gelu", |x| Ok(vec![x[0].gelu("none")?]), x()),
        ("elu", |x| Ok(vec![x[0].elu(1.3, 1.05, 0.7)?]), x()),
        ("gelu_tanh", |x| Ok(vec![x[0].gelu("tanh")?]), x()),
        (
            "clamp",
            |x| Ok(vec![x[0].clamp(Some(-0.5), Some(0.4))?]),
            x(),
        ),
        ("softmax", |x| Ok(vec![x[0].softmax(1, None)?]), x()),
        ("log_softmax", |x| Ok(vec![x[0].log_softmax(0, None)?]), x()),
    ];
    for (name, f, xs) in cases {
        let second = !matches!(name, "abs" | "relu" | "clamp" | "lgamma");
        check(name, f, &xs, second);
    }
}

#[test]
fn binary_derivatives_with_broadcasting_and_strided_inputs() {
    let a = || input(&[3, 4], 0.3, 1.5, 3);
    let b_row = || input(&[4], 0.4, 1.2, 4);
    // non-contiguous rhs: a transposed view
    let bt = || {
        input(&[4, 3], 0.5, 1.4, 5)
            .detach()
            .t()
            .unwrap()
            .requires_grad_(true)
            .unwrap()
    };
    let cases: Vec<(&str, F, Vec<Tensor>)> = vec![
        ("add", |x| Ok(vec![x[0].add(&x[1])?]), vec![a(), b_row()]),
        (
            "add_alpha",
            |x| Ok(vec![x[0].add_alpha(&x[1], 2.5)?]),
            vec![a(), bt()],
        ),
        ("sub", |x| Ok(vec![x[0].sub(&x[1])?]), vec![a(), bt()]),
        ("mul", |x| Ok(vec![x[0].mul(&x[1])?]), vec![a(), b_row()]),
        ("mul_scalar", |x| Ok(vec![x[0].mul(-1.5)?]), vec![a()]),
        ("div", |x| Ok(vec![x[0].div(&x[1])?]), vec![a(), bt()]),
        ("pow", |x| Ok(vec![x[0].pow(&x[1])?]), vec![a(), b_row()]),
        ("pow_scalar", |x| Ok(vec![x[0].pow(2.5)?]), vec![a()]),
        ("atan2", |x| Ok(vec![x[0].atan2(&x[1])?]), vec![a(), bt()]),
        (
            "maximum",
            |x| Ok(vec![x[0].maximum(&x[1])?]),
            vec![a(), bt()],
        ),
        (
            "minimum",
            |x| Ok(vec![x[0].minimum(&x[1])?]),
            vec![a(), b_row()],
        ),
        ("hypot", |x| Ok(vec![x[0].hypot(&x[1])?]), vec![a(), bt()]),
        (
            "xlogy",
            |x| Ok(vec![x[0].xlogy(&x[1])?]),
            vec![a(), b_row()],
        ),
        (
            "remainder",
            |x| Ok(vec![x[0].remainder(&x[1])?]),
            vec![a(), b_row()],
        ),
    ];
    for (name, f, xs) in cases {
        let second = !matches!(name, "maximum" | "minimum" | "remainder");
        check(name, f, &xs, second);
    }
}

#[test]
fn reductions_linalg_and_views() {
    let cases: Vec<(&str, F, Vec<Tensor>)> = vec![
        (
            "sum",
            |x| Ok(vec![x[0].sum()?]),
            vec![input(&[2, 3], -1.0, 1.0, 6)],
        ),
        (
            "sum_dim",
            |x| Ok(vec![x[0].sum_dim(Some(&[0, 2]), false, None)?]),
            vec![input(&[2, 3, 2], -1.0, 1.0, 7)],
        ),
        (
            "sum_keepdim",
            |x| Ok(vec![x[0].sum_dim(Some(&[1]), true, None)?]),
            vec![input(&[2, 3], -1.0, 1.0, 8)],
        ),
        (
            "mean",
            |x| Ok(vec![x[0].mean_dim(Some(&[-1]), false, None)?]),
            vec![input(&[2, 3], -1.0, 1.0, 9)],
        ),
        (
            "amax",
            |x| Ok(vec![x[0].amax(&[1], true)?]),
            vec![input(&[3, 4], -1.0, 1.0, 10)],
        ),
        (
            "max",
            |x| Ok(vec![x[0].max()?]),
            vec![input(&[3, 4], -1.0, 1.0, 11)],
        ),
        (
            "max_dim",
            |x| Ok(vec![x[0].max_dim(0, false)?.0]),
            vec![input(&[3, 4], -1.0, 1.0, 12)],
        ),
        (
            "min_dim",
            |x| Ok(vec![x[0].min_dim(1, true)?.0]),
            vec![input(&[3, 4], -1.0, 1.0, 13)],
        ),
        (
            "mm",
            |x| Ok(vec![x[0].mm(&x[1])?]),
            vec![input(&[2, 3], -1.0, 1.0, 14), input(&[3, 4], -1.0, 1.0, 15)],
        ),
        (
            // transposed-contiguous operands take the same-layout gradient path
            "mm_transposed_operands",
            |x| Ok(vec![x[0].t()?.matmul(&x[1].t()?)?]),
            vec![input(&[3, 2], -1.0, 1.0, 14), input(&[4, 3], -1.0, 1.0, 15)],
        ),
        (
            "matmul_batched_broadcast",
            |x| Ok(vec![x[0].matmul(&x[1])?]),
            vec![
                input(&[2, 1, 2, 3], -1.0, 1.0, 16),
                input(&[3, 3, 2], -1.0, 1.0, 17),
            ],
        ),
        (
            "matmul_vec_mat",
            |x| Ok(vec![x[0].matmul(&x[1])?]),
            vec![input(&[3], -1.0, 1.0, 18), input(&[2, 3, 4], -1.0, 1.0, 19)],
        ),
        (
            "matmul_mat_vec",
            |x| Ok(vec![x[0].matmul(&x[1])?]),
            vec![input(&[2, 3], -1.0, 1.0, 20), input(&[3], -1.0, 1.0, 21)],
        ),
        (
            "dot",
            |x| Ok(vec![x[0].matmul(&x[1])?]),
            vec![input(&[4], -1.0, 1.0, 22), input(&[4], -1.0, 1.0, 23)],
        ),
        (
            "bmm",
            |x| Ok(vec![x[0].bmm(&x[1])?]),
            vec![
                input(&[2, 2, 3], -1.0, 1.0, 24),
                input(&[2, 3, 2], -1.0, 1.0, 25),
            ],
        ),
        (
            "transpose",
            |x| Ok(vec![x[0].transpose(0, 2)?.mul(&x[0].transpose(0, 2)?)?]),
            vec![input(&[2, 3, 2], -1.0, 1.0, 26)],
        ),
        (
            "permute",
            |x| Ok(vec![x[0].permute(&[2, 0, 1])?.exp()?]),
            vec![input(&[2, 3, 2], -1.0, 1.0, 27)],
        ),
        (
            "narrow",
            |x| Ok(vec![x[0].narrow(1, 1, 2)?.sin()?]),
            vec![input(&[3, 4], -1.0, 1.0, 28)],
        ),
        (
            "slice_step",
            |x| {
                Ok(vec![x[0].slice(0, Some(1), None, 2)?.mul(&x[0].slice(
                    0,
                    Some(1),
                    None,
                    2,
                )?)?])
            },
            vec![input(&[7, 2], -1.0, 1.0, 29)],
        ),
        (
            "select",
            |x| Ok(vec![x[0].select(1, -1)?.exp()?]),
            vec![input(&[3, 4], -1.0, 1.0, 30)],
        ),
        (
            "unsqueeze_expand",
            |x| Ok(vec![x[0].unsqueeze(0)?.expand(&[3, -1, -1])?.mul(2.0)?]),
            vec![input(&[2, 2], -1.0, 1.0, 31)],
        ),
        (
            "squeeze",
            |x| Ok(vec![x[0].squeeze()?.tanh()?]),
            vec![input(&[1, 3, 1], -1.0, 1.0, 32)],
        ),
        (
            "reshape_strided",
            |x| {
                Ok(vec![x[0]
                    .t()?
                    .reshape(&[-1])?
                    .mul(&x[0].t()?.reshape(&[-1])?)?])
            },
            vec![input(&[2, 3], -1.0, 1.0, 33)],
        ),
        (
            "view",
            |x| Ok(vec![x[0].view(&[3, 2])?.exp()?]),
            vec![input(&[2, 3], -1.0, 1.0, 34)],
        ),
        (
            "diagonal",
            |x| Ok(vec![x[0].diagonal(0, 0, 1)?.exp()?]),
            vec![input(&[3, 3], -1.0, 1.0, 35)],
        ),
        (
            "clone_contiguous",
            |x| Ok(vec![x[0].t()?.contiguous()?.deep_clone()?.exp()?]),
            vec![input(&[2, 3], -1.0, 1.0, 36)],
        ),
    ];
    for (name, f, xs) in cases {
        let second = !matches!(name, "amax" | "max" | "max_dim" | "min_dim" | "diagonal");
        check(name, f, &xs, second);
    }
}

fn v(t: &Tensor) -> Vec<f64> {
    t.to_dtype(DType::F64)
        .unwrap()
        .contiguous()
        .unwrap()
        .reshape(&[-1])
        .unwrap()
        .to_vec::<f64>()
        .unwrap()
}

#[test]
fn grad_fn_names_leaves_and_grads_follow_pytorch() {
    let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3])
        .unwrap()
        .requires_grad_(true)
        .unwrap();
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
    let x = Tensor::from_vec(vec![0.5f64, 1.0], &[2])
        .unwrap()
        .requires_grad_(true)
        .unwrap();
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
    let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3])
        .unwrap()
        .requires_grad_(true)
        .unwrap();
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
    let x = Tensor::from_vec(vec![1.5f32, -2.0], &[2])
        .unwrap()
        .requires_grad_(true)
        .unwrap();
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
    let x = Tensor::from_vec(vec![1.0f64, 2.0], &[2])
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let g = Tensor::from_vec(vec![3.0f64, 4.0], &[2]).unwrap();
    x.backward_with(Some(&g), None, false).unwrap();
    g.add_(10.0).unwrap();
    assert_eq!(v(&x.grad().unwrap()), vec![3.0, 4.0]);

    let z = Tensor::from_vec(vec![1.0f64, 2.0], &[2])
        .unwrap()
        .requires_grad_(true)
        .unwrap();
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
    let x = Tensor::from_vec(vec![1.0f64, 2.0], &[2])
        .unwrap()
        .requires_grad_(true)
        .unwrap();
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
    let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[4])
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let y = x.mul(2.0).unwrap();
    y.narrow(0, 1, 2).unwrap().mul_(3.0).unwrap();
    assert_eq!(v(&y), vec![2.0, 12.0, 18.0, 8.0]);
    assert_eq!(y.grad_fn().unwrap().name(), "CopySlices");
    y.sum().unwrap().backward().unwrap();
    assert_eq!(v(&x.grad().unwrap()), vec![2.0, 6.0, 6.0, 2.0]);
    // an in-place op whose old value matters: z = x*1; z *= x*1 -> d/dx = 2x
    let x2 = Tensor::from_vec(vec![1.0f64, -2.0], &[2])
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let z = x2.mul(1.0).unwrap();
    z.mul_(&x2.mul(1.0).unwrap()).unwrap();
    assert_eq!(z.grad_fn().unwrap().name(), "MulBackward0");
    z.sum().unwrap().backward().unwrap();
    assert_eq!(v(&x2.grad().unwrap()), vec![2.0, -4.0]);
    // PyTorch refuses this one: the saved operand shares z's version counter
    let x3 = Tensor::from_vec(vec![1.0f64], &[1])
        .unwrap()
        .requires_grad_(true)
        .unwrap();
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
    let x = Tensor::from_vec(vec![0.3f64, 1.1], &[2])
        .unwrap()
        .requires_grad_(true)
        .unwrap();
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
    let w = Tensor::from_vec(vec![0.5f64, -1.0, 2.0], &[3])
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let xin = Tensor::from_vec(vec![1.0f64, 2.0, 0.5], &[3])
        .unwrap()
        .requires_grad_(true)
        .unwrap();
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
    let x = Tensor::from_vec(vec![1.0f64, -2.0, 0.5], &[3])
        .unwrap()
        .requires_grad_(true)
        .unwrap();
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
    let x = Tensor::from_vec(vec![1.0f32, 2.0], &[2])
        .unwrap()
        .requires_grad_(true)
        .unwrap();
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
    let handles: Vec<_> = (0..4)
        .map(|k| {
            std::thread::spawn(move || {
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
            })
        })
        .collect();
    let got: Vec<f64> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    // each against the same computation run alone
    for (k, g) in got.iter().enumerate() {
        let x = Tensor::from_vec(vec![k as f64 + 1.0; 64], &[8, 8])
            .unwrap()
            .requires_grad_(true)
            .unwrap();
        let mut y = x.clone();
        for _ in 0..50 {
            y = y.mul(1.01).unwrap().tanh().unwrap();
        }
        y.sum().unwrap().backward().unwrap();
        assert_eq!(
            *g,
            x.grad().unwrap().sum().unwrap().item().unwrap().to_f64()
        );
    }
}

#[test]
fn fused_pointwise_backward_equals_the_composed_formula() {
    // Without create_graph the common unary formulas run as one fused
    // kernel; with it, as recorded tensor ops: both must agree.
    type Op = fn(&Tensor) -> Result<Tensor>;
    let ops: [(&str, Op); 11] = [
        ("sin", |t| t.sin()),
        ("relu", |t| t.relu()),
        ("cos", |t| t.cos()),
        ("exp", |t| t.exp()),
        ("tanh", |t| t.tanh()),
        ("sigmoid", |t| t.sigmoid()),
        ("elu", |t| t.elu(1.0, 1.0, 1.0)),
        ("selu", |t| {
            t.elu(1.673_263_242_354_377_3, 1.050_700_987_355_480_5, 1.0)
        }),
        ("celu(0.5)", |t| t.elu(0.5, 1.0, 2.0)),
        ("gelu", |t| t.gelu("none")),
        ("gelu(tanh)", |t| t.gelu("tanh")),
    ];
    for dt in [DType::F32, DType::F64] {
        for (name, f) in ops {
            // wide enough for gelu's tails (pdf underflow, erf saturation)
            let x = Tensor::linspace(-12.0, 12.0, 97, dt)
                .unwrap()
                .requires_grad_(true)
                .unwrap();
            let g = Tensor::linspace(0.5, 1.5, 97, dt).unwrap();
            let y = f(&x).unwrap();
            let plain = autograd::grad(
                &[y.clone()],
                &[x.clone()],
                Some(&[g.clone()]),
                Some(true),
                false,
                false,
            )
            .unwrap()[0]
                .clone()
                .unwrap();
            let composed = autograd::grad(&[y], &[x], Some(&[g]), None, true, false).unwrap()[0]
                .clone()
                .unwrap();
            let (a, b) = (plain.to_vec_f64().unwrap(), composed.to_vec_f64().unwrap());
            let tol = if dt == DType::F32 { 2e-6 } else { 1e-14 };
            for (p, q) in a.iter().zip(&b) {
                assert!(
                    (p - q).abs() <= tol * q.abs().max(1.0) || (p.is_nan() && q.is_nan()),
                    "{name} {dt:?}: {p} vs {q}"
                );
            }
        }
    }
}

#[test]
fn relu_backward_is_torchs_threshold_backward() {
    // torch 2.x: relu of [nan, -1, 0, 2, inf, -inf] backward with
    // grads [1, inf, 3, 4, inf, 6] gives [1, 0, 0, 4, inf, 0]: a NaN
    // result passes its gradient, an infinite gradient where the result
    // is <= 0 gives 0. Fused (no create_graph) and composed alike.
    let inf = f64::INFINITY;
    for dt in [DType::F32, DType::F64] {
        for create_graph in [false, true] {
            let x = Tensor::from_vec(vec![f64::NAN, -1.0, 0.0, 2.0, inf, -inf], &[6])
                .unwrap()
                .to_dtype(dt)
                .unwrap()
                .requires_grad_(true)
                .unwrap();
            let g = Tensor::from_vec(vec![1.0, inf, 3.0, 4.0, inf, 6.0], &[6])
                .unwrap()
                .to_dtype(dt)
                .unwrap();
            let y = x.relu().unwrap();
            let dx = autograd::grad(&[y], &[x], Some(&[g]), None, create_graph, false).unwrap()[0]
                .clone()
                .unwrap();
            assert_eq!(
                v(&dx),
                vec![1.0, 0.0, 0.0, 4.0, inf, 0.0],
                "{dt:?} create_graph={create_graph}"
            );
        }
    }
}

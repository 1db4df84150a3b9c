//! Autograd: every derivative against central finite differences
//! (gradcheck / gradgradcheck in f64); the engine's behaviour (names,
//! retain_graph, version checks, hooks, in-place on views, modes) is in
//! `engine.rs`, against values worked out by hand or printed by PyTorch.

#![allow(
    clippy::cloned_ref_to_slice_refs,
    clippy::needless_borrows_for_generic_args
)]
use ferrotorch_core::autograd::{self, gradcheck, gradgradcheck, GradcheckOptions};
use ferrotorch_core::{DType, Result, Tensor};

mod custom;
mod data_movement;
mod engine;
mod graph_hooks;
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

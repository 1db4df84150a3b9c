//! nn.functional against PyTorch: values and input gradients of every case
//! in fixtures/functional.json (made by fixtures/gen_functional.py), plus
//! the error cases.

use crate::common::{f64s, shape};
use ferrotorch_core::{autograd, Result, Tensor};
use ferrotorch_nn::functional::{self as F, BceWithLogits, ClassLoss, Reduction};
use serde_json::Value;

fn load() -> Value {
    crate::common::load("functional.json")
}

fn float(v: &Value) -> Tensor {
    Tensor::from_vec(f64s(v), &shape(v)).unwrap()
}

fn long(v: &Value) -> Tensor {
    let d: Vec<i64> = v["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_i64().unwrap())
        .collect();
    Tensor::from_vec(d, &shape(v)).unwrap()
}

type Case = Box<dyn Fn(&[Tensor]) -> Result<Tensor>>;

fn cases(fx: &Value) -> Vec<(&'static str, Case)> {
    let (cls, cls_prob, cls_img, w4) = (
        long(&fx["cls"]),
        float(&fx["cls_prob"]),
        long(&fx["cls_img"]),
        float(&fx["w4"]),
    );
    let (c1, c2, c3, c4, c5, c6, c7, c8) = (
        cls.clone(),
        cls.clone(),
        cls.clone(),
        cls.clone(),
        cls.clone(),
        cls_prob.clone(),
        cls_prob,
        cls_img,
    );
    let (w1, w2, w3, w5, w6, w7) = (
        w4.clone(),
        w4.clone(),
        w4.clone(),
        w4.clone(),
        w4.clone(),
        w4,
    );
    let m = Reduction::Mean;
    let (pm1, counts, tgt) = (float(&fx["pm1"]), float(&fx["counts"]), float(&fx["tgt"]));
    let (p1, p2, p3, n1, n2) = (pm1.clone(), pm1.clone(), pm1, counts.clone(), counts);
    vec![
        ("relu", Box::new(|x| F::relu(&x[0]))),
        ("relu6", Box::new(|x| F::relu6(&x[0].mul(3.0)?))),
        ("leaky_relu", Box::new(|x| F::leaky_relu(&x[0], 0.2))),
        ("elu", Box::new(|x| F::elu(&x[0], 1.5))),
        ("selu", Box::new(|x| F::selu(&x[0]))),
        ("celu", Box::new(|x| F::celu(&x[0], 0.7))),
        ("gelu", Box::new(|x| F::gelu(&x[0], "none"))),
        ("gelu_tanh", Box::new(|x| F::gelu(&x[0], "tanh"))),
        ("silu", Box::new(|x| F::silu(&x[0]))),
        ("mish", Box::new(|x| F::mish(&x[0]))),
        ("softplus", Box::new(|x| F::softplus(&x[0], 2.0, 5.0))),
        ("softsign", Box::new(|x| F::softsign(&x[0]))),
        ("hardtanh", Box::new(|x| F::hardtanh(&x[0], -2.0, 1.5))),
        ("hardswish", Box::new(|x| F::hardswish(&x[0]))),
        ("hardsigmoid", Box::new(|x| F::hardsigmoid(&x[0]))),
        ("sigmoid", Box::new(|x| F::sigmoid(&x[0]))),
        ("tanh", Box::new(|x| F::tanh(&x[0]))),
        ("logsigmoid", Box::new(|x| F::logsigmoid(&x[0]))),
        ("glu", Box::new(|x| F::glu(&x[0], -1))),
        ("prelu", Box::new(|x| F::prelu(&x[0], &x[1]))),
        ("threshold", Box::new(|x| F::threshold(&x[0], 0.5, -1.0))),
        ("softmin", Box::new(|x| F::softmin(&x[0], 1))),
        ("mse_loss", Box::new(move |x| F::mse_loss(&x[0], &x[1], m))),
        (
            "mse_loss_none",
            Box::new(|x| F::mse_loss(&x[0], &x[1], Reduction::None)),
        ),
        (
            "l1_loss_sum",
            Box::new(|x| F::l1_loss(&x[0], &x[1], Reduction::Sum)),
        ),
        (
            "smooth_l1_loss",
            Box::new(move |x| F::smooth_l1_loss(&x[0], &x[1], m, 0.5)),
        ),
        (
            "huber_loss",
            Box::new(|x| F::huber_loss(&x[0], &x[1], Reduction::Sum, 0.8)),
        ),
        (
            "bce",
            Box::new(move |x| F::binary_cross_entropy(&x[0], &x[1], Some(&w1), m)),
        ),
        (
            "bce_with_logits",
            Box::new(move |x| {
                F::binary_cross_entropy_with_logits(
                    &x[0],
                    &x[1],
                    BceWithLogits {
                        pos_weight: Some(&w2),
                        ..Default::default()
                    },
                )
            }),
        ),
        (
            "bce_with_logits_none",
            Box::new(move |x| {
                F::binary_cross_entropy_with_logits(
                    &x[0],
                    &x[1],
                    BceWithLogits {
                        weight: Some(&w3),
                        reduction: Reduction::None,
                        ..Default::default()
                    },
                )
            }),
        ),
        (
            "nll_loss",
            Box::new(move |x| F::nll_loss(&x[0].log_softmax(1, None)?, &c1, ClassLoss::default())),
        ),
        (
            "nll_loss_weight",
            Box::new(move |x| {
                F::nll_loss(
                    &x[0].log_softmax(1, None)?,
                    &c2,
                    ClassLoss {
                        weight: Some(&w5),
                        ..Default::default()
                    },
                )
            }),
        ),
        (
            "cross_entropy",
            Box::new(move |x| F::cross_entropy(&x[0], &c3, ClassLoss::default())),
        ),
        (
            "cross_entropy_weight_smooth",
            Box::new(move |x| {
                F::cross_entropy(
                    &x[0],
                    &c4,
                    ClassLoss {
                        weight: Some(&w6),
                        label_smoothing: 0.2,
                        ..Default::default()
                    },
                )
            }),
        ),
        (
            "cross_entropy_smooth_sum",
            Box::new(move |x| {
                F::cross_entropy(
                    &x[0],
                    &c5,
                    ClassLoss {
                        label_smoothing: 0.1,
                        reduction: Reduction::Sum,
                        ..Default::default()
                    },
                )
            }),
        ),
        (
            "cross_entropy_probs",
            Box::new(move |x| {
                F::cross_entropy(
                    &x[0],
                    &c6,
                    ClassLoss {
                        label_smoothing: 0.1,
                        ..Default::default()
                    },
                )
            }),
        ),
        (
            "cross_entropy_probs_weight",
            Box::new(move |x| {
                F::cross_entropy(
                    &x[0],
                    &c7,
                    ClassLoss {
                        weight: Some(&w7),
                        ..Default::default()
                    },
                )
            }),
        ),
        (
            "cross_entropy_2d",
            Box::new(move |x| {
                F::cross_entropy(
                    &x[0],
                    &c8,
                    ClassLoss {
                        reduction: Reduction::None,
                        ..Default::default()
                    },
                )
            }),
        ),
        (
            "kl_div",
            Box::new(|x| F::kl_div_batchmean(&x[0], &x[1], false)),
        ),
        (
            "kl_div_log_target",
            Box::new(|x| F::kl_div(&x[0], &x[1], Reduction::Sum, true)),
        ),
        (
            "margin_ranking",
            Box::new(move |x| F::margin_ranking_loss(&x[0], &x[1], &p1, 0.3, m)),
        ),
        (
            "hinge_embedding",
            Box::new(move |x| {
                F::hinge_embedding_loss(&x[0], &p2.unsqueeze(1)?.expand(&[3, 4])?, 1.5, m)
            }),
        ),
        (
            "cosine_embedding",
            Box::new(move |x| F::cosine_embedding_loss(&x[0], &x[1], &p3, 0.1, m)),
        ),
        (
            "triplet_margin",
            Box::new(move |x| F::triplet_margin_loss(&x[0], &x[1], &x[2], 0.5, 2.0, 1e-6, true, m)),
        ),
        (
            "poisson_nll",
            Box::new(move |x| F::poisson_nll_loss(&x[0], &n1, true, false, 1e-8, m)),
        ),
        (
            "poisson_nll_full",
            Box::new(move |x| F::poisson_nll_loss(&x[0], &n2, false, true, 1e-8, Reduction::Sum)),
        ),
        (
            "gaussian_nll",
            Box::new(move |x| F::gaussian_nll_loss(&x[0], &tgt, &x[1], true, 1e-6, m)),
        ),
        ("linear", Box::new(|x| F::linear(&x[0], &x[1], Some(&x[2])))),
        (
            "bilinear",
            Box::new(|x| F::bilinear(&x[0], &x[1], &x[2], None)),
        ),
        (
            "normalize",
            Box::new(|x| F::normalize(&x[0], 3.0, 0, 1e-12)),
        ),
        (
            "cosine_similarity",
            Box::new(|x| F::cosine_similarity(&x[0], &x[1], 1, 1e-8)),
        ),
        (
            "pairwise_distance",
            Box::new(|x| F::pairwise_distance(&x[0], &x[1], 1.5, 1e-6, false)),
        ),
        (
            "cross_entropy_1d",
            Box::new(|x| {
                F::cross_entropy(
                    &x[0],
                    &Tensor::from_vec(vec![2i64], &[]).unwrap(),
                    ClassLoss::default(),
                )
            }),
        ),
    ]
}

const FLOAT32_CONSTANTS: &[&str] = &["celu", "hardsigmoid", "hardswish"];

fn close(name: &str, what: &str, got: &Tensor, want: &Value) {
    assert_eq!(got.shape(), shape(want).as_slice(), "{name} {what}: shape");
    let g = got
        .to_dtype(ferrotorch_core::DType::F64)
        .unwrap()
        .to_vec::<f64>()
        .unwrap();
    // PyTorch's kernels for these round a constant to float32 even for
    // float64 (celu's 1/alpha, hardsigmoid's 1/6): a 1e-8 relative error
    // against the exact values, which we compute.
    let tol = if FLOAT32_CONSTANTS.contains(&name) {
        1e-7
    } else {
        1e-10
    };
    for (i, (a, b)) in g.iter().zip(f64s(want)).enumerate() {
        assert!(
            (a - b).abs() <= tol * (1.0 + b.abs()),
            "{name} {what}[{i}]: {a} vs PyTorch {b}"
        );
    }
}

#[test]
fn functional_matches_pytorch_values_and_gradients() {
    let fx = load();
    let table = cases(&fx);
    assert_eq!(
        table.len(),
        fx["cases"].as_object().unwrap().len(),
        "every fixture case is run"
    );
    for (name, f) in &table {
        let c = &fx["cases"][*name];
        let inputs: Vec<Tensor> = c["inputs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| float(v).requires_grad_(true).unwrap())
            .collect();
        let y = f(&inputs).unwrap_or_else(|e| panic!("{name}: {e}"));
        close(name, "output", &y, &c["out"]);
        let n = y.numel();
        let cot: Vec<f64> = (0..n)
            .map(|i| {
                if n == 1 {
                    0.5
                } else {
                    0.5 + i as f64 / (n - 1) as f64
                }
            })
            .collect();
        let cot = Tensor::from_vec(cot, y.shape()).unwrap();
        let s = y.mul(&cot).unwrap().sum().unwrap();
        let grads = autograd::grad(&[s], &inputs, None, None, false, false).unwrap();
        for (k, (g, want)) in grads.iter().zip(c["grads"].as_array().unwrap()).enumerate() {
            close(name, &format!("grad {k}"), g.as_ref().unwrap(), want);
        }
    }
}

#[test]
fn bad_inputs_get_pytorchs_errors() {
    let x = Tensor::from_slice(&[0.5f64, 0.2]);
    let y = Tensor::from_slice(&[1.0f64, 0.0, 1.0]);
    let e = F::mse_loss(&x, &y, Reduction::Mean)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("target size ([3]) that is different to the input size ([2])"),
        "{e}"
    );
    let e = F::binary_cross_entropy(&x.add(1.0).unwrap(), &x, None, Reduction::Mean)
        .unwrap_err()
        .to_string();
    assert!(e.contains("between 0 and 1"), "{e}");
    let logits = Tensor::zeros(&[2, 3], ferrotorch_core::DType::F64).unwrap();
    let e = F::cross_entropy(
        &logits,
        &Tensor::from_slice(&[0i64, 3]),
        ClassLoss::default(),
    )
    .unwrap_err()
    .to_string();
    assert_eq!(e, "Target 3 is out of bounds.");
    let e = F::cross_entropy(&logits, &Tensor::from_slice(&[0i64]), ClassLoss::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("Expected target size [2], got [1]"), "{e}");
    let e = F::glu(&logits, 1).unwrap_err().to_string();
    assert!(e.contains("Halving dimension must be even"), "{e}");
    assert!(Reduction::parse("avg").is_err());
    assert_eq!(Reduction::parse("sum").unwrap(), Reduction::Sum);
}

#[test]
fn linear_on_a_matrix_is_one_addmm_with_contiguous_parameter_gradients() {
    // As in PyTorch: F.linear(x, w, b) on a 2-D input records AddmmBackward0,
    // and w.grad comes back contiguous (Note [Gradient layout]).
    let x = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
    let w = Tensor::from_vec(vec![0.5f64, -1.0, 2.0, 1.5, 0.25, -0.5], &[2, 3])
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let b = Tensor::from_vec(vec![0.1f64, -0.2], &[2])
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let y = F::linear(&x, &w, Some(&b)).unwrap();
    assert_eq!(y.grad_fn().unwrap().name(), "AddmmBackward0");
    // y = x wᵀ + b: [[4.6, 0.3], [9.1, 4.05]]
    let want = [4.6, 0.3, 9.1, 4.05];
    for (g, w) in y.to_vec_f64().unwrap().iter().zip(want) {
        assert!((g - w).abs() < 1e-12, "{g} vs {w}");
    }
    y.sum().unwrap().backward().unwrap();
    let gw = w.grad().unwrap();
    assert!(gw.is_contiguous(), "{:?} {:?}", gw.shape(), gw.stride());
    // d sum / d w[o, i] = Σ_n x[n, i]; d sum / d b = batch size
    assert_eq!(gw.to_vec_f64().unwrap(), vec![5.0, 7.0, 9.0, 5.0, 7.0, 9.0]);
    assert_eq!(b.grad().unwrap().to_vec_f64().unwrap(), vec![2.0, 2.0]);
}

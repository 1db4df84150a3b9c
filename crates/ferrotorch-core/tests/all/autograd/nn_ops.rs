//! Gradchecks for the nn kernels (convolutions, pooling, normalisation,
//! embedding, interpolation, attention) and the composite linear algebra.

use super::{check, input, F};
use ferrotorch_core::autograd;
use ferrotorch_core::{native, DType, Result, Tensor};

#[test]
fn convolutions() {
    let conv = || {
        vec![
            input(&[2, 4, 5, 6], -1.0, 1.0, 21),
            input(&[6, 2, 3, 2], -0.5, 0.5, 22),
            input(&[6], -0.5, 0.5, 23),
        ]
    };
    let convt = || {
        vec![
            input(&[2, 4, 3, 4], -1.0, 1.0, 24),
            input(&[4, 3, 3, 2], -0.5, 0.5, 25),
            input(&[6], -0.5, 0.5, 26),
        ]
    };
    let cases: Vec<(&str, F, Vec<Tensor>)> = vec![
        (
            "conv2d",
            |x| {
                Ok(vec![x[0].conv2d(
                    &x[1],
                    Some(&x[2]),
                    &[1],
                    &[0],
                    &[1],
                    2,
                )?])
            },
            conv(),
        ),
        (
            "conv2d_stride_pad_dil",
            |x| {
                Ok(vec![x[0].conv2d(
                    &x[1],
                    None,
                    &[2, 1],
                    &[1, 1],
                    &[1, 2],
                    2,
                )?])
            },
            conv(),
        ),
        (
            "conv2d_stride3_unreached",
            |x| {
                Ok(vec![x[0].conv2d(
                    &x[1],
                    Some(&x[2]),
                    &[3, 2],
                    &[0],
                    &[1],
                    2,
                )?])
            },
            conv(),
        ),
        (
            "conv1d",
            |x| {
                let w = x[1].select(2, 0)?;
                Ok(vec![x[0].select(2, 1)?.conv1d(&w, None, 2, 1, 1, 2)?])
            },
            conv(),
        ),
        (
            "conv_transpose2d",
            |x| {
                Ok(vec![x[0].conv_transpose2d(
                    &x[1],
                    Some(&x[2]),
                    &[2, 1],
                    &[1, 0],
                    &[1, 0],
                    2,
                    &[1],
                )?])
            },
            convt(),
        ),
        (
            "conv_transpose2d_dilated",
            |x| {
                Ok(vec![x[0].conv_transpose2d(
                    &x[1],
                    None,
                    &[1],
                    &[0, 1],
                    &[0],
                    2,
                    &[2, 1],
                )?])
            },
            convt(),
        ),
        (
            "conv2d_unbatched",
            |x| {
                Ok(vec![x[0].select(0, 1)?.conv2d(
                    &x[1],
                    Some(&x[2]),
                    &[1],
                    &[1],
                    &[1],
                    2,
                )?])
            },
            conv(),
        ),
    ];
    for (name, f, inputs) in cases {
        check(name, f, &inputs, true);
    }
}

#[test]
fn pooling() {
    let x = || vec![input(&[2, 2, 5, 6], -1.0, 1.0, 31)];
    let cases: Vec<(&str, F, Vec<Tensor>)> = vec![
        (
            "max_pool2d",
            |x| Ok(vec![x[0].max_pool2d(&[2], &[], &[0], &[1], false)?]),
            x(),
        ),
        (
            "max_pool2d_pad_dil_ceil",
            |x| {
                Ok(vec![x[0].max_pool2d(
                    &[3, 2],
                    &[2, 2],
                    &[1, 1],
                    &[1, 2],
                    true,
                )?])
            },
            x(),
        ),
        (
            "max_pool1d",
            |x| {
                Ok(vec![
                    x[0].select(2, 0)?
                        .max_pool1d_with_indices(3, Some(2), 1, 1, false)?
                        .0,
                ])
            },
            x(),
        ),
        (
            "avg_pool2d",
            |x| {
                Ok(vec![x[0].avg_pool2d(
                    &[2, 3],
                    &[2, 2],
                    &[1, 1],
                    false,
                    true,
                    None,
                )?])
            },
            x(),
        ),
        (
            "avg_pool2d_exclude_pad_ceil",
            |x| {
                Ok(vec![x[0].avg_pool2d(
                    &[3],
                    &[2],
                    &[1],
                    true,
                    false,
                    None,
                )?])
            },
            x(),
        ),
        (
            "avg_pool2d_divisor",
            |x| {
                Ok(vec![x[0].select(0, 0)?.avg_pool2d(
                    &[2],
                    &[1],
                    &[0],
                    false,
                    true,
                    Some(3),
                )?])
            },
            x(),
        ),
        (
            "adaptive_avg_pool2d",
            |x| Ok(vec![x[0].adaptive_avg_pool2d(&[3, 4])?]),
            x(),
        ),
        (
            "adaptive_max_pool2d",
            |x| Ok(vec![x[0].adaptive_max_pool2d(&[2, 4])?.0]),
            x(),
        ),
    ];
    for (name, f, inputs) in cases {
        check(name, f, &inputs, true);
    }
}

#[test]
fn normalisation_embedding_interpolation_attention() {
    let norm = || {
        vec![
            input(&[3, 4, 2, 2], -1.0, 1.0, 41),
            input(&[4], 0.5, 1.5, 42),
            input(&[4], -0.5, 0.5, 43),
        ]
    };
    let qkv = || {
        vec![
            input(&[2, 3, 4], -1.0, 1.0, 44),
            input(&[2, 5, 4], -1.0, 1.0, 45),
            input(&[2, 5, 3], -1.0, 1.0, 46),
        ]
    };
    let cases: Vec<(&str, F, Vec<Tensor>)> = vec![
        (
            "batch_norm_train",
            |x| {
                Ok(vec![x[0].batch_norm(
                    None,
                    None,
                    Some(&x[1]),
                    Some(&x[2]),
                    true,
                    0.1,
                    1e-5,
                )?])
            },
            norm(),
        ),
        (
            "batch_norm_eval",
            |x| {
                let rm = Tensor::from_slice(&[0.1f64, -0.2, 0.0, 0.3]);
                let rv = Tensor::from_slice(&[1.0f64, 0.5, 2.0, 0.8]);
                Ok(vec![x[0].batch_norm(
                    Some(&rm),
                    Some(&rv),
                    Some(&x[1]),
                    Some(&x[2]),
                    false,
                    0.1,
                    1e-5,
                )?])
            },
            norm(),
        ),
        (
            "layer_norm",
            |x| {
                Ok(vec![x[0].layer_norm(
                    &[2, 2],
                    Some(&x[1].reshape(&[2, 2])?),
                    Some(&x[2].reshape(&[2, 2])?),
                    1e-5,
                )?])
            },
            norm(),
        ),
        (
            "group_norm",
            |x| Ok(vec![x[0].group_norm(2, Some(&x[1]), Some(&x[2]), 1e-5)?]),
            norm(),
        ),
        (
            "embedding",
            |x| {
                Ok(vec![x[1]
                    .reshape(&[2, 2])?
                    .embedding(&Tensor::from_slice(&[1i64, 0, 1]))?])
            },
            norm(),
        ),
        (
            "interpolate_bilinear",
            |x| Ok(vec![x[0].interpolate(&[3, 5], "bilinear", false)?]),
            norm(),
        ),
        (
            "interpolate_nearest",
            |x| Ok(vec![x[0].interpolate(&[3, 3], "nearest", false)?]),
            norm(),
        ),
        (
            "sdpa",
            |x| {
                Ok(vec![x[0].scaled_dot_product_attention(
                    &x[1], &x[2], None, 0.0, false, None,
                )?])
            },
            qkv(),
        ),
        (
            "sdpa_causal",
            |x| {
                Ok(vec![x[0].scaled_dot_product_attention(
                    &x[1],
                    &x[2],
                    None,
                    0.0,
                    true,
                    Some(0.3),
                )?])
            },
            qkv(),
        ),
    ];
    for (name, f, inputs) in cases {
        check(name, f, &inputs, true);
    }
}

#[test]
fn composite_linear_algebra() {
    let mats = || {
        vec![
            input(&[3, 4], -1.0, 1.0, 51),
            input(&[4, 2], -1.0, 1.0, 52),
            input(&[3, 2], -1.0, 1.0, 53),
        ]
    };
    let vecs = || {
        vec![
            input(&[4], -1.0, 1.0, 54),
            input(&[4], -1.0, 1.0, 55),
            input(&[3, 4], -1.0, 1.0, 56),
        ]
    };
    let cases: Vec<(&str, F, Vec<Tensor>)> = vec![
        (
            "addmm",
            |x| Ok(vec![x[2].addmm(&x[0], &x[1], 0.5, 2.0)?]),
            mats(),
        ),
        (
            "baddbmm",
            |x| {
                Ok(vec![x[2].unsqueeze(0)?.baddbmm(
                    &x[0].unsqueeze(0)?,
                    &x[1].unsqueeze(0)?,
                    1.0,
                    -1.0,
                )?])
            },
            mats(),
        ),
        (
            "einsum",
            |x| {
                Ok(vec![native::einsum(
                    "ij,jk->ik",
                    &[x[0].clone(), x[1].clone()],
                )?])
            },
            mats(),
        ),
        (
            "einsum_trace",
            |x| {
                Ok(vec![native::einsum(
                    "ij,ij->",
                    &[x[0].clone(), x[0].clone()],
                )?])
            },
            mats(),
        ),
        (
            "tensordot",
            |x| Ok(vec![x[0].tensordot(&x[1], &[1], &[0])?]),
            mats(),
        ),
        ("mv", |x| Ok(vec![x[2].mv(&x[0])?]), vecs()),
        ("dot", |x| Ok(vec![x[0].dot(&x[1])?]), vecs()),
        ("outer", |x| Ok(vec![x[0].outer(&x[1])?]), vecs()),
    ];
    for (name, f, inputs) in cases {
        check(name, f, &inputs, true);
    }
}

#[test]
fn dropout_gradient_is_the_kept_mask_scaled() {
    let x = input(&[64], -1.0, 1.0, 61);
    let _rng = crate::rng_lock();
    let y = x.dropout(0.25, true, None).unwrap();
    y.sum().unwrap().backward().unwrap();
    let (yv, g) = (
        y.to_vec::<f64>().unwrap(),
        x.grad().unwrap().to_vec::<f64>().unwrap(),
    );
    let xv = x.to_vec::<f64>().unwrap();
    for i in 0..64 {
        let kept = yv[i] != 0.0;
        assert_eq!(g[i], if kept { 1.0 / 0.75 } else { 0.0 });
        if kept {
            assert!((yv[i] - xv[i] / 0.75).abs() < 1e-12);
        }
    }
}

#[test]
fn nan_to_num_blocks_gradient_at_replaced_values() {
    let x = Tensor::from_slice(&[1.0f64, f64::NAN, f64::INFINITY, -2.0])
        .requires_grad_(true)
        .unwrap();
    x.nan_to_num(Some(0.0), None, None)
        .unwrap()
        .sum()
        .unwrap()
        .backward()
        .unwrap();
    assert_eq!(
        x.grad().unwrap().to_vec::<f64>().unwrap(),
        vec![1.0, 0.0, 0.0, 1.0]
    );
}

#[test]
fn elu_second_derivative_stays_finite_for_large_inputs() -> ferrotorch_core::Result<()> {
    use ferrotorch_core::{autograd, Tensor};
    // exp(0.7 · 2000) overflows: the masked branch must not turn into NaN.
    let x = Tensor::from_slice(&[2000.0f64, -1.0]).requires_grad_(true)?;
    let y = x.elu(1.3, 1.05, 0.7)?.sum()?;
    let g = autograd::grad(&[y], &[x.clone()], None, None, true, false)?[0]
        .clone()
        .unwrap();
    assert_eq!(g.to_vec::<f64>()?[0], 1.05);
    let g2 = autograd::grad(&[g.sum()?], &[x], None, None, false, false)?[0]
        .clone()
        .unwrap();
    let v = g2.to_vec::<f64>()?;
    assert_eq!(v[0], 0.0);
    // d²/dx² of 1.05·1.3·(e^{0.7x} − 1) at x = −1.
    assert!((v[1] - 1.05 * 1.3 * 0.49 * (-0.7f64).exp()).abs() < 1e-12);
    Ok(())
}

/// The fused float32 softmax / log-softmax backward (last dim, no
/// create_graph) against the composed float64 formula, for any way of
/// naming the last dim, a strided output gradient, and a non-last dim
/// (which takes the composed path).
#[test]
fn fused_softmax_backward_matches_f64() -> Result<()> {
    let x64 = input(&[3, 4, 9], -3.0, 3.0, 61);
    let x32 = x64.detach().to_dtype(DType::F32)?.requires_grad_(true)?;
    let g64 = input(&[9, 4, 3], -1.0, 1.0, 62)
        .detach()
        .permute(&[2, 1, 0])?;
    let g32 = g64.to_dtype(DType::F32)?;
    for log in [false, true] {
        for dim in [-1i64, 2, 1] {
            let f = |x: &Tensor| {
                if log {
                    x.log_softmax(dim, None)
                } else {
                    x.softmax(dim, None)
                }
            };
            let a = autograd::grad(
                &[f(&x64)?],
                &[x64.clone()],
                Some(&[g64.clone()]),
                None,
                false,
                false,
            )?;
            let b = autograd::grad(
                &[f(&x32)?],
                &[x32.clone()],
                Some(&[g32.clone()]),
                None,
                false,
                false,
            )?;
            let (a, b) = (
                a[0].clone().unwrap(),
                b[0].clone().unwrap().to_dtype(DType::F64)?,
            );
            assert!(b.allclose(&a, 1e-5, 1e-5, false)?, "log={log} dim={dim}");
        }
    }
    Ok(())
}

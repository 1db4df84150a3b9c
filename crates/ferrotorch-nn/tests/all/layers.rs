//! Convolution, pooling, normalisation and embedding layers against
//! PyTorch (fixtures/modules.json, made by fixtures/gen_modules.py):
//! default initialisation under the same seed, outputs, BatchNorm's
//! running statistics in train and eval, the embedding's padding row, and
//! the printed module tree.

use crate::common::{assert_close, float32, load, rng_lock};
use ferrotorch_core::native::random::manual_seed;
use ferrotorch_core::{Result, Tensor};
use ferrotorch_nn::{self as nn, Forward, Module};
use serde_json::Value;

struct Zoo {
    conv: nn::Conv2d,
    convt: nn::ConvTranspose2d,
    conv1: nn::Conv1d,
}

fn zoo() -> Result<Zoo> {
    manual_seed(30);
    let o = nn::ConvOptions::default();
    Ok(Zoo {
        conv: nn::Conv2d::new(
            3,
            4,
            (3, 2),
            nn::ConvOptions {
                stride: 2.into(),
                padding: 1.into(),
                ..o
            },
        )?,
        convt: nn::ConvTranspose2d::new(
            4,
            2,
            3,
            nn::ConvOptions {
                stride: 2.into(),
                output_padding: 1.into(),
                groups: 2,
                ..o
            },
        )?,
        conv1: nn::Conv1d::new(
            2,
            4,
            3,
            nn::ConvOptions {
                dilation: 2.into(),
                bias: false,
                ..o
            },
        )?,
    })
}

#[test]
fn convolutions_start_from_pytorchs_weights_and_agree() -> Result<()> {
    let _rng = rng_lock();
    let fx = load("modules.json");
    let z = zoo()?;
    let init = &fx["conv_init"];
    assert_close(
        "conv2d",
        &z.conv.weight.tensor(),
        &init["conv2d"],
        1e-7,
        1e-6,
    );
    assert_close(
        "conv2d bias",
        &z.conv.bias.as_ref().unwrap().tensor(),
        &init["conv2d_bias"],
        1e-7,
        1e-6,
    );
    assert_close(
        "convt",
        &z.convt.weight.tensor(),
        &init["convt"],
        1e-7,
        1e-6,
    );
    assert_close(
        "conv1d",
        &z.conv1.weight.tensor(),
        &init["conv1d"],
        1e-7,
        1e-6,
    );
    let x = float32(&fx["conv_x"]);
    let y = z.conv.call(&x)?;
    assert_close("conv2d forward", &y, &fx["conv_y"], 1e-5, 1e-5);
    assert_close(
        "conv_transpose2d forward",
        &z.convt.call(&y)?,
        &fx["convt_y"],
        1e-5,
        1e-5,
    );
    Ok(())
}

#[test]
fn batch_norm_tracks_pytorchs_running_statistics() -> Result<()> {
    let fx = load("modules.json");
    let bn_fx = &fx["bn"];
    let x = float32(&fx["conv_x"]);
    let bn = nn::BatchNorm2d::new(3, Default::default())?;
    let cum = nn::BatchNorm2d::new(
        3,
        nn::BatchNormOptions {
            momentum: None,
            affine: false,
            ..Default::default()
        },
    )?;
    for k in 0..3 {
        let xb = x.mul((k + 1) as f64)?.add(k as f64)?;
        assert_close("bn train", &bn.call(&xb)?, &bn_fx["y"][k], 1e-5, 1e-4);
        cum.call(&xb)?;
    }
    bn.eval();
    assert_close("bn eval", &bn.call(&x)?, &bn_fx["y"][3], 1e-5, 1e-4);
    assert_close(
        "running_mean",
        &bn.running_mean.as_ref().unwrap().tensor(),
        &bn_fx["running_mean"],
        1e-6,
        1e-5,
    );
    assert_close(
        "running_var",
        &bn.running_var.as_ref().unwrap().tensor(),
        &bn_fx["running_var"],
        1e-6,
        1e-5,
    );
    assert_close(
        "cumulative mean",
        &cum.running_mean.as_ref().unwrap().tensor(),
        &bn_fx["cum_mean"],
        1e-6,
        1e-5,
    );
    assert_close(
        "cumulative var",
        &cum.running_var.as_ref().unwrap().tensor(),
        &bn_fx["cum_var"],
        1e-6,
        1e-5,
    );
    let tracked = bn
        .num_batches_tracked
        .as_ref()
        .unwrap()
        .tensor()
        .item_f64()?;
    assert_eq!(tracked, bn_fx["tracked"].as_f64().unwrap());
    let keys: Vec<String> = bn.state_dict().keys().cloned().collect();
    let expected: Vec<String> = serde_json::from_value(bn_fx["keys"].clone()).unwrap();
    assert_eq!(keys, expected);
    // Running statistics are buffers, never parameters, and stay out of the graph.
    assert_eq!(bn.parameters().len(), 2);
    assert!(!bn.running_mean.as_ref().unwrap().tensor().requires_grad());
    let e = bn.call(&x.select(0, 0)?).unwrap_err();
    assert_eq!(e.to_string(), "expected 4D input (got 3D input)");
    Ok(())
}

#[test]
fn norms_and_pools_match_pytorch() -> Result<()> {
    let fx = load("modules.json");
    let x = float32(&fx["conv_x"]);
    let n = &fx["norms"];
    assert_close(
        "layer_norm",
        &nn::LayerNorm::new(&[5, 6], 1e-5, true, true)?.call(&x)?,
        &n["layer"],
        1e-5,
        1e-4,
    );
    assert_close(
        "group_norm",
        &nn::GroupNorm::new(1, 3, 1e-5, true, true)?.call(&x)?,
        &n["group"],
        1e-5,
        1e-4,
    );
    assert_close(
        "rms_norm",
        &nn::RMSNorm::new(&[6], None, true)?.call(&x)?,
        &n["rms"],
        1e-5,
        1e-4,
    );
    let pools: Vec<Box<dyn Forward>> = vec![
        Box::new(nn::MaxPool2d::new(2, None, 0)),
        Box::new(nn::MaxPool2d::new((3, 2), Some((1, 2).into()), 1)),
        Box::new(nn::AvgPool2d::new(3, Some(2.into()), 1)),
        Box::new(nn::AdaptiveAvgPool2d::new((2, 3))),
        Box::new(nn::AdaptiveMaxPool2d::new(1)),
    ];
    for (k, p) in pools.iter().enumerate() {
        assert_close(p.type_name(), &p.call(&x)?, &fx["pools"][k], 1e-6, 1e-5);
    }
    assert!(nn::GroupNorm::new(2, 3, 1e-5, true, true).is_err());
    Ok(())
}

#[test]
fn embedding_padding_row_is_zero_and_gets_no_gradient() -> Result<()> {
    let _rng = rng_lock();
    let fx = load("modules.json");
    manual_seed(32);
    let emb = nn::Embedding::new(5, 3, Some(-1))?;
    assert_close(
        "embedding init",
        &emb.weight.tensor(),
        &fx["embedding"]["weight"],
        1e-7,
        1e-6,
    );
    let idx = Tensor::from_vec(vec![0i64, 4, 2, 4, 1, 1], &[2, 3])?;
    emb.call(&idx)?.sum()?.backward()?;
    assert_close(
        "embedding grad",
        &emb.weight.grad().unwrap(),
        &fx["embedding"]["grad"],
        0.0,
        0.0,
    );
    assert!(nn::Embedding::new(5, 3, Some(5)).is_err());
    Ok(())
}

#[test]
fn layer_reprs_match_pytorch() -> Result<()> {
    let _rng = rng_lock();
    let fx = load("modules.json");
    let z = zoo()?;
    let seq = nn::Sequential::new()
        .append(z.conv)
        .append(z.convt)
        .append(z.conv1)
        .append(nn::BatchNorm2d::new(3, Default::default())?)
        .append(nn::BatchNorm2d::new(
            3,
            nn::BatchNormOptions {
                momentum: None,
                affine: false,
                ..Default::default()
            },
        )?)
        .append(nn::LayerNorm::new(&[5, 6], 1e-5, true, true)?)
        .append(nn::GroupNorm::new(1, 3, 1e-5, true, true)?)
        .append(nn::RMSNorm::new(&[6], None, true)?)
        .append(nn::MaxPool2d::new(2, None, 0))
        .append(nn::MaxPool2d::new((3, 2), Some((1, 2).into()), 1))
        .append(nn::AvgPool2d::new(3, Some(2.into()), 1))
        .append(nn::AdaptiveAvgPool2d::new((2, 3)))
        .append(nn::AdaptiveMaxPool2d::new(1))
        .append(nn::Embedding::new(5, 3, Some(-1))?)
        .append(nn::Dropout2d::new(0.2)?);
    let expected: &Value = &fx["zoo_repr"];
    assert_eq!(seq.repr(), expected.as_str().unwrap());
    Ok(())
}

#[test]
fn functional_forms_match_pytorch() -> Result<()> {
    use ferrotorch_nn::functional as F;
    let _rng = rng_lock();
    let fx = load("modules.json");
    let z = zoo()?;
    let x = float32(&fx["conv_x"]);
    let (w, b) = (
        z.conv.weight.tensor(),
        z.conv.bias.as_ref().unwrap().tensor(),
    );
    let y = F::conv2d(&x, &w, Some(&b), &[2, 2], &[1, 1], &[1, 1], 1)?;
    assert_close("F.conv2d", &y, &fx["conv_y"], 1e-5, 1e-5);
    let (wt, bt) = (
        z.convt.weight.tensor(),
        z.convt.bias.as_ref().unwrap().tensor(),
    );
    let yt = F::conv_transpose2d(&y, &wt, Some(&bt), &[2, 2], &[0, 0], &[1, 1], 2, &[1, 1])?;
    assert_close("F.conv_transpose2d", &yt, &fx["convt_y"], 1e-5, 1e-5);
    let n = &fx["norms"];
    assert_close(
        "F.layer_norm",
        &F::layer_norm(&x, &[5, 6], None, None, 1e-5)?,
        &n["layer"],
        1e-5,
        1e-4,
    );
    assert_close(
        "F.group_norm",
        &F::group_norm(&x, 1, None, None, 1e-5)?,
        &n["group"],
        1e-5,
        1e-4,
    );
    assert_close(
        "F.rms_norm",
        &F::rms_norm(&x, &[6], None, None)?,
        &n["rms"],
        1e-5,
        1e-4,
    );
    let p = &fx["pools"];
    assert_close(
        "F.max_pool2d",
        &F::max_pool2d(&x, &[2, 2], &[2, 2], &[0, 0], &[1, 1], false)?,
        &p[0],
        1e-7,
        0.0,
    );
    let avg = F::avg_pool2d(&x, &[3, 3], &[2, 2], &[1, 1], false, true, None)?;
    assert_close("F.avg_pool2d", &avg, &p[2], 1e-6, 1e-5);
    assert_close(
        "F.adaptive_avg_pool2d",
        &F::adaptive_avg_pool2d(&x, &[2, 3])?,
        &p[3],
        1e-6,
        1e-5,
    );
    assert_close(
        "F.adaptive_max_pool2d",
        &F::adaptive_max_pool2d(&x, &[1, 1])?.0,
        &p[4],
        1e-7,
        0.0,
    );
    let oh = F::one_hot(&Tensor::from_vec(vec![2i64, 0], &[2])?, 3)?;
    assert_eq!(oh.to_vec_i64()?, vec![0, 0, 1, 1, 0, 0]);
    let padded = F::pad(&Tensor::ones(&[1, 2], ())?, &[1, 2], "constant", 5.0)?;
    assert_eq!(padded.to_vec::<f32>()?, vec![5.0, 1.0, 1.0, 5.0, 5.0]);
    Ok(())
}

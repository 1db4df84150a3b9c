//! ResNet-18 against torchvision (fixtures/models.json, made by
//! fixtures/gen_models.py): the same state_dict keys, shapes and repr, the
//! default initialisation's scale, and the same eval output once every
//! tensor is filled by a formula both sides compute; plus a training step.

use crate::common::{assert_close, load, rng_lock};
use ferrotorch_core::{DType, Result, Tensor};
use ferrotorch_nn::{self as nn, models, Forward, Module};

/// `sin(0.37 i + k)` in float64, as the generator fills tensor `k`.
fn fill(numel: usize, k: usize) -> Result<Tensor> {
    let v: Vec<f64> = (0..numel)
        .map(|i| (i as f64 * 0.37 + k as f64).sin())
        .collect();
    Ok(Tensor::from_slice(&v))
}

#[test]
fn resnet18_matches_torchvision() -> Result<()> {
    let _rng = rng_lock();
    let fx = load("models.json");
    let net = models::resnet18(10)?;
    let sd = net.state_dict();
    let keys: Vec<String> = sd.keys().cloned().collect();
    let expected: Vec<String> = serde_json::from_value(fx["keys"].clone()).unwrap();
    assert_eq!(keys, expected);
    let shapes: Vec<Vec<usize>> = serde_json::from_value(fx["shapes"].clone()).unwrap();
    for ((k, t), s) in sd.iter().zip(&shapes) {
        assert_eq!(t.shape(), s.as_slice(), "{k}");
    }
    assert_eq!(net.repr(), fx["repr"].as_str().unwrap());
    // Kaiming-normal (fan_out, relu) for conv1: std ≈ sqrt(2 / (64·49)).
    let std = net
        .state_dict()
        .get("conv1.weight")
        .unwrap()
        .std(None, Some(1.0), false)?
        .item_f64()?;
    let want = fx["conv1_std"].as_f64().unwrap();
    assert!(
        (std - want).abs() < 0.1 * want,
        "conv1 std {std} vs torchvision {want}"
    );

    let mut filled = nn::StateDict::new();
    for (k, (name, t)) in sd.iter().enumerate() {
        if name.ends_with("num_batches_tracked") {
            filled.insert(name.clone(), t.clone());
            continue;
        }
        let mut f = fill(t.numel(), k)?;
        f = if name.ends_with("running_var") {
            f.mul(0.25)?.add(1.0)?
        } else if name.ends_with("weight") && t.dim() == 1 {
            f.mul(0.2)?.add(1.0)?
        } else {
            f.mul(0.05)?
        };
        let shape: Vec<i64> = t.shape().iter().map(|&s| s as i64).collect();
        filled.insert(name.clone(), f.reshape(&shape)?.to_dtype(DType::F32)?);
    }
    net.load_state_dict(&filled, true)?;
    net.eval();
    let x: Vec<f64> = (0..2 * 3 * 32 * 32)
        .map(|i| (i as f64 * 0.11).sin())
        .collect();
    let x = Tensor::from_vec(x, &[2, 3, 32, 32])?.to_dtype(DType::F32)?;
    let y = {
        let _g = ferrotorch_core::autograd::no_grad();
        net.call(&x)?
    };
    assert_close("resnet18 eval output", &y, &fx["y"], 2e-4, 2e-4);
    // Without gradients the stem, the blocks and the first downsample of a
    // 128×128 image run as fused convolutions (Note [Fused eval
    // convolutions]); with gradients, module by module: the same values.
    let x: Vec<f64> = (0..3 * 128 * 128)
        .map(|i| (i as f64 * 0.07).cos())
        .collect();
    let x = Tensor::from_vec(x, &[1, 3, 128, 128])?.to_dtype(DType::F32)?;
    let y = {
        let _g = ferrotorch_core::autograd::no_grad();
        net.call(&x)?
    };
    let yg = net.call(&x.requires_grad_(true)?)?;
    assert_eq!(y.to_vec::<f32>()?, yg.detach().to_vec::<f32>()?);
    Ok(())
}

#[test]
fn resnet18_trains_one_step() -> Result<()> {
    let _rng = rng_lock();
    let net = models::resnet18(4)?;
    let x = Tensor::randn(&[2, 3, 32, 32], ())?;
    let target = Tensor::from_vec(vec![1i64, 3], &[2])?;
    let loss = nn::functional::cross_entropy(&net.call(&x)?, &target, Default::default())?;
    loss.backward()?;
    assert!(net.parameters().iter().all(|p| p.grad().is_some()));
    let tracked = net
        .state_dict()
        .get("bn1.num_batches_tracked")
        .unwrap()
        .item_f64()?;
    assert_eq!(tracked, 1.0);
    Ok(())
}

#[test]
fn vision_transformer_matches_torchvision() -> Result<()> {
    let _rng = rng_lock();
    let fx = load("models.json");
    let cfg = models::VitConfig {
        image_size: 32,
        patch_size: 8,
        num_layers: 2,
        num_heads: 2,
        hidden_dim: 32,
        mlp_dim: 64,
        num_classes: 10,
    };
    let vit = models::vision_transformer(cfg)?;
    let sd = vit.state_dict();
    let keys: Vec<String> = sd.keys().cloned().collect();
    let expected: Vec<String> = serde_json::from_value(fx["vit_keys"].clone()).unwrap();
    assert_eq!(keys, expected);
    let std = sd
        .get("encoder.pos_embedding")
        .unwrap()
        .std(None, Some(1.0), false)?
        .item_f64()?;
    assert!((std - 0.02).abs() < 0.004, "pos_embedding std {std}");
    assert_eq!(
        sd.get("heads.head.weight")
            .unwrap()
            .abs()?
            .sum()?
            .item_f64()?,
        0.0
    );
    let mut filled = nn::StateDict::new();
    for (k, (name, t)) in sd.iter().enumerate() {
        let f = fill(t.numel(), k)?;
        let f = if name.ends_with("weight") && t.dim() == 1 {
            f.mul(0.2)?.add(1.0)?
        } else {
            f.mul(0.1)?
        };
        let shape: Vec<i64> = t.shape().iter().map(|&s| s as i64).collect();
        filled.insert(name.clone(), f.reshape(&shape)?.to_dtype(DType::F32)?);
    }
    vit.load_state_dict(&filled, true)?;
    vit.eval();
    let x: Vec<f64> = (0..2 * 3 * 32 * 32)
        .map(|i| (i as f64 * 0.11).sin())
        .collect();
    let x = Tensor::from_vec(x, &[2, 3, 32, 32])?.to_dtype(DType::F32)?;
    assert_close("vit eval output", &vit.call(&x)?, &fx["vit_y"], 1e-4, 1e-4);
    let e = vit.call(&Tensor::zeros(&[1, 3, 16, 16], ())?).unwrap_err();
    assert!(e.to_string().starts_with("Wrong image size!"));
    Ok(())
}

//! torch.optim against PyTorch (fixtures/optim.json, made by
//! fixtures/gen_optim.py): 20 steps of every optimizer and option set from
//! the same start, every scheduler's learning rates (and OneCycle's
//! momentum) over 30 epochs, clip_grad_norm_/clip_grad_value_, state
//! dicts, and the error cases.

use ferrotorch_core::{DType, Result, Tensor};
use ferrotorch_nn::{functional as F, utils, Parameter};
use ferrotorch_optim::lr_scheduler::{self as L, LRScheduler};
use ferrotorch_optim::*;
use serde_json::Value;

fn load() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/optim.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn f64s(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

fn tensor(v: &Value) -> Tensor {
    let shape: Vec<usize> = v["shape"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_u64().unwrap() as usize)
        .collect();
    Tensor::from_vec(f64s(&v["data"]), &shape)
        .unwrap()
        .to_dtype(DType::F32)
        .unwrap()
}

struct Problem {
    x: Tensor,
    y: Tensor,
    w: Parameter,
    b: Parameter,
}

impl Problem {
    fn new(fx: &Value) -> Problem {
        Problem {
            x: tensor(&fx["X"]),
            y: tensor(&fx["Y"]),
            w: Parameter::new(&tensor(&fx["W0"])),
            b: Parameter::new(&tensor(&fx["B0"])),
        }
    }

    fn params(&self) -> Vec<Parameter> {
        vec![self.w.clone(), self.b.clone()]
    }

    fn step(&self, opt: &mut dyn Optimizer) -> Result<Vec<f64>> {
        let pred = F::linear(&self.x, &self.w.tensor(), Some(&self.b.tensor()))?;
        let loss = F::mse_loss(&pred, &self.y, F::Reduction::Mean)?;
        opt.zero_grad();
        loss.backward()?;
        opt.step()?;
        let mut v = self.w.tensor().to_vec_f64()?;
        v.extend(self.b.tensor().to_vec_f64()?);
        Ok(v)
    }
}

fn replay(name: &str, make: impl Fn(&Problem) -> Result<Box<dyn Optimizer>>) -> Result<()> {
    let fx = load();
    let p = Problem::new(&fx);
    let mut opt = make(&p)?;
    for (k, expected) in fx["steps"][name].as_array().unwrap().iter().enumerate() {
        let got = p.step(&mut *opt)?;
        for (i, (a, e)) in got.iter().zip(f64s(expected)).enumerate() {
            assert!(
                (a - e).abs() <= 2e-6 + 2e-5 * e.abs(),
                "{name}: step {} element {i}: {a} vs PyTorch {e}",
                k + 1
            );
        }
    }
    Ok(())
}

#[test]
fn sgd_replays_pytorch() -> Result<()> {
    let sgd = |o: SGDOptions| {
        move |p: &Problem| -> Result<Box<dyn Optimizer>> {
            Ok(Box::new(SGD::new(p.params(), o.clone())?))
        }
    };
    replay(
        "sgd",
        sgd(SGDOptions {
            lr: 0.1,
            ..Default::default()
        }),
    )?;
    replay(
        "sgd_momentum",
        sgd(SGDOptions {
            lr: 0.1,
            momentum: 0.9,
            dampening: 0.1,
            weight_decay: 0.01,
            ..Default::default()
        }),
    )?;
    replay(
        "sgd_nesterov",
        sgd(SGDOptions {
            lr: 0.05,
            momentum: 0.9,
            nesterov: true,
            weight_decay: 0.1,
            ..Default::default()
        }),
    )?;
    replay(
        "sgd_maximize",
        sgd(SGDOptions {
            lr: 0.01,
            momentum: 0.5,
            maximize: true,
            ..Default::default()
        }),
    )
}

#[test]
fn adam_and_adamw_replay_pytorch() -> Result<()> {
    let adam = |o: AdamOptions| {
        move |p: &Problem| -> Result<Box<dyn Optimizer>> {
            Ok(Box::new(Adam::new(p.params(), o.clone())?))
        }
    };
    let adamw = |o: AdamWOptions| {
        move |p: &Problem| -> Result<Box<dyn Optimizer>> {
            Ok(Box::new(AdamW::new(p.params(), o.clone())?))
        }
    };
    replay(
        "adam",
        adam(AdamOptions {
            lr: 0.05,
            ..Default::default()
        }),
    )?;
    replay(
        "adam_amsgrad_wd",
        adam(AdamOptions {
            lr: 0.05,
            amsgrad: true,
            weight_decay: 0.1,
            ..Default::default()
        }),
    )?;
    replay(
        "adamw",
        adamw(AdamWOptions {
            lr: 0.05,
            ..Default::default()
        }),
    )?;
    replay(
        "adamw_amsgrad_maximize",
        adamw(AdamWOptions {
            lr: 0.01,
            amsgrad: true,
            maximize: true,
            ..Default::default()
        }),
    )?;
    replay("adam_groups", |p| {
        Ok(Box::new(Adam::with_groups(vec![
            ParamGroup {
                params: vec![p.w.clone()],
                options: AdamOptions {
                    lr: 0.01,
                    ..Default::default()
                },
            },
            ParamGroup {
                params: vec![p.b.clone()],
                options: AdamOptions {
                    lr: 0.1,
                    betas: (0.8, 0.9),
                    ..Default::default()
                },
            },
        ])?))
    })
}

#[test]
fn rmsprop_and_adagrad_replay_pytorch() -> Result<()> {
    replay("rmsprop", |p| {
        Ok(Box::new(RMSprop::new(
            p.params(),
            RMSpropOptions {
                lr: 0.01,
                ..Default::default()
            },
        )?))
    })?;
    replay("rmsprop_centered_momentum", |p| {
        let o = RMSpropOptions {
            lr: 0.01,
            momentum: 0.9,
            centered: true,
            weight_decay: 0.01,
            ..Default::default()
        };
        Ok(Box::new(RMSprop::new(p.params(), o)?))
    })?;
    replay("adagrad", |p| {
        let o = AdagradOptions {
            lr: 0.1,
            lr_decay: 0.01,
            weight_decay: 0.01,
            initial_accumulator_value: 0.1,
            ..Default::default()
        };
        Ok(Box::new(Adagrad::new(p.params(), o)?))
    })
}

#[test]
fn float64_parameters_step_in_float64() -> Result<()> {
    let fx = load();
    let p = Problem::new(&fx);
    let p64 = Problem {
        x: p.x.to_dtype(DType::F64)?,
        y: p.y.to_dtype(DType::F64)?,
        w: Parameter::new(&p.w.tensor().to_dtype(DType::F64)?),
        b: Parameter::new(&p.b.tensor().to_dtype(DType::F64)?),
    };
    let mut opt = Adam::new(
        p64.params(),
        AdamOptions {
            lr: 0.05,
            ..Default::default()
        },
    )?;
    let mut last = Vec::new();
    for _ in 0..20 {
        last = p64.step(&mut opt)?;
    }
    assert_eq!(p64.w.tensor().dtype(), DType::F64);
    let expected = f64s(&fx["steps"]["adam"][19]);
    for (a, e) in last.iter().zip(expected) {
        assert!((a - e).abs() < 1e-4, "{a} vs {e}");
    }
    Ok(())
}

#[test]
fn state_dict_round_trip_continues_the_same_trajectory() -> Result<()> {
    let fx = load();
    let p = Problem::new(&fx);
    let o = AdamOptions {
        lr: 0.05,
        amsgrad: true,
        ..Default::default()
    };
    let mut opt = Adam::new(p.params(), o.clone())?;
    for _ in 0..10 {
        p.step(&mut opt)?;
    }
    let sd = opt.state_dict()?;
    let keys: Vec<&String> = sd.state[&0].keys().collect();
    let expected: Vec<String> = serde_json::from_value(fx["adam_state_keys"].clone()).unwrap();
    assert_eq!(keys, expected.iter().collect::<Vec<_>>());
    assert_eq!(sd.state[&0]["step"].item_f64()?, 10.0);
    let mut group_keys: Vec<String> = sd.param_groups[0].0.keys().cloned().collect();
    group_keys.push("params".into());
    group_keys.sort();
    let expected: Vec<String> = serde_json::from_value(fx["adam_group_keys"].clone()).unwrap();
    assert_eq!(group_keys, expected);
    assert_eq!(sd.param_groups[0].1, vec![0, 1]);
    // A fresh optimizer loaded with the state takes the same steps 11..20.
    let mut resumed = Adam::new(p.params(), AdamOptions::default())?;
    resumed.load_state_dict(&sd)?;
    assert_eq!(resumed.param_groups()[0].options, o);
    let mut last = Vec::new();
    for _ in 0..10 {
        last = p.step(&mut resumed)?;
    }
    let e = f64s(&fx["steps"]["adam_amsgrad_wd"][0]);
    assert_eq!(last.len(), e.len());
    let fresh = Problem::new(&fx);
    let mut straight = Adam::new(fresh.params(), o)?;
    let mut want = Vec::new();
    for _ in 0..20 {
        want = fresh.step(&mut straight)?;
    }
    assert_eq!(last, want);
    // Mismatched state dicts are errors.
    let mut other = Adam::new(vec![p.w.clone()], AdamOptions::default())?;
    assert!(other.load_state_dict(&sd).is_err());
    Ok(())
}

#[test]
fn invalid_options_and_duplicates_are_errors() -> Result<()> {
    let w = Parameter::new(&Tensor::zeros(&[2], ())?);
    let e = Adam::new(
        vec![w.clone()],
        AdamOptions {
            lr: -1.0,
            ..Default::default()
        },
    )
    .err()
    .unwrap();
    assert_eq!(e.to_string(), "Invalid learning rate: -1");
    let e = Adam::new(
        vec![w.clone()],
        AdamOptions {
            betas: (1.0, 0.9),
            ..Default::default()
        },
    )
    .err()
    .unwrap();
    assert_eq!(e.to_string(), "Invalid beta parameter at index 0: 1");
    let e = SGD::new(
        vec![w.clone()],
        SGDOptions {
            nesterov: true,
            ..Default::default()
        },
    )
    .err()
    .unwrap();
    assert_eq!(
        e.to_string(),
        "Nesterov momentum requires a momentum and zero dampening"
    );
    let e = SGD::new(vec![w.clone(), w.clone()], SGDOptions::default())
        .err()
        .unwrap();
    assert_eq!(
        e.to_string(),
        "optimizer contains a parameter group with duplicate parameters"
    );
    let g = |params| ParamGroup {
        params,
        options: SGDOptions::default(),
    };
    let e = SGD::with_groups(vec![g(vec![w.clone()]), g(vec![w.clone()])])
        .err()
        .unwrap();
    assert_eq!(
        e.to_string(),
        "some parameters appear in more than one parameter group"
    );
    // Integer parameters cannot be stepped.
    let int = Parameter::new(&Tensor::zeros(&[2], DType::I64)?);
    int.set_grad(Some(Tensor::zeros(&[2], DType::I64)?))?;
    let mut opt = SGD::new(vec![int], SGDOptions::default())?;
    assert!(opt
        .step()
        .unwrap_err()
        .to_string()
        .contains("must be floating point"));
    // Parameters without a gradient are skipped.
    let mut opt = Adam::new(vec![w.clone()], AdamOptions::default())?;
    opt.step()?;
    assert!(opt.state(0, 0).is_none());
    Ok(())
}

fn schedule(
    name: &str,
    epochs: usize,
    make: impl FnOnce(&mut SGD) -> Result<Box<dyn LRScheduler>>,
) -> Result<()> {
    let fx = load();
    let p = Parameter::new(&Tensor::zeros(&[1], ())?);
    let mut opt = SGD::new(
        vec![p],
        SGDOptions {
            lr: 0.1,
            momentum: 0.9,
            ..Default::default()
        },
    )?;
    let mut s = make(&mut opt)?;
    let (lr, mom) = (
        f64s(&fx["schedulers"][name]["lr"]),
        f64s(&fx["schedulers"][name]["momentum"]),
    );
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 + 1e-12 * b.abs();
    assert!(
        close(opt.lr(0), lr[0]),
        "{name}: initial lr {} vs {}",
        opt.lr(0),
        lr[0]
    );
    for e in 0..epochs {
        s.step(&mut opt)?;
        assert!(
            close(opt.lr(0), lr[e + 1]),
            "{name}: epoch {}: lr {} vs PyTorch {}",
            e + 1,
            opt.lr(0),
            lr[e + 1]
        );
        assert!(
            close(opt.momentum(0).unwrap(), mom[e + 1]),
            "{name}: epoch {}: momentum",
            e + 1
        );
        assert_eq!(s.get_last_lr(), &[opt.lr(0)]);
    }
    Ok(())
}

#[test]
fn schedulers_match_pytorch() -> Result<()> {
    schedule("step", 30, |o| Ok(Box::new(L::StepLR::new(o, 7, 0.5)?)))?;
    schedule("multistep", 30, |o| {
        Ok(Box::new(L::MultiStepLR::new(o, &[5, 12, 12], 0.3)?))
    })?;
    schedule("exponential", 30, |o| {
        Ok(Box::new(L::ExponentialLR::new(o, 0.9)?))
    })?;
    schedule("cosine", 30, |o| {
        Ok(Box::new(L::CosineAnnealingLR::new(o, 10, 0.001)?))
    })?;
    schedule("linear", 30, |o| {
        Ok(Box::new(L::LinearLR::new(o, 0.25, 1.0, 8)?))
    })?;
    schedule("lambda", 30, |o| {
        Ok(Box::new(L::LambdaLR::new(
            o,
            vec![Box::new(|e| 0.95f64.powi(e as i32))],
        )?))
    })?;
    schedule("onecycle", 30, |o| {
        Ok(Box::new(L::OneCycleLR::new(
            o,
            L::OneCycleOptions::new(1.0, 31),
        )?))
    })?;
    schedule("onecycle_three_linear", 30, |o| {
        let opts = L::OneCycleOptions {
            three_phase: true,
            anneal_strategy: "linear",
            pct_start: 0.25,
            ..L::OneCycleOptions::new(0.5, 31)
        };
        Ok(Box::new(L::OneCycleLR::new(o, opts)?))
    })?;
    Ok(())
}

#[test]
fn one_cycle_errors() -> Result<()> {
    let p = Parameter::new(&Tensor::zeros(&[1], ())?);
    let mut opt = SGD::new(vec![p.clone()], SGDOptions::default())?;
    let mut s = L::OneCycleLR::new(&mut opt, L::OneCycleOptions::new(1.0, 2))?;
    s.step(&mut opt)?;
    s.step(&mut opt)?;
    let e = s.step(&mut opt).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Tried to step 3 times. The specified number of total steps is 2"
    );
    let mut ada = Adagrad::new(vec![p], AdagradOptions::default())?;
    let e = L::OneCycleLR::new(&mut ada, L::OneCycleOptions::new(1.0, 5))
        .err()
        .unwrap();
    assert_eq!(
        e.to_string(),
        "optimizer must support momentum or beta1 with `cycle_momentum` option enabled"
    );
    Ok(())
}

#[test]
fn reduce_on_plateau_matches_pytorch() -> Result<()> {
    let fx = load();
    let p = Parameter::new(&Tensor::zeros(&[1], ())?);
    let mut opt = SGD::new(
        vec![p],
        SGDOptions {
            lr: 0.1,
            momentum: 0.9,
            ..Default::default()
        },
    )?;
    let o = L::ReduceLROnPlateauOptions {
        patience: 2,
        factor: 0.5,
        cooldown: 1,
        ..Default::default()
    };
    let mut s = L::ReduceLROnPlateau::new(&opt, o)?;
    let lr = f64s(&fx["schedulers"]["plateau"]["lr"]);
    for (e, m) in f64s(&fx["plateau_metrics"]).into_iter().enumerate() {
        s.step(m, &mut opt);
        assert!(
            (opt.lr(0) - lr[e + 1]).abs() < 1e-15,
            "epoch {}: {} vs {}",
            e + 1,
            opt.lr(0),
            lr[e + 1]
        );
    }
    let bad = L::ReduceLROnPlateauOptions {
        factor: 1.0,
        ..Default::default()
    };
    assert_eq!(
        L::ReduceLROnPlateau::new(&opt, bad)
            .err()
            .unwrap()
            .to_string(),
        "Factor should be < 1.0."
    );
    Ok(())
}

#[test]
fn clip_grad_matches_pytorch() -> Result<()> {
    let fx = &load()["clip"];
    let a = Parameter::new(&Tensor::zeros(&[3], ())?);
    let b = Parameter::new(&Tensor::zeros(&[2, 2], ())?);
    let reset = || -> Result<()> {
        a.set_grad(Some(Tensor::from_vec(vec![3.0f32, -4.0, 1.0], &[3])?))?;
        b.set_grad(Some(Tensor::from_vec(
            vec![0.5f32, -2.0, 1.5, 0.25],
            &[2, 2],
        )?))
    };
    let close = |t: &Tensor, v: &Value| {
        for (x, y) in t.to_vec_f64().unwrap().iter().zip(f64s(&v["data"])) {
            assert!((x - y).abs() < 1e-6, "{x} vs {y}");
        }
    };
    for (key, p) in [("2.0", 2.0), ("1.0", 1.0), ("inf", f64::INFINITY)] {
        reset()?;
        let n = utils::clip_grad_norm_(&[a.clone(), b.clone()], 2.5, p, false)?;
        assert!((n.item_f64()? - fx[key]["norm"].as_f64().unwrap()).abs() < 1e-5);
        close(&a.grad().unwrap(), &fx[key]["a"]);
        close(&b.grad().unwrap(), &fx[key]["b"]);
    }
    reset()?;
    utils::clip_grad_value_(&[a.clone(), b.clone()], 1.0)?;
    close(&a.grad().unwrap(), &fx["value"]["a"]);
    close(&b.grad().unwrap(), &fx["value"]["b"]);
    a.set_grad(Some(Tensor::from_vec(vec![f32::NAN, 1.0, 1.0], &[3])?))?;
    let e = utils::clip_grad_norm_(std::slice::from_ref(&a), 1.0, 2.0, true).unwrap_err();
    assert!(e
        .to_string()
        .starts_with("The total norm of order 2.0 for gradients from `parameters` is non-finite"));
    Ok(())
}

#[test]
fn half_parameters_step_through_float32() -> Result<()> {
    // The same Adam step on float32 and float16 copies of one parameter.
    let start = Tensor::from_vec(vec![0.5f32, -1.0, 2.0], &[3])?;
    let grad = Tensor::from_vec(vec![0.1f32, -0.3, 0.7], &[3])?;
    let run = |dtype: DType| -> Result<Vec<f64>> {
        // A copy: a Parameter shares its tensor's storage, as nn.Parameter does.
        let p = Parameter::new(&start.to_dtype(dtype)?.deep_clone()?);
        let mut opt = Adam::new(
            vec![p.clone()],
            AdamOptions {
                lr: 0.1,
                ..Default::default()
            },
        )?;
        for _ in 0..3 {
            p.set_grad(Some(grad.to_dtype(dtype)?))?;
            opt.step()?;
        }
        assert_eq!(p.tensor().dtype(), dtype);
        p.tensor().to_vec_f64()
    };
    let (full, half, bf) = (run(DType::F32)?, run(DType::F16)?, run(DType::BF16)?);
    for ((a, b), c) in full.iter().zip(&half).zip(&bf) {
        assert!((a - b).abs() < 2e-3, "f16 {b} vs f32 {a}");
        assert!((a - c).abs() < 2e-2, "bf16 {c} vs f32 {a}");
    }
    // Adam's first steps move each coordinate by ~lr against its gradient.
    assert!((full[0] - (0.5 - 0.3)).abs() < 1e-3);
    Ok(())
}

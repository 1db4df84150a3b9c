//! nn modules and nn.init against PyTorch (fixtures/modules.json, made by
//! fixtures/gen_modules.py): default initialisations, init functions and
//! dropout masks under the same seeds, reprs, state_dict keys and
//! load_state_dict's errors; plus the Module trait's behaviour. Every test
//! holds the RNG lock: building layers draws from the global generator.

use crate::common::{assert_close, float32, load, rng_lock};
use ferrotorch_core::native::random::manual_seed;
use ferrotorch_core::{DType, Result, Tensor};
use ferrotorch_nn::{self as nn, functional as F, init, Forward, Module};

fn pytorch_sequential() -> Result<nn::Sequential> {
    Ok(nn::Sequential::new()
        .append(nn::Linear::new(1, 20, true)?)
        .append(nn::SELU::new())
        .append(nn::Linear::new(20, 1, false)?)
        .append(nn::Dropout::new(0.1)?)
        .append(nn::GELU::new("tanh"))
        .append(nn::Softplus::default())
        .append(nn::LeakyReLU::default())
        .append(nn::Flatten::default())
        .append(nn::Unflatten::new(1, &[2, 3]))
        .append(nn::PReLU::new(3, 0.25)?)
        .append(nn::Softmax::new(1))
        .append(nn::Identity::new())
        .append(nn::ELU::new(0.5))
        .append(nn::Hardtanh::default())
        .append(nn::Threshold::new(0.1, 20.0))
        .append(nn::GLU::default()))
}

#[test]
fn default_initialisation_matches_pytorch() -> Result<()> {
    let _rng = rng_lock();
    let fx = load("modules.json");
    manual_seed(0);
    let lin = nn::Linear::new(3, 4, true)?;
    assert_close(
        "weight",
        &lin.weight.tensor(),
        &fx["linear_init"]["weight"],
        1e-7,
        1e-6,
    );
    let bias = lin.bias.as_ref().unwrap().tensor();
    assert_close("bias", &bias, &fx["linear_init"]["bias"], 1e-7, 1e-6);
    assert!(lin.weight.requires_grad() && lin.weight.tensor().is_leaf());
    manual_seed(10);
    let bil = nn::Bilinear::new(2, 3, 4, true)?;
    assert_close(
        "bilinear weight",
        &bil.weight.tensor(),
        &fx["bilinear_init"]["weight"],
        1e-7,
        1e-6,
    );
    Ok(())
}

#[test]
fn init_functions_match_pytorch() -> Result<()> {
    let _rng = rng_lock();
    let fx = &load("modules.json")["init"];
    let empty = |s: &[usize]| Tensor::empty(s, DType::F32);
    let check = |name: &str, t: &Tensor| assert_close(name, t, &fx[name], 1e-6, 1e-5);
    manual_seed(1);
    let w = empty(&[5, 7])?;
    init::xavier_uniform_(&w, 1.5, None)?;
    check("xavier_uniform", &w);
    manual_seed(2);
    let w = empty(&[5, 7])?;
    init::xavier_normal_(&w, 0.5, None)?;
    check("xavier_normal", &w);
    manual_seed(3);
    let w = empty(&[6, 4, 3, 3])?;
    init::kaiming_uniform_(&w, 0.0, "fan_in", "leaky_relu", None)?;
    check("kaiming_uniform", &w);
    manual_seed(4);
    let w = empty(&[6, 4, 3, 3])?;
    init::kaiming_normal_(&w, 0.0, "fan_out", "relu", None)?;
    check("kaiming_normal", &w);
    manual_seed(5);
    let w = empty(&[50])?;
    init::trunc_normal_(&w, 0.5, 2.0, -1.0, 3.0, None)?;
    check("trunc_normal", &w);
    manual_seed(8);
    let w = empty(&[40])?;
    init::trunc_normal_(&w, 0.0, 1.0, 2.0, 3.0, None)?;
    check("trunc_normal_tail", &w);
    manual_seed(6);
    let w = empty(&[4, 6])?;
    init::orthogonal_(&w, 2.0, None)?;
    check("orthogonal_wide", &w);
    manual_seed(7);
    let w = empty(&[6, 2, 2])?;
    init::orthogonal_(&w, 1.0, None)?;
    check("orthogonal_tall", &w);
    let w = empty(&[3, 5])?;
    init::eye_(&w)?;
    check("eye", &w);
    for (k, v) in load("modules.json")["gains"].as_object().unwrap() {
        let g = match k.strip_prefix("leaky_relu_") {
            Some(slope) => init::calculate_gain("leaky_relu", Some(slope.parse().unwrap()))?,
            None => init::calculate_gain(k, None)?,
        };
        assert!((g - v.as_f64().unwrap()).abs() < 1e-12, "gain {k}");
    }
    let e = init::xavier_uniform_(&empty(&[3])?, 1.0, None).unwrap_err();
    assert!(e.to_string().contains("fewer than 2 dimensions"));
    let e = init::calculate_gain("swish", None).unwrap_err();
    assert_eq!(e.to_string(), "Unsupported nonlinearity swish");
    Ok(())
}

#[test]
fn dropout_masks_match_pytorch() -> Result<()> {
    let _rng = rng_lock();
    let fx = &load("modules.json")["dropout"];
    let x = float32(&fx["input"]);
    let check = |name: &str, seed: u64, f: &dyn Fn() -> Result<Tensor>| -> Result<()> {
        manual_seed(seed);
        assert_close(name, &f()?, &fx[name], 1e-6, 1e-5);
        Ok(())
    };
    check("dropout", 21, &|| F::dropout(&x, 0.3, true))?;
    check("alpha_dropout", 22, &|| F::alpha_dropout(&x, 0.2, true))?;
    check("dropout2d", 23, &|| F::dropout2d(&x, 0.5, true))?;
    check("feature_alpha_dropout", 24, &|| {
        F::feature_alpha_dropout(&x, 0.4, true)
    })?;
    let x1 = x.select(0, 0)?.select(2, 0)?;
    check("dropout1d", 25, &|| F::dropout1d(&x1, 0.5, true))?;
    // Identity outside training, and for p = 0; all zeros for p = 1.
    assert!(F::dropout(&x, 0.3, false)?.is_same(&x));
    assert_eq!(F::dropout(&x, 1.0, true)?.abs()?.sum()?.item_f64()?, 0.0);
    let e = F::dropout(&x, 1.5, true).unwrap_err();
    assert_eq!(
        e.to_string(),
        "dropout probability has to be between 0 and 1, but got 1.5"
    );
    assert!(F::dropout2d(&x1.select(0, 0)?, 0.5, true).is_err());
    // The module follows train()/eval().
    let d = nn::Dropout::new(0.5)?;
    d.eval();
    assert!(d.call(&x)?.is_same(&x));
    d.train(true);
    assert!(!d.call(&x)?.is_same(&x));
    Ok(())
}

#[test]
fn repr_keys_and_load_errors_match_pytorch() -> Result<()> {
    let _rng = rng_lock();
    let fx = load("modules.json");
    let seq = pytorch_sequential()?;
    assert_eq!(seq.repr(), fx["sequential_repr"].as_str().unwrap());
    let keys: Vec<String> = seq.state_dict().keys().cloned().collect();
    let expected: Vec<String> = serde_json::from_value(fx["sequential_keys"].clone()).unwrap();
    assert_eq!(keys, expected);
    let mut sd = nn::StateDict::new();
    sd.insert("0.weight", Tensor::zeros(&[20, 1], ())?);
    sd.insert("0.bias", Tensor::zeros(&[3], ())?);
    sd.insert("extra", Tensor::zeros(&[1], ())?);
    let e = seq.load_state_dict(&sd, true).unwrap_err();
    assert_eq!(e.to_string(), fx["load_error"].as_str().unwrap());
    Ok(())
}

#[derive(Module)]
#[module(crate = "ferrotorch_nn")]
struct Block {
    fc: nn::Linear,
    #[module(name = "scale")]
    gain: nn::Parameter,
    stats: nn::Buffer,
    scratch: Option<nn::Buffer>,
    skip: Option<nn::Linear>,
    heads: Vec<nn::Linear>,
    drop: nn::Dropout,
    #[module(skip)]
    _note: std::sync::atomic::AtomicU8,
    label: String,
    state: nn::ModuleState,
}

impl Forward for Block {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.drop.call(&self.fc.call(x)?)?.mul(self.gain.tensor())
    }
}

fn block() -> Result<Block> {
    Ok(Block {
        fc: nn::Linear::new(3, 2, true)?,
        gain: nn::Parameter::new(&Tensor::ones(&[2], ())?),
        stats: nn::Buffer::new(&Tensor::zeros(&[2], DType::I64)?),
        scratch: Some(nn::Buffer::non_persistent(&Tensor::zeros(&[1], ())?)),
        skip: None,
        heads: vec![nn::Linear::new(2, 1, false)?, nn::Linear::new(2, 1, true)?],
        drop: nn::Dropout::new(0.5)?,
        _note: std::sync::atomic::AtomicU8::new(0),
        label: "b".into(),
        state: nn::ModuleState::new(),
    })
}

#[test]
fn derive_registers_fields_by_name() -> Result<()> {
    let _rng = rng_lock();
    let b = block()?;
    let names: Vec<String> = b.named_parameters().into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        names,
        // PyTorch's order: a module's own parameters before its children's.
        [
            "scale",
            "fc.weight",
            "fc.bias",
            "heads.0.weight",
            "heads.1.weight",
            "heads.1.bias"
        ]
    );
    let bufs: Vec<String> = b.named_buffers().into_iter().map(|(n, _)| n).collect();
    assert_eq!(bufs, ["stats", "scratch"]);
    // Non-persistent buffers stay out of the state dict.
    let keys: Vec<String> = b.state_dict().keys().cloned().collect();
    assert!(keys.contains(&"stats".to_string()) && !keys.contains(&"scratch".to_string()));
    let children: Vec<String> = b.named_children().into_iter().map(|(n, _)| n).collect();
    assert_eq!(children, ["fc", "heads", "drop"]);
    let modules: Vec<String> = b
        .named_modules()
        .into_iter()
        .map(|(n, m)| format!("{n}:{}", m.type_name()))
        .collect();
    assert_eq!(
        modules,
        [
            ":Block",
            "fc:Linear",
            "heads:ModuleList",
            "heads.0:Linear",
            "heads.1:Linear",
            "drop:Dropout"
        ]
    );
    Ok(())
}

#[test]
fn train_eval_freeze_zero_grad_apply_and_to() -> Result<()> {
    let _rng = rng_lock();
    let b = block()?;
    assert!(b.is_training() && b.drop.is_training());
    b.eval();
    assert!(!b.is_training() && !b.drop.is_training() && !b.heads[0].is_training());
    // Gradients reach every parameter; zero_grad clears them.
    let x = Tensor::ones(&[4, 3], ())?;
    b.forward(&x)?.sum()?.backward()?;
    assert!(b.fc.weight.grad().is_some() && b.gain.grad().is_some());
    b.zero_grad_with(false)?;
    assert_eq!(b.fc.weight.grad().unwrap().abs()?.sum()?.item_f64()?, 0.0);
    b.zero_grad();
    assert!(b.fc.weight.grad().is_none());
    // Freezing.
    b.requires_grad_(false)?;
    assert!(b.parameters().iter().all(|p| !p.requires_grad()));
    assert!(!b.forward(&x)?.requires_grad());
    // apply visits children before parents and can downcast.
    let mut seen = Vec::new();
    b.apply(&mut |m| {
        seen.push(m.type_name().to_string());
        if let Some(l) = m.as_any().downcast_ref::<nn::Linear>() {
            init::zeros_(&l.weight.tensor())?;
        }
        Ok(())
    })?;
    assert_eq!(
        seen,
        [
            "Linear",
            "Linear",
            "Linear",
            "ModuleList",
            "Dropout",
            "Block"
        ]
    );
    assert_eq!(b.fc.weight.tensor().abs()?.sum()?.item_f64()?, 0.0);
    // to(dtype) casts floating parameters and buffers, keeps integer ones.
    b.to_dtype(DType::F64)?;
    assert_eq!(b.fc.weight.tensor().dtype(), DType::F64);
    assert_eq!(b.stats.tensor().dtype(), DType::I64);
    assert_eq!(b.forward(&x.to_dtype(DType::F64)?)?.dtype(), DType::F64);
    assert!(b.to_dtype(DType::I32).is_err());
    Ok(())
}

#[test]
fn state_dict_round_trip_and_non_strict_report() -> Result<()> {
    let _rng = rng_lock();
    let a = block()?;
    let b = block()?;
    let rep = b.load_state_dict(&a.state_dict(), true)?;
    assert_eq!(rep, nn::IncompatibleKeys::default());
    for ((ka, pa), (kb, pb)) in a.named_parameters().iter().zip(b.named_parameters()) {
        assert_eq!(ka, &kb);
        assert_eq!(pa.tensor().to_vec::<f32>()?, pb.tensor().to_vec::<f32>()?);
        assert!(!pa.ptr_eq(&pb));
    }
    let mut sd = a.state_dict();
    sd.remove("scale");
    sd.insert("bogus", Tensor::zeros(&[1], ())?);
    let rep = b.load_state_dict(&sd, false)?;
    assert_eq!(rep.missing_keys, ["scale"]);
    assert_eq!(rep.unexpected_keys, ["bogus"]);
    Ok(())
}

#[test]
fn forward_hooks_run_and_can_be_removed() -> Result<()> {
    let _rng = rng_lock();
    let lin = nn::Linear::new(2, 2, true)?;
    let h = lin.register_forward_hook(Box::new(|m, _x, y| {
        assert_eq!(m.type_name(), "Linear");
        Ok(Some(y.mul(0.0)?))
    }))?;
    let pre = lin.register_forward_pre_hook(Box::new(|_, x| Ok(Some(x.add(1.0)?))))?;
    let x = Tensor::ones(&[1, 2], ())?;
    assert_eq!(lin.call(&x)?.abs()?.sum()?.item_f64()?, 0.0);
    h.remove();
    let expected = lin.forward(&x.add(1.0)?)?;
    assert_eq!(lin.call(&x)?.to_vec::<f32>()?, expected.to_vec::<f32>()?);
    pre.remove();
    assert_eq!(
        lin.call(&x)?.to_vec::<f32>()?,
        lin.forward(&x)?.to_vec::<f32>()?
    );
    // A derived module without a ModuleState cannot hold hooks: an error.
    let seq: Vec<nn::Linear> = vec![];
    let e = seq
        .register_forward_hook(Box::new(|_, _, _| Ok(None)))
        .unwrap_err();
    assert!(e.to_string().contains("has no ModuleState field"));
    Ok(())
}

#[test]
fn containers() -> Result<()> {
    let _rng = rng_lock();
    let seq = nn::Sequential::new()
        .append(nn::Linear::new(2, 3, true)?)
        .append(nn::ReLU::new());
    assert_eq!(seq.len(), 2);
    assert_eq!(seq.get(-1).unwrap().type_name(), "ReLU");
    assert!(seq.get(2).is_none());
    let y = seq.call(&Tensor::ones(&[5, 2], ())?)?;
    assert_eq!(y.shape(), &[5, 3]);
    assert!(y.to_vec::<f32>()?.iter().all(|v| *v >= 0.0));
    let mut md = nn::ModuleDict::new();
    md.insert("enc", nn::Linear::new(2, 2, true)?)?;
    md.insert("dec", nn::Linear::new(2, 2, false)?)?;
    assert_eq!(md.keys().collect::<Vec<_>>(), ["enc", "dec"]);
    let keys: Vec<String> = md.state_dict().keys().cloned().collect();
    assert_eq!(keys, ["enc.weight", "enc.bias", "dec.weight"]);
    assert_eq!(
        md.insert("a.b", nn::ReLU::new()).unwrap_err().to_string(),
        "module name can't contain \".\", got: a.b"
    );
    let mut ml = nn::ModuleList::new();
    ml.push(nn::ReLU::new());
    ml.push(nn::Linear::new(1, 1, true)?);
    assert_eq!(ml.parameters().len(), 2);
    assert_eq!(
        ml.repr(),
        "ModuleList(\n  (0): ReLU()\n  (1): Linear(in_features=1, out_features=1, bias=True)\n)"
    );
    Ok(())
}

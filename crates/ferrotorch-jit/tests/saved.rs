//! Saved programs (Note [Saved programs]): round trips, a committed file
//! from format version 1, every kind of bad file refused with a message,
//! and a mutation fuzz target (FERROTORCH_FUZZ_SECONDS, default 3).

#![allow(clippy::cloned_ref_to_slice_refs)]

use ferrotorch_core::native::random::manual_seed;
use ferrotorch_core::{autograd, DType, Result, Tensor};
use ferrotorch_jit::zip;
use ferrotorch_jit::{load, load_bytes, trace_module, ScriptModule};
use ferrotorch_nn as nn;
use nn::Forward;
use serde_json::Value as Json;

mod common;
use common::{entries, rebuild, with, GRAPH};

fn mlp_script() -> Result<(nn::Sequential, ScriptModule)> {
    manual_seed(7);
    let net = nn::Sequential::new()
        .append(nn::Linear::new(3, 4, true)?)
        .append(nn::Tanh::new())
        .append(nn::Linear::new(4, 2, true)?);
    let x = Tensor::randn(&[2, 3], DType::F32)?;
    let m = trace_module(&net, &[x], |n, t| {
        Ok(vec![n.forward(&t[0])?.log_softmax(-1, None)?])
    })?;
    Ok((net, m))
}

fn tmp(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("ferrotorch-jit-{}-{name}", std::process::id()))
}

#[test]
fn saved_programs_round_trip() -> Result<()> {
    let (net, m) = mlp_script()?;
    let path = tmp("mlp.ftjit");
    m.save(&path)?;
    let l = load(&path)?;
    std::fs::remove_file(&path).ok();
    // saved programs hold the inlined graph
    assert_eq!(l.graph().to_string(), m.inlined_graph()?.to_string());
    let x = Tensor::randn(&[5, 3], DType::F32)?;
    let want = net.forward(&x)?.log_softmax(-1, None)?;
    let got = l.forward(&[x.clone()])?.remove(0);
    assert_eq!(got.to_vec::<f32>()?, want.to_vec::<f32>()?);
    // parameters come back as trainable leaves
    let params: Vec<Tensor> = l
        .attributes()
        .iter()
        .map(|(_, a)| match a {
            ferrotorch_jit::Attr::Tensor(t) => t.clone(),
            _ => unreachable!("loaded attributes are tensors"),
        })
        .collect();
    assert!(params.iter().all(|p| p.requires_grad()));
    let g = autograd::grad(&[got.sum()?], &params, None, None, false, false)?;
    assert!(g.iter().all(|g| g.is_some()));
    Ok(())
}

/// Programs written by earlier format versions (tests/fixtures:
/// `mlp_v1.ftjit`, one safetensors file; `mlp_v2.ftjit`, the zip archive;
/// each with the inputs and outputs it was made with) load and run the
/// same. `FERROTORCH_REGEN_FIXTURES=1` rewrites the current version's.
#[test]
fn files_of_every_version_still_load() -> Result<()> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    for v in 1..=ferrotorch_jit::serialize::VERSION {
        let file = dir.join(format!("mlp_v{v}.ftjit"));
        let io = dir.join(format!("mlp_v{v}.json"));
        if std::env::var("FERROTORCH_REGEN_FIXTURES").is_ok()
            && v == ferrotorch_jit::serialize::VERSION
        {
            let (_, m) = mlp_script()?;
            m.save(&file)?;
            let x = Tensor::from_vec((0..12).map(|i| i as f32 / 6.0 - 1.0).collect(), &[4, 3])?;
            let y = m.forward(&[x.clone()])?.remove(0);
            let j = serde_json::json!({"x": x.to_vec::<f32>()?, "y": y.to_vec::<f32>()?});
            std::fs::write(&io, j.to_string()).unwrap();
        }
        let j: Json = serde_json::from_str(&std::fs::read_to_string(&io).unwrap()).unwrap();
        let f = |k: &str| {
            j[k].as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_f64().unwrap() as f32)
                .collect::<Vec<f32>>()
        };
        let m = load(&file)?;
        let y = m.forward(&[Tensor::from_vec(f("x"), &[4, 3])?])?.remove(0);
        // the same within a few ulp: the file must load and run the same
        // program; the kernels' last bits may improve between versions
        // (session 31's exp polynomial moved two outputs by one ulp)
        let (got, want) = (y.to_vec::<f32>()?, f("y"));
        assert_eq!(got.len(), want.len(), "version {v}");
        for (g, w) in got.iter().zip(&want) {
            assert!(
                (g - w).abs() <= 4.0 * f32::EPSILON * w.abs().max(1e-3),
                "version {v}: {got:?} against {want:?}"
            );
        }
    }
    // the archive's entries, as `unzip -l` lists them
    let bytes = std::fs::read(dir.join("mlp_v2.ftjit")).unwrap();
    let names: Vec<String> = zip::entries(&bytes)?.into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        names,
        [
            "archive/version",
            "archive/graph.json",
            "archive/data.safetensors"
        ]
    );
    Ok(())
}

/// The file with entry `name` holding `value` as is (or removed for None).
fn raw_entry(bytes: &[u8], name: &str, value: Option<&[u8]>) -> Vec<u8> {
    let mut es = entries(bytes);
    match value {
        Some(v) => es.iter_mut().find(|(n, _)| n == name).unwrap().1 = v.to_vec(),
        None => es.retain(|(n, _)| n != name),
    }
    rebuild(&es)
}

#[test]
fn bad_programs_are_refused_with_a_reason() -> Result<()> {
    let (_, m) = mlp_script()?;
    let ok = m.save_to_bytes()?;
    let op_node = |g: &Json| {
        g["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .position(|n| n.get("op").is_some())
            .unwrap()
    };
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "not a ferrotorch program",
            with(&ok, |h, _| {
                h["format"] = "other".into();
            }),
        ),
        (
            "format version 3",
            raw_entry(&ok, "archive/version", Some(b"3")),
        ),
        (
            "disagree on the version",
            with(&ok, |h, _| {
                h["version"] = 1.into();
            }),
        ),
        (
            "the archive has no \"archive/data.safetensors\"",
            raw_entry(&ok, "archive/data.safetensors", None),
        ),
        ("is corrupted", {
            let mut b = ok.clone();
            let n = b.len();
            b[n / 2] ^= 0x10;
            b
        }),
        ("no end record", ok[..ok.len() - 30].to_vec()),
        (
            "unknown operator \"aten_evil\"",
            with(&ok, |_, g| {
                let i = op_node(g);
                g["nodes"][i]["op"] = "aten_evil(Tensor self) -> Tensor".into();
            }),
        ),
        (
            "but the file expects",
            with(&ok, |_, g| {
                let i = op_node(g);
                g["nodes"][i]["op"] = "linear(Tensor input) -> Tensor".into();
            }),
        ),
        (
            "before it is defined",
            with(&ok, |_, g| {
                let i = op_node(g);
                g["nodes"][i]["inputs"][0] = 9999.into();
            }),
        ),
        (
            "defined twice",
            with(&ok, |_, g| {
                let i = op_node(g);
                g["nodes"][i]["outputs"][0] = g["inputs"][1].clone();
            }),
        ),
        (
            "takes 3 arguments",
            with(&ok, |_, g| {
                let i = op_node(g);
                g["nodes"][i]["inputs"].as_array_mut().unwrap().pop();
            }),
        ),
        (
            "no tensor for attribute",
            with(&ok, |_, g| {
                g["attributes"][0] = "ghost".into();
            }),
        ),
        (
            "argument 'input' of linear must be Tensor",
            with(&ok, |_, g| {
                let i = op_node(g);
                g["nodes"][i]["inputs"][0] = g["inputs"][0].clone();
            }),
        ),
        (
            "output %",
            with(&ok, |_, g| {
                g["outputs"][0] = 123456.into();
            }),
        ),
        ("not valid JSON", raw_entry(&ok, GRAPH, Some(b"{"))),
        (
            "safetensors",
            raw_entry(&ok, "archive/data.safetensors", Some(b"12345678")),
        ),
    ];
    for (want, bytes) in cases {
        let e = match load_bytes(&bytes) {
            Ok(_) => panic!("a bad file loaded ({want})"),
            Err(e) => e.to_string(),
        };
        assert!(e.contains(want), "expected {want:?} in {e:?}");
    }
    Ok(())
}

/// Mutated files (bytes flipped, truncated, the graph JSON's numbers and
/// strings changed) load or fail cleanly; a program that loads runs or
/// fails cleanly. Never a panic.
#[test]
fn fuzz_saved_program_loader() -> Result<()> {
    let (_, m) = mlp_script()?;
    let ok = m.save_to_bytes()?;
    let secs: f64 = std::env::var("FERROTORCH_FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3.0);
    let mut seed: u64 = std::env::var("FERROTORCH_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x9e37_79b9);
    let mut rnd = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let x = Tensor::randn(&[2, 3], DType::F32)?;
    let start = std::time::Instant::now();
    let mut runs = 0u64;
    while start.elapsed().as_secs_f64() < secs {
        let bytes = match rnd() % 3 {
            0 => {
                let mut b = ok.clone();
                for _ in 0..1 + rnd() % 4 {
                    let i = (rnd() as usize) % b.len();
                    b[i] ^= 1 << (rnd() % 8);
                }
                b
            }
            1 => ok[..(rnd() as usize) % ok.len()].to_vec(),
            _ => {
                let r1 = rnd();
                let r2 = rnd();
                with(&ok, move |_, g| {
                    let nodes = g["nodes"].as_array().unwrap().len();
                    let n = &mut g["nodes"][(r1 as usize) % nodes];
                    let fields = ["inputs", "outputs"];
                    let f = fields[(r2 % 2) as usize];
                    if let Some(a) = n[f].as_array_mut() {
                        if !a.is_empty() {
                            let k = (r2 as usize >> 3) % a.len();
                            a[k] = ((r2 >> 20) % 40).into();
                        }
                    }
                    if r2 % 7 == 0 {
                        if let Some(c) = n.get_mut("constant") {
                            *c = serde_json::json!({"int_list": [((r2 >> 8) % 1_000_000_007) as i64, -1]});
                        }
                    }
                })
            }
        };
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            if let Ok(p) = load_bytes(&bytes) {
                let _ = p.forward(&[x.clone()]);
            }
        }));
        assert!(outcome.is_ok(), "a mutated program panicked (run {runs})");
        runs += 1;
    }
    eprintln!("fuzz_saved_program_loader: {runs} mutated programs in {secs} s");
    assert!(runs > 10);
    Ok(())
}

/// A custom op (Note [Custom ops]) traces as itself, runs in the
/// interpreter with its autograd formula, saves and loads; a program
/// naming a custom op this process does not have is refused, naming it.
#[test]
fn custom_ops_trace_save_and_load_as_themselves() -> Result<()> {
    use ferrotorch_core::dispatch::{call, IValue};
    use ferrotorch_core::library::{Kind, Library};
    let mut m = Library::new("ft_jit_test", Kind::Def)?;
    m.def_impl("scale(Tensor x, float s) -> Tensor", |a| {
        Ok(a.tensor(0)?.mul(a.float(1)?)?.into())
    })?;
    m.impl_autograd("scale", |ctx, g| {
        Ok(vec![Some(g[0].mul(ctx.args().float(1)?)?)])
    })?;
    let f = |t: &[Tensor]| -> Result<Vec<Tensor>> {
        let y = call(
            "ft_jit_test::scale",
            &[t[0].clone().into(), IValue::Float(2.5)],
            &[],
        )?;
        Ok(vec![y.into_tensor()?.tanh()?])
    };
    let x = Tensor::randn(&[3], DType::F64)?;
    let traced = ferrotorch_jit::trace(f, &[x.clone()])?;
    let text = traced.graph().to_string();
    assert!(text.contains("ft_jit_test::scale"), "{text}");
    let bytes = traced.save_to_bytes()?;
    let loaded = load_bytes(&bytes)?;
    let x2 = Tensor::randn(&[4], DType::F64)?.requires_grad_(true)?;
    let got = loaded.forward(&[x2.clone()])?.remove(0);
    let want = f(&[x2.clone()])?.remove(0);
    assert_eq!(got.to_vec::<f64>()?, want.to_vec::<f64>()?);
    let g = autograd::grad(&[got.sum()?], &[x2.clone()], None, None, false, false)?;
    let gw = autograd::grad(&[want.sum()?], &[x2], None, None, false, false)?;
    assert_eq!(
        g[0].as_ref().unwrap().to_vec::<f64>()?,
        gw[0].as_ref().unwrap().to_vec::<f64>()?
    );
    let renamed = with(&bytes, |_, g| {
        for n in g["nodes"].as_array_mut().unwrap() {
            if let Some(op) = n.get("op").and_then(|o| o.as_str()) {
                if op.starts_with("ft_jit_test::") {
                    let op = op.replace("ft_jit_test::", "ft_jit_gone::");
                    n["op"] = op.into();
                }
            }
        }
    });
    let e = load_bytes(&renamed).err().unwrap().to_string();
    assert!(e.contains("ft_jit_gone::scale"), "{e}");
    Ok(())
}

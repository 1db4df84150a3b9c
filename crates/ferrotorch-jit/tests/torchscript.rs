//! Archives PyTorch's `torch.jit.trace(...).save()` wrote (the fixtures'
//! gen.py, torch 2.15) load and give PyTorch's outputs (Note [Loading
//! TorchScript archives]).

use ferrotorch_core::Tensor;
use ferrotorch_serialize::pickle::Obj;
use std::path::PathBuf;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/torchscript/{name}"))
}

/// The `inputs` and `outputs` lists of `<name>_io.pt`.
fn io(name: &str) -> (Vec<Tensor>, Vec<Tensor>) {
    let bytes = std::fs::read(fixture(&format!("{name}_io.pt"))).unwrap();
    let ck = ferrotorch_serialize::pt::load_pt(&bytes, &[]).unwrap();
    let Obj::Dict(items) = ck.doc.get(ck.doc.root) else {
        panic!("not a dict")
    };
    let list = |key: &str| -> Vec<Tensor> {
        let (_, v) = items
            .iter()
            .find(|(k, _)| matches!(ck.doc.get(*k), Obj::Str(s) if s == key))
            .unwrap();
        let Obj::List(ids) = ck.doc.get(*v) else {
            panic!("not a list")
        };
        ids.iter().map(|i| ck.tensor(*i).unwrap().clone()).collect()
    };
    (list("inputs"), list("outputs"))
}

fn assert_close(got: &Tensor, want: &Tensor, what: &str) {
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    assert_eq!(got.dtype(), want.dtype(), "{what}: dtype");
    let g = got.to_vec_f64().unwrap();
    let w = want.to_vec_f64().unwrap();
    for (i, (a, b)) in g.iter().zip(&w).enumerate() {
        assert!(
            (a - b).abs() <= 1e-5 + 1e-5 * b.abs(),
            "{what}[{i}]: {a} vs PyTorch's {b}"
        );
    }
}

fn check(name: &str) {
    let m = ferrotorch_jit::load(fixture(&format!("{name}.pt")))
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let (inputs, outputs) = io(name);
    let _g = ferrotorch_core::autograd::no_grad();
    let got = m.forward(&inputs).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(got.len(), outputs.len(), "{name}: outputs");
    for (k, (g, w)) in got.iter().zip(&outputs).enumerate() {
        assert_close(g, w, &format!("{name} output {k}"));
    }
}

#[test]
fn a_cnn_with_batchnorm_and_pooling() {
    check("cnn");
}

#[test]
fn an_lstm_with_layernorm_and_attention() {
    check("lstm_attention");
}

#[test]
fn a_gpt_block() {
    check("gpt_block");
}

#[test]
fn resnet18_structure() {
    check("resnet18_small");
}

#[test]
fn integer_division_of_a_version_3_archive_truncates_as_its_upgrader_does() {
    check("div_v3");
}

#[test]
fn full_of_an_int_in_a_version_4_archive_is_float_as_its_upgrader_makes_it() {
    check("full_v4");
}

#[test]
fn a_scripted_module_is_refused_naming_the_construct_and_line() {
    let err = ferrotorch_jit::load(fixture("scripted.pt"))
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("'if' is control flow"), "{err}");
    assert!(err.contains("line "), "{err}");
}

#[test]
fn a_loaded_resnet_folds_and_freezes_for_inference() {
    let m = ferrotorch_jit::load(fixture("resnet18_small.pt")).unwrap();
    let code = m.code();
    // convolutions of 4-D weights are conv2d, the op the passes fold
    assert!(code.contains("conv2d"), "{code}");
    assert!(!code.contains("_convolution"), "{code}");
    let o = ferrotorch_jit::passes::optimize_for_inference(&m).unwrap();
    assert!(!o.code().contains("batch_norm"), "{}", o.code());
    let (inputs, outputs) = io("resnet18_small");
    let _g = ferrotorch_core::autograd::no_grad();
    for _ in 0..2 {
        let got = o.forward(&inputs).unwrap();
        let (g, w) = (
            got[0].to_vec_f64().unwrap(),
            outputs[0].to_vec_f64().unwrap(),
        );
        for (a, b) in g.iter().zip(&w) {
            assert!((a - b).abs() <= 1e-4, "{a} vs PyTorch's {b}");
        }
    }
}

/// `cnn.pt` with its entries edited by `edit(name, data)`.
fn edited(edit: impl Fn(&str, Vec<u8>) -> Vec<u8>) -> Vec<u8> {
    let bytes = std::fs::read(fixture("cnn.pt")).unwrap();
    let entries: Vec<(String, Vec<u8>)> = ferrotorch_jit::zip::entries(&bytes)
        .unwrap()
        .into_iter()
        .map(|(n, d)| {
            let d = edit(&n, d.to_vec());
            (n, d)
        })
        .collect();
    let refs: Vec<(&str, &[u8])> = entries.iter().map(|(n, d)| (n.as_str(), &d[..])).collect();
    ferrotorch_jit::zip::write(&refs).unwrap()
}

fn code_replaced(from: &str, to: &str) -> String {
    let b = edited(|n, d| {
        if n == "cnn/code/__torch__.py" {
            String::from_utf8(d).unwrap().replace(from, to).into_bytes()
        } else {
            d
        }
    });
    match ferrotorch_jit::load_bytes(&b) {
        Ok(_) => "loaded".into(),
        Err(e) => e.to_string(),
    }
}

#[test]
fn code_that_is_not_a_traced_program_is_refused_by_name() {
    // the rewritten archive (stored, not deflated) still loads as is
    assert_eq!(code_replaced("torch.relu", "torch.relu"), "loaded");
    let e = code_replaced("torch.relu(", "torch.frobnicate(");
    assert!(
        e.contains("torch.frobnicate") && e.contains("does not have"),
        "{e}"
    );
    let e = code_replaced("torch.relu(", "os.system(");
    assert!(
        e.contains("os.system, which is not a TorchScript builtin"),
        "{e}"
    );
    let e = code_replaced(
        "    return _1",
        "    while True:\n      pass\n    return _1",
    );
    assert!(e.contains("'while' is control flow"), "{e}");
    let e = code_replaced("torch.relu((bn)", "torch.relu(1, (bn)");
    assert!(e.contains("no overload of relu"), "{e}");
    let e = code_replaced("CONSTANTS.c0", "CONSTANTS.c9");
    assert!(e.contains("CONSTANTS.c9"), "{e}");
    let b = edited(|n, d| {
        if n.ends_with("/version") {
            b"11\n".to_vec()
        } else {
            d
        }
    });
    let e = ferrotorch_jit::load_bytes(&b).err().unwrap().to_string();
    assert!(e.contains("format version 11"), "{e}");
}

#[test]
fn every_truncation_of_an_archive_is_an_error() {
    let bytes = std::fs::read(fixture("cnn.pt")).unwrap();
    for n in (0..bytes.len()).step_by(53) {
        assert!(ferrotorch_jit::load_bytes(&bytes[..n]).is_err(), "{n}");
    }
}

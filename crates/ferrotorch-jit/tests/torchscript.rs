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
fn a_scripted_module_is_refused_naming_the_construct_and_line() {
    let err = ferrotorch_jit::load(fixture("scripted.pt"))
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("'if' is control flow"), "{err}");
    assert!(err.contains("line "), "{err}");
}

//! `Display` matches PyTorch's `repr` exactly; the expected strings were
//! printed by `fixtures/gen_printing.py` into `fixtures/printing.json`.

use ferrotorch_core::{f16, tensor, DType, Tensor};
use serde_json::Value;

fn expected() -> Value {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/printing.json"
    ))
    .unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn reprs_match_pytorch() {
    let ar = |n: i64| Tensor::arange(0, n, 1, ()).unwrap();
    let cases: Vec<(&str, Tensor)> = vec![
        ("ints", ar(6).reshape(&[2, 3]).unwrap()),
        ("floats_intlike", tensor([[1.0, 2.0], [3.0, 4.0]]).unwrap()),
        ("floats", tensor([1.5, -2.25, 3.0]).unwrap()),
        ("sci", tensor([1e-5, 1.0, 12345.0]).unwrap()),
        ("big", tensor([1e9, 2.0]).unwrap()),
        (
            "nan_inf",
            tensor([f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1.5]).unwrap(),
        ),
        ("bool", tensor([true, false]).unwrap()),
        ("f64", Tensor::from_slice(&[1.0f64, 2.5])),
        ("i32", Tensor::from_slice(&[1i32, 2])),
        (
            "f16",
            Tensor::from_slice(&[f16::from_f64(0.1), f16::from_f64(2.0)]),
        ),
        ("empty", Tensor::zeros(&[0], ()).unwrap()),
        ("empty2d", Tensor::zeros(&[0, 3], ()).unwrap()),
        ("empty_int", Tensor::zeros(&[0], DType::I64).unwrap()),
        ("scalar", tensor(3.5).unwrap()),
        ("scalar_int", tensor(7).unwrap()),
        (
            "long_row",
            Tensor::arange(0, 30, 1, DType::F32)
                .unwrap()
                .div(7)
                .unwrap(),
        ),
        ("summarized", ar(2000).reshape(&[40, 50]).unwrap()),
        (
            "summarized_f",
            Tensor::arange(0, 1500, 1, DType::F32)
                .unwrap()
                .div(3)
                .unwrap()
                .reshape(&[3, 500])
                .unwrap(),
        ),
        ("neg_zero", tensor([-0.0, 1.0]).unwrap()),
        (
            "threed",
            Tensor::arange(0.0, 8.0, 1.0, ())
                .unwrap()
                .reshape(&[2, 2, 2])
                .unwrap(),
        ),
    ];
    let want = expected();
    let mut bad = Vec::new();
    for (name, t) in cases {
        let w = want[name].as_str().unwrap();
        let got = format!("{t}");
        if got != w {
            bad.push(format!("{name}:\n got: {got}\nwant: {w}"));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n\n"));
}

//! `.pt` files torch.save wrote (the Python package's committed fixtures,
//! made by `crates/ferrotorch-python/tests/fixtures/gen_torch_pt.py`) read
//! from Rust: state dicts against torch's values, views sharing their
//! storage, and refusals by name.

use ferrotorch_core::Tensor;
use ferrotorch_serialize::pickle::Obj;
use ferrotorch_serialize::pt::load_pt;
use std::path::PathBuf;

fn fixture(name: &str) -> Vec<u8> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../ferrotorch-python/tests/fixtures/torch_pt")
        .join(format!("{name}.pt"));
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn expected() -> serde_json::Value {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../ferrotorch-python/tests/fixtures/torch_pt.json");
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn values(t: &Tensor) -> Vec<f64> {
    t.to_dtype(ferrotorch_core::DType::F64)
        .unwrap()
        .contiguous()
        .unwrap()
        .to_vec::<f64>()
        .unwrap()
}

fn flat(v: &serde_json::Value, out: &mut Vec<f64>) {
    match v {
        serde_json::Value::Array(a) => a.iter().for_each(|x| flat(x, out)),
        serde_json::Value::Number(n) => out.push(n.as_f64().unwrap()),
        serde_json::Value::Bool(b) => out.push(f64::from(u8::from(*b))),
        _ => panic!("not a number: {v}"),
    }
}

#[test]
fn a_state_dict_torch_wrote_loads_with_its_values() {
    let ck = load_pt(&fixture("state_dict"), &[]).unwrap();
    let sd = ck.state_dict().unwrap();
    let want = &expected()["cases"]["state_dict"]["value"]["items"];
    assert_eq!(sd.len(), want.as_array().unwrap().len());
    for ((name, t), w) in sd.iter().zip(want.as_array().unwrap()) {
        assert_eq!(name, w[0].as_str().unwrap());
        let mut v = Vec::new();
        flat(&w[1]["values"], &mut v);
        // float32 values, compared as float32 (serde_json's float parse may
        // differ from Python's in the last digit of a double)
        let got: Vec<f32> = values(t).iter().map(|&x| x as f32).collect();
        let want: Vec<f32> = v.iter().map(|&x| x as f32).collect();
        assert_eq!(got, want, "{name}");
        let shape: Vec<usize> = w[1]["shape"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap() as usize)
            .collect();
        assert_eq!(t.shape(), &shape[..], "{name}");
    }
}

#[test]
fn views_of_one_storage_share_it_and_keep_their_strides() {
    let ck = load_pt(&fixture("views"), &[]).unwrap();
    let Obj::Dict(items) = ck.doc.get(ck.doc.root) else {
        panic!("not a dict")
    };
    let get = |key: &str| {
        let (_, v) = items
            .iter()
            .find(|(k, _)| matches!(ck.doc.get(*k), Obj::Str(s) if s == key))
            .unwrap();
        ck.tensor(*v).unwrap().clone()
    };
    let (base, t, col) = (get("base"), get("t"), get("col"));
    assert_eq!(t.stride(), &[1, 6]);
    assert_eq!(col.storage_offset(), 2);
    assert_eq!(values(&col), vec![2.0, 8.0, 14.0, 20.0]);
    assert_eq!(base.data_ptr(), t.data_ptr());
}

#[test]
fn what_a_checkpoint_cannot_hold_is_refused_by_name() {
    let e = load_pt(&fixture("whole_module"), &[])
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("torch.nn.modules.linear.Linear"), "{e}");
    let e = load_pt(&fixture("float8"), &[]).err().unwrap().to_string();
    assert!(e.contains("torch.float8_e4m3fn"), "{e}");
    let e = load_pt(&fixture("traced"), &[]).err().unwrap().to_string();
    assert!(e.contains("TorchScript archive"), "{e}");
}

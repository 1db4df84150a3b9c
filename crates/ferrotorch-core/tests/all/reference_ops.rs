//! Every case in `fixtures/ops.json` (generated from PyTorch by
//! `fixtures/gen_ops.py`) replayed through the dispatcher: same dtype, same
//! shape, same values (within a tolerance per dtype), or an error where
//! PyTorch raises one.

use ferrotorch_core::dispatch::{call, IValue};
use ferrotorch_core::{bf16, f16, DType, ErrorKind, Tensor};
use serde_json::Value;

fn num(v: &Value) -> f64 {
    match v {
        Value::String(s) if s == "nan" => f64::NAN,
        Value::String(s) if s == "inf" => f64::INFINITY,
        Value::String(s) if s == "-inf" => f64::NEG_INFINITY,
        Value::Bool(b) => *b as u8 as f64,
        other => other.as_f64().expect("number"),
    }
}

fn tensor(v: &Value) -> Tensor {
    let dt = DType::from_name(v["dtype"].as_str().unwrap()).unwrap();
    let shape: Vec<usize> = v["shape"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as usize)
        .collect();
    let data = v["data"].as_array().unwrap();
    let f: Vec<f64> = data.iter().map(num).collect();
    let i: Vec<i64> = data.iter().map(|x| x.as_i64().unwrap_or(0)).collect();
    match dt {
        DType::F32 => Tensor::from_vec(f.iter().map(|&x| x as f32).collect(), &shape),
        DType::F64 => Tensor::from_vec(f, &shape),
        DType::F16 => Tensor::from_vec(f.iter().map(|&x| f16::from_f64(x)).collect(), &shape),
        DType::BF16 => Tensor::from_vec(f.iter().map(|&x| bf16::from_f64(x)).collect(), &shape),
        DType::I64 => Tensor::from_vec(i, &shape),
        DType::I32 => Tensor::from_vec(i.iter().map(|&x| x as i32).collect(), &shape),
        DType::I16 => Tensor::from_vec(i.iter().map(|&x| x as i16).collect(), &shape),
        DType::I8 => Tensor::from_vec(i.iter().map(|&x| x as i8).collect(), &shape),
        DType::U8 => Tensor::from_vec(i.iter().map(|&x| x as u8).collect(), &shape),
        DType::Bool => {
            Tensor::from_vec(data.iter().map(|x| x.as_bool().unwrap()).collect(), &shape)
        }
        d => panic!("the reference fixtures hold no {d} tensors"),
    }
    .unwrap()
}

fn arg(v: &Value) -> IValue {
    let o = v.as_object().unwrap();
    if let Some(t) = o.get("t") {
        let mut x = tensor(t);
        for view in v["views"].as_array().unwrap() {
            let a = view.as_array().unwrap();
            x = match a[0].as_str().unwrap() {
                "transpose" => x
                    .transpose(a[1].as_i64().unwrap(), a[2].as_i64().unwrap())
                    .unwrap(),
                "slice" => x
                    .slice(
                        a[1].as_i64().unwrap(),
                        a[2].as_i64(),
                        a[3].as_i64(),
                        a[4].as_i64().unwrap(),
                    )
                    .unwrap(),
                "expand" => {
                    let s: Vec<i64> = a[1]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|x| x.as_i64().unwrap())
                        .collect();
                    x.expand(&s).unwrap()
                }
                k => panic!("unknown view {k}"),
            };
        }
        return IValue::Tensor(x);
    }
    if let Some(b) = o.get("b") {
        return IValue::Bool(b.as_bool().unwrap());
    }
    if let Some(i) = o.get("i") {
        return IValue::Int(i.as_i64().unwrap());
    }
    if let Some(f) = o.get("f") {
        return IValue::Float(num(f));
    }
    if let Some(s) = o.get("s") {
        return IValue::Str(s.as_str().unwrap().to_string());
    }
    if o.contains_key("none") {
        return IValue::None;
    }
    if let Some(d) = o.get("dt") {
        return IValue::DType(DType::from_name(d.as_str().unwrap()).unwrap());
    }
    if let Some(l) = o.get("il") {
        return IValue::IntList(
            l.as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_i64().unwrap())
                .collect(),
        );
    }
    if let Some(l) = o.get("tl") {
        let items: Vec<IValue> = l.as_array().unwrap().iter().map(arg).collect();
        if items.iter().any(|i| matches!(i, IValue::None)) {
            return IValue::OptTensorList(
                items
                    .into_iter()
                    .map(|i| {
                        if let IValue::Tensor(t) = i {
                            Some(t)
                        } else {
                            None
                        }
                    })
                    .collect(),
            );
        }
        return IValue::TensorList(
            items
                .into_iter()
                .map(|i| i.into_tensor().unwrap())
                .collect(),
        );
    }
    panic!("unknown arg {v}")
}

fn tol(dt: DType) -> (f64, f64) {
    match dt {
        DType::F32 => (2e-5, 1e-5),
        DType::F64 => (1e-10, 1e-12),
        DType::F16 => (2e-3, 1e-3),
        DType::BF16 => (1.6e-2, 1e-2),
        _ => (0.0, 0.0),
    }
}

fn compare(got: &Tensor, want: &Value) -> Result<(), String> {
    let w = tensor(want);
    if got.dtype() != w.dtype() {
        return Err(format!("dtype {} != {}", got.dtype(), w.dtype()));
    }
    if got.shape() != w.shape() {
        return Err(format!("shape {:?} != {:?}", got.shape(), w.shape()));
    }
    let (g, e) = (got.to_vec_f64().unwrap(), w.to_vec_f64().unwrap());
    let (rtol, atol) = tol(w.dtype());
    for (k, (a, b)) in g.iter().zip(&e).enumerate() {
        let ok = (a.is_nan() && b.is_nan()) || a == b || (a - b).abs() <= atol + rtol * b.abs();
        if !ok {
            return Err(format!("element {k}: got {a}, want {b}"));
        }
    }
    Ok(())
}

fn check(got: IValue, want: &Value) -> Result<(), String> {
    if let Some(t) = want.get("t") {
        return compare(&got.into_tensor().map_err(|e| e.to_string())?, t);
    }
    let parts = want["tuple"].as_array().unwrap();
    let items: Vec<IValue> = match got {
        IValue::Tuple(v) => v,
        IValue::TensorList(v) => v.into_iter().map(IValue::Tensor).collect(),
        other => return Err(format!("expected a tuple, got {}", other.type_name())),
    };
    if items.len() != parts.len() {
        return Err(format!("{} results, want {}", items.len(), parts.len()));
    }
    for (g, w) in items.into_iter().zip(parts) {
        check(g, w)?;
    }
    Ok(())
}

#[test]
fn every_op_matches_pytorch() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/ops.json"
    ))
    .unwrap();
    let root: Value = serde_json::from_str(&text).unwrap();
    let cases = root["cases"].as_array().unwrap();
    eprintln!("{} PyTorch reference cases", cases.len());
    let mut failures = Vec::new();
    for (n, c) in cases.iter().enumerate() {
        let op = c["op"].as_str().unwrap();
        let args: Vec<IValue> = c["args"].as_array().unwrap().iter().map(arg).collect();
        let kw: Vec<(String, IValue)> = c["kwargs"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), arg(v)))
            .collect();
        let kwr: Vec<(&str, IValue)> = kw.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
        let got = call(op, &args, &kwr);
        let res = match (got, c.get("error")) {
            (Err(e), Some(_)) => {
                // the exception class PyTorch raises must be the one our
                // error kind maps to (the Python bindings raise it)
                let want = c["error_type"].as_str().unwrap_or("RuntimeError");
                let got = match e.kind() {
                    ErrorKind::Runtime => "RuntimeError",
                    ErrorKind::Index => "IndexError",
                    ErrorKind::Value => "ValueError",
                    ErrorKind::Type => "TypeError",
                    ErrorKind::NotImplemented => "NotImplementedError",
                    ErrorKind::Io => "OSError",
                    ErrorKind::Key => "KeyError",
                    ErrorKind::Assertion => "AssertionError",
                    ErrorKind::LinAlg => "_LinAlgError",
                };
                if want == got {
                    Ok(())
                } else {
                    Err(format!("raised {got} ({e}), PyTorch raises {want}"))
                }
            }
            (Ok(_), Some(e)) => Err(format!("expected error '{e}' but succeeded")),
            (Err(e), None) => Err(format!("unexpected error: {e}")),
            (Ok(v), None) => check(v, &c["out"]),
        };
        if let Err(e) = res {
            failures.push(format!("case {n} {op}: {e}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ from PyTorch:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

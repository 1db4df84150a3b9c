//! Fixture helpers shared by the nn test files.
#![allow(dead_code)]

use ferrotorch_core::{DType, Tensor};
use serde_json::Value;

/// Parse `tests/fixtures/<name>`.
pub fn load(name: &str) -> Value {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The `shape` of a fixture tensor.
pub fn shape(v: &Value) -> Vec<usize> {
    v["shape"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_u64().unwrap() as usize)
        .collect()
}

/// The `data` of a fixture tensor.
pub fn f64s(v: &Value) -> Vec<f64> {
    v["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_f64().unwrap())
        .collect()
}

/// A fixture tensor as float32 (PyTorch's default dtype).
pub fn float32(v: &Value) -> Tensor {
    Tensor::from_vec(f64s(v), &shape(v))
        .unwrap()
        .to_dtype(DType::F32)
        .unwrap()
}

/// `actual` has the fixture's shape and values within `atol + rtol·|x|`.
pub fn assert_close(what: &str, actual: &Tensor, expected: &Value, atol: f64, rtol: f64) {
    assert_eq!(actual.shape(), shape(expected).as_slice(), "{what}: shape");
    let a = actual
        .to_dtype(DType::F64)
        .unwrap()
        .to_vec::<f64>()
        .unwrap();
    for (i, (x, y)) in a.iter().zip(f64s(expected)).enumerate() {
        assert!(
            (x - y).abs() <= atol + rtol * y.abs(),
            "{what}[{i}]: {x} vs PyTorch {y}"
        );
    }
}

/// Serialise the tests that seed the global generator: the test harness
/// runs tests on parallel threads, which would interleave their draws.
pub fn rng_lock() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

//! CPU autocast at the dispatcher (Note [Autocast at the dispatcher]):
//! listed ops run in bfloat16 with float32 gradients, float32-listed ops
//! upcast, float64 is never cast, regions nest.

use ferrotorch_core::{amp, DType, Tensor};

#[test]
fn autocast_casts_listed_ops_and_gradients_come_back_in_float32() {
    let w = Tensor::from_slice(&[0.5f32, -1.25, 2.0, 0.75])
        .reshape(&[2, 2])
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let x = Tensor::ones(&[3, 2], DType::F32).unwrap();
    amp::enter(None, true).unwrap();
    let y = x.matmul(&w).unwrap();
    assert_eq!(y.dtype(), DType::BF16);
    // float64 is never cast
    let d = Tensor::ones(&[2, 2], DType::F64).unwrap();
    assert_eq!(d.matmul(&d).unwrap().dtype(), DType::F64);
    // a nested disabled region runs as called
    amp::enter(None, false).unwrap();
    assert_eq!(x.matmul(&w).unwrap().dtype(), DType::F32);
    amp::exit().unwrap();
    assert!(amp::is_enabled());
    amp::exit().unwrap();
    assert!(!amp::is_enabled());
    y.to_dtype(DType::F32)
        .unwrap()
        .sum()
        .unwrap()
        .backward()
        .unwrap();
    let g = w.grad().unwrap();
    assert_eq!(g.dtype(), DType::F32);
    // d/dW Σ (x W) = xᵀ 1 = 3 in every entry, exact in bfloat16
    assert_eq!(g.to_vec::<f32>().unwrap(), vec![3.0; 4]);
    assert!(amp::exit().is_err());
    assert!(amp::enter(Some(DType::F32), true).is_err());
}

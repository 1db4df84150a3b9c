//! The activations of `nn.functional` that are ATen ops in PyTorch,
//! registered in the dispatcher under ATen's names and schemas, so they
//! can be called by name (the Python package, the JIT) and are declared
//! once: the boxed kernels call the functions of `activation.rs`.

use super::activation as act;
use ferrotorch_core::dispatch::{register_op, Args};
use ferrotorch_core::Result;

fn unary(schema: &str, f: fn(&ferrotorch_core::Tensor) -> Result<ferrotorch_core::Tensor>) {
    let _ = register_op(schema, move |a: &Args| Ok(f(&a.tensor(0)?)?.into()));
}

/// Scalar argument `i` as f64.
fn f(a: &Args, i: usize) -> Result<f64> {
    Ok(a.scalar(i)?.to_f64())
}

/// Register the ops (idempotent; later calls do nothing).
pub fn register_ops() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        super::loss_ops::register();
        unary("softsign(Tensor self) -> Tensor", act::softsign);
        let _ = register_op("glu(Tensor self, int dim=-1) -> Tensor", |a: &Args| {
            Ok(act::glu(&a.tensor(0)?, a.int(1)?)?.into())
        });
        let _ = register_op("prelu(Tensor self, Tensor weight) -> Tensor", |a: &Args| {
            Ok(act::prelu(&a.tensor(0)?, &a.tensor(1)?)?.into())
        });
        let _ = register_op(
            "threshold(Tensor self, Scalar threshold, Scalar value) -> Tensor",
            |a: &Args| Ok(act::threshold(&a.tensor(0)?, f(a, 1)?, f(a, 2)?)?.into()),
        );
    });
}

/// The ops are those of `activation.rs`: the same values by name.
#[cfg(test)]
mod tests {
    use ferrotorch_core::dispatch::{call, IValue};
    use ferrotorch_core::Tensor;

    #[test]
    fn registered_ops_call_the_functions() {
        super::register_ops();
        super::register_ops();
        let x = Tensor::from_slice(&[-2.0f32, -0.5, 0.0, 0.5, 2.0]);
        let by_name = |name: &str, extra: Vec<IValue>| {
            let mut args = vec![IValue::Tensor(x.clone())];
            args.extend(extra);
            match call(name, &args, &[]).unwrap() {
                IValue::Tensor(t) => t.to_vec::<f32>().unwrap(),
                _ => panic!("{name}: not a tensor"),
            }
        };
        let direct = |t: Tensor| t.to_vec::<f32>().unwrap();
        use super::act;
        assert_eq!(
            by_name("hardswish", vec![]),
            direct(act::hardswish(&x).unwrap())
        );
        assert_eq!(
            by_name("log_sigmoid", vec![]),
            direct(act::logsigmoid(&x).unwrap())
        );
        assert_eq!(
            by_name("hardtanh", vec![IValue::Float(-1.0), IValue::Float(0.5)]),
            vec![-1.0, -0.5, 0.0, 0.5, 0.5]
        );
        assert_eq!(
            by_name("threshold", vec![IValue::Float(0.1), IValue::Float(9.0)]),
            vec![9.0, 9.0, 9.0, 0.5, 2.0]
        );
    }
}

//! The losses that are ATen ops in PyTorch (`aten::mse_loss`,
//! `aten::cross_entropy_loss`, ...), registered under ATen's names and
//! schemas so bindings without a Python layer (C, Go, Node) call them by
//! name. `reduction` is ATen's integer: 0 none, 1 mean, 2 sum.

use super::loss as l;
use super::{BceWithLogits, ClassLoss, Reduction};
use ferrotorch_core::dispatch::{register_op, Args, IValue};
use ferrotorch_core::{bail, Result};

/// ATen's `at::Reduction` value as a [`Reduction`].
fn reduction(a: &Args, i: usize) -> Result<Reduction> {
    Ok(match a.int(i)? {
        0 => Reduction::None,
        1 => Reduction::Mean,
        2 => Reduction::Sum,
        r => bail!(
            Value,
            "{}: {r} is not a valid value for reduction",
            a.schema().name
        ),
    })
}

fn pointwise(schema: &str, f: fn(&Args) -> Result<ferrotorch_core::Tensor>) {
    let _ = register_op(schema, move |a: &Args| -> Result<IValue> {
        Ok(f(a)?.into())
    });
}

/// Register the loss ops (called once by `register_ops`).
pub(super) fn register() {
    pointwise(
        "mse_loss(Tensor self, Tensor target, int reduction=1) -> Tensor",
        |a| l::mse_loss(&a.tensor(0)?, &a.tensor(1)?, reduction(a, 2)?),
    );
    pointwise(
        "l1_loss(Tensor self, Tensor target, int reduction=1) -> Tensor",
        |a| l::l1_loss(&a.tensor(0)?, &a.tensor(1)?, reduction(a, 2)?),
    );
    pointwise(
        "smooth_l1_loss(Tensor self, Tensor target, int reduction=1, float beta=1.0) -> Tensor",
        |a| l::smooth_l1_loss(&a.tensor(0)?, &a.tensor(1)?, reduction(a, 2)?, a.float(3)?),
    );
    pointwise(
        "huber_loss(Tensor self, Tensor target, int reduction=1, float delta=1.0) -> Tensor",
        |a| l::huber_loss(&a.tensor(0)?, &a.tensor(1)?, reduction(a, 2)?, a.float(3)?),
    );
    pointwise(
        "binary_cross_entropy(Tensor self, Tensor target, Tensor? weight=None, int reduction=1) -> Tensor",
        |a| {
            let w = a.opt_tensor(2)?;
            l::binary_cross_entropy(&a.tensor(0)?, &a.tensor(1)?, w.as_ref(), reduction(a, 3)?)
        },
    );
    pointwise(
        "binary_cross_entropy_with_logits(Tensor self, Tensor target, Tensor? weight=None, Tensor? pos_weight=None, int reduction=1) -> Tensor",
        |a| {
            let (w, p) = (a.opt_tensor(2)?, a.opt_tensor(3)?);
            let o = BceWithLogits {
                weight: w.as_ref(),
                pos_weight: p.as_ref(),
                reduction: reduction(a, 4)?,
            };
            l::binary_cross_entropy_with_logits(&a.tensor(0)?, &a.tensor(1)?, o)
        },
    );
    pointwise(
        "nll_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=1, int ignore_index=-100) -> Tensor",
        |a| {
            let w = a.opt_tensor(2)?;
            let o = ClassLoss {
                weight: w.as_ref(),
                reduction: reduction(a, 3)?,
                ignore_index: a.int(4)?,
                label_smoothing: 0.0,
            };
            l::nll_loss(&a.tensor(0)?, &a.tensor(1)?, o)
        },
    );
    pointwise(
        "cross_entropy_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=1, int ignore_index=-100, float label_smoothing=0.0) -> Tensor",
        |a| {
            let w = a.opt_tensor(2)?;
            let o = ClassLoss {
                weight: w.as_ref(),
                reduction: reduction(a, 3)?,
                ignore_index: a.int(4)?,
                label_smoothing: a.float(5)?,
            };
            l::cross_entropy(&a.tensor(0)?, &a.tensor(1)?, o)
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrotorch_core::dispatch::call;
    use ferrotorch_core::Tensor;

    /// By name, the ops give what the functions give.
    #[test]
    fn loss_ops_match_the_functions() {
        crate::functional::register_ops();
        let x = Tensor::from_slice(&[0.5f32, -1.0, 2.0, 0.25, 1.5, -0.5])
            .reshape(&[2, 3])
            .unwrap();
        let y = Tensor::from_slice(&[1.0f32, 0.0, 1.0, 0.0, 1.0, 1.0])
            .reshape(&[2, 3])
            .unwrap();
        let by_name = |op: &str, extra: Vec<IValue>| {
            let mut args = vec![x.clone().into(), y.clone().into()];
            args.extend(extra);
            call(op, &args, &[])
                .unwrap()
                .into_tensor()
                .unwrap()
                .to_vec_f64()
                .unwrap()
        };
        let direct = |t: Result<Tensor>| t.unwrap().to_vec_f64().unwrap();
        assert_eq!(
            by_name("mse_loss", vec![]),
            direct(l::mse_loss(&x, &y, Reduction::Mean))
        );
        assert_eq!(
            by_name("l1_loss", vec![IValue::Int(2)]),
            direct(l::l1_loss(&x, &y, Reduction::Sum))
        );
        assert_eq!(
            by_name("huber_loss", vec![IValue::Int(0), IValue::Float(0.5)]),
            direct(l::huber_loss(&x, &y, Reduction::None, 0.5))
        );
        let t = Tensor::from_slice(&[2i64, 0]);
        let ce = call(
            "cross_entropy_loss",
            &[x.clone().into(), t.clone().into()],
            &[],
        )
        .unwrap()
        .into_tensor()
        .unwrap()
        .item_f64()
        .unwrap();
        // log-sum-exp minus the target logit, averaged over the two rows
        let row = |r: [f64; 3], k: usize| r.iter().map(|v| v.exp()).sum::<f64>().ln() - r[k];
        let want = (row([0.5, -1.0, 2.0], 2) + row([0.25, 1.5, -0.5], 0)) / 2.0;
        assert!((ce - want).abs() < 1e-6, "{ce} vs {want}");
        let e = call(
            "mse_loss",
            &[x.clone().into(), y.clone().into(), IValue::Int(5)],
            &[],
        )
        .unwrap_err();
        assert!(e.message().contains("reduction"), "{e}");
    }
}

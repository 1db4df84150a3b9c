//! `torch.optim.Adagrad`: learning-rate decay, initial accumulator, weight
//! decay, maximize.

use crate::kernel::{fused, Kernel, Real};
use crate::optimizer::{check, saved, saved_step, step_tensor, Algorithm, Optim, ParamState};
use crate::options::group_options;
use ferrotorch_core::{Result, Tensor};
use std::collections::BTreeMap;

group_options! {
    /// Options of [`Adagrad`], with PyTorch's defaults.
    AdagradOptions {
        /// Learning rate (default 1e-2).
        lr: f64 = 1e-2,
        /// Learning-rate decay per step (default 0).
        lr_decay: f64 = 0.0,
        /// L2 penalty (default 0).
        weight_decay: f64 = 0.0,
        /// Starting value of the sum of squares (default 0).
        initial_accumulator_value: f64 = 0.0,
        /// Added to the denominator (default 1e-10).
        eps: f64 = 1e-10,
        /// Maximise the objective instead (default false).
        maximize: bool = false,
    }
    // Adagrad has no momentum: OneCycleLR refuses it before setting one.
    momentum: |_o| None, |_o, _m| ()
}

/// Adagrad's per-parameter state.
pub struct AdagradState {
    /// Steps taken.
    pub step: f64,
    /// Sum of squared gradients.
    pub sum: Tensor,
}

impl ParamState for AdagradState {
    fn to_map(&self) -> Result<BTreeMap<String, Tensor>> {
        let mut m = BTreeMap::new();
        m.insert("step".to_string(), step_tensor(self.step)?);
        m.insert("sum".to_string(), self.sum.clone());
        Ok(m)
    }
    fn from_map(m: &BTreeMap<String, Tensor>, param: &Tensor) -> Result<Self> {
        Ok(AdagradState {
            step: saved_step(m)?,
            sum: saved(m, "sum", param)?,
        })
    }
}

/// The Adagrad algorithm (see [`Adagrad`]).
pub struct AdagradAlgorithm;

/// `torch.optim.Adagrad`.
pub type Adagrad = Optim<AdagradAlgorithm>;

struct AdagradKernel<'a> {
    o: &'a AdagradOptions,
    clr: f64,
}

impl Kernel for AdagradKernel<'_> {
    #[inline(always)]
    fn run<T: Real>(&self, w: &mut [&mut [T]], g: &[T]) {
        let o = self.o;
        let (wd, eps, lr, one) = (
            T::of(o.weight_decay),
            T::of(o.eps),
            T::of(-self.clr),
            T::of(1.0),
        );
        let [p, sum] = w else {
            unreachable!("Adagrad kernel gets param and sum")
        };
        for i in 0..g.len() {
            let mut d = if o.maximize { -g[i] } else { g[i] };
            if o.weight_decay != 0.0 {
                d = d + wd * p[i];
            }
            sum[i] = sum[i] + one * d * d;
            let std = sum[i].sqrt() + eps;
            p[i] = p[i] + lr * d / std;
        }
    }
}

impl Algorithm for AdagradAlgorithm {
    type Options = AdagradOptions;
    type State = AdagradState;
    const NAME: &'static str = "Adagrad";

    fn validate(o: &AdagradOptions) -> Result<()> {
        check(o.lr >= 0.0, "learning rate", o.lr)?;
        check(o.lr_decay >= 0.0, "lr_decay value", o.lr_decay)?;
        check(o.weight_decay >= 0.0, "weight_decay value", o.weight_decay)?;
        check(
            o.initial_accumulator_value >= 0.0,
            "initial_accumulator_value value",
            o.initial_accumulator_value,
        )?;
        check(o.eps >= 0.0, "epsilon value", o.eps)
    }

    fn init_state(p: &Tensor, o: &AdagradOptions) -> Result<AdagradState> {
        Ok(AdagradState {
            step: 0.0,
            sum: Tensor::full(p.shape(), o.initial_accumulator_value, p.dtype())?,
        })
    }

    fn update(p: &Tensor, g: &Tensor, s: &mut AdagradState, o: &AdagradOptions) -> Result<()> {
        s.step += 1.0;
        let clr = o.lr / (1.0 + (s.step - 1.0) * o.lr_decay);
        fused("Adagrad.step", &[p, &s.sum], g, &AdagradKernel { o, clr })
    }
}

//! `torch.optim.Adagrad`: learning-rate decay, initial accumulator, weight
//! decay, maximize.

use crate::kernel::{fused, Kernel, Real};
use crate::optimizer::{
    check, flag, float, saved, saved_step, step_tensor, Algorithm, GroupOptions, Hyper, Optim,
    ParamState,
};
use ferrotorch_core::{Result, Tensor};
use std::collections::BTreeMap;

/// Options of [`Adagrad`], with PyTorch's defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct AdagradOptions {
    /// Learning rate (default 1e-2).
    pub lr: f64,
    /// Learning-rate decay per step (default 0).
    pub lr_decay: f64,
    /// L2 penalty (default 0).
    pub weight_decay: f64,
    /// Starting value of the sum of squares (default 0).
    pub initial_accumulator_value: f64,
    /// Added to the denominator (default 1e-10).
    pub eps: f64,
    /// Maximise the objective instead (default false).
    pub maximize: bool,
}

impl Default for AdagradOptions {
    fn default() -> Self {
        AdagradOptions {
            lr: 1e-2,
            lr_decay: 0.0,
            weight_decay: 0.0,
            initial_accumulator_value: 0.0,
            eps: 1e-10,
            maximize: false,
        }
    }
}

impl GroupOptions for AdagradOptions {
    fn to_map(&self) -> BTreeMap<String, Hyper> {
        [
            ("lr", Hyper::Float(self.lr)),
            ("lr_decay", Hyper::Float(self.lr_decay)),
            ("weight_decay", Hyper::Float(self.weight_decay)),
            (
                "initial_accumulator_value",
                Hyper::Float(self.initial_accumulator_value),
            ),
            ("eps", Hyper::Float(self.eps)),
            ("maximize", Hyper::Bool(self.maximize)),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }
    fn from_map(m: &BTreeMap<String, Hyper>) -> Result<Self> {
        Ok(AdagradOptions {
            lr: float(m, "lr")?,
            lr_decay: float(m, "lr_decay")?,
            weight_decay: float(m, "weight_decay")?,
            initial_accumulator_value: float(m, "initial_accumulator_value")?,
            eps: float(m, "eps")?,
            maximize: flag(m, "maximize")?,
        })
    }
    fn lr(&self) -> f64 {
        self.lr
    }
    fn set_lr(&mut self, lr: f64) {
        self.lr = lr
    }
    fn momentum(&self) -> Option<f64> {
        None
    }
    /// Adagrad has no momentum; schedulers check [`GroupOptions::momentum`] first.
    fn set_momentum(&mut self, _: f64) {}
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

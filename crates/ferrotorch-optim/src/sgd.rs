//! `torch.optim.SGD`: momentum, dampening, Nesterov, weight decay, maximize.

use crate::kernel::{fused, zeros_like, Kernel, Real};
use crate::optimizer::{
    check, flag, float, saved, Algorithm, GroupOptions, Hyper, Optim, ParamState,
};
use ferrotorch_core::{ensure, Result, Tensor};
use std::collections::BTreeMap;

/// Options of [`SGD`], with PyTorch's defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct SGDOptions {
    /// Learning rate (default 1e-3).
    pub lr: f64,
    /// Momentum factor (default 0).
    pub momentum: f64,
    /// Dampening of the momentum (default 0).
    pub dampening: f64,
    /// L2 penalty (default 0).
    pub weight_decay: f64,
    /// Nesterov momentum (default false).
    pub nesterov: bool,
    /// Maximise the objective instead (default false).
    pub maximize: bool,
}

impl Default for SGDOptions {
    fn default() -> Self {
        SGDOptions {
            lr: 1e-3,
            momentum: 0.0,
            dampening: 0.0,
            weight_decay: 0.0,
            nesterov: false,
            maximize: false,
        }
    }
}

impl GroupOptions for SGDOptions {
    fn to_map(&self) -> BTreeMap<String, Hyper> {
        [
            ("lr", Hyper::Float(self.lr)),
            ("momentum", Hyper::Float(self.momentum)),
            ("dampening", Hyper::Float(self.dampening)),
            ("weight_decay", Hyper::Float(self.weight_decay)),
            ("nesterov", Hyper::Bool(self.nesterov)),
            ("maximize", Hyper::Bool(self.maximize)),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }
    fn from_map(m: &BTreeMap<String, Hyper>) -> Result<Self> {
        Ok(SGDOptions {
            lr: float(m, "lr")?,
            momentum: float(m, "momentum")?,
            dampening: float(m, "dampening")?,
            weight_decay: float(m, "weight_decay")?,
            nesterov: flag(m, "nesterov")?,
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
        Some(self.momentum)
    }
    fn set_momentum(&mut self, m: f64) {
        self.momentum = m
    }
}

/// SGD's per-parameter state: the momentum buffer once momentum is used.
pub struct SGDState {
    /// `momentum_buffer`.
    pub momentum_buffer: Option<Tensor>,
}

impl ParamState for SGDState {
    fn to_map(&self) -> Result<BTreeMap<String, Tensor>> {
        Ok(self
            .momentum_buffer
            .iter()
            .map(|b| ("momentum_buffer".to_string(), b.clone()))
            .collect())
    }
    fn from_map(m: &BTreeMap<String, Tensor>, param: &Tensor) -> Result<Self> {
        let momentum_buffer = match m.contains_key("momentum_buffer") {
            true => Some(saved(m, "momentum_buffer", param)?),
            false => None,
        };
        Ok(SGDState { momentum_buffer })
    }
}

/// The SGD algorithm (see [`SGD`]).
pub struct SgdAlgorithm;

/// `torch.optim.SGD`.
pub type SGD = Optim<SgdAlgorithm>;

struct SgdKernel<'a> {
    o: &'a SGDOptions,
    first: bool,
}

impl Kernel for SgdKernel<'_> {
    fn run<T: Real>(&self, w: &mut [&mut [T]], g: &[T]) {
        let o = self.o;
        let (wd, mom, damp, lr) = (
            T::of(o.weight_decay),
            T::of(o.momentum),
            T::of(1.0 - o.dampening),
            T::of(-o.lr),
        );
        let (p, rest) = w.split_first_mut().expect("param slice");
        let direction = |g: T, p: T| {
            let d = if o.maximize { -g } else { g };
            if o.weight_decay != 0.0 {
                d + wd * p
            } else {
                d
            }
        };
        match rest.first_mut() {
            None => {
                for (p, &g) in p.iter_mut().zip(g) {
                    *p = *p + lr * direction(g, *p);
                }
            }
            Some(buf) => {
                for ((p, b), &g) in p.iter_mut().zip(buf.iter_mut()).zip(g) {
                    let d = direction(g, *p);
                    *b = if self.first { d } else { *b * mom + damp * d };
                    let step = if o.nesterov { d + mom * *b } else { *b };
                    *p = *p + lr * step;
                }
            }
        }
    }
}

impl Algorithm for SgdAlgorithm {
    type Options = SGDOptions;
    type State = SGDState;
    const NAME: &'static str = "SGD";

    fn validate(o: &SGDOptions) -> Result<()> {
        check(o.lr >= 0.0, "learning rate", o.lr)?;
        check(o.momentum >= 0.0, "momentum value", o.momentum)?;
        check(o.weight_decay >= 0.0, "weight_decay value", o.weight_decay)?;
        ensure!(
            !o.nesterov || (o.momentum > 0.0 && o.dampening == 0.0),
            Value,
            "Nesterov momentum requires a momentum and zero dampening"
        );
        Ok(())
    }

    fn init_state(_: &Tensor, _: &SGDOptions) -> Result<SGDState> {
        Ok(SGDState {
            momentum_buffer: None,
        })
    }

    fn update(p: &Tensor, g: &Tensor, s: &mut SGDState, o: &SGDOptions) -> Result<()> {
        let first = o.momentum != 0.0 && s.momentum_buffer.is_none();
        if first {
            s.momentum_buffer = Some(zeros_like(p)?);
        }
        let k = SgdKernel { o, first };
        match (&s.momentum_buffer, o.momentum != 0.0) {
            (Some(buf), true) => fused("SGD.step", &[p, buf], g, &k),
            _ => fused("SGD.step", &[p], g, &k),
        }
    }
}

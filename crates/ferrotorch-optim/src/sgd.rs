//! `torch.optim.SGD`: momentum, dampening, Nesterov, weight decay, maximize.

use crate::kernel::{fused, zeros_like, Kernel, Real};
use crate::optimizer::{check, saved, Algorithm, Optim, ParamState};
use crate::options::group_options;
use ferrotorch_core::{ensure, Result, Tensor};
use std::collections::BTreeMap;

group_options! {
    /// Options of [`SGD`], with PyTorch's defaults.
    SGDOptions {
        /// Learning rate (default 1e-3).
        lr: f64 = 1e-3,
        /// Momentum factor (default 0).
        momentum: f64 = 0.0,
        /// Dampening of the momentum (default 0).
        dampening: f64 = 0.0,
        /// L2 penalty (default 0).
        weight_decay: f64 = 0.0,
        /// Nesterov momentum (default false).
        nesterov: bool = false,
        /// Maximise the objective instead (default false).
        maximize: bool = false,
    }
    momentum: |o| Some(o.momentum), |o, m| o.momentum = m
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
    #[inline(always)]
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
        sgd_step(p, g, s.momentum_buffer.as_ref(), first, o)
    }
}

/// One SGD update of a single parameter whose state the caller keeps
/// (`torch.optim._functional.sgd` for one tensor), in one pass over its
/// memory. With momentum, `momentum_buffer` is the parameter's buffer and
/// `first` says it has not been used yet (it is then set to the update
/// direction, as torch's first step clones it); without momentum the
/// buffer is ignored. The Python package's `optim.SGD` calls this once
/// per real floating-point parameter.
pub fn sgd_step(
    param: &Tensor,
    grad: &Tensor,
    momentum_buffer: Option<&Tensor>,
    first: bool,
    options: &SGDOptions,
) -> Result<()> {
    ensure!(
        options.momentum == 0.0 || momentum_buffer.is_some(),
        Value,
        "SGD.step: momentum {} needs a momentum buffer",
        options.momentum
    );
    let k = SgdKernel { o: options, first };
    match momentum_buffer {
        Some(buf) if options.momentum != 0.0 => fused("SGD.step", &[param, buf], grad, &k),
        _ => fused("SGD.step", &[param], grad, &k),
    }
}

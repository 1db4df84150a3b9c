//! `torch.optim.lr_scheduler`: StepLR, MultiStepLR, ExponentialLR,
//! CosineAnnealingLR, LinearLR, LambdaLR, OneCycleLR, ReduceLROnPlateau.
//!
//! PyTorch's schedulers hold their optimizer; here `step` is given it
//! (`scheduler.step(&mut opt)`), so the training loop keeps ownership.
//! Each uses PyTorch's recursive ("chainable") formula, so the learning
//! rates match PyTorch's float for float. Making a scheduler performs its
//! initial step, as in PyTorch.

mod one_cycle;
mod plateau;

pub use one_cycle::{OneCycleLR, OneCycleOptions, OneCycleRule};
pub use plateau::{ReduceLROnPlateau, ReduceLROnPlateauOptions};

use crate::optimizer::Optimizer;
use ferrotorch_core::{ensure, Result};

/// A learning-rate schedule stepped once per epoch (or batch).
pub trait LRScheduler {
    /// Advance one epoch and set the optimizer's learning rates (`step()`).
    fn step(&mut self, optimizer: &mut dyn Optimizer) -> Result<()>;
    /// The learning rates set by the last step (`get_last_lr()`).
    fn get_last_lr(&self) -> &[f64];
    /// Epochs stepped (`last_epoch`; 0 after construction).
    fn last_epoch(&self) -> i64;
}

/// The learning rates a rule computes for the epoch in `s.last_epoch`.
pub trait Rule: Send {
    /// PyTorch's `get_lr()`.
    fn get_lr(&mut self, s: &State, optimizer: &mut dyn Optimizer) -> Result<Vec<f64>>;
}

/// The bookkeeping of every epoch-based scheduler.
pub struct State {
    /// The learning rates at construction (`base_lrs`).
    pub base_lrs: Vec<f64>,
    /// Epochs stepped.
    pub last_epoch: i64,
    /// Steps taken, the initial one included (`_step_count`).
    pub step_count: u64,
    last_lr: Vec<f64>,
}

impl State {
    /// Whether this is the step made by the constructor (`_is_initial`).
    pub fn is_initial(&self) -> bool {
        self.step_count == 1
    }
}

/// A scheduler applying rule `R`.
pub struct Scheduler<R: Rule> {
    state: State,
    rule: R,
}

impl<R: Rule> Scheduler<R> {
    fn start(optimizer: &mut dyn Optimizer, rule: R) -> Result<Self> {
        let base_lrs = current(optimizer);
        let mut s = Scheduler {
            state: State {
                last_lr: base_lrs.clone(),
                base_lrs,
                last_epoch: -1,
                step_count: 0,
            },
            rule,
        };
        s.step(optimizer)?;
        Ok(s)
    }
}

fn current(optimizer: &dyn Optimizer) -> Vec<f64> {
    (0..optimizer.num_groups())
        .map(|i| optimizer.lr(i))
        .collect()
}

impl<R: Rule> LRScheduler for Scheduler<R> {
    fn step(&mut self, optimizer: &mut dyn Optimizer) -> Result<()> {
        self.state.step_count += 1;
        self.state.last_epoch += 1;
        let lrs = self.rule.get_lr(&self.state, optimizer)?;
        for (i, lr) in lrs.iter().enumerate() {
            optimizer.set_lr(i, *lr);
        }
        self.state.last_lr = lrs;
        Ok(())
    }
    fn get_last_lr(&self) -> &[f64] {
        &self.state.last_lr
    }
    fn last_epoch(&self) -> i64 {
        self.state.last_epoch
    }
}

fn scaled(optimizer: &dyn Optimizer, factor: f64) -> Vec<f64> {
    current(optimizer)
        .into_iter()
        .map(|lr| lr * factor)
        .collect()
}

/// Multiply by `gamma` every `step_size` epochs.
pub struct StepRule {
    step_size: i64,
    gamma: f64,
}
/// `lr_scheduler.StepLR(optimizer, step_size, gamma=0.1)`.
pub type StepLR = Scheduler<StepRule>;

impl StepLR {
    /// `StepLR(optimizer, step_size, gamma)`.
    pub fn new(optimizer: &mut dyn Optimizer, step_size: usize, gamma: f64) -> Result<StepLR> {
        ensure!(step_size > 0, Value, "StepLR: step_size must be positive");
        Scheduler::start(
            optimizer,
            StepRule {
                step_size: step_size as i64,
                gamma,
            },
        )
    }
}

impl Rule for StepRule {
    fn get_lr(&mut self, s: &State, o: &mut dyn Optimizer) -> Result<Vec<f64>> {
        Ok(if s.last_epoch == 0 || s.last_epoch % self.step_size != 0 {
            current(o)
        } else {
            scaled(o, self.gamma)
        })
    }
}

/// Multiply by `gamma` at each milestone.
pub struct MultiStepRule {
    milestones: Vec<i64>,
    gamma: f64,
}
/// `lr_scheduler.MultiStepLR(optimizer, milestones, gamma=0.1)`.
pub type MultiStepLR = Scheduler<MultiStepRule>;

impl MultiStepLR {
    /// `MultiStepLR(optimizer, milestones, gamma)`; repeated milestones
    /// multiply repeatedly, as PyTorch's Counter does.
    pub fn new(optimizer: &mut dyn Optimizer, milestones: &[usize], gamma: f64) -> Result<Self> {
        let milestones = milestones.iter().map(|&m| m as i64).collect();
        Scheduler::start(optimizer, MultiStepRule { milestones, gamma })
    }
}

impl Rule for MultiStepRule {
    fn get_lr(&mut self, s: &State, o: &mut dyn Optimizer) -> Result<Vec<f64>> {
        let hits = self
            .milestones
            .iter()
            .filter(|&&m| m == s.last_epoch)
            .count();
        Ok(if hits == 0 {
            current(o)
        } else {
            scaled(o, self.gamma.powi(hits as i32))
        })
    }
}

/// Multiply by `gamma` every epoch.
pub struct ExponentialRule {
    gamma: f64,
}
/// `lr_scheduler.ExponentialLR(optimizer, gamma)`.
pub type ExponentialLR = Scheduler<ExponentialRule>;

impl ExponentialLR {
    /// `ExponentialLR(optimizer, gamma)`.
    pub fn new(optimizer: &mut dyn Optimizer, gamma: f64) -> Result<Self> {
        Scheduler::start(optimizer, ExponentialRule { gamma })
    }
}

impl Rule for ExponentialRule {
    fn get_lr(&mut self, s: &State, o: &mut dyn Optimizer) -> Result<Vec<f64>> {
        Ok(if s.is_initial() {
            current(o)
        } else {
            scaled(o, self.gamma)
        })
    }
}

/// Cosine annealing from the base rate to `eta_min` over `t_max` epochs.
pub struct CosineRule {
    t_max: f64,
    eta_min: f64,
}
/// `lr_scheduler.CosineAnnealingLR(optimizer, T_max, eta_min=0)`.
pub type CosineAnnealingLR = Scheduler<CosineRule>;

impl CosineAnnealingLR {
    /// `CosineAnnealingLR(optimizer, T_max, eta_min)`.
    pub fn new(optimizer: &mut dyn Optimizer, t_max: usize, eta_min: f64) -> Result<Self> {
        ensure!(
            t_max > 0,
            Value,
            "CosineAnnealingLR: T_max must be positive"
        );
        Scheduler::start(
            optimizer,
            CosineRule {
                t_max: t_max as f64,
                eta_min,
            },
        )
    }
}

impl Rule for CosineRule {
    fn get_lr(&mut self, s: &State, o: &mut dyn Optimizer) -> Result<Vec<f64>> {
        use std::f64::consts::PI;
        if s.is_initial() {
            return Ok(current(o));
        }
        let (e, t, m) = (s.last_epoch as f64, self.t_max, self.eta_min);
        let lrs = current(o);
        Ok(
            if (s.last_epoch - 1 - t as i64).rem_euclid(2 * t as i64) == 0 {
                lrs.iter()
                    .zip(&s.base_lrs)
                    .map(|(lr, base)| lr + (base - m) * (1.0 - (PI / t).cos()) / 2.0)
                    .collect()
            } else {
                lrs.iter()
                    .map(|lr| {
                        (1.0 + (PI * e / t).cos()) / (1.0 + (PI * (e - 1.0) / t).cos()) * (lr - m)
                            + m
                    })
                    .collect()
            },
        )
    }
}

/// A linear ramp of the factor from `start_factor` to `end_factor`.
pub struct LinearRule {
    start: f64,
    end: f64,
    total: i64,
}
/// `lr_scheduler.LinearLR(optimizer, start_factor=1/3, end_factor=1.0, total_iters=5)`.
pub type LinearLR = Scheduler<LinearRule>;

impl LinearLR {
    /// `LinearLR(optimizer, start_factor, end_factor, total_iters)`.
    pub fn new(
        optimizer: &mut dyn Optimizer,
        start_factor: f64,
        end_factor: f64,
        total_iters: usize,
    ) -> Result<Self> {
        ensure!(
            start_factor > 0.0 && start_factor <= 1.0,
            Value,
            "Starting multiplicative factor expected to be greater than 0 and less or equal to 1."
        );
        ensure!(
            (0.0..=1.0).contains(&end_factor),
            Value,
            "Ending multiplicative factor expected to be between 0 and 1."
        );
        Scheduler::start(
            optimizer,
            LinearRule {
                start: start_factor,
                end: end_factor,
                total: total_iters as i64,
            },
        )
    }
}

impl Rule for LinearRule {
    fn get_lr(&mut self, s: &State, o: &mut dyn Optimizer) -> Result<Vec<f64>> {
        if s.last_epoch == 0 {
            return Ok(scaled(o, self.start));
        }
        if s.is_initial() || s.last_epoch > self.total {
            return Ok(current(o));
        }
        let (a, b) = (self.start, self.end);
        let f = 1.0 + (b - a) / (self.total as f64 * a + (s.last_epoch - 1) as f64 * (b - a));
        Ok(scaled(o, f))
    }
}

/// `base_lr · λ(epoch)`.
pub struct LambdaRule {
    lambdas: Vec<Box<dyn Fn(i64) -> f64 + Send>>,
}
/// `lr_scheduler.LambdaLR(optimizer, lr_lambda)`.
pub type LambdaLR = Scheduler<LambdaRule>;

impl LambdaLR {
    /// One function for every group, or one per group.
    pub fn new(
        optimizer: &mut dyn Optimizer,
        lr_lambda: Vec<Box<dyn Fn(i64) -> f64 + Send>>,
    ) -> Result<Self> {
        let n = optimizer.num_groups();
        ensure!(
            lr_lambda.len() == 1 || lr_lambda.len() == n,
            Value,
            "Expected {n} lr_lambdas, but got {}",
            lr_lambda.len()
        );
        Scheduler::start(optimizer, LambdaRule { lambdas: lr_lambda })
    }
}

impl Rule for LambdaRule {
    fn get_lr(&mut self, s: &State, _: &mut dyn Optimizer) -> Result<Vec<f64>> {
        Ok(s.base_lrs
            .iter()
            .enumerate()
            .map(|(i, base)| base * self.lambdas[i.min(self.lambdas.len() - 1)](s.last_epoch))
            .collect())
    }
}

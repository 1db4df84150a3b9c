//! `OneCycleLR`: the 1cycle policy (warm up to `max_lr`, anneal to far
//! below the start), cycling momentum (or Adam's beta1) the other way.

use super::{current, Rule, Scheduler, State};
use crate::optimizer::Optimizer;
use ferrotorch_core::{bail, ensure, Result};

/// Options of [`OneCycleLR`], with PyTorch's defaults.
#[derive(Clone, Debug)]
pub struct OneCycleOptions {
    /// Peak learning rate of each group (one value for all, or one per group).
    pub max_lr: Vec<f64>,
    /// Steps in the cycle.
    pub total_steps: usize,
    /// Fraction of the cycle spent increasing the rate (default 0.3).
    pub pct_start: f64,
    /// `"cos"` (default) or `"linear"`.
    pub anneal_strategy: &'static str,
    /// Cycle momentum inversely to the rate (default true).
    pub cycle_momentum: bool,
    /// Lowest momentum (default 0.85).
    pub base_momentum: f64,
    /// Highest momentum (default 0.95).
    pub max_momentum: f64,
    /// `initial_lr = max_lr / div_factor` (default 25).
    pub div_factor: f64,
    /// `min_lr = initial_lr / final_div_factor` (default 1e4).
    pub final_div_factor: f64,
    /// Use a third phase annealing back to `initial_lr` first (default false).
    pub three_phase: bool,
}

impl OneCycleOptions {
    /// PyTorch's defaults for a cycle of `total_steps` peaking at `max_lr`.
    pub fn new(max_lr: f64, total_steps: usize) -> OneCycleOptions {
        OneCycleOptions {
            max_lr: vec![max_lr],
            total_steps,
            pct_start: 0.3,
            anneal_strategy: "cos",
            cycle_momentum: true,
            base_momentum: 0.85,
            max_momentum: 0.95,
            div_factor: 25.0,
            final_div_factor: 1e4,
            three_phase: false,
        }
    }
}

#[derive(Clone, Copy)]
enum Point {
    Initial,
    Max,
    Min,
}

struct Phase {
    end_step: f64,
    lr: (Point, Point),
    /// `true` = max momentum.
    momentum: (bool, bool),
}

/// The rule of [`OneCycleLR`].
pub struct OneCycleRule {
    o: OneCycleOptions,
    phases: Vec<Phase>,
    /// Per group: initial, max, min learning rates.
    lrs: Vec<(f64, f64, f64)>,
}

/// `lr_scheduler.OneCycleLR(optimizer, max_lr, total_steps, ...)`.
pub type OneCycleLR = Scheduler<OneCycleRule>;

impl OneCycleLR {
    /// `OneCycleLR(optimizer, ...)`: sets each group's rate to
    /// `max_lr / div_factor` and, with `cycle_momentum`, its momentum to
    /// `max_momentum`.
    pub fn new(optimizer: &mut dyn Optimizer, o: OneCycleOptions) -> Result<OneCycleLR> {
        ensure!(
            o.total_steps > 0,
            Value,
            "Expected positive integer total_steps, but got {}",
            o.total_steps
        );
        ensure!(
            (0.0..=1.0).contains(&o.pct_start),
            Value,
            "Expected float between 0 and 1 pct_start, but got {}",
            o.pct_start
        );
        ensure!(
            matches!(o.anneal_strategy, "cos" | "linear"),
            Value,
            "anneal_strategy must be one of 'cos' or 'linear', instead got {}",
            o.anneal_strategy
        );
        let n = optimizer.num_groups();
        ensure!(
            o.max_lr.len() == 1 || o.max_lr.len() == n,
            Value,
            "expected {n} values for max_lr, got {}",
            o.max_lr.len()
        );
        let t = o.total_steps as f64;
        use Point::*;
        let phases = if o.three_phase {
            vec![
                Phase {
                    end_step: o.pct_start * t - 1.0,
                    lr: (Initial, Max),
                    momentum: (true, false),
                },
                Phase {
                    end_step: 2.0 * o.pct_start * t - 2.0,
                    lr: (Max, Initial),
                    momentum: (false, true),
                },
                Phase {
                    end_step: t - 1.0,
                    lr: (Initial, Min),
                    momentum: (true, true),
                },
            ]
        } else {
            vec![
                Phase {
                    end_step: o.pct_start * t - 1.0,
                    lr: (Initial, Max),
                    momentum: (true, false),
                },
                Phase {
                    end_step: t - 1.0,
                    lr: (Max, Min),
                    momentum: (false, true),
                },
            ]
        };
        let mut lrs = Vec::new();
        for i in 0..n {
            let max = o.max_lr[i.min(o.max_lr.len() - 1)];
            let initial = max / o.div_factor;
            lrs.push((initial, max, initial / o.final_div_factor));
            optimizer.set_lr(i, initial);
            if o.cycle_momentum {
                ensure!(
                    optimizer.momentum(i).is_some(),
                    Value,
                    "optimizer must support momentum or beta1 with `cycle_momentum` option enabled"
                );
                optimizer.set_momentum(i, o.max_momentum);
            }
        }
        Scheduler::start(optimizer, OneCycleRule { o, phases, lrs })
    }
}

impl OneCycleRule {
    fn anneal(&self, start: f64, end: f64, pct: f64) -> f64 {
        if self.o.anneal_strategy == "cos" {
            end + (start - end) / 2.0 * ((std::f64::consts::PI * pct).cos() + 1.0)
        } else {
            (end - start) * pct + start
        }
    }
}

impl Rule for OneCycleRule {
    fn get_lr(&mut self, s: &State, o: &mut dyn Optimizer) -> Result<Vec<f64>> {
        let step = s.last_epoch as f64;
        if s.last_epoch > self.o.total_steps as i64 {
            bail!(
                Value,
                "Tried to step {} times. The specified number of total steps is {}",
                s.last_epoch,
                self.o.total_steps
            );
        }
        let mut out = Vec::new();
        for (g, &(initial, max, min)) in self.lrs.iter().enumerate() {
            let pick = |p: Point| match p {
                Point::Initial => initial,
                Point::Max => max,
                Point::Min => min,
            };
            let mom = |m: bool| {
                if m {
                    self.o.max_momentum
                } else {
                    self.o.base_momentum
                }
            };
            let mut start = 0.0;
            for (i, ph) in self.phases.iter().enumerate() {
                if step <= ph.end_step || i == self.phases.len() - 1 {
                    let pct = (step - start) / (ph.end_step - start);
                    out.push(self.anneal(pick(ph.lr.0), pick(ph.lr.1), pct));
                    if self.o.cycle_momentum {
                        let m = self.anneal(mom(ph.momentum.0), mom(ph.momentum.1), pct);
                        o.set_momentum(g, m);
                    }
                    break;
                }
                start = ph.end_step;
            }
        }
        debug_assert_eq!(out.len(), current(o).len());
        Ok(out)
    }
}

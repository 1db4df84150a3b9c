//! `ReduceLROnPlateau`: cut the learning rate when a metric stops improving.

use crate::optimizer::Optimizer;
use ferrotorch_core::{bail, ensure, Result};

/// Options of [`ReduceLROnPlateau`], with PyTorch's defaults.
#[derive(Clone, Debug)]
pub struct ReduceLROnPlateauOptions {
    /// `"min"` (default): lower is better; `"max"`: higher is better.
    pub mode: &'static str,
    /// Multiply the rate by this on a plateau (default 0.1).
    pub factor: f64,
    /// Epochs without improvement tolerated (default 10).
    pub patience: usize,
    /// What counts as an improvement (default 1e-4).
    pub threshold: f64,
    /// `"rel"` (default) or `"abs"`.
    pub threshold_mode: &'static str,
    /// Epochs to wait after a cut (default 0).
    pub cooldown: usize,
    /// Lower bound of each group's rate (default 0).
    pub min_lr: Vec<f64>,
    /// Cuts smaller than this are skipped (default 1e-8).
    pub eps: f64,
}

impl Default for ReduceLROnPlateauOptions {
    fn default() -> Self {
        ReduceLROnPlateauOptions {
            mode: "min",
            factor: 0.1,
            patience: 10,
            threshold: 1e-4,
            threshold_mode: "rel",
            cooldown: 0,
            min_lr: vec![0.0],
            eps: 1e-8,
        }
    }
}

/// `lr_scheduler.ReduceLROnPlateau(optimizer, ...)`; `step(metric, opt)`.
pub struct ReduceLROnPlateau {
    o: ReduceLROnPlateauOptions,
    best: f64,
    num_bad_epochs: usize,
    cooldown_counter: usize,
    last_epoch: i64,
    last_lr: Vec<f64>,
}

impl ReduceLROnPlateau {
    /// Check the options against `optimizer` and start watching.
    pub fn new(optimizer: &dyn Optimizer, o: ReduceLROnPlateauOptions) -> Result<Self> {
        ensure!(o.factor < 1.0, Value, "Factor should be < 1.0.");
        if !matches!(o.mode, "min" | "max") {
            bail!(Value, "mode {} is unknown!", o.mode);
        }
        if !matches!(o.threshold_mode, "rel" | "abs") {
            bail!(Value, "threshold mode {} is unknown!", o.threshold_mode);
        }
        let n = optimizer.num_groups();
        ensure!(
            o.min_lr.len() == 1 || o.min_lr.len() == n,
            Value,
            "expected {n} min_lrs, got {}",
            o.min_lr.len()
        );
        let best = if o.mode == "min" {
            f64::INFINITY
        } else {
            f64::NEG_INFINITY
        };
        Ok(ReduceLROnPlateau {
            last_lr: (0..n).map(|i| optimizer.lr(i)).collect(),
            o,
            best,
            num_bad_epochs: 0,
            cooldown_counter: 0,
            last_epoch: 0,
        })
    }

    fn is_better(&self, a: f64) -> bool {
        let (t, best) = (self.o.threshold, self.best);
        match (self.o.mode, self.o.threshold_mode) {
            ("min", "rel") => a < best * (1.0 - t),
            ("min", _) => a < best - t,
            (_, "rel") => a > best * (t + 1.0),
            _ => a > best + t,
        }
    }

    /// Record this epoch's `metric`; cut the rates after `patience` epochs
    /// without improvement.
    pub fn step(&mut self, metric: f64, optimizer: &mut dyn Optimizer) {
        self.last_epoch += 1;
        if self.is_better(metric) {
            self.best = metric;
            self.num_bad_epochs = 0;
        } else {
            self.num_bad_epochs += 1;
        }
        if self.cooldown_counter > 0 {
            self.cooldown_counter -= 1;
            self.num_bad_epochs = 0;
        }
        if self.num_bad_epochs > self.o.patience {
            for i in 0..optimizer.num_groups() {
                let old = optimizer.lr(i);
                let floor = self.o.min_lr[i.min(self.o.min_lr.len() - 1)];
                let new = (old * self.o.factor).max(floor);
                if old - new > self.o.eps {
                    optimizer.set_lr(i, new);
                }
            }
            self.cooldown_counter = self.o.cooldown;
            self.num_bad_epochs = 0;
        }
        self.last_lr = (0..optimizer.num_groups())
            .map(|i| optimizer.lr(i))
            .collect();
    }

    /// The rates after the last step.
    pub fn get_last_lr(&self) -> &[f64] {
        &self.last_lr
    }
}

//! `torch.optim.RMSprop`: smoothing constant, momentum, centered, weight
//! decay, maximize.

use crate::kernel::{fused, zeros_like, Kernel, Real};
use crate::optimizer::{check, saved, saved_step, step_tensor, Algorithm, Optim, ParamState};
use crate::options::group_options;
use ferrotorch_core::{Result, Tensor};
use std::collections::BTreeMap;

group_options! {
    /// Options of [`RMSprop`], with PyTorch's defaults.
    RMSpropOptions {
        /// Learning rate (default 1e-2).
        lr: f64 = 1e-2,
        /// Smoothing constant (default 0.99).
        alpha: f64 = 0.99,
        /// Added to the denominator (default 1e-8).
        eps: f64 = 1e-8,
        /// L2 penalty (default 0).
        weight_decay: f64 = 0.0,
        /// Momentum factor (default 0).
        momentum: f64 = 0.0,
        /// Normalise by the estimated variance (default false).
        centered: bool = false,
        /// Maximise the objective instead (default false).
        maximize: bool = false,
    }
    momentum: |o| Some(o.momentum), |o, m| o.momentum = m
}

/// RMSprop's per-parameter state.
pub struct RMSpropState {
    /// Steps taken.
    pub step: f64,
    /// Running average of squared gradients.
    pub square_avg: Tensor,
    /// With momentum.
    pub momentum_buffer: Option<Tensor>,
    /// Running average of gradients (centered).
    pub grad_avg: Option<Tensor>,
}

impl ParamState for RMSpropState {
    fn to_map(&self) -> Result<BTreeMap<String, Tensor>> {
        let mut m = BTreeMap::new();
        m.insert("step".to_string(), step_tensor(self.step)?);
        m.insert("square_avg".to_string(), self.square_avg.clone());
        if let Some(b) = &self.momentum_buffer {
            m.insert("momentum_buffer".to_string(), b.clone());
        }
        if let Some(g) = &self.grad_avg {
            m.insert("grad_avg".to_string(), g.clone());
        }
        Ok(m)
    }
    fn from_map(m: &BTreeMap<String, Tensor>, param: &Tensor) -> Result<Self> {
        let opt = |k: &str| m.contains_key(k).then(|| saved(m, k, param)).transpose();
        Ok(RMSpropState {
            step: saved_step(m)?,
            square_avg: saved(m, "square_avg", param)?,
            momentum_buffer: opt("momentum_buffer")?,
            grad_avg: opt("grad_avg")?,
        })
    }
}

/// The RMSprop algorithm (see [`RMSprop`]).
pub struct RMSpropAlgorithm;

/// `torch.optim.RMSprop`.
pub type RMSprop = Optim<RMSpropAlgorithm>;

struct RMSpropKernel<'a>(&'a RMSpropOptions);

impl Kernel for RMSpropKernel<'_> {
    #[inline(always)]
    fn run<T: Real>(&self, w: &mut [&mut [T]], g: &[T]) {
        let o = self.0;
        let (wd, alpha, one_alpha) = (T::of(o.weight_decay), T::of(o.alpha), T::of(1.0 - o.alpha));
        let (eps, mom, lr) = (T::of(o.eps), T::of(o.momentum), T::of(-o.lr));
        let [p, sq, rest @ ..] = w else {
            unreachable!("RMSprop kernel gets param and square_avg")
        };
        let (buf, gavg) = match (o.momentum > 0.0, o.centered, rest) {
            (true, true, [b, ga]) => (Some(b), Some(ga)),
            (true, false, [b]) => (Some(b), None),
            (false, true, [ga]) => (None, Some(ga)),
            _ => (None, None),
        };
        let (mut buf, mut gavg) = (buf, gavg);
        for i in 0..g.len() {
            let mut d = if o.maximize { -g[i] } else { g[i] };
            if o.weight_decay != 0.0 {
                d = d + wd * p[i];
            }
            sq[i] = sq[i] * alpha + one_alpha * d * d;
            let avg = match gavg.as_deref_mut() {
                Some(ga) => {
                    ga[i] = ga[i].lerp(d, 1.0 - o.alpha);
                    (sq[i] + T::of(-1.0) * ga[i] * ga[i]).sqrt()
                }
                None => sq[i].sqrt(),
            } + eps;
            match buf.as_deref_mut() {
                Some(b) => {
                    b[i] = b[i] * mom + d / avg;
                    p[i] = p[i] + lr * b[i];
                }
                None => p[i] = p[i] + lr * d / avg,
            }
        }
    }
}

impl Algorithm for RMSpropAlgorithm {
    type Options = RMSpropOptions;
    type State = RMSpropState;
    const NAME: &'static str = "RMSprop";

    fn validate(o: &RMSpropOptions) -> Result<()> {
        check(o.lr >= 0.0, "learning rate", o.lr)?;
        check(o.eps >= 0.0, "epsilon value", o.eps)?;
        check(o.momentum >= 0.0, "momentum value", o.momentum)?;
        check(o.weight_decay >= 0.0, "weight_decay value", o.weight_decay)?;
        check(o.alpha >= 0.0, "alpha value", o.alpha)
    }

    fn init_state(p: &Tensor, o: &RMSpropOptions) -> Result<RMSpropState> {
        Ok(RMSpropState {
            step: 0.0,
            square_avg: zeros_like(p)?,
            momentum_buffer: (o.momentum > 0.0).then(|| zeros_like(p)).transpose()?,
            grad_avg: o.centered.then(|| zeros_like(p)).transpose()?,
        })
    }

    fn update(p: &Tensor, g: &Tensor, s: &mut RMSpropState, o: &RMSpropOptions) -> Result<()> {
        if o.momentum > 0.0 && s.momentum_buffer.is_none() {
            s.momentum_buffer = Some(zeros_like(p)?);
        }
        if o.centered && s.grad_avg.is_none() {
            s.grad_avg = Some(zeros_like(p)?);
        }
        s.step += 1.0;
        let mut writes = vec![p, &s.square_avg];
        if o.momentum > 0.0 {
            writes.extend(s.momentum_buffer.as_ref());
        }
        if o.centered {
            writes.extend(s.grad_avg.as_ref());
        }
        fused("RMSprop.step", &writes, g, &RMSpropKernel(o))
    }
}

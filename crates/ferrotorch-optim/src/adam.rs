//! `torch.optim.Adam` and `torch.optim.AdamW` (decoupled weight decay),
//! with amsgrad and maximize.

use crate::kernel::{fused, zeros_like, Kernel, Real};
use crate::optimizer::{check, saved, saved_step, step_tensor, Algorithm, Optim, ParamState};
use crate::options::group_options;
use ferrotorch_core::{Result, Tensor};
use std::collections::BTreeMap;

macro_rules! adam_options {
    ($(#[$doc:meta])* $name:ident, weight_decay = $wd:expr) => {
        group_options! {
            $(#[$doc])*
            $name {
                /// Learning rate (default 1e-3).
                lr: f64 = 1e-3,
                /// Decay rates of the first and second moments (default (0.9, 0.999)).
                betas: (f64, f64) = (0.9, 0.999),
                /// Added to the denominator (default 1e-8).
                eps: f64 = 1e-8,
                /// Weight decay.
                weight_decay: f64 = $wd,
                /// Use the running maximum of the second moment (default false).
                amsgrad: bool = false,
                /// Maximise the objective instead (default false).
                maximize: bool = false,
            }
            momentum: |o| Some(o.betas.0), |o, m| o.betas.0 = m
        }

        impl $name {
            fn validate(&self) -> Result<()> {
                check(self.lr >= 0.0, "learning rate", self.lr)?;
                check(self.eps >= 0.0, "epsilon value", self.eps)?;
                check((0.0..1.0).contains(&self.betas.0), "beta parameter at index 0", self.betas.0)?;
                check((0.0..1.0).contains(&self.betas.1), "beta parameter at index 1", self.betas.1)?;
                check(self.weight_decay >= 0.0, "weight_decay value", self.weight_decay)
            }

            fn hyper(&self, decoupled: bool) -> AdamHyper {
                AdamHyper {
                    lr: self.lr,
                    betas: self.betas,
                    eps: self.eps,
                    weight_decay: self.weight_decay,
                    amsgrad: self.amsgrad,
                    maximize: self.maximize,
                    decoupled,
                }
            }
        }
    };
}

adam_options!(
    /// Options of [`Adam`], with PyTorch's defaults (weight_decay 0).
    AdamOptions,
    weight_decay = 0.0
);
adam_options!(
    /// Options of [`AdamW`], with PyTorch's defaults (weight_decay 1e-2).
    AdamWOptions,
    weight_decay = 1e-2
);

/// Adam's per-parameter state (`step`, `exp_avg`, `exp_avg_sq`,
/// `max_exp_avg_sq` with amsgrad).
pub struct AdamState {
    /// Steps taken.
    pub step: f64,
    /// First moment.
    pub exp_avg: Tensor,
    /// Second moment.
    pub exp_avg_sq: Tensor,
    /// Running maximum of the second moment (amsgrad).
    pub max_exp_avg_sq: Option<Tensor>,
}

impl ParamState for AdamState {
    fn to_map(&self) -> Result<BTreeMap<String, Tensor>> {
        let mut m = BTreeMap::new();
        m.insert("step".to_string(), step_tensor(self.step)?);
        m.insert("exp_avg".to_string(), self.exp_avg.clone());
        m.insert("exp_avg_sq".to_string(), self.exp_avg_sq.clone());
        if let Some(v) = &self.max_exp_avg_sq {
            m.insert("max_exp_avg_sq".to_string(), v.clone());
        }
        Ok(m)
    }
    fn from_map(m: &BTreeMap<String, Tensor>, param: &Tensor) -> Result<Self> {
        Ok(AdamState {
            step: saved_step(m)?,
            exp_avg: saved(m, "exp_avg", param)?,
            exp_avg_sq: saved(m, "exp_avg_sq", param)?,
            max_exp_avg_sq: match m.contains_key("max_exp_avg_sq") {
                true => Some(saved(m, "max_exp_avg_sq", param)?),
                false => None,
            },
        })
    }
}

struct AdamHyper {
    lr: f64,
    betas: (f64, f64),
    eps: f64,
    weight_decay: f64,
    amsgrad: bool,
    maximize: bool,
    decoupled: bool,
}

struct AdamKernel {
    h: AdamHyper,
    step_size: f64,
    bias_correction2_sqrt: f64,
}

impl Kernel for AdamKernel {
    #[inline(always)]
    fn run<T: Real>(&self, w: &mut [&mut [T]], g: &[T]) {
        let h = &self.h;
        let decay = T::of(1.0 - h.lr * h.weight_decay);
        let wd = T::of(h.weight_decay);
        let (b2, one_b2) = (T::of(h.betas.1), T::of(1.0 - h.betas.1));
        let (bc2, eps, step) = (
            T::of(self.bias_correction2_sqrt),
            T::of(h.eps),
            T::of(-self.step_size),
        );
        let [p, m, v, rest @ ..] = w else {
            unreachable!("Adam kernel gets param, exp_avg, exp_avg_sq")
        };
        let mut vmax = rest.first_mut();
        for i in 0..g.len() {
            let mut d = if h.maximize { -g[i] } else { g[i] };
            if h.weight_decay != 0.0 {
                if h.decoupled {
                    p[i] = p[i] * decay;
                } else {
                    d = d + wd * p[i];
                }
            }
            m[i] = m[i].lerp(d, 1.0 - h.betas.0);
            v[i] = v[i] * b2 + one_b2 * d * d;
            let second = match vmax.as_deref_mut() {
                Some(vm) => {
                    vm[i] = vm[i].max(v[i]);
                    vm[i]
                }
                None => v[i],
            };
            let denom = second.sqrt() / bc2 + eps;
            p[i] = p[i] + step * m[i] / denom;
        }
    }
}

fn init(param: &Tensor, amsgrad: bool) -> Result<AdamState> {
    Ok(AdamState {
        step: 0.0,
        exp_avg: zeros_like(param)?,
        exp_avg_sq: zeros_like(param)?,
        max_exp_avg_sq: amsgrad.then(|| zeros_like(param)).transpose()?,
    })
}

fn update(p: &Tensor, g: &Tensor, s: &mut AdamState, h: AdamHyper) -> Result<()> {
    if h.amsgrad && s.max_exp_avg_sq.is_none() {
        s.max_exp_avg_sq = Some(zeros_like(p)?);
    }
    s.step += 1.0;
    let vmax = if h.amsgrad {
        s.max_exp_avg_sq.as_ref()
    } else {
        None
    };
    adam_step(
        p,
        g,
        &s.exp_avg,
        &s.exp_avg_sq,
        vmax,
        s.step,
        h.lr,
        h.betas,
        h.eps,
        h.weight_decay,
        h.maximize,
        h.decoupled,
    )
}

/// The Adam algorithm (see [`Adam`]).
pub struct AdamAlgorithm;
/// The AdamW algorithm (see [`AdamW`]).
pub struct AdamWAlgorithm;

/// `torch.optim.Adam`.
pub type Adam = Optim<AdamAlgorithm>;
/// `torch.optim.AdamW`: Adam with weight decay applied to the parameter
/// (`p ← p·(1 − lr·wd)`) instead of the gradient.
pub type AdamW = Optim<AdamWAlgorithm>;

impl Algorithm for AdamAlgorithm {
    type Options = AdamOptions;
    type State = AdamState;
    const NAME: &'static str = "Adam";
    fn validate(o: &AdamOptions) -> Result<()> {
        o.validate()
    }
    fn init_state(p: &Tensor, o: &AdamOptions) -> Result<AdamState> {
        init(p, o.amsgrad)
    }
    fn update(p: &Tensor, g: &Tensor, s: &mut AdamState, o: &AdamOptions) -> Result<()> {
        update(p, g, s, o.hyper(false))
    }
}

impl Algorithm for AdamWAlgorithm {
    type Options = AdamWOptions;
    type State = AdamState;
    const NAME: &'static str = "AdamW";
    fn validate(o: &AdamWOptions) -> Result<()> {
        o.validate()
    }
    fn init_state(p: &Tensor, o: &AdamWOptions) -> Result<AdamState> {
        init(p, o.amsgrad)
    }
    fn update(p: &Tensor, g: &Tensor, s: &mut AdamState, o: &AdamWOptions) -> Result<()> {
        update(p, g, s, o.hyper(true))
    }
}

/// One Adam (or, with `decoupled`, AdamW) update of a single parameter
/// whose state the caller keeps (`torch.optim._functional.adam` for one
/// tensor): `step` is the step count including this update. The Python
/// package's `optim.Adam` calls this once per parameter.
#[allow(clippy::too_many_arguments)]
pub fn adam_step(
    param: &Tensor,
    grad: &Tensor,
    exp_avg: &Tensor,
    exp_avg_sq: &Tensor,
    max_exp_avg_sq: Option<&Tensor>,
    step: f64,
    lr: f64,
    betas: (f64, f64),
    eps: f64,
    weight_decay: f64,
    maximize: bool,
    decoupled: bool,
) -> Result<()> {
    let op = if decoupled { "AdamW.step" } else { "Adam.step" };
    let h = AdamHyper {
        lr,
        betas,
        eps,
        weight_decay,
        amsgrad: max_exp_avg_sq.is_some(),
        maximize,
        decoupled,
    };
    let k = AdamKernel {
        step_size: lr / (1.0 - betas.0.powf(step)),
        bias_correction2_sqrt: (1.0 - betas.1.powf(step)).sqrt(),
        h,
    };
    match max_exp_avg_sq {
        Some(vm) => fused(op, &[param, exp_avg, exp_avg_sq, vm], grad, &k),
        None => fused(op, &[param, exp_avg, exp_avg_sq], grad, &k),
    }
}

//! `FtOptimizer` and `FtScheduler`: torch.optim from C.

use crate::handle::{free, get, handle_kind, new_handle};
use crate::status::{entry, put, Fail, FtStatus, Res};
use crate::tensor::{slice, tensor, FtTensor};
use ferrotorch_nn::Parameter;
use ferrotorch_optim::lr_scheduler::{CosineAnnealingLR, ExponentialLR, LRScheduler, StepLR};
use ferrotorch_optim::{Adam, AdamOptions, AdamW, AdamWOptions, Optimizer, SGDOptions, SGD};
use parking_lot::Mutex;

/// An optimizer over a list of tensors (Note [C handles]). It updates
/// the very tensors it was given, in place.
pub struct FtOptimizer {
    _opaque: [u8; 0],
}

handle_kind!(FtOptimizer, Mutex<Box<dyn Optimizer>>, 0x7E04);

/// A learning-rate scheduler of one optimizer (Note [C handles]).
pub struct FtScheduler {
    _opaque: [u8; 0],
}

handle_kind!(FtScheduler, Mutex<Box<dyn LRScheduler + Send>>, 0x7E05);

fn params(what: &str, ps: *const *const FtTensor, n: usize) -> Res<Vec<Parameter>> {
    slice(what, ps, n)?
        .iter()
        .map(|&p| Ok(Parameter::from_tensor(tensor(what, p)?)?))
        .collect()
}

fn out_optimizer(what: &str, out: *mut *mut FtOptimizer, o: Box<dyn Optimizer>) -> Res<()> {
    if out.is_null() {
        return put(what, out, std::ptr::null_mut());
    }
    put(what, out, new_handle::<FtOptimizer>(Mutex::new(o)))
}

fn optimizer<'a>(what: &str, o: *const FtOptimizer) -> Res<&'a Mutex<Box<dyn Optimizer>>> {
    get::<FtOptimizer>(what, o)
}

/// `optim.SGD(params, lr, momentum, dampening, weight_decay, nesterov)`
/// over `n` tensors (leaves; they are updated in place).
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn ft_optim_sgd(
    params_: *const *const FtTensor,
    n: usize,
    lr: f64,
    momentum: f64,
    dampening: f64,
    weight_decay: f64,
    nesterov: bool,
    out: *mut *mut FtOptimizer,
) -> FtStatus {
    let what = "ft_optim_sgd";
    entry(what, || {
        let o = SGDOptions {
            lr,
            momentum,
            dampening,
            weight_decay,
            nesterov,
            ..Default::default()
        };
        out_optimizer(what, out, Box::new(SGD::new(params(what, params_, n)?, o)?))
    })
}

/// Adam's and AdamW's options, which differ only in their type.
trait AdamLike: Sized {
    fn make(lr: f64, betas: (f64, f64), eps: f64, weight_decay: f64) -> Self;
}

macro_rules! adam_like {
    ($t:ty) => {
        impl AdamLike for $t {
            fn make(lr: f64, betas: (f64, f64), eps: f64, weight_decay: f64) -> Self {
                Self {
                    lr,
                    betas,
                    eps,
                    weight_decay,
                    ..Default::default()
                }
            }
        }
    };
}
adam_like!(AdamOptions);
adam_like!(AdamWOptions);

#[allow(clippy::too_many_arguments)]
fn adam<O: AdamLike>(
    what: &str,
    params_: *const *const FtTensor,
    n: usize,
    (lr, beta1, beta2, eps, weight_decay): (f64, f64, f64, f64, f64),
    out: *mut *mut FtOptimizer,
    build: fn(Vec<Parameter>, O) -> ferrotorch_core::Result<Box<dyn Optimizer>>,
) -> FtStatus {
    entry(what, || {
        let o = O::make(lr, (beta1, beta2), eps, weight_decay);
        out_optimizer(what, out, build(params(what, params_, n)?, o)?)
    })
}

/// `optim.Adam(params, lr, betas=(beta1, beta2), eps, weight_decay)`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn ft_optim_adam(
    params_: *const *const FtTensor,
    n: usize,
    lr: f64,
    beta1: f64,
    beta2: f64,
    eps: f64,
    weight_decay: f64,
    out: *mut *mut FtOptimizer,
) -> FtStatus {
    let hyper = (lr, beta1, beta2, eps, weight_decay);
    adam(
        "ft_optim_adam",
        params_,
        n,
        hyper,
        out,
        |p, o: AdamOptions| Ok(Box::new(Adam::new(p, o)?)),
    )
}

/// `optim.AdamW(params, lr, betas=(beta1, beta2), eps, weight_decay)`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn ft_optim_adamw(
    params_: *const *const FtTensor,
    n: usize,
    lr: f64,
    beta1: f64,
    beta2: f64,
    eps: f64,
    weight_decay: f64,
    out: *mut *mut FtOptimizer,
) -> FtStatus {
    let hyper = (lr, beta1, beta2, eps, weight_decay);
    adam(
        "ft_optim_adamw",
        params_,
        n,
        hyper,
        out,
        |p, o: AdamWOptions| Ok(Box::new(AdamW::new(p, o)?)),
    )
}

/// `optimizer.step()`.
#[no_mangle]
pub extern "C" fn ft_optimizer_step(o: *const FtOptimizer) -> FtStatus {
    let what = "ft_optimizer_step";
    entry(what, || Ok(optimizer(what, o)?.lock().step()?))
}

/// `optimizer.zero_grad()` (gradients set to none).
#[no_mangle]
pub extern "C" fn ft_optimizer_zero_grad(o: *const FtOptimizer) -> FtStatus {
    let what = "ft_optimizer_zero_grad";
    entry(what, || {
        optimizer(what, o)?.lock().zero_grad();
        Ok(())
    })
}

fn group_index(what: &str, o: &dyn Optimizer, group: usize) -> Res<usize> {
    if group < o.num_groups() {
        Ok(group)
    } else {
        Err(Fail::new(
            FtStatus::FtErrorIndex,
            format!(
                "{what}: group {group} of {} parameter groups",
                o.num_groups()
            ),
        ))
    }
}

/// The learning rate of parameter group `group`.
#[no_mangle]
pub extern "C" fn ft_optimizer_get_lr(
    o: *const FtOptimizer,
    group: usize,
    out: *mut f64,
) -> FtStatus {
    let what = "ft_optimizer_get_lr";
    entry(what, || {
        let o = optimizer(what, o)?.lock();
        let g = group_index(what, &**o, group)?;
        put(what, out, o.lr(g))
    })
}

/// Set the learning rate of parameter group `group`.
#[no_mangle]
pub extern "C" fn ft_optimizer_set_lr(o: *const FtOptimizer, group: usize, lr: f64) -> FtStatus {
    let what = "ft_optimizer_set_lr";
    entry(what, || {
        let mut o = optimizer(what, o)?.lock();
        let g = group_index(what, &**o, group)?;
        o.set_lr(g, lr);
        Ok(())
    })
}

/// Release an optimizer (null is a no-op).
#[no_mangle]
pub extern "C" fn ft_optimizer_free(o: *mut FtOptimizer) -> FtStatus {
    entry("ft_optimizer_free", || free("ft_optimizer_free", o))
}

fn make_scheduler(
    what: &str,
    o: *const FtOptimizer,
    out: *mut *mut FtScheduler,
    make: impl FnOnce(&mut dyn Optimizer) -> ferrotorch_core::Result<Box<dyn LRScheduler + Send>>,
) -> Res<()> {
    if out.is_null() {
        return put(what, out, std::ptr::null_mut());
    }
    let s = make(&mut **optimizer(what, o)?.lock())?;
    put(what, out, new_handle::<FtScheduler>(Mutex::new(s)))
}

/// `lr_scheduler.StepLR(optimizer, step_size, gamma)`.
#[no_mangle]
pub extern "C" fn ft_lr_step(
    o: *const FtOptimizer,
    step_size: usize,
    gamma: f64,
    out: *mut *mut FtScheduler,
) -> FtStatus {
    let what = "ft_lr_step";
    entry(what, || {
        make_scheduler(what, o, out, |opt| {
            Ok(Box::new(StepLR::new(opt, step_size, gamma)?))
        })
    })
}

/// `lr_scheduler.ExponentialLR(optimizer, gamma)`.
#[no_mangle]
pub extern "C" fn ft_lr_exponential(
    o: *const FtOptimizer,
    gamma: f64,
    out: *mut *mut FtScheduler,
) -> FtStatus {
    let what = "ft_lr_exponential";
    entry(what, || {
        make_scheduler(what, o, out, |opt| {
            Ok(Box::new(ExponentialLR::new(opt, gamma)?))
        })
    })
}

/// `lr_scheduler.CosineAnnealingLR(optimizer, T_max, eta_min)`.
#[no_mangle]
pub extern "C" fn ft_lr_cosine(
    o: *const FtOptimizer,
    t_max: usize,
    eta_min: f64,
    out: *mut *mut FtScheduler,
) -> FtStatus {
    let what = "ft_lr_cosine";
    entry(what, || {
        make_scheduler(what, o, out, |opt| {
            Ok(Box::new(CosineAnnealingLR::new(opt, t_max, eta_min)?))
        })
    })
}

/// `scheduler.step()`: advance one epoch and set `optimizer`'s rates
/// (the optimizer the scheduler was made for).
#[no_mangle]
pub extern "C" fn ft_scheduler_step(s: *const FtScheduler, o: *const FtOptimizer) -> FtStatus {
    let what = "ft_scheduler_step";
    entry(what, || {
        let s = get::<FtScheduler>(what, s)?;
        let o = optimizer(what, o)?;
        Ok(s.lock().step(&mut **o.lock())?)
    })
}

/// `scheduler.get_last_lr()[group]`.
#[no_mangle]
pub extern "C" fn ft_scheduler_get_last_lr(
    s: *const FtScheduler,
    group: usize,
    out: *mut f64,
) -> FtStatus {
    let what = "ft_scheduler_get_last_lr";
    entry(what, || {
        let s = get::<FtScheduler>(what, s)?.lock();
        let lrs = s.get_last_lr();
        let v = lrs.get(group).copied().ok_or_else(|| {
            Fail::new(
                FtStatus::FtErrorIndex,
                format!("{what}: group {group} of {}", lrs.len()),
            )
        })?;
        put(what, out, v)
    })
}

/// Release a scheduler (null is a no-op).
#[no_mangle]
pub extern "C" fn ft_scheduler_free(s: *mut FtScheduler) -> FtStatus {
    entry("ft_scheduler_free", || free("ft_scheduler_free", s))
}

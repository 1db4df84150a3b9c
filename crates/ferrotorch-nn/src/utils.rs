//! `torch.nn.utils`: gradient clipping.

use crate::Parameter;
use ferrotorch_core::autograd::no_grad;
use ferrotorch_core::native::stack;
use ferrotorch_core::{bail, Result, Tensor};

/// Scale the gradients of `parameters` so that their joint `norm_type`
/// norm is at most `max_norm` (`clip_grad_norm_`); returns the norm before
/// clipping. With `error_if_nonfinite`, a NaN or infinite norm is an error.
pub fn clip_grad_norm_(
    parameters: &[Parameter],
    max_norm: f64,
    norm_type: f64,
    error_if_nonfinite: bool,
) -> Result<Tensor> {
    let _g = no_grad();
    let grads: Vec<Tensor> = parameters.iter().filter_map(Parameter::grad).collect();
    if grads.is_empty() {
        return Tensor::full(&[], 0.0, ferrotorch_core::get_default_dtype());
    }
    let norms: Vec<Tensor> = grads
        .iter()
        .map(|g| g.norm(norm_type, None, false))
        .collect::<Result<_>>()?;
    let total = stack(&norms, 0)?.norm(norm_type, None, false)?;
    let value = total.item_f64()?;
    if error_if_nonfinite && !value.is_finite() {
        bail!(
            Runtime,
            "The total norm of order {norm_type:?} for gradients from `parameters` is non-finite, so it cannot be clipped. To disable this error and scale the gradients by the non-finite norm anyway, set `error_if_nonfinite=False`"
        );
    }
    let coef = Tensor::full(&[], max_norm, total.dtype())?
        .div(&total.add(1e-6)?)?
        .clamp(None::<f64>, Some(1.0))?;
    for g in &grads {
        g.mul_(&coef)?;
    }
    Ok(total)
}

/// Clamp every gradient of `parameters` to `[-clip_value, clip_value]`
/// (`clip_grad_value_`).
pub fn clip_grad_value_(parameters: &[Parameter], clip_value: f64) -> Result<()> {
    let _g = no_grad();
    for g in parameters.iter().filter_map(Parameter::grad) {
        g.clamp_(Some(-clip_value), Some(clip_value))?;
    }
    Ok(())
}

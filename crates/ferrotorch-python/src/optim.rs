//! Fused optimizer updates for the Python optimizers: one native call per
//! parameter instead of a dozen tensor ops from Python.

use crate::errors::guarded_detached_if;
use crate::ops::RELEASE_GIL_NUMEL;
use crate::tensor::PyTensor;
use pyo3::prelude::*;

/// `_C._adam_step(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, step,
/// lr, beta1, beta2, eps, weight_decay, maximize, decoupled)`: one
/// Adam/AdamW update in place (`ferrotorch_optim::adam_step`).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
#[pyo3(signature = (param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, step, lr, beta1, beta2, eps, weight_decay, maximize, decoupled))]
pub fn _adam_step(
    py: Python<'_>,
    param: PyRef<'_, PyTensor>,
    grad: PyRef<'_, PyTensor>,
    exp_avg: PyRef<'_, PyTensor>,
    exp_avg_sq: PyRef<'_, PyTensor>,
    max_exp_avg_sq: Option<PyRef<'_, PyTensor>>,
    step: f64,
    lr: f64,
    beta1: f64,
    beta2: f64,
    eps: f64,
    weight_decay: f64,
    maximize: bool,
    decoupled: bool,
) -> PyResult<()> {
    let (p, g, m, v) = (
        param.t.clone(),
        grad.t.clone(),
        exp_avg.t.clone(),
        exp_avg_sq.t.clone(),
    );
    let vm = max_exp_avg_sq.map(|t| t.t.clone());
    guarded_detached_if(py, "Adam.step", p.numel() >= RELEASE_GIL_NUMEL, || {
        ferrotorch_optim::adam_step(
            &p,
            &g,
            &m,
            &v,
            vm.as_ref(),
            step,
            lr,
            (beta1, beta2),
            eps,
            weight_decay,
            maximize,
            decoupled,
        )
    })
}

/// `_C._sgd_step(param, grad, momentum_buffer, first, lr, momentum,
/// dampening, weight_decay, nesterov, maximize)`: one SGD update in place
/// (`ferrotorch_optim::sgd_step`), one pass over the parameter's memory
/// instead of three tensor ops from Python.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
#[pyo3(signature = (param, grad, momentum_buffer, first, lr, momentum, dampening, weight_decay, nesterov, maximize))]
pub fn _sgd_step(
    py: Python<'_>,
    param: PyRef<'_, PyTensor>,
    grad: PyRef<'_, PyTensor>,
    momentum_buffer: Option<PyRef<'_, PyTensor>>,
    first: bool,
    lr: f64,
    momentum: f64,
    dampening: f64,
    weight_decay: f64,
    nesterov: bool,
    maximize: bool,
) -> PyResult<()> {
    let (p, g) = (param.t.clone(), grad.t.clone());
    let buf = momentum_buffer.map(|t| t.t.clone());
    let options = ferrotorch_optim::SGDOptions {
        lr,
        momentum,
        dampening,
        weight_decay,
        nesterov,
        maximize,
    };
    guarded_detached_if(py, "SGD.step", p.numel() >= RELEASE_GIL_NUMEL, || {
        ferrotorch_optim::sgd_step(&p, &g, buf.as_ref(), first, &options)
    })
}

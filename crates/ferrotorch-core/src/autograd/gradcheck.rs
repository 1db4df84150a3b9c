//! Numerical gradient checks (`torch.autograd.gradcheck`,
//! `gradgradcheck`): compare the analytic Jacobian from backward with
//! central finite differences, in f64.

use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;

/// Tolerances and step of [`gradcheck`] (PyTorch's defaults).
#[derive(Clone, Copy, Debug)]
pub struct GradcheckOptions {
    /// Finite-difference step.
    pub eps: f64,
    /// Absolute tolerance.
    pub atol: f64,
    /// Relative tolerance.
    pub rtol: f64,
}

impl Default for GradcheckOptions {
    fn default() -> Self {
        GradcheckOptions {
            eps: 1e-6,
            atol: 1e-5,
            rtol: 1e-3,
        }
    }
}

fn flat_values(t: &Tensor) -> Result<Vec<f64>> {
    t.to_dtype(DType::F64)?
        .contiguous()?
        .reshape(&[-1])?
        .to_vec::<f64>()
}

/// Check the gradients of `f` at `inputs` (f64 tensors; those with
/// `requires_grad` are checked). Returns an error describing the first
/// mismatch between the analytic and numerical Jacobians.
pub fn gradcheck(
    f: impl Fn(&[Tensor]) -> Result<Vec<Tensor>>,
    inputs: &[Tensor],
    opts: GradcheckOptions,
) -> Result<()> {
    for (i, x) in inputs.iter().enumerate() {
        crate::ensure!(
            !x.requires_grad() || x.dtype() == DType::F64,
            Runtime,
            "gradcheck: input {i} requiring grad must be float64, got {}",
            x.dtype()
        );
    }
    let outs = f(inputs)?;
    for (oi, out) in outs.iter().enumerate() {
        if !out.is_floating_point() {
            continue;
        }
        let n_out = out.numel();
        for (ii, x) in inputs.iter().enumerate() {
            if !x.requires_grad() {
                continue;
            }
            let n_in = x.numel();
            // numerical: perturb each input element
            let mut numeric = vec![0.0; n_in * n_out];
            let base = flat_values(x)?;
            for k in 0..n_in {
                let eval = |delta: f64| -> Result<Vec<f64>> {
                    let mut v = base.clone();
                    v[k] += delta;
                    let xi = Tensor::from_vec(v, x.shape())?.requires_grad_(true)?;
                    let mut args: Vec<Tensor> = inputs
                        .iter()
                        .map(|t| t.detach().requires_grad_(t.requires_grad()))
                        .collect::<Result<_>>()?;
                    args[ii] = xi;
                    let o = f(&args)?;
                    flat_values(&o[oi])
                };
                let (p, m) = (eval(opts.eps)?, eval(-opts.eps)?);
                for j in 0..n_out {
                    numeric[j * n_in + k] = (p[j] - m[j]) / (2.0 * opts.eps);
                }
            }
            // analytic: one backward per output element through one graph
            for j in 0..n_out {
                let mut gv = vec![0.0; n_out];
                gv[j] = 1.0;
                let go = Tensor::from_vec(gv, out.shape())?.to_dtype(out.dtype())?;
                if !out.requires_grad() {
                    // output independent of the inputs: numerical must be 0
                    for k in 0..n_in {
                        let nv = numeric[j * n_in + k];
                        crate::ensure!(
                            nv.abs() <= opts.atol,
                            Runtime,
                            "gradcheck: output {oi} does not require grad but its numerical derivative with respect to input {ii} is {nv}"
                        );
                    }
                    continue;
                }
                let g = crate::autograd::grad(
                    std::slice::from_ref(out),
                    std::slice::from_ref(x),
                    Some(&[go]),
                    Some(true),
                    false,
                    true,
                )?;
                let a = match &g[0] {
                    Some(g) => flat_values(g)?,
                    None => vec![0.0; n_in],
                };
                for k in 0..n_in {
                    let (av, nv) = (a[k], numeric[j * n_in + k]);
                    crate::ensure!(
                        (av - nv).abs() <= opts.atol + opts.rtol * nv.abs(),
                        Runtime,
                        "Jacobian mismatch for output {oi} with respect to input {ii}: d out[{j}] / d in[{k}]: analytical {av}, numerical {nv}"
                    );
                }
            }
        }
    }
    Ok(())
}

/// Check second derivatives: [`gradcheck`] of the function mapping the
/// inputs (and a fixed random output gradient) to the first-order
/// gradients computed with `create_graph`.
pub fn gradgradcheck(
    f: impl Fn(&[Tensor]) -> Result<Vec<Tensor>> + Clone,
    inputs: &[Tensor],
    opts: GradcheckOptions,
) -> Result<()> {
    let outs = f(inputs)?;
    // fixed output gradients, deterministic
    let gos: Vec<Tensor> = outs
        .iter()
        .map(|o| {
            let n = o.numel();
            let v: Vec<f64> = (0..n).map(|i| ((i * 37 % 11) as f64 - 5.0) / 7.0).collect();
            Tensor::from_vec(v, o.shape())
        })
        .collect::<Result<_>>()?;
    let diff: Vec<usize> = (0..inputs.len())
        .filter(|&i| inputs[i].requires_grad())
        .collect();
    let first = move |xs: &[Tensor]| -> Result<Vec<Tensor>> {
        let outs = f(xs)?;
        let (os, gs): (Vec<Tensor>, Vec<Tensor>) = outs
            .into_iter()
            .zip(gos.iter().cloned())
            .filter(|(o, _)| o.requires_grad())
            .unzip();
        let wrt: Vec<Tensor> = diff.iter().map(|&i| xs[i].clone()).collect();
        if os.is_empty() {
            return wrt.iter().map(|x| x.zeros_like()).collect();
        }
        let g = crate::autograd::grad(&os, &wrt, Some(&gs), Some(true), true, true)?;
        g.into_iter()
            .zip(&wrt)
            .map(|(g, x)| match g {
                Some(g) => Ok(g),
                None => x.zeros_like(),
            })
            .collect()
    };
    gradcheck(first, inputs, opts)
}

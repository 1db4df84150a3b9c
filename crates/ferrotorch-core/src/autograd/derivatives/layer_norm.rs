//! The derivative of the native float32 `layer_norm`.
//!
//! With `x̂ = (x - mean)·rstd` per row and `gw = g·w`:
//! `dx = rstd·(gw - mean(gw) - x̂·mean(gw·x̂))`, `dw = Σ_rows g·x̂`,
//! `db = Σ_rows g`. Without `create_graph` this runs as
//! `ferrotorch_kernels::norm::backward` plus two column sums; with it, as
//! the same formula in differentiable tensor ops, so double backward works.

use super::want;
use crate::autograd::mode::is_grad_enabled;
use crate::autograd::node::Save;
use crate::autograd::{needs_grad, record1, Ctx};
use crate::error::Result;
use crate::tensor::Tensor;
use crate::DType;

/// Record `y = layer_norm(x, w, b)` over the trailing `k` dims, given the
/// per-row `(mean, rstd)` (`[rows]` each).
pub(crate) fn layer_norm(
    x: &Tensor,
    w: Option<&Tensor>,
    b: Option<&Tensor>,
    (mean, rstd): (Tensor, Tensor),
    k: usize,
    eps: f64,
    y: Tensor,
) -> Result<Tensor> {
    let mut inputs = vec![x];
    inputs.extend(w);
    inputs.extend(b);
    if !needs_grad(&inputs) {
        return Ok(y);
    }
    let (has_w, has_b) = (w.is_some(), b.is_some());
    let mut saves = smallvec::smallvec![Save::Tensor(x), Save::Tensor(&mean), Save::Tensor(&rstd)];
    if let Some(w) = w {
        saves.push(Save::Tensor(w));
    }
    record1(
        "NativeLayerNormBackward0",
        &inputs,
        y,
        saves,
        move |c: &Ctx| {
            let (x, mean, rstd) = (c.saved(0), c.saved(1), c.saved(2));
            let w = has_w.then(|| c.saved(3));
            let g = c.grad();
            let n: usize = x.shape()[x.dim() - k..].iter().product();
            let rows = mean.numel();
            let (iw, ib) = (1, 1 + usize::from(has_w));
            if !is_grad_enabled() && g.dtype() == DType::F32 {
                let g = g.contiguous()?;
                let dx = Tensor::empty(x.shape(), DType::F32)?;
                let gxhat = Tensor::empty(x.shape(), DType::F32)?;
                let mut reads = vec![&g, x, mean, rstd];
                reads.extend(w);
                crate::tensor::access::contiguous_slices_mut::<f32>(
                    "layer_norm_backward",
                    &[&dx, &gxhat],
                    &reads,
                    |out, r| {
                        let (a, rest) = out.split_at_mut(1);
                        let wt = w.map(|_| r[4]);
                        ferrotorch_kernels::norm::backward(
                            r[0], r[1], r[2], r[3], wt, a[0], rest[0], n,
                        );
                    },
                )?;
                let ns: Vec<i64> = x.shape()[x.dim() - k..].iter().map(|&d| d as i64).collect();
                let col = |t: &Tensor| -> Result<Tensor> {
                    t.reshape(&[rows as i64, n as i64])?
                        .sum_dim(Some(&[0]), false, None)?
                        .reshape(&ns)
                };
                let dw = if has_w {
                    want(c, iw, || col(&gxhat))?
                } else {
                    None
                };
                let db = if has_b {
                    want(c, ib, || col(&g))?
                } else {
                    None
                };
                return Ok(smallvec::smallvec![want(c, 0, || Ok(dx))?, dw, db]);
            }
            // the same formula in differentiable ops (create_graph), with the
            // statistics recomputed from x so that their dependence on x is in
            // the graph too (double backward)
            let dims: Vec<i64> = (-(k as i64)..0).collect();
            let (var, m) = x.var_mean(Some(&dims), Some(0.0), true)?;
            let rstd = var.add(eps)?.rsqrt()?;
            let xhat = x.sub(&m)?.mul(&rstd)?;
            let gw = match w {
                Some(w) => g.mul(w)?,
                None => g.clone(),
            };
            let ns: Vec<usize> = x.shape()[x.dim() - k..].to_vec();
            let dx = || -> Result<Tensor> {
                let a = gw.mean_dim(Some(&dims), true, None)?;
                let cc = gw.mul(&xhat)?.mean_dim(Some(&dims), true, None)?;
                rstd.mul(&gw.sub(&a)?.sub(&xhat.mul(&cc)?)?)
            };
            let dw = if has_w {
                want(c, iw, || {
                    crate::autograd::engine::sum_to(&g.mul(&xhat)?, &ns)
                })?
            } else {
                None
            };
            let db = if has_b {
                want(c, ib, || crate::autograd::engine::sum_to(g, &ns))?
            } else {
                None
            };
            Ok(smallvec::smallvec![want(c, 0, dx)?, dw, db])
        },
    )
}

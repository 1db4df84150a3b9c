//! Derivatives of scans along one dim: `cumsum`, `cumprod`,
//! `logcumsumexp` (`cummax`/`cummin` use `shape::select_by_indices`).
//! A reverse scan is `flip ∘ scan ∘ flip`.

use crate::autograd::node::Save;
use crate::autograd::{needs_grad, record1, Ctx};
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;

fn reverse_cumsum(t: &Tensor, d: i64) -> Result<Tensor> {
    t.flip(&[d])?.cumsum(d, None)?.flip(&[d])
}

/// `cumsum`: each input reaches every later output.
pub(crate) fn cumsum(x: &Tensor, d: i64, y: Tensor) -> Result<Tensor> {
    if !needs_grad(&[x]) {
        return Ok(y);
    }
    record1(
        "CumsumBackward0",
        &[x],
        y,
        smallvec::smallvec![],
        move |c: &Ctx| Ok(smallvec::smallvec![Some(reverse_cumsum(c.grad(), d)?)]),
    )
}

/// `cumprod`. Without zeros, `revcumsum(g · y) / x`. A row whose first
/// zero is at `z` gets that formula before `z`, nothing after it, and at
/// `z` the product of the elements before `z` times
/// `Σ_{j ≥ z} g_j Π_{z < k ≤ j} x_k` — all in differentiable ops.
pub(crate) fn cumprod(x: &Tensor, d: i64, y: Tensor) -> Result<Tensor> {
    if !needs_grad(&[x]) {
        return Ok(y);
    }
    record1(
        "CumprodBackward0",
        &[x],
        y,
        smallvec::smallvec![Save::Tensor(x), Save::Output(0)],
        move |c: &Ctx| {
            let (g, x, y) = (c.grad(), c.saved(0), c.saved(1));
            let zeros_seen = x.eq(0.0)?.cumsum(d, Some(DType::I64))?;
            let before = zeros_seen.eq(0)?;
            if crate::autograd::with_no_grad(|| before.all()?.item())?.to_bool() {
                return Ok(smallvec::smallvec![Some(
                    reverse_cumsum(&g.mul(y)?, d)?.div(x)?
                )]);
            }
            let first = zeros_seen.eq(1)?.logical_and(&x.eq(0.0)?)?;
            let one = Tensor::ones(&[], x.dtype())?;
            let zero = Tensor::zeros(&[], x.dtype())?;
            let safe_x = crate::native::pointwise::where_(&before, x, &one)?;
            let plain = reverse_cumsum(&g.mul(y)?, d)?.div(&safe_x)?;
            let plain = crate::native::pointwise::where_(&before, &plain, &zero)?;
            let head = safe_x.prod_dim(Some(&[d]), true, None)?;
            let after = before.logical_or(&first)?.logical_not()?;
            let tail = crate::native::pointwise::where_(&after, x, &one)?.cumprod(d, None)?;
            let at_z = crate::native::pointwise::where_(&before, &zero, &g.mul(&tail)?)?
                .sum_dim(Some(&[d]), true, None)?
                .mul(&head)?;
            let at_z = crate::native::pointwise::where_(&first, &at_z, &zero)?;
            Ok(smallvec::smallvec![Some(plain.add(&at_z)?)])
        },
    )
}

/// `logcumsumexp`: `Σ_{j ≥ i} g_j exp(x_i - y_j)`, computed in log space
/// separately for the positive and negative parts of `g` (PyTorch's
/// formula); the other part's entries take the dtype's lowest finite value
/// rather than `-inf`, so no `inf - inf` arises at any order.
pub(crate) fn logcumsumexp(x: &Tensor, d: i64, y: Tensor) -> Result<Tensor> {
    if !needs_grad(&[x]) {
        return Ok(y);
    }
    record1(
        "LogcumsumexpBackward0",
        &[x],
        y,
        smallvec::smallvec![Save::Tensor(x), Save::Output(0)],
        move |c: &Ctx| {
            let (g, x, y) = (c.grad(), c.saved(0), c.saved(1));
            let lowest = -g.dtype().finite_max().expect("gradients are floating");
            let floor = Tensor::full_cast(&[], lowest.into(), g.dtype())?;
            let log_abs = g.abs()?.log()?;
            let part = |m: Tensor| -> Result<Tensor> {
                let l = crate::native::pointwise::where_(&m, &log_abs, &floor)?.sub(y)?;
                let r = l.flip(&[d])?.logcumsumexp(d)?.flip(&[d])?;
                r.add(x)?.exp()
            };
            Ok(smallvec::smallvec![Some(
                part(g.gt(0.0)?)?.sub(&part(g.lt(0.0)?)?)?
            )])
        },
    )
}

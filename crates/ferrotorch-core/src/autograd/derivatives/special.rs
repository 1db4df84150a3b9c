//! Derivatives of the special functions whose backward is one formula
//! of its own (PyTorch's `derivatives.yaml`): `polygamma`, `logit`,
//! `nan_to_num` and `sinc`.
use crate::autograd::node::Save;
use crate::autograd::{needs_grad, record1, Ctx};
use crate::error::Result;
use crate::tensor::Tensor;
use std::f64::consts::PI;

/// `y = f(x)` recorded as node `name` saving `x`, whose input gradient
/// is `formula(g, x)`.
fn of_x(
    name: &'static str,
    x: &Tensor,
    y: Tensor,
    formula: impl Fn(&Tensor, &Tensor) -> Result<Tensor> + Send + Sync + 'static,
) -> Result<Tensor> {
    if !needs_grad(&[x]) {
        return Ok(y);
    }
    record1(
        name,
        &[x],
        y,
        smallvec::smallvec![Save::Tensor(x)],
        move |c: &Ctx| Ok(smallvec::smallvec![Some(formula(c.grad(), c.saved(0))?)]),
    )
}

/// `polygamma(n, x)`: ψ⁽ⁿ⁺¹⁾.
pub(crate) fn polygamma(x: &Tensor, n: u32, y: Tensor) -> Result<Tensor> {
    of_x("PolygammaBackward0", x, y, move |g, x| {
        g.mul(&x.polygamma(n + 1)?)
    })
}

/// `logit(x, eps)`: `1 / (x (1 - x))`; with `eps`, 0 outside
/// `[eps, 1 - eps]` where the input was clamped.
pub(crate) fn logit(x: &Tensor, eps: Option<f64>, y: Tensor) -> Result<Tensor> {
    of_x("LogitBackward0", x, y, move |g, x| {
        let gx = g.div(&x.mul(&x.neg()?.add(1.0)?)?)?;
        match eps {
            Some(e) => gx.masked_fill(&x.lt(e)?.logical_or(&x.gt(1.0 - e)?)?, 0.0),
            None => Ok(gx),
        }
    })
}

/// `nan_to_num`: replaced (non-finite) elements get no gradient
/// (`g · isfinite(x)`).
pub(crate) fn nan_to_num(x: &Tensor, y: Tensor) -> Result<Tensor> {
    of_x("NanToNumBackward0", x, y, |g, x| {
        // a product with the mask, as torch's `grad * isfinite(self)`:
        // an infinite gradient at a replaced element gives NaN there
        g.mul(&x.isfinite()?.to_dtype(g.dtype())?)
    })
}

/// `sinc(x)`: PyTorch's `sinc_backward`, one formula instead of the
/// composition's chain: `g (πx cos πx − sin πx) / (π x²)`, 0 where
/// `π x²` is 0 (at 0, and where `x²` underflows: the composition's
/// gradient was −inf at 1e-30 in f32), and an infinite `g` stays
/// infinite where the factor is not 0.
pub(crate) fn sinc(x: &Tensor, y: Tensor) -> Result<Tensor> {
    of_x("SincBackward0", x, y, |g, x| {
        let xpi = x.mul(PI)?;
        let sq = x.mul(x)?.mul(PI)?;
        let num = xpi.mul(&xpi.cos()?)?.sub(&xpi.sin()?)?;
        let out = g.mul(&num)?.div(&sq)?;
        crate::native::where_(&sq.eq(0.0)?, 0.0, &out)
    })
}

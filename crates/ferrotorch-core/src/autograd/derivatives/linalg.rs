//! Derivatives of matrix products. `matmul` covers 1-D, 2-D and batched
//! operands; the engine sums broadcast batch dims back.

use super::want;
use crate::autograd::node::Save;
use crate::autograd::{needs_grad, record1, Ctx};
use crate::error::Result;
use crate::tensor::Tensor;

fn mt(t: &Tensor) -> Result<Tensor> {
    t.transpose(-1, -2)
}

/// `matmul(a, b)` with torch semantics (also `mm`, `bmm`, `mv`, `dot`).
pub(crate) fn matmul(name: &'static str, a: &Tensor, b: &Tensor, y: Tensor) -> Result<Tensor> {
    if !needs_grad(&[a, b]) {
        return Ok(y);
    }
    let (da, db) = (a.dim(), b.dim());
    record1(
        name,
        &[a, b],
        y,
        smallvec::smallvec![Save::Tensor(a), Save::Tensor(b)],
        move |c: &Ctx| {
            // lift 1-D operands to matrices, as matmul does, and the gradient with them
            let a = if da == 1 {
                c.saved(0).unsqueeze(0)?
            } else {
                c.saved(0).clone()
            };
            let b = if db == 1 {
                c.saved(1).unsqueeze(1)?
            } else {
                c.saved(1).clone()
            };
            let mut g = c.grad().clone();
            if da == 1 && db == 1 {
                g = g.reshape(&[1, 1])?;
            } else {
                if da == 1 {
                    g = g.unsqueeze(-2)?;
                }
                if db == 1 {
                    g = g.unsqueeze(-1)?;
                }
            }
            // Note [Gradient layout]: a 2-D operand that is a transposed
            // contiguous matrix (`weight.t()` in a linear layer) gets its
            // gradient in the same transposed layout, computed as
            // (gᵀ·a)ᵀ, so the transpose's own backward hands a contiguous
            // gradient to the parameter — no copy, as PyTorch's AccumulateGrad
            // layout contract would otherwise force.
            let transposed = |t: &Tensor| {
                t.dim() == 2
                    && t.shape()[0] > 1
                    && t.shape()[1] > 1
                    && t.stride() == [1, t.shape()[0]]
            };
            let plain = g.dim() == 2 && a.dim() == 2 && b.dim() == 2;
            let ga = want(c, 0, || {
                if plain && transposed(&a) {
                    return mt(&b.matmul(&mt(&g)?)?);
                }
                let r = g.matmul(&mt(&b)?)?;
                if da == 1 {
                    r.sum_to_1d_lhs()
                } else {
                    Ok(r)
                }
            })?;
            let gb = want(c, 1, || {
                if plain && transposed(&b) {
                    return mt(&mt(&g)?.matmul(&a)?);
                }
                let r = mt(&a)?.matmul(&g)?;
                if db == 1 {
                    r.squeeze_dims(&[-1])
                } else {
                    Ok(r)
                }
            })?;
            Ok(smallvec::smallvec![ga, gb])
        },
    )
}

impl Tensor {
    /// `[..., 1, k]` gradient of a lifted 1-D lhs back to `[k]`.
    fn sum_to_1d_lhs(&self) -> Result<Tensor> {
        let k = self.shape()[self.dim() - 1];
        crate::autograd::sum_to(self, &[1, k])?.reshape(&[k as i64])
    }
}

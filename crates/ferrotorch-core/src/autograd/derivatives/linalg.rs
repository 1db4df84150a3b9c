//! Derivatives of matrix products. `matmul` covers 1-D, 2-D and batched
//! operands; the engine sums broadcast batch dims back.

use super::want;
use crate::autograd::node::Save;
use crate::autograd::{needs_grad, record1, Ctx};
use crate::error::Result;
use crate::scalar::Scalar;
use crate::tensor::Tensor;

fn mt(t: &Tensor) -> Result<Tensor> {
    t.transpose(-1, -2)
}

/// # Note [Gradient layout]
/// A 2-D operand that is a transposed contiguous matrix (`weight.t()` in a
/// linear layer) gets its gradient in the same transposed layout, computed
/// as (gᵀ·a)ᵀ, so the transpose's own backward hands a contiguous gradient
/// to the parameter — no copy, as PyTorch's AccumulateGrad layout contract
/// would otherwise force.
fn transposed(t: &Tensor) -> bool {
    t.dim() == 2 && t.shape()[0] > 1 && t.shape()[1] > 1 && t.stride() == [1, t.shape()[0]]
}

/// `g · bᵀ`, the gradient of the left operand of a 2-D product, computed
/// as `(b · gᵀ)ᵀ` when that operand is a transposed contiguous matrix
/// (Note [Gradient layout]).
fn grad_lhs(g: &Tensor, b: &Tensor, lhs_transposed: bool) -> Result<Tensor> {
    if lhs_transposed {
        return mt(&b.matmul(&mt(g)?)?);
    }
    g.matmul(&mt(b)?)
}

/// `aᵀ · g`, the gradient of the right operand of a 2-D product, computed
/// as `(gᵀ · a)ᵀ` when that operand is a transposed contiguous matrix.
fn grad_rhs(g: &Tensor, a: &Tensor, rhs_transposed: bool) -> Result<Tensor> {
    if rhs_transposed {
        return mt(&mt(g)?.matmul(a)?);
    }
    mt(a)?.matmul(g)
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
            let plain = da == 2 && db == 2;
            let ga = want(c, 0, || {
                if plain {
                    return grad_lhs(&g, &b, transposed(&a));
                }
                let r = g.matmul(&mt(&b)?)?;
                if da == 1 {
                    r.sum_to_1d_lhs()
                } else {
                    Ok(r)
                }
            })?;
            let gb = want(c, 1, || {
                if plain {
                    return grad_rhs(&g, &a, transposed(&b));
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

/// `addmm(self, mat1, mat2, beta, alpha)` = `beta·self + alpha·mat1·mat2`
/// (AddmmBackward0); `self`'s gradient is summed back to its broadcast
/// shape by the engine. Like mul, each matrix is saved only when the other
/// one's gradient needs it.
pub(crate) fn addmm(
    input: &Tensor,
    mat1: &Tensor,
    mat2: &Tensor,
    beta: Scalar,
    alpha: Scalar,
    y: Tensor,
) -> Result<Tensor> {
    if !needs_grad(&[input, mat1, mat2]) {
        return Ok(y);
    }
    let (save1, save2) = (needs_grad(&[mat2]), needs_grad(&[mat1]));
    let mut saves = smallvec::SmallVec::new();
    if save1 {
        saves.push(Save::Tensor(mat1));
    }
    if save2 {
        saves.push(Save::Tensor(mat2));
    }
    let one = |s: Scalar| s.to_f64() == 1.0;
    let (t1, t2) = (transposed(mat1), transposed(mat2));
    record1(
        "AddmmBackward0",
        &[input, mat1, mat2],
        y,
        saves,
        move |c: &Ctx| {
            let g = c.grad();
            let scaled = |t: Tensor, s: Scalar| if one(s) { Ok(t) } else { t.mul(s) };
            let gi = want(c, 0, || scaled(g.clone(), beta))?;
            let g1 = want(c, 1, || {
                scaled(grad_lhs(g, c.saved(usize::from(save1)), t1)?, alpha)
            })?;
            let g2 = want(c, 2, || scaled(grad_rhs(g, c.saved(0), t2)?, alpha))?;
            Ok(smallvec::smallvec![gi, g1, g2])
        },
    )
}

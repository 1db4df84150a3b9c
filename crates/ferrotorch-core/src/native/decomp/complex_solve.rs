//! Complex systems for `torch.linalg`: `solve` and `inv` of complex
//! matrices as real block systems, `[[Ar, -Ai], [Ai, Ar]]`, through the
//! real solver (so their gradients are the real solver's).

use crate::error::Result;
use crate::tensor::Tensor;

/// `X` solving `A X = B` for complex `A`, `B`, as the real system
/// `[[Ar, -Ai], [Ai, Ar]] [Xr; Xi] = [Br; Bi]` (differentiable through the
/// real solve).
pub(crate) fn complex_solve(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let (ar, ai) = (a.real()?, a.imag()?);
    let (br, bi) = (b.real()?, b.imag()?);
    let top = crate::native::cat(&[ar.clone(), ai.neg()?], -1)?;
    let bottom = crate::native::cat(&[ai, ar], -1)?;
    let big = crate::native::cat(&[top, bottom], -2)?;
    let rhs = crate::native::cat(&[br, bi], -2)?;
    let x = big.linalg_solve(&rhs, true)?;
    let n = a.shape()[a.dim() - 1];
    let xr = x.narrow(-2, 0, n)?;
    let xi = x.narrow(-2, n as i64, n)?;
    crate::native::complex(&xr.contiguous()?, &xi.contiguous()?)
}

/// `torch.linalg.solve` with a complex side: `A⁻¹ B` (`left`) or
/// `B A⁻¹`, `B` a vector or a batch of matrices as torch reads it.
pub(crate) fn linalg_solve(a: &Tensor, b: &Tensor, left: bool) -> Result<Tensor> {
    let dt = crate::dtype::promote_types(a.dtype(), b.dtype());
    let dt = dt.to_complex().unwrap_or(crate::DType::C64);
    let (a, b) = (a.to_dtype(dt)?, b.to_dtype(dt)?);
    super::check_precision("linalg.solve", &a)?;
    super::check_shape("linalg.solve", &a, true)?;
    let vector = b.dim() == 1 || (b.dim() + 1 == a.dim() && b.shape() == &a.shape()[..a.dim() - 1]);
    if vector {
        return linalg_solve(&a, &b.unsqueeze(-1)?, left)?.squeeze_dims(&[-1]);
    }
    if left {
        complex_solve(&a, &b)
    } else {
        // X A = B  <=>  Aᵀ Xᵀ = Bᵀ
        complex_solve(&a.transpose(-2, -1)?, &b.transpose(-2, -1)?)?.transpose(-2, -1)
    }
}

/// `torch.linalg.inv` of a complex matrix: `A⁻¹ I`.
pub(crate) fn linalg_inv(a: &Tensor) -> Result<Tensor> {
    super::check_precision("linalg.inv", a)?;
    super::check_shape("linalg.inv", a, true)?;
    let n = a.shape()[a.dim() - 1];
    let eye = Tensor::eye(n, Some(n), a.dtype())?;
    complex_solve(
        a,
        &eye.expand(&a.shape().iter().map(|&s| s as i64).collect::<Vec<_>>())?
            .contiguous()?,
    )
}

//! Derivatives of the factorizations (`native::decomp`), as PyTorch's
//! `FunctionsManual.cpp` writes them, with tensor ops (so they are
//! differentiable again). `g` is the output gradient; `mt` is the adjoint.
//!
//! # Note [Complex factorization derivatives]
//! torch writes these formulas once for real and complex matrices, with
//! the adjoint `Aᴴ` where a real matrix has `Aᵀ`, and a few complex-only
//! terms: `det`'s gradient carries `conj(det)`, `slogdet`'s sign output
//! contributes `i·Im(conj(sign)·g_sign)` to the log's gradient, and the
//! SVD adds `diag(skew(Uᴴ gU)) / 2S` on the diagonal (the phase of each
//! singular pair). So `mt` here is the adjoint (the transpose for real
//! matrices) and the complex terms vanish for real inputs; every formula is
//! gradchecked on complex inputs through their real and imaginary parts.

use super::want;
use crate::autograd::node::{GradVec, Save};
use crate::autograd::{needs_grad, record, record1, Ctx};
use crate::error::Result;
use crate::native::where_;
use crate::tensor::Tensor;

fn mt(t: &Tensor) -> Result<Tensor> {
    crate::native::decomp::mt(t)
}

/// `t` in `like`'s dtype (a real diagonal placed in a complex matrix).
fn as_dtype_of(t: &Tensor, like: &Tensor) -> Result<Tensor> {
    t.to_dtype(like.dtype())
}

/// `A⁻¹` for the gradients (complex matrices by the complex solver).
fn inverse(a: &Tensor) -> Result<Tensor> {
    if a.is_complex() {
        a.linalg_inv()
    } else {
        Ok(a.linalg_inv_ex(false)?.0)
    }
}

/// Whether an output's gradient is all zeros (the output was not used:
/// the engine fills such gradients with zeros).
fn all_zero(g: &Tensor) -> Result<bool> {
    Ok(g.numel() == 0 || !g.ne(0)?.any_dim(None, false)?.item()?.to_bool())
}

/// `X = A⁻¹B` (`left`) or `B A⁻¹` for triangular `A`:
/// `gB = A⁻ᵀ g` (`g A⁻ᵀ`), `gA = -gB Xᵀ` (`-Xᵀ gB`) on `A`'s triangle.
pub(crate) fn solve_triangular(
    a: &Tensor,
    b: &Tensor,
    upper: bool,
    left: bool,
    unit: bool,
    x: Tensor,
) -> Result<Tensor> {
    if !needs_grad(&[a, b]) {
        return Ok(x);
    }
    record1(
        "LinalgSolveTriangularBackward0",
        &[a, b],
        x,
        smallvec::smallvec![Save::Tensor(a), Save::Output(0)],
        move |c: &Ctx| {
            let (a, x, g) = (c.saved(0), c.saved(1), c.grad());
            let gb = mt(a)?.linalg_solve_triangular(g, !upper, left, unit)?;
            let ga = want(c, 0, || {
                let full = if left {
                    gb.matmul(&mt(x)?)?.neg()?
                } else {
                    mt(x)?.matmul(&gb)?.neg()?
                };
                let off = i64::from(unit);
                if upper {
                    full.triu(off)
                } else {
                    full.tril(-off)
                }
            })?;
            Ok(smallvec::smallvec![ga, Some(gb)])
        },
    )
}

/// `X = A⁻¹ B`: `gB = A⁻ᵀ g`, `gA = -gB Xᵀ` (vectors as columns).
pub(crate) fn solve(a: &Tensor, b: &Tensor, vector: bool, x: Tensor) -> Result<Tensor> {
    if !needs_grad(&[a, b]) {
        return Ok(x);
    }
    record1(
        "LinalgSolveExBackward0",
        &[a, b],
        x,
        smallvec::smallvec![Save::Tensor(a), Save::Output(0)],
        move |c: &Ctx| {
            let (a, x, g) = (c.saved(0), c.saved(1), c.grad());
            let gb = mt(a)?.linalg_solve(g, true)?;
            let ga = want(c, 0, || {
                if vector {
                    gb.unsqueeze(-1)?.matmul(&x.unsqueeze(-2)?)?.neg()
                } else {
                    gb.matmul(&mt(x)?)?.neg()
                }
            })?;
            Ok(smallvec::smallvec![ga, Some(gb)])
        },
    )
}

/// `Y = A⁻¹`: `gA = -Yᵀ g Yᵀ`.
pub(crate) fn inv(a: &Tensor, y: Tensor) -> Result<Tensor> {
    if !needs_grad(&[a]) {
        return Ok(y);
    }
    record1(
        "LinalgInvExBackward0",
        &[a],
        y,
        smallvec::smallvec![Save::Output(0)],
        |c: &Ctx| {
            let yt = mt(c.saved(0))?;
            Ok(smallvec::smallvec![Some(
                yt.matmul(c.grad())?.matmul(&yt)?.neg()?
            )])
        },
    )
}

/// `d = det A`: `gA = g conj(d) A⁻ᴴ`; where `A` is singular, `g` times the
/// adjugate's adjoint from the SVD (`conj(det(U) det(V)) · U diag(∏_{j≠i} σ_j) Vᴴ`).
pub(crate) fn det(a: &Tensor, d: Tensor) -> Result<Tensor> {
    if !needs_grad(&[a]) {
        return Ok(d);
    }
    record1(
        "LinalgDetBackward0",
        &[a],
        d,
        smallvec::smallvec![Save::Tensor(a), Save::Output(0)],
        |c: &Ctx| {
            let (a, d, g) = (c.saved(0), c.saved(1), c.grad());
            let singular = d.eq(0)?.any_dim(None, false)?.item()?.to_bool();
            let ga = if singular {
                adjugate_t(a)?.mul(&g.unsqueeze(-1)?.unsqueeze(-1)?)?
            } else {
                let inv_t = mt(&inverse(a)?)?;
                inv_t.mul(&g.mul(&d.conj()?)?.unsqueeze(-1)?.unsqueeze(-1)?)?
            };
            Ok(smallvec::smallvec![Some(ga)])
        },
    )
}

/// The transposed adjugate `det(A) A⁻ᵀ`, for any square `A`, by the SVD.
fn adjugate_t(a: &Tensor) -> Result<Tensor> {
    let (u, s, vh) = a.linalg_svd(false)?;
    let k = s.shape()[s.dim() - 1];
    // ∏_{j≠i} σ_j, without dividing by a zero σ_i
    let mut prods = Vec::with_capacity(k);
    for i in 0..k {
        let mut p = s
            .narrow(-1, 0, 0)?
            .sum_dim(Some(&[-1]), false, None)?
            .add(1.0)?;
        for j in 0..k {
            if j != i {
                p = p.mul(&s.select(-1, j as i64)?)?;
            }
        }
        prods.push(p);
    }
    let prods = crate::native::stack(&prods, -1)?;
    let sign = u.linalg_det()?.mul(&vh.linalg_det()?)?.conj()?;
    let prods = as_dtype_of(&prods, &u)?;
    // adj(A)ᵀ = det(U) det(V) U diag(∏) Vᵀ
    u.mul(&prods.unsqueeze(-2)?)?
        .matmul(&vh)?
        .mul(&sign.unsqueeze(-1)?.unsqueeze(-1)?)
}

/// `(sign, log|det A|)`: `gA = g A⁻ᴴ` with `g = g_logabs` for real `A`
/// (the sign's gradient is zero there, but it is an output of the node, as
/// in torch) and `g = g_logabs + i·Im(conj(sign)·g_sign)` for complex `A`.
pub(crate) fn slogdet(a: &Tensor, sign: Tensor, logabs: Tensor) -> Result<(Tensor, Tensor)> {
    if !needs_grad(&[a]) {
        return Ok((sign, logabs));
    }
    record(
        "LinalgSlogdetBackward0",
        &[a],
        &[&sign, &logabs],
        smallvec::smallvec![Save::Tensor(a), Save::Output(0)],
        |c: &Ctx| {
            let a = c.saved(0);
            let inv_t = mt(&inverse(a)?)?;
            let mut g = Clone::clone(c.grad_at(1));
            if a.is_complex() {
                let phase = c.saved(1).conj()?.mul(c.grad_at(0))?.imag()?;
                g = crate::native::complex(&g, &phase)?;
            }
            Ok(GradVec::from_iter([Some(
                inv_t.mul(&g.unsqueeze(-1)?.unsqueeze(-1)?)?,
            )]))
        },
    )?;
    Ok((sign, logabs))
}

/// Packed `LU` of `A = P L U` (PyTorch's `linalg_lu_backward`), with
/// `gL = tril(g, -1)`, `gU = triu(g)`; tall (and square) `A`:
/// `gA = P [gL1 + L1⁻ᵀ triu(gU Uᵀ - Lᵀ gL), gL2] U⁻ᵀ`; wide `A`:
/// `gA = P L⁻ᵀ [gU1 + tril(Lᵀ gL - gU Uᵀ, -1) U1⁻ᵀ, gU2]`.
pub(crate) fn lu_factor(a: &Tensor, pivots: &Tensor, lu: Tensor) -> Result<Tensor> {
    if !needs_grad(&[a]) {
        return Ok(lu);
    }
    let n = a.dim();
    let (m, k) = (a.shape()[n - 2], a.shape()[n - 1]);
    let piv = Clone::clone(pivots);
    record1(
        "LinalgLuFactorExBackward0",
        &[a],
        lu,
        smallvec::smallvec![Save::Output(0)],
        move |c: &Ctx| {
            let (lu, g) = (c.saved(0), c.grad());
            let (p, l, u) = crate::native::decomp::solve::lu_unpack(lu, &piv, true, true)?;
            let r = m.min(k);
            let gl = g.narrow(-1, 0, r)?.tril(-1)?;
            let gu = g.narrow(-2, 0, r)?.triu(0)?;
            let ga = if m >= k {
                let x = gu.matmul(&mt(&u)?)?.sub(&mt(&l)?.matmul(&gl)?)?;
                let l1 = l.narrow(-2, 0, r)?;
                let x = mt(&l1)?.linalg_solve_triangular(&x.triu(0)?, true, true, true)?;
                let x = x.add(&gl.narrow(-2, 0, r)?)?;
                let x = crate::native::cat(&[x, gl.narrow(-2, r as i64, m - r)?], -2)?;
                mt(&u)?.linalg_solve_triangular(&x, false, false, false)?
            } else {
                let x = mt(&l)?.matmul(&gl)?.sub(&gu.matmul(&mt(&u)?)?)?;
                let u1 = u.narrow(-1, 0, r)?;
                let x = mt(&u1)?.linalg_solve_triangular(&x.tril(-1)?, false, false, false)?;
                let x = x.add(&gu.narrow(-1, 0, r)?)?;
                let x = crate::native::cat(&[x, gu.narrow(-1, r as i64, k - r)?], -1)?;
                mt(&l)?.linalg_solve_triangular(&x, true, true, true)?
            };
            Ok(smallvec::smallvec![Some(p.matmul(&ga)?)])
        },
    )
}

/// `A = L Lᵀ`: `gA = L⁻ᵀ Φ L⁻¹` with `Φ = ½ (S + tril(S, -1)ᵀ)`, `S = tril(Lᵀ gL)`.
pub(crate) fn cholesky(a: &Tensor, l: Tensor) -> Result<Tensor> {
    if !needs_grad(&[a]) {
        return Ok(l);
    }
    record1(
        "LinalgCholeskyExBackward0",
        &[a],
        l,
        smallvec::smallvec![Save::Output(0)],
        |c: &Ctx| {
            let (l, g) = (c.saved(0), c.grad());
            let s = mt(l)?.matmul(g)?.tril(0)?;
            let phi = s.add(&mt(&s.tril(-1)?)?)?.mul(0.5)?;
            let x = mt(l)?.linalg_solve_triangular(&phi, true, true, false)?;
            Ok(smallvec::smallvec![Some(
                l.linalg_solve_triangular(&x, false, false, false)?
            )])
        },
    )
}

/// The QR gradient of a square or tall `A = Q R` (PyTorch's formula, for
/// real and complex matrices): with `M = gR Rᴴ − Qᴴ gQ` and `S = triu(M) +
/// triu(M)ᴴ` less half the real part of its diagonal,
/// `gA = (Q S + gQ) R⁻ᴴ`.
fn qr_grad_tall(q: &Tensor, r: &Tensor, gq: &Tensor, gr: &Tensor) -> Result<Tensor> {
    let m = gr.matmul(&mt(r)?)?.sub(&mt(q)?.matmul(gq)?)?;
    let upper = m.triu(0)?;
    let sym = upper.add(&mt(&upper)?)?;
    let diag = sym.diagonal(0, -2, -1)?;
    let half = if sym.is_complex() { diag.real()? } else { diag }.mul(0.5)?;
    let sym = sym.sub(&as_dtype_of(&half.diag_embed(0, -2, -1)?, &sym)?)?;
    // X R⁻ᴴ: solve X Rᴴ = Y (Rᴴ lower) from the right
    let y = q.matmul(&sym)?.add(gq)?;
    mt(r)?.linalg_solve_triangular(&y, false, false, false)
}

/// `(Q, R) = qr(A)`.
pub(crate) fn qr(a: &Tensor, mode: &str, q: Tensor, r: Tensor) -> Result<(Tensor, Tensor)> {
    if !needs_grad(&[a]) {
        return Ok((q, r));
    }
    let (m, n) = (a.shape()[a.dim() - 2], a.shape()[a.dim() - 1]);
    let mode = mode.to_string();
    record(
        "LinalgQrBackward0",
        &[a],
        &[&q, &r],
        smallvec::smallvec![Save::Output(0), Save::Output(1)],
        move |c: &Ctx| {
            crate::ensure!(
                mode != "r",
                Runtime,
                "The derivative of linalg.qr depends on Q, which is not computed when mode='r'. Please use linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr."
            );
            crate::ensure!(
                !(mode == "complete" && m > n),
                NotImplemented,
                "The QR decomposition is not differentiable when mode='complete' and nrows > ncols."
            );
            let (q, r, gq, gr) = (c.saved(0), c.saved(1), c.grad_at(0), c.grad_at(1));
            let ga = if m >= n {
                qr_grad_tall(q, r, gq, gr)?
            } else {
                // A = Q [X | Y] with X square: X = Q U, Y = Q V
                let u = r.narrow(-1, 0, m)?;
                let gu = gr.narrow(-1, 0, m)?;
                let gv = gr.narrow(-1, m as i64, n - m)?;
                let v = r.narrow(-1, m as i64, n - m)?;
                let a_y = q.matmul(&v)?;
                let dq = gq.add(&a_y.matmul(&mt(&gv)?)?)?;
                let dx = qr_grad_tall(q, &u, &dq, &gu)?;
                let dy = q.matmul(&gv)?;
                crate::native::cat(&[dx, dy], -1)?
            };
            Ok(GradVec::from_iter([Some(ga)]))
        },
    )?;
    Ok((q, r))
}

/// `(L, V) = eigh(A)`: `gA = V (diag(gL) + ½(VᵀgV - (VᵀgV)ᵀ) / E) Vᵀ`
/// with `E_ij = λ_j - λ_i` (1 on the diagonal).
pub(crate) fn eigh(a: &Tensor, vals: Tensor, vecs: Tensor) -> Result<(Tensor, Tensor)> {
    if !needs_grad(&[a]) {
        return Ok((vals, vecs));
    }
    record(
        "LinalgEighBackward0",
        &[a],
        &[&vals, &vecs],
        smallvec::smallvec![Save::Output(0), Save::Output(1)],
        |c: &Ctx| {
            let (l, v, gl, gv) = (c.saved(0), c.saved(1), c.grad_at(0), c.grad_at(1));
            if all_zero(gv)? {
                // eigenvalues alone (eigvalsh): no division by E, which is
                // 0 for repeated eigenvalues
                return Ok(GradVec::from_iter([Some(
                    v.mul(&gl.unsqueeze(-2)?)?.matmul(&mt(v)?)?,
                )]));
            }
            let vtgv = mt(v)?.matmul(gv)?;
            let skew = vtgv.sub(&mt(&vtgv)?)?.mul(0.5)?;
            let e = l.unsqueeze(-2)?.sub(&l.unsqueeze(-1)?)?;
            let n = l.shape()[l.dim() - 1];
            let eye = Tensor::eye(n, None, l.dtype())?.gt(0)?;
            let e = where_(&eye, 1.0, &e)?;
            let inner = where_(
                &eye,
                &as_dtype_of(&gl.diag_embed(0, -2, -1)?, v)?,
                &skew.div(&e)?,
            )?;
            Ok(GradVec::from_iter([Some(
                v.matmul(&inner)?.matmul(&mt(v)?)?,
            )]))
        },
    )?;
    Ok((vals, vecs))
}

/// `(U, S, Vh) = svd(A)` (thin; a full one's extra columns carry no
/// gradient, as in torch):
/// `gA = U [(skew(UᵀgU)/E) S + S (skew(VᵀgV)/E) + diag(gS)] Vh
///      + (I - UUᵀ) gU S⁻¹ Vh + U S⁻¹ gVᵀ (I - VVᵀ)`, `E_jk = σ_k² - σ_j²`.
pub(crate) fn svd(
    a: &Tensor,
    full: bool,
    u: Tensor,
    s: Tensor,
    vh: Tensor,
) -> Result<(Tensor, Tensor, Tensor)> {
    if !needs_grad(&[a]) {
        return Ok((u, s, vh));
    }
    let (m, n) = (a.shape()[a.dim() - 2], a.shape()[a.dim() - 1]);
    let k = m.min(n);
    record(
        "LinalgSvdBackward0",
        &[a],
        &[&u, &s, &vh],
        smallvec::smallvec![Save::Output(0), Save::Output(1), Save::Output(2)],
        move |c: &Ctx| {
            let (mut u, s, mut vh) = (
                Clone::clone(c.saved(0)),
                c.saved(1),
                Clone::clone(c.saved(2)),
            );
            let (mut gu, gs, mut gvh) = (
                Clone::clone(c.grad_at(0)),
                c.grad_at(1),
                Clone::clone(c.grad_at(2)),
            );
            if full {
                u = u.narrow(-1, 0, k)?;
                gu = gu.narrow(-1, 0, k)?;
                vh = vh.narrow(-2, 0, k)?;
                gvh = gvh.narrow(-2, 0, k)?;
            }
            if all_zero(&gu)? && all_zero(&gvh)? {
                // singular values alone (svdvals): U diag(gS) Vh
                return Ok(GradVec::from_iter([Some(
                    u.mul(&gs.unsqueeze(-2)?)?.matmul(&vh)?,
                )]));
            }
            let v = mt(&vh)?;
            let gv = mt(&gvh)?;
            let utgu = mt(&u)?.matmul(&gu)?;
            let vtgv = mt(&v)?.matmul(&gv)?;
            let skew_u = utgu.sub(&mt(&utgu)?)?;
            let skew_v = vtgv.sub(&mt(&vtgv)?)?;
            let s2 = s.mul(s)?;
            let e = s2.unsqueeze(-2)?.sub(&s2.unsqueeze(-1)?)?;
            let eye = Tensor::eye(k, None, s.dtype())?.gt(0)?;
            let e = where_(&eye, 1.0, &e)?;
            let inner = skew_u
                .mul(&s.unsqueeze(-2)?)?
                .add(&skew_v.mul(&s.unsqueeze(-1)?)?)?
                .div(&e)?;
            let mut inner = where_(&eye, &as_dtype_of(&gs.diag_embed(0, -2, -1)?, &u)?, &inner)?;
            if u.is_complex() {
                // the phase of each singular pair (Note [Complex factorization derivatives])
                let d = skew_u.diagonal(0, -2, -1)?.div(&s.mul(2.0)?)?;
                inner = inner.add(&d.diag_embed(0, -2, -1)?)?;
            }
            let mut ga = u.matmul(&inner)?.matmul(&vh)?;
            if m > k {
                let proj = gu.sub(&u.matmul(&utgu)?)?.div(&s.unsqueeze(-2)?)?;
                ga = ga.add(&proj.matmul(&vh)?)?;
            }
            if n > k {
                let proj = gv.sub(&v.matmul(&vtgv)?)?.div(&s.unsqueeze(-2)?)?;
                ga = ga.add(&u.matmul(&mt(&proj)?)?)?;
            }
            Ok(GradVec::from_iter([Some(ga)]))
        },
    )?;
    Ok((u, s, vh))
}

/// `Y = pinv(A)` (Golub and Pereyra's formula, as torch's `pinv_backward`),
/// in the order that keeps the products smallest.
pub(crate) fn pinv(a: &Tensor, y: Tensor) -> Result<Tensor> {
    if !needs_grad(&[a]) {
        return Ok(y);
    }
    let (m, n) = (a.shape()[a.dim() - 2], a.shape()[a.dim() - 1]);
    record1(
        "LinalgPinvBackward0",
        &[a],
        y,
        smallvec::smallvec![Save::Tensor(a), Save::Output(0)],
        move |c: &Ctx| {
            let (a, p, g) = (c.saved(0), c.saved(1), c.grad());
            let (pt, gt) = (mt(p)?, mt(g)?);
            let ga = if m <= n {
                let k = gt.matmul(p)?;
                let kpt = k.matmul(&pt)?;
                mt(&p.matmul(&k)?)?
                    .neg()?
                    .add(&kpt)?
                    .sub(&a.matmul(p)?.matmul(&kpt)?)?
                    .add(&pt.matmul(p)?.matmul(&gt.sub(&k.matmul(a)?)?)?)?
            } else {
                let k = p.matmul(&gt)?;
                let ptk = pt.matmul(&k)?;
                mt(&k.matmul(p)?)?
                    .neg()?
                    .add(&gt.sub(&a.matmul(&k)?)?.matmul(p)?.matmul(&pt)?)?
                    .add(&ptk)?
                    .sub(&ptk.matmul(p)?.matmul(a)?)?
            };
            Ok(smallvec::smallvec![Some(ga)])
        },
    )
}

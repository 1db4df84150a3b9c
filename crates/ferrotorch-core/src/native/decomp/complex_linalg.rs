//! Complex inputs to `torch.linalg`: `det`, `slogdet`, `cholesky`,
//! `solve_triangular`, `qr`, `eigh` and `svd` over `complex_kernels`, with
//! the same derivative functions as the real ones (Note [Complex
//! factorization derivatives] in `autograd::derivatives::decomp`). Each
//! real op sends a complex input here.

use super::complex_kernels::{self as ck, CM};
use super::{batch_of, batch_prefix, check_matrix_c as check_matrix, first_failure, from_ints};
use crate::autograd::derivatives::decomp as deriv;
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;
use faer::c64;

/// Each matrix of a complex `[..., r, c]` tensor.
pub(crate) fn cmats(a: &Tensor) -> Result<Vec<CM>> {
    let (r, c) = (a.shape()[a.dim() - 2], a.shape()[a.dim() - 1]);
    let data = a
        .detach()
        .to_dtype(DType::C128)?
        .contiguous()?
        .view_as_real()?
        .contiguous()?
        .to_vec::<f64>()?;
    let per = r * c;
    let count: usize = batch_of(a).iter().product();
    Ok((0..count)
        .map(|b| CM {
            r,
            c,
            d: data[2 * b * per..2 * (b + 1) * per]
                .chunks(2)
                .map(|p| c64::new(p[0], p[1]))
                .collect(),
        })
        .collect())
}

/// A complex `[batch..., r, c]` tensor of `dtype` from its matrices.
fn from_cmats(batch: &[usize], r: usize, c: usize, ms: &[CM], dtype: DType) -> Result<Tensor> {
    let mut data = Vec::with_capacity(2 * ms.len() * r * c);
    for m in ms {
        for z in &m.d {
            data.extend([z.re, z.im]);
        }
    }
    let mut shape = batch.to_vec();
    shape.extend([r, c, 2]);
    Tensor::from_vec(data, &shape)?
        .view_as_complex()?
        .to_dtype(dtype)
}

/// A complex `[batch...]` tensor from one value per matrix.
fn from_scalars(batch: &[usize], v: &[c64], dtype: DType) -> Result<Tensor> {
    let data: Vec<f64> = v.iter().flat_map(|z| [z.re, z.im]).collect();
    let mut shape = batch.to_vec();
    shape.push(2);
    Tensor::from_vec(data, &shape)?
        .view_as_complex()?
        .to_dtype(dtype)
}

/// A real `[batch..., n]` tensor from one vector per matrix.
fn from_real_vecs(batch: &[usize], n: usize, vs: &[Vec<f64>], dtype: DType) -> Result<Tensor> {
    let data: Vec<f64> = vs.iter().flatten().copied().collect();
    let mut shape = batch.to_vec();
    shape.push(n);
    Tensor::from_vec(data, &shape)?.to_dtype(dtype)
}

fn failed(op: &str, e: String) -> crate::Error {
    crate::Error::new(
        crate::ErrorKind::Runtime,
        format!("{op}: The algorithm failed to converge ({e})"),
    )
}

/// `torch.linalg.slogdet` of complex matrices: `(sign, log|det|)`, the
/// sign complex and the log real.
pub(crate) fn slogdet(a: &Tensor) -> Result<(Tensor, Tensor)> {
    check_matrix("linalg.slogdet", a, true)?;
    let batch = batch_of(a);
    let (sign, logabs) = crate::autograd::raw(&[a], || -> Result<(Tensor, Tensor)> {
        let (signs, logs): (Vec<c64>, Vec<f64>) = cmats(a)?.iter().map(ck::slogdet).unzip();
        Ok((
            from_scalars(&batch, &signs, a.dtype())?,
            Tensor::from_vec(logs, &batch)?.to_dtype(a.dtype().to_real())?,
        ))
    })?;
    deriv::slogdet(a, sign, logabs)
}

/// `torch.linalg.det` of complex matrices.
pub(crate) fn det(a: &Tensor) -> Result<Tensor> {
    check_matrix("linalg.det", a, true)?;
    let batch = batch_of(a);
    let d = crate::autograd::raw(&[a], || -> Result<Tensor> {
        let v: Vec<c64> = cmats(a)?
            .iter()
            .map(|m| {
                let (s, l) = ck::slogdet(m);
                s * l.exp()
            })
            .collect();
        from_scalars(&batch, &v, a.dtype())
    })?;
    deriv::det(a, d)
}

/// `torch.linalg.lu_factor_ex` of complex matrices: packed `LU`, 1-based
/// int32 `pivots` and `info`.
pub(crate) fn lu_factor_ex(a: &Tensor, check_errors: bool) -> Result<(Tensor, Tensor, Tensor)> {
    let op = "linalg.lu_factor";
    check_matrix(op, a, false)?;
    let (m, n) = (a.shape()[a.dim() - 2], a.shape()[a.dim() - 1]);
    let batch = batch_of(a);
    let (lu, piv, info) = crate::autograd::raw(&[a], || -> Result<(Tensor, Tensor, Vec<i32>)> {
        let (mut lus, mut pivs, mut infos) = (Vec::new(), Vec::new(), Vec::new());
        for mat in cmats(a)? {
            let (lu, p, i) = ck::lu_factor(&mat);
            lus.push(lu);
            pivs.extend(p);
            infos.push(i);
        }
        let mut ps = batch.clone();
        ps.push(m.min(n));
        Ok((
            from_cmats(&batch, m, n, &lus, a.dtype())?,
            Tensor::from_vec(pivs, &ps)?,
            infos,
        ))
    })?;
    if check_errors {
        if let Some((i, v)) = first_failure(&info) {
            crate::bail!(
                Runtime,
                "{op}: {}U[{v},{v}] is zero, singular U.",
                batch_prefix(a.dim() > 2, i)
            );
        }
    }
    let lu = deriv::lu_factor(a, &piv, lu)?;
    Ok((lu, piv, from_ints(&batch, info)?))
}

/// `torch.linalg.cholesky_ex` of a Hermitian matrix: `L` with `A = L Lᴴ`.
pub(crate) fn cholesky_ex(a: &Tensor, upper: bool, check_errors: bool) -> Result<(Tensor, Tensor)> {
    let op = "linalg.cholesky";
    check_matrix(op, a, true)?;
    let n = a.shape()[a.dim() - 1];
    let batch = batch_of(a);
    let (l, info) = crate::autograd::raw(&[a], || -> Result<(Tensor, Vec<i32>)> {
        let (ls, infos): (Vec<CM>, Vec<i32>) = cmats(a)?.iter().map(ck::cholesky).unzip();
        Ok((from_cmats(&batch, n, n, &ls, a.dtype())?, infos))
    })?;
    if check_errors {
        if let Some((i, v)) = first_failure(&info) {
            crate::bail!(
                Runtime,
                "{op}: {}The factorization could not be completed because the input is not positive-definite (the leading minor of order {v} is not positive-definite).",
                batch_prefix(a.dim() > 2, i)
            );
        }
    }
    let l = deriv::cholesky(a, l)?;
    let out = if upper { super::mt(&l)? } else { l };
    Ok((out, from_ints(&batch, info)?))
}

/// `torch.linalg.solve_triangular` with complex `A` and `B` (already
/// broadcast to one batch shape).
pub(crate) fn solve_triangular(
    a: &Tensor,
    b: &Tensor,
    upper: bool,
    left: bool,
    unit: bool,
) -> Result<Tensor> {
    let (a2, b2) = super::solve::broadcast_batch(a, b)?;
    let (br, bc) = (b.shape()[b.dim() - 2], b.shape()[b.dim() - 1]);
    let x = crate::autograd::raw(&[a, b], || -> Result<Tensor> {
        let xs: Vec<CM> = cmats(&a2)?
            .iter()
            .zip(cmats(&b2)?)
            .map(|(t, m)| ck::solve_triangular(t, &m, upper, left, unit))
            .collect();
        from_cmats(&batch_of(&a2), br, bc, &xs, a.dtype())
    })?;
    deriv::solve_triangular(a, b, upper, left, unit, x)
}

/// `torch.linalg.qr` of complex matrices (`R` with a real diagonal).
pub(crate) fn qr(a: &Tensor, mode: &str) -> Result<(Tensor, Tensor)> {
    let (m, n) = (a.shape()[a.dim() - 2], a.shape()[a.dim() - 1]);
    let k = m.min(n);
    let batch = batch_of(a);
    let qcols = if mode == "complete" { m } else { k };
    let rrows = if mode == "complete" { m } else { k };
    let (q, r) = crate::autograd::raw(&[a], || -> Result<(Tensor, Tensor)> {
        let mut qs = Vec::new();
        let mut rs = Vec::new();
        for mat in cmats(a)? {
            let (v, tau) = ck::geqrf(&mat);
            let mut r = CM::zeros(rrows, n);
            for i in 0..rrows.min(m) {
                for j in i..n {
                    r.set(i, j, v.at(i, j));
                }
            }
            rs.push(r);
            qs.push(ck::ungqr(&v, &tau, qcols));
        }
        let r = from_cmats(&batch, rrows, n, &rs, a.dtype())?;
        let q = if mode == "r" {
            Tensor::zeros(&[0], a.dtype())?
        } else {
            from_cmats(&batch, m, qcols, &qs, a.dtype())?
        };
        Ok((q, r))
    })?;
    deriv::qr(a, mode, q, r)
}

/// `torch.geqrf` of complex matrices: the packed reflectors and `τ` (not
/// differentiable, as torch).
pub(crate) fn geqrf(a: &Tensor) -> Result<(Tensor, Tensor)> {
    check_matrix("geqrf", a, false)?;
    let (m, n) = (a.shape()[a.dim() - 2], a.shape()[a.dim() - 1]);
    let batch = batch_of(a);
    let _g = crate::autograd::no_grad();
    let (vs, taus): (Vec<CM>, Vec<Vec<c64>>) = cmats(a)?.iter().map(ck::geqrf).unzip();
    let tau: Vec<c64> = taus.into_iter().flatten().collect();
    let mut tshape = batch.clone();
    tshape.push(m.min(n));
    let flat: Vec<f64> = tau.iter().flat_map(|z| [z.re, z.im]).collect();
    tshape.push(2);
    let tau = Tensor::from_vec(flat, &tshape)?
        .view_as_complex()?
        .to_dtype(a.dtype())?;
    Ok((from_cmats(&batch, m, n, &vs, a.dtype())?, tau))
}

/// `torch.linalg.eigh` of a Hermitian matrix: real ascending eigenvalues
/// and complex eigenvectors.
pub(crate) fn eigh(a: &Tensor, uplo: &str) -> Result<(Tensor, Tensor)> {
    let n = a.shape()[a.dim() - 1];
    let batch = batch_of(a);
    let (vals, vecs) = crate::autograd::raw(&[a], || -> Result<(Tensor, Tensor)> {
        let mut vs = Vec::new();
        let mut qs = Vec::new();
        for m in cmats(a)? {
            let (v, q) = ck::eigh(&m, uplo == "L").map_err(|e| failed("linalg.eigh", e))?;
            vs.push(v);
            qs.push(q);
        }
        Ok((
            from_real_vecs(&batch, n, &vs, a.dtype().to_real())?,
            from_cmats(&batch, n, n, &qs, a.dtype())?,
        ))
    })?;
    deriv::eigh(a, vals, vecs)
}

/// `torch.linalg.svd` of complex matrices: `(U, S, Vh)`, `S` real.
pub(crate) fn svd(a: &Tensor, full: bool) -> Result<(Tensor, Tensor, Tensor)> {
    let (m, n) = (a.shape()[a.dim() - 2], a.shape()[a.dim() - 1]);
    let k = m.min(n);
    let batch = batch_of(a);
    let (ucols, vrows) = if full { (m, n) } else { (k, k) };
    let (u, s, vh) = crate::autograd::raw(&[a], || -> Result<(Tensor, Tensor, Tensor)> {
        let (mut us, mut ss, mut vs) = (Vec::new(), Vec::new(), Vec::new());
        for mat in cmats(a)? {
            let (u, s, vh) = ck::svd(&mat, full).map_err(|e| failed("linalg.svd", e))?;
            us.push(u);
            ss.push(s);
            vs.push(vh);
        }
        Ok((
            from_cmats(&batch, m, ucols, &us, a.dtype())?,
            from_real_vecs(&batch, k, &ss, a.dtype().to_real())?,
            from_cmats(&batch, vrows, n, &vs, a.dtype())?,
        ))
    })?;
    deriv::svd(a, full, u, s, vh)
}

//! Complex inputs to `torch.linalg`: `det`, `slogdet`, `cholesky`,
//! `solve_triangular`, `qr`, `eigh` and `svd` over `complex_kernels`, with
//! the same derivative functions as the real ones (Note [Complex
//! factorization derivatives] in `autograd::derivatives::decomp`). Each
//! real op sends a complex input here.

use super::complex_kernels::{self as ck, CM};
use super::{batch_of, check_matrix_c as check_matrix, from_vecs};
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

/// A complex tensor of `shape` and `dtype` from its values (row-major).
pub(crate) fn complex_values(
    v: impl IntoIterator<Item = c64>,
    shape: &[usize],
    dtype: DType,
) -> Result<Tensor> {
    let data: Vec<f64> = v.into_iter().flat_map(|z| [z.re, z.im]).collect();
    let mut s = shape.to_vec();
    s.push(2);
    Tensor::from_vec(data, &s)?.into_complex()?.to_dtype(dtype)
}

/// A complex `[batch..., r, c]` tensor of `dtype` from its matrices.
fn from_cmats(batch: &[usize], r: usize, c: usize, ms: &[CM], dtype: DType) -> Result<Tensor> {
    let mut shape = batch.to_vec();
    shape.extend([r, c]);
    complex_values(ms.iter().flat_map(|m| m.d.iter().copied()), &shape, dtype)
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
            complex_values(signs, &batch, a.dtype())?,
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
        complex_values(v, &batch, a.dtype())
    })?;
    deriv::det(a, d)
}

/// The values of `torch.linalg.lu_factor_ex` for complex matrices (packed
/// `LU`, 1-based int32 pivots, `info` per matrix); the checks and the
/// derivative are the real op's (`Tensor::linalg_lu_factor_ex`).
pub(crate) fn lu_factor_values(a: &Tensor) -> Result<(Tensor, Tensor, Vec<i32>)> {
    let (m, n) = (a.shape()[a.dim() - 2], a.shape()[a.dim() - 1]);
    let batch = batch_of(a);
    let (lus, pivs, infos) = super::factor_each(cmats(a)?, |m| ck::lu_factor(&m));
    let mut ps = batch.clone();
    ps.push(m.min(n));
    Ok((
        from_cmats(&batch, m, n, &lus, a.dtype())?,
        Tensor::from_vec(pivs, &ps)?,
        infos,
    ))
}

/// The values of `torch.linalg.cholesky_ex` for Hermitian matrices (`L`
/// with `A = L Lᴴ`, `info` per matrix); as [`lu_factor_values`].
pub(crate) fn cholesky_values(a: &Tensor) -> Result<(Tensor, Vec<i32>)> {
    let n = a.shape()[a.dim() - 1];
    let (ls, infos): (Vec<CM>, Vec<i32>) = cmats(a)?.iter().map(ck::cholesky).unzip();
    Ok((from_cmats(&batch_of(a), n, n, &ls, a.dtype())?, infos))
}

/// The solution of `torch.linalg.solve_triangular` for complex `A`, `B`
/// already broadcast to one batch shape (the derivative is the real op's).
pub(crate) fn solve_triangular_values(
    a2: &Tensor,
    b2: &Tensor,
    upper: bool,
    left: bool,
    unit: bool,
) -> Result<Tensor> {
    let (br, bc) = (b2.shape()[b2.dim() - 2], b2.shape()[b2.dim() - 1]);
    let xs: Vec<CM> = cmats(a2)?
        .iter()
        .zip(cmats(b2)?)
        .map(|(t, m)| ck::solve_triangular(t, &m, upper, left, unit))
        .collect();
    from_cmats(&batch_of(a2), br, bc, &xs, a2.dtype())
}

/// `(Q, R)` of `torch.linalg.qr` for complex matrices (`R` with a real
/// diagonal), `Q` with `qcols` columns and `R` with `rrows` rows.
pub(crate) fn qr_values(a: &Tensor, qcols: usize, rrows: usize) -> Result<(Tensor, Tensor)> {
    let (m, n) = (a.shape()[a.dim() - 2], a.shape()[a.dim() - 1]);
    let batch = batch_of(a);
    let (mut qs, mut rs) = (Vec::new(), Vec::new());
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
    Ok((
        from_cmats(&batch, m, qcols, &qs, a.dtype())?,
        from_cmats(&batch, rrows, n, &rs, a.dtype())?,
    ))
}

/// `torch.geqrf` of complex matrices: the packed reflectors and `τ` (not
/// differentiable, as torch).
pub(crate) fn geqrf(a: &Tensor) -> Result<(Tensor, Tensor)> {
    check_matrix("geqrf", a, false)?;
    let (m, n) = (a.shape()[a.dim() - 2], a.shape()[a.dim() - 1]);
    let batch = batch_of(a);
    let _g = crate::autograd::no_grad();
    let (vs, taus): (Vec<CM>, Vec<Vec<c64>>) = cmats(a)?.iter().map(ck::geqrf).unzip();
    let mut tshape = batch.clone();
    tshape.push(m.min(n));
    let tau = complex_values(taus.into_iter().flatten(), &tshape, a.dtype())?;
    Ok((from_cmats(&batch, m, n, &vs, a.dtype())?, tau))
}

/// Real ascending eigenvalues and complex eigenvectors of Hermitian
/// matrices (`torch.linalg.eigh`'s values; the derivative is the real op's).
pub(crate) fn eigh_values(a: &Tensor, lower: bool) -> Result<(Tensor, Tensor)> {
    let n = a.shape()[a.dim() - 1];
    let batch = batch_of(a);
    let (mut vs, mut qs) = (Vec::new(), Vec::new());
    for m in cmats(a)? {
        let (v, q) = ck::eigh(&m, lower).map_err(|e| failed("linalg.eigh", e))?;
        vs.push(v);
        qs.push(q);
    }
    Ok((
        from_vecs(&batch, n, &vs, a.dtype().to_real())?,
        from_cmats(&batch, n, n, &qs, a.dtype())?,
    ))
}

/// `(U, S, Vh)` of complex matrices, `S` real (`torch.linalg.svd`'s
/// values; the derivative is the real op's).
pub(crate) fn svd_values(a: &Tensor, full: bool) -> Result<(Tensor, Tensor, Tensor)> {
    let (m, n) = (a.shape()[a.dim() - 2], a.shape()[a.dim() - 1]);
    let k = m.min(n);
    let batch = batch_of(a);
    let (ucols, vrows) = if full { (m, n) } else { (k, k) };
    let (mut us, mut ss, mut vs) = (Vec::new(), Vec::new(), Vec::new());
    for mat in cmats(a)? {
        let (u, s, vh) = ck::svd(&mat, full).map_err(|e| failed("linalg.svd", e))?;
        us.push(u);
        ss.push(s);
        vs.push(vh);
    }
    Ok((
        from_cmats(&batch, m, ucols, &us, a.dtype())?,
        from_vecs(&batch, k, &ss, a.dtype().to_real())?,
        from_cmats(&batch, vrows, n, &vs, a.dtype())?,
    ))
}

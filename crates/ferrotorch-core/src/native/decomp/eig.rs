//! `torch.linalg.eig` and `eigvals` of general (non-symmetric) real and
//! complex matrices: complex eigenvalues and eigenvectors from faer's Hessenberg
//! QR, each eigenvector scaled to unit norm with its largest component real
//! (LAPACK `geev`'s convention), and PyTorch's gradient.

use super::complex_kernels::CM;
use super::complex_solve::complex_solve;
use super::kernels::M;
use super::{batch_of, check_matrix, check_shape, mats};
use crate::autograd::{needs_grad, record};
use crate::dispatch::Registry;
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;

/// Eigenvalues and column eigenvectors (row-major `n × n`) as `(re, im)`.
type Eig = (Vec<(f64, f64)>, Vec<(f64, f64)>);

fn eig_one(a: &M) -> std::result::Result<Eig, String> {
    let n = a.r;
    if n == 0 {
        return Ok((Vec::new(), Vec::new()));
    }
    let e = a.to_faer().eigen().map_err(|e| format!("{e:?}"))?;
    let vals: Vec<(f64, f64)> = (0..n).map(|i| (e.S()[i].re, e.S()[i].im)).collect();
    let u = e.U();
    Ok(normalized(
        vals,
        |i, j| (u[(i, j)].re, u[(i, j)].im),
        n,
        false,
    ))
}

/// [`eig_one`] for a complex matrix (every eigenvector rotated so its
/// largest component is real, as `zgeev`).
fn eig_one_complex(a: &CM) -> std::result::Result<Eig, String> {
    let n = a.r;
    if n == 0 {
        return Ok((Vec::new(), Vec::new()));
    }
    let f = faer::Mat::from_fn(n, n, |i, j| a.at(i, j));
    let e = f.eigen().map_err(|e| format!("{e:?}"))?;
    let vals: Vec<(f64, f64)> = (0..n).map(|i| (e.S()[i].re, e.S()[i].im)).collect();
    let u = e.U();
    Ok(normalized(
        vals,
        |i, j| (u[(i, j)].re, u[(i, j)].im),
        n,
        true,
    ))
}

/// Unit-norm eigenvectors with their largest component made real (for a
/// real matrix only where the eigenvalue is complex: a real eigenvalue's
/// column is left real), as LAPACK's `geev` leaves them.
fn normalized(
    vals: Vec<(f64, f64)>,
    at: impl Fn(usize, usize) -> (f64, f64),
    n: usize,
    always_rotate: bool,
) -> Eig {
    let mut vecs = vec![(0.0, 0.0); n * n];
    for j in 0..n {
        let col: Vec<(f64, f64)> = (0..n).map(|i| at(i, j)).collect();
        let norm = col.iter().map(|(r, i)| r * r + i * i).sum::<f64>().sqrt();
        let k = (0..n)
            .max_by(|&p, &q| {
                let m = |(r, i): (f64, f64)| r * r + i * i;
                m(col[p]).total_cmp(&m(col[q]))
            })
            .unwrap_or(0);
        let (kr, ki) = col[k];
        let km = (kr * kr + ki * ki).sqrt();
        let (pr, pi) = if km > 0.0 && (always_rotate || vals[j].1 != 0.0) {
            (kr / km, -ki / km)
        } else {
            (1.0, 0.0)
        };
        let s = if norm > 0.0 { 1.0 / norm } else { 1.0 };
        for i in 0..n {
            let (r, im) = col[i];
            vecs[i * n + j] = ((r * pr - im * pi) * s, (r * pi + im * pr) * s);
        }
    }
    (vals, vecs)
}

/// A complex tensor of `shape` from `(re, im)` pairs, in `dtype`.
fn complex_tensor(pairs: &[(f64, f64)], shape: &[usize], dtype: DType) -> Result<Tensor> {
    let values = pairs.iter().map(|&(re, im)| faer::c64::new(re, im));
    super::complex_linalg::complex_values(values, shape, dtype)
}

/// torch's `linalg_eig_backward` (Note [Complex numbers]:
/// `gL`, `gV` are the conjugate-Wirtinger gradients):
/// `gA = V^{-H} (diag(gL) + (VᴴgV − VᴴV diag(Re(VᴴgV))) / Ē) Vᴴ`, its real
/// part for a real `A`,
/// `Ē_ij = conj(λ_j − λ_i)` (1 on the diagonal).
fn eig_backward(
    l: &Tensor,
    v: &Tensor,
    gl: Option<&Tensor>,
    gv: Option<&Tensor>,
    complex_input: bool,
) -> Result<Tensor> {
    let vh = v.transpose(-2, -1)?.conj()?;
    let n = l.shape()[l.dim() - 1];
    let eye = Tensor::eye(n, Some(n), l.dtype().to_real())?;
    let mut ret = match gv {
        Some(gv) => {
            let vhgv = vh.matmul(gv)?;
            let diag_re = vhgv.diagonal(0, -2, -1)?.real()?.contiguous()?;
            let lc = l.conj()?;
            let e = lc.unsqueeze(-2)?.sub(&lc.unsqueeze(-1)?)?;
            // 1 on the diagonal
            let e = e.mul(&eye.neg()?.add(1.0)?)?.add(&eye)?;
            // project out the phase directions first, then divide
            let projected = vhgv.sub(&vh.matmul(&v.mul(&diag_re.unsqueeze(-2)?)?)?)?;
            projected.div(&e)?
        }
        None => Tensor::zeros(v.shape(), v.dtype())?,
    };
    // the diagonal is gL's
    let off = eye.neg()?.add(1.0)?;
    ret = ret.mul(&off)?;
    if let Some(gl) = gl {
        ret = ret.add(&gl.diag_embed(0, -2, -1)?)?;
    }
    let g = complex_solve(&vh, &ret.matmul(&vh)?)?;
    if complex_input {
        Ok(g)
    } else {
        g.real()?.contiguous()
    }
}

impl Tensor {
    /// `torch.linalg.eig(A)`: the eigenvalues and (column) eigenvectors of
    /// a square real or complex matrix, complex (`complex64` for `float32` input).
    pub fn linalg_eig(&self) -> Result<(Tensor, Tensor)> {
        let op = "linalg.eig";
        let complex_input = self.is_complex();
        if complex_input {
            check_shape(op, self, true)?;
        } else {
            check_matrix(op, self, true)?;
        }
        let n = self.shape()[self.dim() - 1];
        let batch = batch_of(self);
        let cd = self.dtype().to_complex().unwrap_or(DType::C64);
        let (l, v) = crate::autograd::raw(&[self], || -> Result<(Tensor, Tensor)> {
            let mut ls = Vec::new();
            let mut vs = Vec::new();
            let fail = |e: String| {
                crate::Error::new(
                    crate::ErrorKind::Runtime,
                    format!("{op}: The algorithm failed to converge ({e})"),
                )
            };
            let results: Vec<Eig> = if complex_input {
                super::complex_linalg::cmats(self)?
                    .iter()
                    .map(eig_one_complex)
                    .collect::<std::result::Result<_, _>>()
                    .map_err(fail)?
            } else {
                mats(self)?
                    .iter()
                    .map(eig_one)
                    .collect::<std::result::Result<_, _>>()
                    .map_err(fail)?
            };
            for (l, v) in results {
                ls.extend(l);
                vs.extend(v);
            }
            let mut ls_shape = batch.clone();
            ls_shape.push(n);
            let mut vs_shape = batch.clone();
            vs_shape.extend([n, n]);
            Ok((
                complex_tensor(&ls, &ls_shape, cd)?,
                complex_tensor(&vs, &vs_shape, cd)?,
            ))
        })?;
        if !needs_grad(&[self]) {
            return Ok((l, v));
        }
        let (ls, vs) = (l.detach(), v.detach());
        record(
            "LinalgEigBackward0",
            &[self],
            &[&l, &v],
            smallvec::smallvec![],
            move |c| {
                let (gl, gv) = (c.grad_at(0), c.grad_at(1));
                Ok(smallvec::smallvec![Some(eig_backward(
                    &ls,
                    &vs,
                    Some(gl),
                    Some(gv),
                    complex_input
                )?)])
            },
        )?;
        Ok((l, v))
    }

    /// `torch.linalg.eigvals(A)`: the eigenvalues of `eig`.
    pub fn linalg_eigvals(&self) -> Result<Tensor> {
        Ok(self.linalg_eig()?.0)
    }
}

pub(crate) fn register(r: &mut Registry) {
    type T = Tensor;
    r.def_typed(
        "linalg_eig(Tensor self) -> (Tensor eigenvalues, Tensor eigenvectors)",
        |a: T| a.linalg_eig(),
    );
    r.def_typed("linalg_eigvals(Tensor self) -> Tensor", |a: T| {
        a.linalg_eigvals()
    });
}

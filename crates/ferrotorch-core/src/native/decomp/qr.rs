//! QR and Householder reflectors: `linalg.qr`, `geqrf`,
//! `linalg.householder_product` (`orgqr`), `ormqr`, and `linalg.lstsq`
//! built on them.

use super::kernels::{self, M};
use super::{batch_of, check_matrix, from_mats, from_vecs, mats, mt};
use crate::autograd::derivatives::decomp as deriv;
use crate::dispatch::Registry;
use crate::error::Result;
use crate::native::movement::cat;
use crate::tensor::Tensor;

impl Tensor {
    /// `torch.linalg.qr(A, mode='reduced')`: `(Q, R)`; `mode` is
    /// `"reduced"`, `"complete"` or `"r"` (Q empty).
    pub fn linalg_qr(&self, mode: &str) -> Result<(Tensor, Tensor)> {
        let op = "linalg.qr";
        super::check_matrix_c(op, self, false)?;
        crate::ensure!(
            matches!(mode, "reduced" | "complete" | "r"),
            Runtime,
            "qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', or 'complete'"
        );
        let (m, n) = (self.shape()[self.dim() - 2], self.shape()[self.dim() - 1]);
        let k = m.min(n);
        let batch = batch_of(self);
        let qcols = if mode == "complete" { m } else { k };
        let rrows = if mode == "complete" { m } else { k };
        let (q, r) = crate::autograd::raw(&[self], || -> Result<(Tensor, Tensor)> {
            if self.is_complex() {
                let (q, r) = super::complex_linalg::qr_values(self, qcols, rrows)?;
                let q = if mode == "r" {
                    Tensor::zeros(&[0], self.dtype())?
                } else {
                    q
                };
                return Ok((q, r));
            }
            let mut qs = Vec::new();
            let mut rs = Vec::new();
            for a in mats(self)? {
                let (v, tau) = kernels::geqrf(&a);
                let mut r = M::zeros(rrows, n);
                for i in 0..rrows.min(m) {
                    for j in i..n {
                        r.set(i, j, v.at(i, j));
                    }
                }
                rs.push(r);
                qs.push(kernels::orgqr(&v, &tau, qcols));
            }
            let r = from_mats(&batch, rrows, n, &rs, self.dtype())?;
            let q = if mode == "r" {
                Tensor::zeros(&[0], self.dtype())?
            } else {
                from_mats(&batch, m, qcols, &qs, self.dtype())?
            };
            Ok((q, r))
        })?;
        deriv::qr(self, mode, q, r)
    }

    /// `torch.geqrf`: LAPACK's packed reflectors and `tau` (not differentiable, as torch).
    pub fn geqrf(&self) -> Result<(Tensor, Tensor)> {
        if self.is_complex() {
            return super::complex_linalg::geqrf(self);
        }
        check_matrix("geqrf", self, false)?;
        let (m, n) = (self.shape()[self.dim() - 2], self.shape()[self.dim() - 1]);
        let batch = batch_of(self);
        let _g = crate::autograd::no_grad();
        let (vs, taus): (Vec<M>, Vec<Vec<f64>>) = mats(self)?.iter().map(kernels::geqrf).unzip();
        Ok((
            from_mats(&batch, m, n, &vs, self.dtype())?,
            from_vecs(&batch, m.min(n), &taus, self.dtype())?,
        ))
    }

    /// The `m × cols` product `H_0 ... H_{k-1}` of the reflectors below the
    /// diagonal of `self` (`[..., m, n]`) with scales `tau`, built with
    /// tensor ops so it is differentiable in both.
    fn householder(&self, tau: &Tensor, cols: usize) -> Result<Tensor> {
        let m = self.shape()[self.dim() - 2];
        let k = tau.shape()[tau.dim() - 1];
        // the identity with self's batch dims, an output of `self` even with
        // no reflectors (gradient zero), as torch
        let mut shape = self.shape().to_vec();
        let last = shape.len() - 1;
        shape[last] = cols;
        let q0 = Tensor::eye(m, Some(cols), self.dtype())?.broadcast_to(&shape)?;
        let zero = self
            .narrow(-2, 0, 0)?
            .sum_dim(Some(&[-2, -1]), true, None)?;
        let mut q = zero.broadcast_to(&shape)?.add(&q0)?;
        for i in (0..k).rev() {
            // v = [0]*i, 1, A[i+1.., i]
            let col = self.select(-1, i as i64)?;
            let lead = col.narrow(-1, 0, i + 1)?.zeros_like()?;
            let one = Tensor::eye(i + 1, None, self.dtype())?.select(0, i as i64)?;
            let lead = lead.add(&one)?;
            let v = cat(&[lead, col.narrow(-1, i as i64 + 1, m - i - 1)?], -1)?;
            let t = tau.select(-1, i as i64)?.unsqueeze(-1)?.unsqueeze(-1)?;
            // H q = q - tau v (vᴴ q)
            let v_row = if v.is_complex() {
                v.conj()?
            } else {
                Clone::clone(&v)
            };
            let vt_q = v_row.unsqueeze(-2)?.matmul(&q)?;
            q = q.sub(&v.unsqueeze(-1)?.matmul(&vt_q)?.mul(&t)?)?;
        }
        Ok(q)
    }

    /// `torch.linalg.householder_product(A, tau)` (`orgqr`): the first `n`
    /// columns of the product of the Householder reflectors.
    pub fn linalg_householder_product(&self, tau: &Tensor) -> Result<Tensor> {
        let op = "torch.linalg.householder_product";
        crate::ensure!(
            self.dim() >= 2,
            Runtime,
            "{op}: input must have at least 2 dimensions."
        );
        let (m, n) = (self.shape()[self.dim() - 2], self.shape()[self.dim() - 1]);
        crate::ensure!(
            m >= n,
            Runtime,
            "{op}: input.shape[-2] must be greater than or equal to input.shape[-1]"
        );
        let k = tau.shape().last().copied().unwrap_or(0);
        crate::ensure!(
            n >= k,
            Runtime,
            "{op}: input.shape[-1] must be greater than or equal to tau.shape[-1]"
        );
        crate::ensure!(
            tau.dim() + 1 == self.dim(),
            Runtime,
            "{op}: Expected tau to have one dimension less than input, but got tau.ndim equal to {} and input.ndim is equal to {}",
            tau.dim(),
            self.dim()
        );
        self.householder(tau, n)
    }

    /// `torch.ormqr(A, tau, other, left=True, transpose=False)`: `other`
    /// multiplied by the full `Q` of the reflectors (or `Qᵀ`).
    pub fn ormqr(
        &self,
        tau: &Tensor,
        other: &Tensor,
        left: bool,
        transpose: bool,
    ) -> Result<Tensor> {
        check_ormqr(self, tau, other, left)?;
        let m = self.shape()[self.dim() - 2];
        let q = self.householder(tau, m)?;
        let q = if transpose { mt(&q)? } else { q };
        if left {
            q.matmul(other)
        } else {
            other.matmul(&q)
        }
    }

    /// `torch.linalg.lstsq(A, B)`: the least-squares solution (full-rank
    /// `A`; the minimum-norm one for wide `A`), `residuals`, `rank` and
    /// `singular_values` as torch's default CPU driver (`gelsy`) gives them.
    pub fn linalg_lstsq(
        &self,
        b: &Tensor,
        driver: Option<&str>,
    ) -> Result<(Tensor, Tensor, Tensor, Tensor)> {
        let op = "torch.linalg.lstsq";
        super::check_matrix_c(op, self, false)?;
        crate::ensure!(
            self.dtype() == b.dtype(),
            Runtime,
            "{op}: Expected input and other to have the same dtype, but got input's dtype {} and other's dtype {}",
            self.dtype().name_title(),
            b.dtype().name_title()
        );
        let driver = driver.unwrap_or("gelsy");
        crate::ensure!(
            matches!(driver, "gels" | "gelsy" | "gelsd" | "gelss"),
            Runtime,
            "{op}: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)"
        );
        let vector = b.dim() + 1 == self.dim();
        crate::ensure!(
            vector || b.dim() >= 2,
            Runtime,
            "{op}: input.dim() must be greater or equal to other.dim() and (input.dim() - other.dim()) <= 1"
        );
        let b2 = if vector {
            b.unsqueeze(-1)?
        } else {
            Clone::clone(b)
        };
        let (m, n) = (self.shape()[self.dim() - 2], self.shape()[self.dim() - 1]);
        crate::ensure!(
            b2.shape()[b2.dim() - 2] == m,
            Runtime,
            "{op}: input.size(-2) should match other.size(-2)"
        );
        let (a, b2) = super::solve::broadcast_batch(self, &b2)?;
        let x = if m >= n {
            // A = Q R: x = R⁻¹ Qᵀ b
            let (q, r) = a.linalg_qr("reduced")?;
            r.linalg_solve_triangular(&mt(&q)?.matmul(&b2)?, true, true, false)?
        } else {
            // Aᵀ = Q R: x = Q R⁻ᵀ b (the minimum-norm solution)
            let (q, r) = mt(&a)?.linalg_qr("reduced")?;
            q.matmul(&mt(&r)?.linalg_solve_triangular(&b2, false, true, false)?)?
        };
        let x = if vector { x.squeeze_dims(&[-1])? } else { x };
        // an empty residuals tensor is still an output of the solve, as torch's
        let empty = || x.reshape(&[-1])?.narrow(0, 0, 0);
        let rank = if driver == "gels" {
            Tensor::zeros(&[0], crate::dtype::DType::I64)?
        } else {
            let _g = crate::autograd::no_grad();
            a.linalg_matrix_rank(None, None, false)?
        };
        let residuals = if m > n && driver != "gelsy" {
            let r = a
                .matmul(&if vector {
                    x.unsqueeze(-1)?
                } else {
                    Clone::clone(&x)
                })?
                .sub(&b2)?;
            let r2 = if r.is_complex() {
                r.abs()?.square()?
            } else {
                r.mul(&r)?
            };
            r2.sum_dim(Some(&[-2]), false, None)?
        } else {
            empty()?
        };
        let sv = if matches!(driver, "gelsd" | "gelss") {
            let _g = crate::autograd::no_grad();
            a.linalg_svdvals()?
        } else {
            Tensor::zeros(&[0], self.dtype())?
        };
        Ok((x, residuals, rank, sv))
    }
}

pub(crate) fn register(r: &mut Registry) {
    type T = Tensor;
    r.def_typed(
        "linalg_qr(Tensor A, str mode='reduced') -> (Tensor Q, Tensor R)",
        |a: T, m: String| a.linalg_qr(&m),
    );
    r.def_typed(
        "qr(Tensor self, bool some=True) -> (Tensor Q, Tensor R)",
        |a: T, some: bool| a.linalg_qr(if some { "reduced" } else { "complete" }),
    );
    r.def_typed("geqrf(Tensor self) -> (Tensor a, Tensor tau)", |a: T| {
        a.geqrf()
    });
    r.def_typed(
        "linalg_householder_product(Tensor input, Tensor tau) -> Tensor",
        |a: T, t: T| a.linalg_householder_product(&t),
    );
    r.def_typed(
        "orgqr(Tensor self, Tensor input2) -> Tensor",
        |a: T, t: T| a.linalg_householder_product(&t),
    );
    r.def_typed(
        "ormqr(Tensor self, Tensor input2, Tensor input3, bool left=True, bool transpose=False) -> Tensor",
        |a: T, t: T, o: T, l: bool, tr: bool| a.ormqr(&t, &o, l, tr),
    );
    r.def_typed(
        "linalg_lstsq(Tensor self, Tensor b, float? rcond=None, *, str? driver=None) -> (Tensor solution, Tensor residuals, Tensor rank, Tensor singular_values)",
        |a: T, b: T, _rc: Option<f64>, d: Option<String>| a.linalg_lstsq(&b, d.as_deref()),
    );
}

/// torch's shape checks of `ormqr`, in its order.
fn check_ormqr(a: &Tensor, tau: &Tensor, other: &Tensor, left: bool) -> Result<()> {
    let op = "torch.ormqr";
    crate::ensure!(
        a.dim() >= 2,
        Runtime,
        "{op}: input must have at least 2 dimensions."
    );
    crate::ensure!(
        other.dim() >= 2,
        Runtime,
        "{op}: other must have at least 2 dimensions."
    );
    let (ad, od) = (a.shape(), other.shape());
    let (side, o) = if left {
        (-2, od[od.len() - 2])
    } else {
        (-1, od[od.len() - 1])
    };
    let k = tau.shape().last().copied();
    crate::ensure!(
        k == Some(o.min(ad[ad.len() - 1])),
        Runtime,
        "{op}: tau.shape[-1] must be equal to min(other.shape[{side}], input.shape[-1])"
    );
    crate::ensure!(
        o == ad[ad.len() - 2],
        Runtime,
        "{op}: other.shape[{side}] must be equal to input.shape[-2]"
    );
    crate::ensure!(
        tau.dim() + 1 == a.dim(),
        Runtime,
        "{op}: Expected tau to have one dimension less than input, but got tau.ndim equal to {} and input.ndim is equal to {}",
        tau.dim(),
        a.dim()
    );
    crate::ensure!(
        other.dim() == a.dim(),
        Runtime,
        "{op}: Expected other to have the same number of dimensions as input, but got other.ndim equal to {} and input.ndim is equal to {}",
        other.dim(),
        a.dim()
    );
    let batch = &ad[..ad.len() - 2];
    crate::ensure!(
        &tau.shape()[..tau.dim() - 1] == batch,
        Runtime,
        "{op}: Expected batch dimensions of tau to be equal to input.shape[:-2], but got {:?}",
        &tau.shape()[..tau.dim() - 1]
    );
    crate::ensure!(
        &od[..od.len() - 2] == batch,
        Runtime,
        "{op}: Expected batch dimensions of other to be equal to input.shape[:-2], but got {:?}",
        &od[..od.len() - 2]
    );
    Ok(())
}

//! Linear solves and what LU and Cholesky give: `linalg.solve`, `inv`,
//! `det`, `slogdet`, `lu_factor`, `lu`, `lu_solve`, `solve_triangular`,
//! `cholesky`, and their `_ex` forms and old names.

use super::kernels::{self, M};
use super::{batch_of, batch_prefix, check_matrix, first_failure, from_ints, from_mats, mats, mt};
use crate::autograd::derivatives::decomp as deriv;
use crate::dispatch::Registry;
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;

/// Expand `a` (`[..., r, c]`) and `b` (`[..., p, q]`) to their common batch dims.
pub(crate) fn broadcast_batch(a: &Tensor, b: &Tensor) -> Result<(Tensor, Tensor)> {
    let batch = crate::tensor::layout::broadcast_shapes(&batch_of(a), &batch_of(b))?.to_vec();
    let ex = |t: &Tensor| -> Result<Tensor> {
        let mut s = batch.clone();
        s.extend_from_slice(&t.shape()[t.dim() - 2..]);
        t.broadcast_to(&s)
    };
    Ok((ex(a)?, ex(b)?))
}

/// Whether `b` is a (batch of) vector(s) for `A x = b`, as torch decides:
/// 1-D, or one dim fewer than `A` with `A`'s leading shape.
fn vector_rhs(a: &Tensor, b: &Tensor) -> bool {
    b.dim() == 1 || (b.dim() + 1 == a.dim() && b.shape() == &a.shape()[..a.dim() - 1])
}

fn check_same_dtype(op: &str, a: &Tensor, b: &Tensor) -> Result<()> {
    crate::ensure!(
        a.dtype() == b.dtype(),
        Runtime,
        "{op}: Expected A and B to have the same dtype, but found A of type {} and B of type {} instead",
        a.dtype().name_title(),
        b.dtype().name_title()
    );
    Ok(())
}

impl Tensor {
    /// `torch.linalg.solve_triangular(A, B, *, upper, left=True, unitriangular=False)`.
    pub fn linalg_solve_triangular(
        &self,
        b: &Tensor,
        upper: bool,
        left: bool,
        unitriangular: bool,
    ) -> Result<Tensor> {
        let op = "linalg.solve_triangular";
        let complex = self.is_complex();
        let check = if complex {
            super::check_matrix_c
        } else {
            check_matrix
        };
        check(op, self, true)?;
        check(op, b, false)?;
        check_same_dtype(op, self, b)?;
        let n = self.shape()[self.dim() - 1];
        let (br, bc) = (b.shape()[b.dim() - 2], b.shape()[b.dim() - 1]);
        crate::ensure!(
            if left { br == n } else { bc == n },
            Runtime,
            "{op}: Incompatible shapes of A and B for the equation {} ({n}x{n} and {br}x{bc})",
            if left { "AX = B" } else { "XA = B" }
        );
        let (a2, b2) = broadcast_batch(self, b)?;
        let x = crate::autograd::raw(&[self, b], || -> Result<Tensor> {
            if complex {
                return super::complex_linalg::solve_triangular_values(
                    &a2,
                    &b2,
                    upper,
                    left,
                    unitriangular,
                );
            }
            let xs: Vec<M> = mats(&a2)?
                .iter()
                .zip(mats(&b2)?)
                .map(|(a, b)| kernels::solve_triangular(a, &b, upper, left, unitriangular))
                .collect();
            from_mats(&batch_of(&a2), br, bc, &xs, self.dtype())
        })?;
        deriv::solve_triangular(self, b, upper, left, unitriangular, x)
    }

    /// `torch.linalg.solve(A, B, *, left=True)`: `A⁻¹ B` (or `B A⁻¹`).
    pub fn linalg_solve(&self, b: &Tensor, left: bool) -> Result<Tensor> {
        if self.is_complex() || b.is_complex() {
            return super::complex_solve::linalg_solve(self, b, left);
        }
        Ok(self.linalg_solve_ex(b, left, true)?.0)
    }

    /// `torch.linalg.solve_ex`: the solution and `info` (non-zero for a singular matrix).
    pub fn linalg_solve_ex(
        &self,
        b: &Tensor,
        left: bool,
        check_errors: bool,
    ) -> Result<(Tensor, Tensor)> {
        let op = "linalg.solve";
        if self.is_complex() || b.is_complex() {
            let x = self.linalg_solve(b, left)?;
            let batch = batch_of(self);
            return Ok((x, Tensor::zeros(&batch, DType::I32)?));
        }
        check_matrix(op, self, true)?;
        check_same_dtype(op, self, b)?;
        if !left {
            // X A = B  <=>  Aᵀ Xᵀ = Bᵀ
            let (x, info) = mt(self)?.linalg_solve_ex(&mt(b)?, true, check_errors)?;
            return Ok((mt(&x)?, info));
        }
        let vector = vector_rhs(self, b);
        let b2 = if vector {
            b.unsqueeze(-1)?
        } else {
            Clone::clone(b)
        };
        let n = self.shape()[self.dim() - 1];
        crate::ensure!(
            b2.dim() >= 2 && b2.shape()[b2.dim() - 2] == n,
            Runtime,
            "{op}: Incompatible shapes of A and B for the equation AX = B ({n}x{n} and {}x{})",
            b2.shape()
                .get(b2.dim().wrapping_sub(2))
                .copied()
                .unwrap_or(0),
            b2.shape().last().copied().unwrap_or(0)
        );
        let (a3, b3) = broadcast_batch(self, &b2)?;
        let k = b3.shape()[b3.dim() - 1];
        let (x, info) = crate::autograd::raw(&[self, b], || -> Result<(Tensor, Vec<i32>)> {
            let (xs, infos): (Vec<M>, Vec<i32>) = mats(&a3)?
                .iter()
                .zip(mats(&b3)?)
                .map(|(a, b)| kernels::lu_solve_dense(a, &b))
                .unzip();
            Ok((from_mats(&batch_of(&a3), n, k, &xs, self.dtype())?, infos))
        })?;
        if check_errors {
            if let Some((i, _)) = first_failure(&info) {
                crate::bail!(
                    LinAlg,
                    "{op}: {}The solver failed because the input matrix is singular.",
                    batch_prefix(a3.dim() > 2, i)
                );
            }
        }
        let x = if vector { x.squeeze_dims(&[-1])? } else { x };
        let x = deriv::solve(self, b, vector, x)?;
        Ok((x, from_ints(&batch_of(&a3), info)?))
    }

    /// `torch.linalg.inv_ex`: the inverse and `info`.
    pub fn linalg_inv_ex(&self, check_errors: bool) -> Result<(Tensor, Tensor)> {
        let op = "linalg.inv";
        if self.is_complex() {
            // the complex solver reports a singular matrix as an error
            let y = super::complex_solve::linalg_inv(self)?;
            return Ok((y, Tensor::zeros(&batch_of(self), DType::I32)?));
        }
        check_matrix(op, self, true)?;
        let n = self.shape()[self.dim() - 1];
        let (y, info) = crate::autograd::raw(&[self], || -> Result<(Tensor, Vec<i32>)> {
            let (ys, infos): (Vec<M>, Vec<i32>) = mats(self)?.iter().map(kernels::inverse).unzip();
            Ok((from_mats(&batch_of(self), n, n, &ys, self.dtype())?, infos))
        })?;
        if let Some((i, _)) = first_failure(&info) {
            if check_errors {
                crate::bail!(
                    LinAlg,
                    "{op}: {}The diagonal element {} is zero, the inversion could not be completed because the input matrix is singular.",
                    batch_prefix(self.dim() > 2, i),
                    info[i]
                );
            }
        }
        let y = deriv::inv(self, y)?;
        Ok((y, from_ints(&batch_of(self), info)?))
    }

    /// `torch.linalg.inv`: the inverse; a singular matrix is an error.
    pub fn linalg_inv(&self) -> Result<Tensor> {
        if self.is_complex() {
            return super::complex_solve::linalg_inv(self);
        }
        Ok(self.linalg_inv_ex(true)?.0)
    }

    /// LU-based `(sign, log|det|)` per matrix, in f64.
    #[allow(clippy::needless_range_loop)]
    fn slogdet_values(&self) -> Result<(Vec<f64>, Vec<f64>)> {
        let mut signs = Vec::new();
        let mut logs = Vec::new();
        for a in mats(self)? {
            let (lu, piv, _) = kernels::lu_factor(&a);
            let mut sign = 1.0;
            let mut log = 0.0;
            for i in 0..a.r {
                let d = lu.at(i, i);
                if piv[i] as usize != i + 1 {
                    sign = -sign;
                }
                if d < 0.0 {
                    sign = -sign;
                }
                log += d.abs().ln();
                if d == 0.0 || d.is_nan() {
                    sign = if d.is_nan() { f64::NAN } else { 0.0 };
                }
            }
            signs.push(sign);
            logs.push(log);
        }
        Ok((signs, logs))
    }

    /// `torch.linalg.det`.
    pub fn linalg_det(&self) -> Result<Tensor> {
        if self.is_complex() {
            return super::complex_linalg::det(self);
        }
        check_matrix("linalg.det", self, true)?;
        let batch = batch_of(self);
        let d = crate::autograd::raw(&[self], || -> Result<Tensor> {
            let (signs, logs) = self.slogdet_values()?;
            let v: Vec<f64> = signs.iter().zip(&logs).map(|(s, l)| s * l.exp()).collect();
            Tensor::from_vec(v, &batch)?.to_dtype(self.dtype())
        })?;
        deriv::det(self, d)
    }

    /// `torch.linalg.slogdet`: `(sign, log|det|)`.
    pub fn linalg_slogdet(&self) -> Result<(Tensor, Tensor)> {
        if self.is_complex() {
            return super::complex_linalg::slogdet(self);
        }
        check_matrix("linalg.slogdet", self, true)?;
        let batch = batch_of(self);
        let (sign, logabs) = crate::autograd::raw(&[self], || -> Result<(Tensor, Tensor)> {
            let (signs, logs) = self.slogdet_values()?;
            Ok((
                Tensor::from_vec(signs, &batch)?.to_dtype(self.dtype())?,
                Tensor::from_vec(logs, &batch)?.to_dtype(self.dtype())?,
            ))
        })?;
        deriv::slogdet(self, sign, logabs)
    }

    /// `torch.logdet`: `log(det)`, NaN for a negative determinant.
    pub fn logdet(&self) -> Result<Tensor> {
        let (sign, logabs) = self.linalg_slogdet()?;
        logabs.add(&sign.log()?)
    }

    /// `torch.linalg.lu_factor_ex`: packed LU, 1-based `pivots` (int32) and `info`.
    pub fn linalg_lu_factor_ex(
        &self,
        pivot: bool,
        check_errors: bool,
    ) -> Result<(Tensor, Tensor, Tensor)> {
        let op = "linalg.lu_factor";
        crate::ensure!(
            pivot,
            NotImplemented,
            "{op}: LU without pivoting is not implemented on the CPU"
        );
        super::check_matrix_c(op, self, false)?;
        let (m, n) = (self.shape()[self.dim() - 2], self.shape()[self.dim() - 1]);
        let batch = batch_of(self);
        let (lu, piv, info) =
            crate::autograd::raw(&[self], || -> Result<(Tensor, Tensor, Vec<i32>)> {
                if self.is_complex() {
                    return super::complex_linalg::lu_factor_values(self);
                }
                let (lus, pivs, infos) =
                    super::factor_each(mats(self)?, |a| kernels::lu_factor(&a));
                let mut ps = batch.clone();
                ps.push(m.min(n));
                Ok((
                    from_mats(&batch, m, n, &lus, self.dtype())?,
                    Tensor::from_vec(pivs, &ps)?,
                    infos,
                ))
            })?;
        if check_errors {
            if let Some((i, v)) = first_failure(&info) {
                crate::bail!(
                    Runtime,
                    "{op}: {}U[{v},{v}] is zero, singular U.",
                    batch_prefix(self.dim() > 2, i)
                );
            }
        }
        let lu = deriv::lu_factor(self, &piv, lu)?;
        Ok((lu, piv, from_ints(&batch, info)?))
    }

    /// `torch.linalg.lu_factor`: packed LU and pivots.
    pub fn linalg_lu_factor(&self, pivot: bool) -> Result<(Tensor, Tensor)> {
        let (lu, p, _) = self.linalg_lu_factor_ex(pivot, false)?;
        Ok((lu, p))
    }

    /// `torch.linalg.lu`: `(P, L, U)` with `A = P L U`.
    pub fn linalg_lu(&self, pivot: bool) -> Result<(Tensor, Tensor, Tensor)> {
        let (lu, piv) = self.linalg_lu_factor(pivot)?;
        lu_unpack(&lu, &piv, true, true)
    }

    /// `torch.linalg.lu_solve(LU, pivots, B, *, left=True, adjoint=False)`.
    pub fn linalg_lu_solve(
        &self,
        pivots: &Tensor,
        b: &Tensor,
        left: bool,
        adjoint: bool,
    ) -> Result<Tensor> {
        let (p, l, u) = lu_unpack(self, pivots, true, true)?;
        if left && !adjoint {
            // A X = B with A = P L U: X = U⁻¹ L⁻¹ Pᵀ B
            let y = mt(&p)?.matmul(b)?;
            let y = l.linalg_solve_triangular(&y, false, true, true)?;
            return u.linalg_solve_triangular(&y, true, true, false);
        }
        if left {
            // Aᵀ X = B: X = P L⁻ᵀ U⁻ᵀ B
            let y = mt(&u)?.linalg_solve_triangular(b, false, true, false)?;
            let y = mt(&l)?.linalg_solve_triangular(&y, true, true, true)?;
            return p.matmul(&y);
        }
        // X A = B  <=>  Aᵀ Xᵀ = Bᵀ (and X Aᵀ = B  <=>  A Xᵀ = Bᵀ)
        mt(&self.linalg_lu_solve(pivots, &mt(b)?, true, !adjoint)?)
    }

    /// `torch.linalg.cholesky_ex`: `L` (or `U = Lᵀ`) and `info`.
    pub fn linalg_cholesky_ex(&self, upper: bool, check_errors: bool) -> Result<(Tensor, Tensor)> {
        let op = "linalg.cholesky";
        super::check_matrix_c(op, self, true)?;
        let n = self.shape()[self.dim() - 1];
        let batch = batch_of(self);
        let (l, info) = crate::autograd::raw(&[self], || -> Result<(Tensor, Vec<i32>)> {
            if self.is_complex() {
                return super::complex_linalg::cholesky_values(self);
            }
            let (ls, infos): (Vec<M>, Vec<i32>) = mats(self)?.iter().map(kernels::cholesky).unzip();
            Ok((from_mats(&batch, n, n, &ls, self.dtype())?, infos))
        })?;
        if check_errors {
            if let Some((i, v)) = first_failure(&info) {
                crate::bail!(
                    LinAlg,
                    "{op}: {}The factorization could not be completed because the input is not positive-definite (the leading minor of order {v} is not positive-definite).",
                    batch_prefix(self.dim() > 2, i)
                );
            }
        }
        let l = deriv::cholesky(self, l)?;
        let out = if upper { mt(&l)? } else { l };
        Ok((out, from_ints(&batch, info)?))
    }

    /// `torch.linalg.cholesky`.
    pub fn linalg_cholesky(&self, upper: bool) -> Result<Tensor> {
        Ok(self.linalg_cholesky_ex(upper, true)?.0)
    }

    /// `torch.cholesky_solve(B, L, upper=False)`: `A⁻¹ B` for `A = L Lᵀ`.
    ///
    /// Its gradient treats the factor as a full matrix of `A = L Lᵀ`, as
    /// torch's does (not only its triangle).
    pub fn cholesky_solve(&self, l: &Tensor, upper: bool) -> Result<Tensor> {
        let a = if upper {
            mt(l)?.matmul(l)?
        } else {
            l.matmul(&mt(l)?)?
        };
        a.linalg_solve(self, true)
    }

    /// `torch.cholesky_inverse(L, upper=False)`: `(L Lᵀ)⁻¹`.
    pub fn cholesky_inverse(&self, upper: bool) -> Result<Tensor> {
        super::check_matrix_c("cholesky_inverse", self, true)?;
        let a = if upper {
            mt(self)?.matmul(self)?
        } else {
            self.matmul(&mt(self)?)?
        };
        a.linalg_inv()
    }
}

/// `torch.lu_unpack(LU_data, LU_pivots)`: `(P, L, U)`.
pub fn lu_unpack(
    lu: &Tensor,
    pivots: &Tensor,
    unpack_data: bool,
    unpack_pivots: bool,
) -> Result<(Tensor, Tensor, Tensor)> {
    crate::ensure!(
        lu.dim() >= 2,
        Runtime,
        "torch.lu_unpack: Expected tensor with 2 or more dimensions. Got size: {:?} instead",
        lu.shape()
    );
    crate::ensure!(
        pivots.dtype() == DType::I32,
        Runtime,
        "torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of torch.int32 dtype. Note: this function is intended to be used with the output produced by torch.linalg.lu_factor"
    );
    let (m, n) = (lu.shape()[lu.dim() - 2], lu.shape()[lu.dim() - 1]);
    let k = m.min(n);
    let batch = batch_of(lu);
    let (l, u) = if unpack_data {
        let l = lu
            .narrow(-1, 0, k)?
            .tril(-1)?
            .add(&Tensor::eye(m, Some(k), lu.dtype())?)?;
        let u = lu.narrow(-2, 0, k)?.triu(0)?;
        (l, u)
    } else {
        (
            Tensor::zeros(&[0], lu.dtype())?,
            Tensor::zeros(&[0], lu.dtype())?,
        )
    };
    let p = if unpack_pivots {
        let piv = pivots.to_vec_i64()?;
        let count: usize = batch.iter().product();
        let mut ms = Vec::with_capacity(count);
        for b in 0..count {
            let p32: Vec<i32> = piv[b * k..(b + 1) * k].iter().map(|&v| v as i32).collect();
            crate::ensure!(
                p32.iter().all(|&v| v >= 1 && v as usize <= m),
                Runtime,
                "torch.lu_unpack: LU_pivots contains an index out of range [1, {m}]"
            );
            let perm = kernels::perm_from_pivots(&p32, m);
            // A = P L U: row perm[i] of A is row i of L U, so P[perm[i], i] = 1
            let mut pm = M::zeros(m, m);
            for (i, &r) in perm.iter().enumerate() {
                pm.set(r, i, 1.0);
            }
            ms.push(pm);
        }
        from_mats(&batch, m, m, &ms, lu.dtype())?
    } else {
        Tensor::zeros(&[0], lu.dtype())?
    };
    Ok((p, l, u))
}

pub(crate) fn register(r: &mut Registry) {
    type T = Tensor;
    r.def_typed(
        "linalg_solve_triangular(Tensor self, Tensor B, *, bool upper, bool left=True, bool unitriangular=False) -> Tensor",
        |a: T, b: T, up: bool, left: bool, unit: bool| a.linalg_solve_triangular(&b, up, left, unit),
    );
    r.def_typed(
        "triangular_solve(Tensor self, Tensor A, bool upper=True, bool transpose=False, bool unitriangular=False) -> (Tensor solution, Tensor cloned_coefficient)",
        |b: T, a: T, up: bool, tr: bool, unit: bool| {
            let (a2, up2) = if tr { (mt(&a)?, !up) } else { (Clone::clone(&a), up) };
            Ok((a2.linalg_solve_triangular(&b, up2, true, unit)?, a.deep_clone()?))
        },
    );
    r.def_typed(
        "linalg_solve(Tensor A, Tensor B, *, bool left=True) -> Tensor",
        |a: T, b: T, l: bool| a.linalg_solve(&b, l),
    );
    r.def_typed(
        "linalg_solve_ex(Tensor A, Tensor B, *, bool left=True, bool check_errors=False) -> (Tensor result, Tensor info)",
        |a: T, b: T, l: bool, c: bool| a.linalg_solve_ex(&b, l, c),
    );
    r.def_typed("linalg_inv(Tensor A) -> Tensor", |a: T| a.linalg_inv());
    r.def_typed("inverse(Tensor self) -> Tensor", |a: T| a.linalg_inv());
    r.def_typed(
        "linalg_inv_ex(Tensor A, *, bool check_errors=False) -> (Tensor inverse, Tensor info)",
        |a: T, c: bool| a.linalg_inv_ex(c),
    );
    r.def_typed("linalg_det(Tensor A) -> Tensor", |a: T| a.linalg_det());
    r.def_typed("det(Tensor self) -> Tensor", |a: T| a.linalg_det());
    r.def_typed(
        "linalg_slogdet(Tensor A) -> (Tensor sign, Tensor logabsdet)",
        |a: T| a.linalg_slogdet(),
    );
    r.def_typed(
        "slogdet(Tensor self) -> (Tensor sign, Tensor logabsdet)",
        |a: T| a.linalg_slogdet(),
    );
    r.def_typed("logdet(Tensor self) -> Tensor", |a: T| a.logdet());
    r.def_typed(
        "linalg_lu_factor_ex(Tensor A, *, bool pivot=True, bool check_errors=False) -> (Tensor LU, Tensor pivots, Tensor info)",
        |a: T, p: bool, c: bool| a.linalg_lu_factor_ex(p, c),
    );
    r.def_typed(
        "linalg_lu_factor(Tensor A, *, bool pivot=True) -> (Tensor LU, Tensor pivots)",
        |a: T, p: bool| a.linalg_lu_factor(p),
    );
    r.def_typed(
        "linalg_lu(Tensor A, *, bool pivot=True) -> (Tensor P, Tensor L, Tensor U)",
        |a: T, p: bool| a.linalg_lu(p),
    );
    r.def_typed(
        "lu_unpack(Tensor LU_data, Tensor LU_pivots, bool unpack_data=True, bool unpack_pivots=True) -> (Tensor P, Tensor L, Tensor U)",
        |lu: T, p: T, d: bool, pv: bool| lu_unpack(&lu, &p, d, pv),
    );
    r.def_typed(
        "linalg_lu_solve(Tensor LU, Tensor pivots, Tensor B, *, bool left=True, bool adjoint=False) -> Tensor",
        |lu: T, p: T, b: T, l: bool, adj: bool| lu.linalg_lu_solve(&p, &b, l, adj),
    );
    r.def_typed(
        "lu_solve(Tensor self, Tensor LU_data, Tensor LU_pivots) -> Tensor",
        |b: T, lu: T, p: T| lu.linalg_lu_solve(&p, &b, true, false),
    );
    r.def_typed(
        "linalg_cholesky_ex(Tensor self, *, bool upper=False, bool check_errors=False) -> (Tensor L, Tensor info)",
        |a: T, u: bool, c: bool| a.linalg_cholesky_ex(u, c),
    );
    r.def_typed(
        "linalg_cholesky(Tensor self, *, bool upper=False) -> Tensor",
        |a: T, u: bool| a.linalg_cholesky(u),
    );
    r.def_typed(
        "cholesky(Tensor self, bool upper=False) -> Tensor",
        |a: T, u: bool| a.linalg_cholesky(u),
    );
    r.def_typed(
        "cholesky_solve(Tensor self, Tensor input2, bool upper=False) -> Tensor",
        |b: T, l: T, u: bool| b.cholesky_solve(&l, u),
    );
    r.def_typed(
        "cholesky_inverse(Tensor self, bool upper=False) -> Tensor",
        |l: T, u: bool| l.cholesky_inverse(u),
    );
}

//! `torch.linalg.ldl_factor`, `ldl_factor_ex` and `ldl_solve`: the
//! Bunch-Kaufman factorization `A = P L D Lᵀ Pᵀ` of a symmetric matrix in
//! LAPACK's packed form (`sytrf` with `uplo='L'`, as torch calls it).
//!
//! # Note [LDLᵀ in LAPACK's form]
//! `LD` holds `L` below the diagonal (its unit diagonal implied) and the
//! blocks of `D` on and just below it; `pivots` are 1-based: `p > 0` is a
//! 1×1 block at `k` after rows/columns `k` and `p` were swapped, and a pair
//! `p, p < 0` a 2×2 block at `k, k+1` after `k+1` and `-p` were swapped.
//! The pivot choice is Bunch and Kaufman's (`α = (1 + √17)/8`) as
//! LAPACK's unblocked `sytf2` makes it; the blocked `sytrf` torch runs
//! makes the same choices, so `LD` and `pivots` are torch's. Only the lower
//! triangle of the input is read. Complex matrices factor as complex
//! symmetric (`zsytrf`, `hermitian=False`) or Hermitian (`zhetrf`,
//! `hermitian=True`: `A = P L D Lᴴ Pᵀ`); one algorithm over both (`ldl_kernels`). torch has no
//! derivative for these ops, and neither has ferrotorch: their results do
//! not require grad.

use super::complex_linalg::{cmats, complex_values};
use super::{
    batch_of, batch_prefix, check_matrix_c, factor_each, first_failure, from_ints, from_mats,
    ldl_kernels, mats,
};
use crate::dispatch::Registry;
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;

/// The shape and dtype checks of `ldl_factor_ex` (torch names that op).
fn check_factor(a: &Tensor) -> Result<()> {
    let op = "torch.linalg.ldl_factor_ex";
    crate::ensure!(
        a.is_floating_point() || a.is_complex(),
        NotImplemented,
        "{op}: Expected a floating point or complex tensor as input. Got {}",
        a.dtype().name_title()
    );
    check_matrix_c(op, a, true)
}

impl Tensor {
    /// `torch.linalg.ldl_factor_ex(A, *, hermitian=False, check_errors=False)`:
    /// `LD`, `pivots` (int32, 1-based) and `info` (Note [LDLᵀ in LAPACK's form]).
    pub fn linalg_ldl_factor_ex(
        &self,
        hermitian: bool,
        check_errors: bool,
    ) -> Result<(Tensor, Tensor, Tensor)> {
        // real symmetric and real hermitian are the same factorization
        check_factor(self)?;
        let n = self.shape()[self.dim() - 1];
        let batch = batch_of(self);
        let (ld, pivs, infos) = if self.is_complex() {
            let (lds, p, i) = factor_each(cmats(self)?, |mut a| {
                let (p, i) = ldl_kernels::factor(&mut a.d, n, hermitian);
                (a, p, i)
            });
            let vals = lds.into_iter().flat_map(|a| a.d);
            (complex_values(vals, self.shape(), self.dtype())?, p, i)
        } else {
            let (lds, p, i) = factor_each(mats(self)?, |mut a| {
                let (p, i) = ldl_kernels::factor(&mut a.d, n, false);
                (a, p, i)
            });
            (from_mats(&batch, n, n, &lds, self.dtype())?, p, i)
        };
        if check_errors {
            if let Some((i, v)) = first_failure(&infos) {
                crate::bail!(
                    Runtime,
                    "torch.linalg.ldl_factor_ex: {}The factorization could not be completed because the input is not invertible: D[{v}, {v}] is zero.",
                    batch_prefix(self.dim() > 2, i)
                );
            }
        }
        let mut ps = batch.clone();
        ps.push(n);
        Ok((ld, Tensor::from_vec(pivs, &ps)?, from_ints(&batch, infos)?))
    }

    /// `torch.linalg.ldl_factor(A, *, hermitian=False)`: `LD` and `pivots`;
    /// a singular matrix is an error.
    pub fn linalg_ldl_factor(&self, hermitian: bool) -> Result<(Tensor, Tensor)> {
        let (ld, p, _) = self.linalg_ldl_factor_ex(hermitian, true)?;
        Ok((ld, p))
    }

    /// `torch.linalg.ldl_solve(LD, pivots, B, *, hermitian=False)`: the
    /// solution of `A X = B` from `ldl_factor`'s results (batches broadcast).
    pub fn linalg_ldl_solve(&self, pivots: &Tensor, b: &Tensor, hermitian: bool) -> Result<Tensor> {
        let op = "torch.linalg.ldl_solve";
        check_factor(self)?;
        crate::ensure!(
            b.dim() >= 2,
            Index,
            "Dimension out of range (expected to be in range of [-1, 0], but got -2)"
        );
        let n = self.shape()[self.dim() - 1];
        crate::ensure!(
            pivots.shape() == &self.shape()[..self.dim() - 1],
            Runtime,
            "{op}: Expected LD.shape[:-1] and pivots.shape to be the same, but got pivots with shape {:?} instead",
            pivots.shape()
        );
        crate::ensure!(
            !pivots.is_floating_point() && !pivots.is_complex() && pivots.dtype() != DType::Bool,
            Runtime,
            "{op}: Expected pivots to be integers. Got {}",
            pivots.dtype().name_title()
        );
        let (br, bc) = (b.shape()[b.dim() - 2], b.shape()[b.dim() - 1]);
        crate::ensure!(
            br == n,
            Runtime,
            "Incompatible matrix sizes for {op}: each A matrix is {n} by {n} but each b matrix is {br} by {bc}"
        );
        crate::ensure!(
            b.dtype() == self.dtype(),
            Runtime,
            "Expected b and A to have the same dtype, but found b of type {} and A of type {} instead.",
            b.dtype().name_title(),
            self.dtype().name_title()
        );
        let batch = crate::tensor::layout::broadcast_shapes(&batch_of(self), &batch_of(b))?;
        let expand = |t: &Tensor, tail: &[usize]| -> Result<Tensor> {
            let s: Vec<i64> = batch.iter().chain(tail).map(|&d| d as i64).collect();
            t.expand(&s)
        };
        let ld = expand(self, &[n, n])?;
        let piv = expand(pivots, &[n])?
            .to_dtype(DType::I64)?
            .contiguous()?
            .to_vec::<i64>()?;
        crate::ensure!(
            piv.iter().all(|&p| p != 0 && p.unsigned_abs() as usize <= n),
            Runtime,
            "Pivots given to ldl_solve must all satisfy |pivot| <= LD.size(-2). Did you properly pass the result of ldl_factor?"
        );
        let piv: Vec<i32> = piv.iter().map(|&p| p as i32).collect();
        let bs = expand(b, &[n, bc])?;
        if self.is_complex() {
            let mut vals = Vec::new();
            for (i, (l, mut x)) in cmats(&ld)?.into_iter().zip(cmats(&bs)?).enumerate() {
                let p = &piv[i * n..(i + 1) * n];
                ldl_kernels::solve(&l.d, n, p, &mut x.d, bc, hermitian);
                vals.extend(x.d);
            }
            let shape: Vec<usize> = batch.iter().copied().chain([n, bc]).collect();
            return complex_values(vals, &shape, self.dtype());
        }
        let mut xs = Vec::new();
        for (i, (l, mut x)) in mats(&ld)?.into_iter().zip(mats(&bs)?).enumerate() {
            ldl_kernels::solve(&l.d, n, &piv[i * n..(i + 1) * n], &mut x.d, bc, false);
            xs.push(x);
        }
        from_mats(&batch, n, bc, &xs, self.dtype())
    }
}

pub(crate) fn register(r: &mut Registry) {
    type T = Tensor;
    r.def_typed(
        "linalg_ldl_factor_ex(Tensor self, *, bool hermitian=False, bool check_errors=False) -> (Tensor LD, Tensor pivots, Tensor info)",
        |a: T, h: bool, c: bool| a.linalg_ldl_factor_ex(h, c),
    );
    r.def_typed(
        "linalg_ldl_factor(Tensor self, *, bool hermitian=False) -> (Tensor LD, Tensor pivots)",
        |a: T, h: bool| a.linalg_ldl_factor(h),
    );
    r.def_typed(
        "linalg_ldl_solve(Tensor LD, Tensor pivots, Tensor B, *, bool hermitian=False) -> Tensor",
        |ld: T, p: T, b: T, h: bool| ld.linalg_ldl_solve(&p, &b, h),
    );
}

#[cfg(test)]
mod tests {
    use super::super::kernels::M;
    use super::*;

    fn m(n: usize, d: &[f64]) -> M {
        M {
            r: n,
            c: n,
            d: d.to_vec(),
        }
    }

    fn sytf2(a: &M) -> (M, Vec<i32>, i32) {
        let mut ld = a.clone();
        let (p, info) = ldl_kernels::factor(&mut ld.d, a.r, false);
        (ld, p, info)
    }

    #[test]
    fn a_two_by_two_pivot_as_lapack() {
        // torch.linalg.ldl_factor of this matrix (LAPACK dsytrf, uplo L)
        let a = m(3, &[0.0, 1.0, 2.0, 1.0, 0.0, 3.0, 2.0, 3.0, 0.0]);
        let (ld, p, info) = sytf2(&a);
        assert_eq!(info, 0);
        assert_eq!(p, vec![-3, -3, 3]);
        let want = [0.0, 0.0, 0.0, 2.0, 0.0, 0.0, 1.5, 0.5, -3.0];
        for (g, w) in ld.d.iter().zip(want) {
            assert!((g - w).abs() < 1e-12, "{:?}", ld.d);
        }
        // and it solves A x = b: x = (1, 2, 3) gives b = A x
        let mut b = M {
            r: 3,
            c: 1,
            d: vec![8.0, 10.0, 8.0],
        };
        ldl_kernels::solve(&ld.d, 3, &p, &mut b.d, 1, false);
        for (g, w) in b.d.iter().zip([1.0, 2.0, 3.0]) {
            assert!((g - w).abs() < 1e-12, "{:?}", b.d);
        }
    }

    #[test]
    fn a_zero_column_is_reported_and_skipped() {
        let (_, p, info) = sytf2(&m(2, &[0.0, 0.0, 0.0, 1.0]));
        assert_eq!(info, 1);
        assert_eq!(p, vec![1, 2]);
    }
}

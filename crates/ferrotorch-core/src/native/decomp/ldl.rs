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
//! triangle of the input is read. torch has no derivative for these ops,
//! and neither has ferrotorch: their results do not require grad.

use super::kernels::M;
use super::{batch_of, batch_prefix, check_matrix, first_failure, from_ints, from_mats, mats};
use crate::dispatch::Registry;
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;

/// Bunch-Kaufman on one matrix (lower triangle): `LD`, 1-based pivots and
/// LAPACK's `info` (the first zero pivot, 1-based; 0 when none).
fn sytf2(a: &M) -> (M, Vec<i32>, i32) {
    let n = a.r;
    let mut a = a.clone();
    let at = |a: &M, i: usize, j: usize| a.d[i * n + j];
    let alpha = (1.0 + 17f64.sqrt()) / 8.0;
    let mut piv = vec![0i32; n];
    let mut info = 0;
    let mut k = 0;
    while k < n {
        let mut kstep = 1;
        let absakk = at(&a, k, k).abs();
        // the largest off-diagonal entry of column k (the first, as idamax)
        let (mut imax, mut colmax) = (k, 0.0f64);
        for i in k + 1..n {
            if at(&a, i, k).abs() > colmax {
                (imax, colmax) = (i, at(&a, i, k).abs());
            }
        }
        let kp;
        if absakk.max(colmax) == 0.0 || absakk.is_nan() {
            // a zero column: record it and go on
            if info == 0 {
                info = k as i32 + 1;
            }
            kp = k;
        } else {
            if absakk >= alpha * colmax {
                kp = k;
            } else {
                // the largest off-diagonal entry of row/column imax
                let mut rowmax = 0.0f64;
                for j in k..imax {
                    rowmax = rowmax.max(at(&a, imax, j).abs());
                }
                for j in imax + 1..n {
                    rowmax = rowmax.max(at(&a, j, imax).abs());
                }
                if absakk >= alpha * colmax * (colmax / rowmax) {
                    kp = k;
                } else if at(&a, imax, imax).abs() >= alpha * rowmax {
                    kp = imax;
                } else {
                    kp = imax;
                    kstep = 2;
                }
            }
            let kk = k + kstep - 1;
            if kp != kk {
                // swap rows and columns kk and kp of the trailing lower triangle
                for i in kp + 1..n {
                    a.d.swap(i * n + kk, i * n + kp);
                }
                for j in kk + 1..kp {
                    a.d.swap(j * n + kk, kp * n + j);
                }
                a.d.swap(kk * n + kk, kp * n + kp);
                if kstep == 2 {
                    a.d.swap((k + 1) * n + k, kp * n + k);
                }
            }
            if kstep == 1 {
                let d11 = 1.0 / at(&a, k, k);
                for j in k + 1..n {
                    let xj = at(&a, j, k);
                    for i in j..n {
                        a.d[i * n + j] -= d11 * at(&a, i, k) * xj;
                    }
                }
                for i in k + 1..n {
                    a.d[i * n + k] *= d11;
                }
            } else if k + 2 < n {
                let d21 = at(&a, k + 1, k);
                let d11 = at(&a, k + 1, k + 1) / d21;
                let d22 = at(&a, k, k) / d21;
                let t = 1.0 / (d11 * d22 - 1.0);
                let d21 = t / d21;
                for j in k + 2..n {
                    let wk = d21 * (d11 * at(&a, j, k) - at(&a, j, k + 1));
                    let wkp1 = d21 * (d22 * at(&a, j, k + 1) - at(&a, j, k));
                    for i in j..n {
                        a.d[i * n + j] -= at(&a, i, k) * wk + at(&a, i, k + 1) * wkp1;
                    }
                    a.d[j * n + k] = wk;
                    a.d[j * n + k + 1] = wkp1;
                }
            }
        }
        if kstep == 1 {
            piv[k] = kp as i32 + 1;
        } else {
            piv[k] = -(kp as i32 + 1);
            piv[k + 1] = -(kp as i32 + 1);
        }
        k += kstep;
    }
    // LAPACK leaves the strict upper triangle as it was; torch zeroes it
    for i in 0..n {
        for j in i + 1..n {
            a.d[i * n + j] = 0.0;
        }
    }
    (a, piv, info)
}

/// `sytrs` (lower): solve `A X = B` from `sytf2`'s factors; `b` is
/// `n × nrhs`, row-major, overwritten with `X`.
fn sytrs(ld: &M, piv: &[i32], b: &mut M) {
    let n = ld.r;
    let m = b.c;
    let l = |i: usize, j: usize| ld.d[i * n + j];
    let swap = |b: &mut M, i: usize, j: usize| {
        if i != j {
            for c in 0..m {
                b.d.swap(i * m + c, j * m + c);
            }
        }
    };
    // L D Y = P B
    let mut k = 0;
    while k < n {
        if piv[k] > 0 {
            swap(b, k, piv[k] as usize - 1);
            for i in k + 1..n {
                for c in 0..m {
                    b.d[i * m + c] -= l(i, k) * b.d[k * m + c];
                }
            }
            for c in 0..m {
                b.d[k * m + c] /= l(k, k);
            }
            k += 1;
        } else {
            swap(b, k + 1, (-piv[k]) as usize - 1);
            for i in k + 2..n {
                for c in 0..m {
                    b.d[i * m + c] -= l(i, k) * b.d[k * m + c] + l(i, k + 1) * b.d[(k + 1) * m + c];
                }
            }
            let akm1k = l(k + 1, k);
            let akm1 = l(k, k) / akm1k;
            let ak = l(k + 1, k + 1) / akm1k;
            let denom = akm1 * ak - 1.0;
            for c in 0..m {
                let bkm1 = b.d[k * m + c] / akm1k;
                let bk = b.d[(k + 1) * m + c] / akm1k;
                b.d[k * m + c] = (ak * bkm1 - bk) / denom;
                b.d[(k + 1) * m + c] = (akm1 * bk - bkm1) / denom;
            }
            k += 2;
        }
    }
    // Lᵀ Pᵀ X = Y
    let mut k = n;
    while k > 0 {
        let kk = k - 1;
        let rows = if piv[kk] > 0 {
            vec![kk]
        } else {
            vec![kk, kk - 1]
        };
        for &r in &rows {
            for i in k..n {
                for c in 0..m {
                    b.d[r * m + c] -= l(i, r) * b.d[i * m + c];
                }
            }
        }
        swap(b, kk, piv[kk].unsigned_abs() as usize - 1);
        k -= rows.len();
    }
}

/// The shape and dtype checks of `ldl_factor_ex` (torch names that op).
fn check_factor(a: &Tensor) -> Result<()> {
    let op = "torch.linalg.ldl_factor_ex";
    crate::ensure!(
        !a.is_complex(),
        NotImplemented,
        "{op}: complex matrices are not supported yet"
    );
    crate::ensure!(
        a.is_floating_point(),
        NotImplemented,
        "{op}: Expected a floating point or complex tensor as input. Got {}",
        a.dtype().name_title()
    );
    check_matrix(op, a, true)
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
        let _ = hermitian;
        check_factor(self)?;
        let n = self.shape()[self.dim() - 1];
        let batch = batch_of(self);
        let (mut lds, mut pivs, mut infos) = (Vec::new(), Vec::new(), Vec::new());
        for a in mats(self)? {
            let (ld, p, i) = sytf2(&a);
            lds.push(ld);
            pivs.extend(p);
            infos.push(i);
        }
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
        Ok((
            from_mats(&batch, n, n, &lds, self.dtype())?,
            Tensor::from_vec(pivs, &ps)?,
            from_ints(&batch, infos)?,
        ))
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
        let _ = hermitian;
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
        let mut xs = Vec::new();
        for (i, (l, mut x)) in mats(&ld)?.into_iter().zip(mats(&bs)?).enumerate() {
            sytrs(&l, &piv[i * n..(i + 1) * n], &mut x);
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
    use super::*;

    fn m(n: usize, d: &[f64]) -> M {
        M {
            r: n,
            c: n,
            d: d.to_vec(),
        }
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
        sytrs(&ld, &p, &mut b);
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

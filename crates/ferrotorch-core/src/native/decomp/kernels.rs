//! The matrix algorithms under `torch.linalg`, on one row-major `f64`
//! matrix at a time: LU with LAPACK's partial pivoting (so `pivots` are
//! LAPACK's), triangular solves, Cholesky and Householder QR in LAPACK's
//! conventions (so `geqrf`'s reflectors and R's signs are torch's), and
//! faer for the heavy solvers (LU solve and inverse, symmetric
//! eigendecomposition, SVD).

use faer::linalg::solvers::{DenseSolveCore, Solve};
use faer::{Mat, Side};

/// A row-major matrix.
#[derive(Clone, Debug)]
pub(crate) struct M {
    pub r: usize,
    pub c: usize,
    pub d: Vec<f64>,
}

impl M {
    pub fn zeros(r: usize, c: usize) -> M {
        M {
            r,
            c,
            d: vec![0.0; r * c],
        }
    }

    pub fn eye(n: usize) -> M {
        let mut m = M::zeros(n, n);
        for i in 0..n {
            m.d[i * n + i] = 1.0;
        }
        m
    }

    #[inline]
    pub fn at(&self, i: usize, j: usize) -> f64 {
        self.d[i * self.c + j]
    }

    #[inline]
    pub fn set(&mut self, i: usize, j: usize, v: f64) {
        self.d[i * self.c + j] = v;
    }

    pub fn to_faer(&self) -> Mat<f64> {
        Mat::from_fn(self.r, self.c, |i, j| self.at(i, j))
    }

    pub fn from_faer(m: faer::MatRef<'_, f64>) -> M {
        let mut out = M::zeros(m.nrows(), m.ncols());
        for i in 0..m.nrows() {
            for j in 0..m.ncols() {
                out.set(i, j, m[(i, j)]);
            }
        }
        out
    }
}

/// LU with partial pivoting (LAPACK's `getrf`, unblocked): the packed
/// factors, the 1-based row swaps, and `info` (0, or the 1-based index of
/// the first zero pivot).
pub(crate) fn lu_factor(a: &M) -> (M, Vec<i32>, i32) {
    let (m, n) = (a.r, a.c);
    let k = m.min(n);
    let mut lu = a.clone();
    let mut piv = Vec::with_capacity(k);
    let mut info = 0;
    for j in 0..k {
        // the first row of largest magnitude, as idamax
        let mut p = j;
        let mut best = lu.at(j, j).abs();
        for i in j + 1..m {
            let v = lu.at(i, j).abs();
            if v > best || (best.is_nan() && !v.is_nan()) {
                best = v;
                p = i;
            }
        }
        piv.push(p as i32 + 1);
        if p != j {
            for c in 0..n {
                lu.d.swap(j * n + c, p * n + c);
            }
        }
        let pivot = lu.at(j, j);
        if pivot == 0.0 {
            if info == 0 {
                info = j as i32 + 1;
            }
            continue;
        }
        for i in j + 1..m {
            let l = lu.at(i, j) / pivot;
            lu.set(i, j, l);
            if l != 0.0 {
                for c in j + 1..n {
                    let v = lu.at(i, c) - l * lu.at(j, c);
                    lu.set(i, c, v);
                }
            }
        }
    }
    (lu, piv, info)
}

/// The permutation `perm` with `(P A)[i] = A[perm[i]]` from LAPACK row swaps.
pub(crate) fn perm_from_pivots(piv: &[i32], m: usize) -> Vec<usize> {
    let mut perm: Vec<usize> = (0..m).collect();
    for (i, &p) in piv.iter().enumerate() {
        let p = (p - 1) as usize;
        if p < m && i < m {
            perm.swap(i, p);
        }
    }
    perm
}

/// Solve `T X = B` (`left`) or `X T = B` for triangular `T`.
pub(crate) fn solve_triangular(t: &M, b: &M, upper: bool, left: bool, unit: bool) -> M {
    if !left {
        // X T = B  <=>  Tᵀ Xᵀ = Bᵀ
        let x = solve_triangular(&transpose(t), &transpose(b), !upper, true, unit);
        return transpose(&x);
    }
    let n = t.r;
    let mut x = b.clone();
    let cols = b.c;
    let order: Vec<usize> = if upper {
        (0..n).rev().collect()
    } else {
        (0..n).collect()
    };
    for &i in &order {
        for col in 0..cols {
            let mut s = x.at(i, col);
            let range: Box<dyn Iterator<Item = usize>> = if upper {
                Box::new(i + 1..n)
            } else {
                Box::new(0..i)
            };
            for k in range {
                s -= t.at(i, k) * x.at(k, col);
            }
            x.set(i, col, if unit { s } else { s / t.at(i, i) });
        }
    }
    x
}

pub(crate) fn transpose(a: &M) -> M {
    let mut t = M::zeros(a.c, a.r);
    for i in 0..a.r {
        for j in 0..a.c {
            t.set(j, i, a.at(i, j));
        }
    }
    t
}

/// Cholesky `A = L Lᵀ` from the lower triangle: `L`, and `info` (0, or the
/// order of the first leading minor that is not positive-definite).
pub(crate) fn cholesky(a: &M) -> (M, i32) {
    let n = a.r;
    let mut l = M::zeros(n, n);
    for j in 0..n {
        let mut d = a.at(j, j);
        for k in 0..j {
            d -= l.at(j, k) * l.at(j, k);
        }
        if d <= 0.0 || d.is_nan() {
            return (l, j as i32 + 1);
        }
        let d = d.sqrt();
        l.set(j, j, d);
        for i in j + 1..n {
            let mut s = a.at(i, j);
            for k in 0..j {
                s -= l.at(i, k) * l.at(j, k);
            }
            l.set(i, j, s / d);
        }
    }
    (l, 0)
}

#[allow(clippy::needless_range_loop)] // matrix indices read best as indices
/// Householder QR in LAPACK's conventions (`geqrf`): the packed
/// reflectors with R on and above the diagonal, and `tau`.
pub(crate) fn geqrf(a: &M) -> (M, Vec<f64>) {
    let (m, n) = (a.r, a.c);
    let k = m.min(n);
    let mut q = a.clone();
    let mut tau = vec![0.0; k];
    for j in 0..k {
        let alpha = q.at(j, j);
        let xnorm = (j + 1..m)
            .map(|i| q.at(i, j) * q.at(i, j))
            .sum::<f64>()
            .sqrt();
        if xnorm == 0.0 {
            tau[j] = 0.0;
            continue;
        }
        // dlarfg: beta = -sign(alpha) * ||(alpha, x)||
        let beta = -alpha.signum() * alpha.hypot(xnorm);
        tau[j] = (beta - alpha) / beta;
        let scale = 1.0 / (alpha - beta);
        for i in j + 1..m {
            let v = q.at(i, j) * scale;
            q.set(i, j, v);
        }
        q.set(j, j, beta);
        // apply H = I - tau v vᵀ (v = [1, q[j+1.., j]]) to the columns right of j
        for c in j + 1..n {
            let mut s = q.at(j, c);
            for i in j + 1..m {
                s += q.at(i, j) * q.at(i, c);
            }
            s *= tau[j];
            let v = q.at(j, c) - s;
            q.set(j, c, v);
            for i in j + 1..m {
                let v = q.at(i, c) - s * q.at(i, j);
                q.set(i, c, v);
            }
        }
    }
    (q, tau)
}

/// The first `cols` columns of `H_0 H_1 ... H_{k-1}` from packed reflectors
/// (LAPACK's `orgqr`).
pub(crate) fn orgqr(v: &M, tau: &[f64], cols: usize) -> M {
    let m = v.r;
    let mut q = M::zeros(m, cols);
    for i in 0..m.min(cols) {
        q.set(i, i, 1.0);
    }
    for j in (0..tau.len()).rev() {
        for c in 0..cols {
            let mut s = q.at(j, c);
            for i in j + 1..m {
                s += v.at(i, j) * q.at(i, c);
            }
            s *= tau[j];
            let x = q.at(j, c) - s;
            q.set(j, c, x);
            for i in j + 1..m {
                let x = q.at(i, c) - s * v.at(i, j);
                q.set(i, c, x);
            }
        }
    }
    q
}

/// LAPACK's `info` of an LU: 0, or the 1-based index of the first zero
/// on U's diagonal.
fn lu_info(lu: &faer::linalg::solvers::PartialPivLu<f64>) -> i32 {
    let u = lu.U();
    (0..u.nrows().min(u.ncols()))
        .find(|&i| u[(i, i)] == 0.0)
        .map_or(0, |i| i as i32 + 1)
}

/// `Aᵀ`, without a copy: the row-major buffer of `A` read column-major.
fn transposed_view(a: &M) -> faer::MatRef<'_, f64> {
    faer::MatRef::from_column_major_slice(&a.d, a.c, a.r)
}

/// LAPACK's `info` for `A` when faer's LU of `Aᵀ` found it singular (the
/// first zero pivot of `A`'s own LU: the slow path, singular matrices only).
fn info_of(a: &M, lu_t: &faer::linalg::solvers::PartialPivLu<f64>) -> i32 {
    if lu_info(lu_t) == 0 {
        0
    } else {
        lu_factor(a).2.max(1)
    }
}

/// `A⁻¹ B` by faer's LU with partial pivoting (of `Aᵀ`, read in place,
/// then solved transposed: no transposing copy of `A`), and `info`.
pub(crate) fn lu_solve_dense(a: &M, b: &M) -> (M, i32) {
    let lu = transposed_view(a).partial_piv_lu();
    let x = lu.solve_transpose(b.to_faer());
    (M::from_faer(x.as_ref()), info_of(a, &lu))
}

/// `A⁻¹` by faer's LU of `Aᵀ`: `(Aᵀ)⁻¹ = (A⁻¹)ᵀ`, whose column-major
/// buffer is `A⁻¹` row-major; and `info`.
pub(crate) fn inverse(a: &M) -> (M, i32) {
    let lu = transposed_view(a).partial_piv_lu();
    let inv_t = lu.inverse();
    let n = a.r;
    let mut out = M::zeros(n, n);
    for j in 0..n {
        for i in 0..n {
            out.d[j * n + i] = inv_t[(i, j)];
        }
    }
    (out, info_of(a, &lu))
}

/// Symmetric eigendecomposition from the `lower` (or upper) triangle:
/// ascending eigenvalues and the eigenvectors in columns.
pub(crate) fn eigh(a: &M, lower: bool) -> Result<(Vec<f64>, M), String> {
    if a.r == 0 {
        return Ok((Vec::new(), M::zeros(0, 0)));
    }
    let side = if lower { Side::Lower } else { Side::Upper };
    let e = a
        .to_faer()
        .self_adjoint_eigen(side)
        .map_err(|e| format!("{e:?}"))?;
    let vals: Vec<f64> = (0..a.r).map(|i| e.S()[i]).collect();
    Ok((vals, M::from_faer(e.U())))
}

/// SVD: `U`, descending singular values, `Vᵀ`; thin unless `full`.
pub(crate) fn svd(a: &M, full: bool) -> Result<(M, Vec<f64>, M), String> {
    let k = a.r.min(a.c);
    if k == 0 {
        let (ur, vc) = if full { (a.r, a.c) } else { (0, 0) };
        let u = if full { M::eye(ur) } else { M::zeros(a.r, 0) };
        let vt = if full { M::eye(vc) } else { M::zeros(0, a.c) };
        return Ok((u, Vec::new(), vt));
    }
    let f = a.to_faer();
    let s = if full { f.svd() } else { f.thin_svd() }.map_err(|e| format!("{e:?}"))?;
    let vals: Vec<f64> = (0..k).map(|i| s.S()[i]).collect();
    Ok((M::from_faer(s.U()), vals, transpose(&M::from_faer(s.V()))))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(r: usize, c: usize, d: &[f64]) -> M {
        M {
            r,
            c,
            d: d.to_vec(),
        }
    }

    fn matmul(a: &M, b: &M) -> M {
        let mut o = M::zeros(a.r, b.c);
        for i in 0..a.r {
            for j in 0..b.c {
                o.set(i, j, (0..a.c).map(|k| a.at(i, k) * b.at(k, j)).sum());
            }
        }
        o
    }

    fn close(a: &M, b: &M) -> bool {
        a.d.iter().zip(&b.d).all(|(x, y)| (x - y).abs() < 1e-12)
    }

    #[test]
    fn lu_matches_lapack_pivots() {
        // getrf of [[1, 2], [3, 4]]: swap rows (ipiv = [2, 2]), L21 = 1/3
        let (lu, piv, info) = lu_factor(&m(2, 2, &[1.0, 2.0, 3.0, 4.0]));
        assert_eq!(piv, vec![2, 2]);
        assert_eq!(info, 0);
        assert!(close(
            &lu,
            &m(2, 2, &[3.0, 4.0, 1.0 / 3.0, 2.0 - 4.0 / 3.0])
        ));
    }

    #[test]
    fn qr_reconstructs_and_has_lapack_signs() {
        let a = m(3, 2, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        let (v, tau) = geqrf(&a);
        let q = orgqr(&v, &tau, 2);
        let mut r = M::zeros(2, 2);
        for i in 0..2 {
            for j in i..2 {
                r.set(i, j, v.at(i, j));
            }
        }
        assert!(close(&matmul(&q, &r), &a));
        // dlarfg makes R[0, 0] = -sign(a00) ||a[:, 0]||
        assert!((r.at(0, 0) + 35f64.sqrt()).abs() < 1e-12);
    }

    #[test]
    fn cholesky_reports_the_failing_minor() {
        let (_, info) = cholesky(&m(2, 2, &[1.0, 2.0, 2.0, 1.0]));
        assert_eq!(info, 2);
        let (l, info) = cholesky(&m(2, 2, &[4.0, 2.0, 2.0, 2.0]));
        assert_eq!(info, 0);
        assert!(close(&l, &m(2, 2, &[2.0, 0.0, 1.0, 1.0])));
    }

    #[test]
    fn solve_and_inverse_of_a_non_symmetric_matrix() {
        // [[1, 2], [3, 4]]⁻¹ = [[-2, 1], [1.5, -0.5]]; A x = [5, 6] at x = [-4, 4.5]
        let a = m(2, 2, &[1.0, 2.0, 3.0, 4.0]);
        let (inv, info) = inverse(&a);
        assert_eq!(info, 0);
        assert!(close(&inv, &m(2, 2, &[-2.0, 1.0, 1.5, -0.5])));
        let (x, info) = lu_solve_dense(&a, &m(2, 1, &[5.0, 6.0]));
        assert_eq!(info, 0);
        assert!(close(&x, &m(2, 1, &[-4.0, 4.5])));
        // singular: LAPACK's info from A's own LU (U[2, 2] = 0)
        assert_eq!(inverse(&m(2, 2, &[1.0, 2.0, 2.0, 4.0])).1, 2);
    }

    #[test]
    fn triangular_solves_left_and_right() {
        let t = m(2, 2, &[2.0, 1.0, 0.0, 4.0]);
        let b = m(2, 2, &[1.0, 0.0, 0.0, 1.0]);
        let x = solve_triangular(&t, &b, true, true, false);
        assert!(close(&matmul(&t, &x), &b));
        let y = solve_triangular(&t, &b, true, false, false);
        assert!(close(&matmul(&y, &t), &b));
    }
}

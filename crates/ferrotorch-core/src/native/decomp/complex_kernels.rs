//! The matrix algorithms under complex `torch.linalg`, on one row-major
//! `c64` matrix at a time, in LAPACK's conventions where torch exposes
//! them: LU with partial pivoting on `|re| + |im|` (`zgetrf`'s `izamax`),
//! Cholesky `A = L Lᴴ` from the lower triangle, Householder QR with real
//! `R` diagonal (`zgeqrf`/`zungqr`: `H = I − τ v vᴴ`, `β` real), triangular
//! solves; and faer for the Hermitian eigendecomposition and the SVD.

use faer::c64;
use faer::{Mat, Side};

/// A row-major complex matrix.
#[derive(Clone, Debug)]
pub(crate) struct CM {
    pub r: usize,
    pub c: usize,
    pub d: Vec<c64>,
}

impl CM {
    pub fn zeros(r: usize, c: usize) -> CM {
        CM {
            r,
            c,
            d: vec![c64::new(0.0, 0.0); r * c],
        }
    }

    #[inline]
    pub fn at(&self, i: usize, j: usize) -> c64 {
        self.d[i * self.c + j]
    }

    #[inline]
    pub fn set(&mut self, i: usize, j: usize, v: c64) {
        self.d[i * self.c + j] = v;
    }

    fn to_faer(&self) -> Mat<c64> {
        Mat::from_fn(self.r, self.c, |i, j| self.at(i, j))
    }

    fn from_faer(m: faer::MatRef<'_, c64>) -> CM {
        let mut out = CM::zeros(m.nrows(), m.ncols());
        for i in 0..m.nrows() {
            for j in 0..m.ncols() {
                out.set(i, j, m[(i, j)]);
            }
        }
        out
    }

    /// The conjugate transpose.
    pub fn adjoint(&self) -> CM {
        let mut out = CM::zeros(self.c, self.r);
        for i in 0..self.r {
            for j in 0..self.c {
                out.set(j, i, self.at(i, j).conj());
            }
        }
        out
    }
}

fn cabs1(z: c64) -> f64 {
    z.re.abs() + z.im.abs()
}

/// `(sign, log|det|)` by LU with partial pivoting: `sign = det / |det|`
/// (0 and −∞ for a singular matrix).
pub(crate) fn slogdet(a: &CM) -> (c64, f64) {
    let n = a.r;
    let mut lu = a.clone();
    let mut sign = c64::new(1.0, 0.0);
    let mut logabs = 0.0;
    for j in 0..n {
        let mut p = j;
        for i in j + 1..n {
            if cabs1(lu.at(i, j)) > cabs1(lu.at(p, j)) {
                p = i;
            }
        }
        if p != j {
            for c in 0..n {
                lu.d.swap(j * n + c, p * n + c);
            }
            sign = -sign;
        }
        let pivot = lu.at(j, j);
        if pivot == c64::new(0.0, 0.0) {
            return (c64::new(0.0, 0.0), f64::NEG_INFINITY);
        }
        let m = pivot.norm();
        sign *= pivot / m;
        logabs += m.ln();
        for i in j + 1..n {
            let l = lu.at(i, j) / pivot;
            for c in j + 1..n {
                let v = lu.at(i, c) - l * lu.at(j, c);
                lu.set(i, c, v);
            }
        }
    }
    (sign, logabs)
}

/// LU with partial pivoting (`zgetrf`, unblocked; the pivot is the first
/// entry of largest `|re| + |im|`): packed factors, 1-based row swaps and
/// `info` (0, or the 1-based index of the first zero pivot).
pub(crate) fn lu_factor(a: &CM) -> (CM, Vec<i32>, i32) {
    let (m, n) = (a.r, a.c);
    let mut lu = a.clone();
    let mut piv = Vec::with_capacity(m.min(n));
    let mut info = 0;
    for j in 0..m.min(n) {
        let mut p = j;
        for i in j + 1..m {
            if cabs1(lu.at(i, j)) > cabs1(lu.at(p, j)) {
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
        if pivot == c64::new(0.0, 0.0) {
            if info == 0 {
                info = j as i32 + 1;
            }
            continue;
        }
        for i in j + 1..m {
            let l = lu.at(i, j) / pivot;
            lu.set(i, j, l);
            for c in j + 1..n {
                let v = lu.at(i, c) - l * lu.at(j, c);
                lu.set(i, c, v);
            }
        }
    }
    (lu, piv, info)
}

/// `A = L Lᴴ` from the lower triangle: `L` and `info` (0, or the order of
/// the first minor that is not positive definite).
pub(crate) fn cholesky(a: &CM) -> (CM, i32) {
    let n = a.r;
    let mut l = CM::zeros(n, n);
    for j in 0..n {
        let mut d = a.at(j, j).re;
        for k in 0..j {
            d -= l.at(j, k).norm_sqr();
        }
        if d <= 0.0 || d.is_nan() {
            return (l, j as i32 + 1);
        }
        let djj = d.sqrt();
        l.set(j, j, c64::new(djj, 0.0));
        for i in j + 1..n {
            let mut s = a.at(i, j);
            for k in 0..j {
                s -= l.at(i, k) * l.at(j, k).conj();
            }
            l.set(i, j, s / djj);
        }
    }
    (l, 0)
}

/// Solve `T X = B` (`left`) or `X T = B` for triangular `T`.
pub(crate) fn solve_triangular(t: &CM, b: &CM, upper: bool, left: bool, unit: bool) -> CM {
    if !left {
        // X T = B  <=>  Tᴴ Xᴴ = Bᴴ
        let th = t.adjoint();
        return solve_triangular(&th, &b.adjoint(), !upper, true, unit).adjoint();
    }
    let n = t.r;
    let mut x = b.clone();
    for col in 0..b.c {
        let order: Vec<usize> = if upper {
            (0..n).rev().collect()
        } else {
            (0..n).collect()
        };
        for &i in &order {
            let mut s = x.at(i, col);
            let range: Vec<usize> = if upper {
                (i + 1..n).collect()
            } else {
                (0..i).collect()
            };
            for k in range {
                s -= t.at(i, k) * x.at(k, col);
            }
            if !unit {
                s /= t.at(i, i);
            }
            x.set(i, col, s);
        }
    }
    x
}

/// Householder QR as `zgeqrf`: the reflectors below the diagonal and `R`
/// on and above it, and `τ`.
pub(crate) fn geqrf(a: &CM) -> (CM, Vec<c64>) {
    let (m, n) = (a.r, a.c);
    let k = m.min(n);
    let mut q = a.clone();
    let mut taus = Vec::with_capacity(k);
    for j in 0..k {
        let alpha = q.at(j, j);
        let xnorm: f64 = (j + 1..m)
            .map(|i| q.at(i, j).norm_sqr())
            .sum::<f64>()
            .sqrt();
        if xnorm == 0.0 && alpha.im == 0.0 {
            taus.push(c64::new(0.0, 0.0));
            continue;
        }
        let norm = (alpha.norm_sqr() + xnorm * xnorm).sqrt();
        let beta = if alpha.re >= 0.0 { -norm } else { norm };
        let tau = c64::new((beta - alpha.re) / beta, -alpha.im / beta);
        let scale = c64::new(1.0, 0.0) / (alpha - beta);
        for i in j + 1..m {
            let v = q.at(i, j) * scale;
            q.set(i, j, v);
        }
        q.set(j, j, c64::new(beta, 0.0));
        // apply Hᴴ = I − conj(τ) v vᴴ to the remaining columns
        for c in j + 1..n {
            let mut w = q.at(j, c);
            for i in j + 1..m {
                w += q.at(i, j).conj() * q.at(i, c);
            }
            let f = tau.conj() * w;
            let v = q.at(j, c) - f;
            q.set(j, c, v);
            for i in j + 1..m {
                let v = q.at(i, c) - f * q.at(i, j);
                q.set(i, c, v);
            }
        }
        taus.push(tau);
    }
    (q, taus)
}

/// The first `cols` columns of `Q = H₁ H₂ … H_k` (`zungqr`).
pub(crate) fn ungqr(v: &CM, tau: &[c64], cols: usize) -> CM {
    let m = v.r;
    let mut q = CM::zeros(m, cols);
    for i in 0..m.min(cols) {
        q.set(i, i, c64::new(1.0, 0.0));
    }
    for j in (0..tau.len()).rev() {
        let t = tau[j];
        for c in 0..cols {
            let mut w = q.at(j, c);
            for i in j + 1..m {
                w += v.at(i, j).conj() * q.at(i, c);
            }
            let f = t * w;
            let val = q.at(j, c) - f;
            q.set(j, c, val);
            for i in j + 1..m {
                let val = q.at(i, c) - f * v.at(i, j);
                q.set(i, c, val);
            }
        }
    }
    q
}

/// Hermitian eigendecomposition from the `lower` (or upper) triangle:
/// ascending eigenvalues and the eigenvectors in columns.
pub(crate) fn eigh(a: &CM, lower: bool) -> Result<(Vec<f64>, CM), String> {
    if a.r == 0 {
        return Ok((Vec::new(), CM::zeros(0, 0)));
    }
    let side = if lower { Side::Lower } else { Side::Upper };
    let e = a
        .to_faer()
        .self_adjoint_eigen(side)
        .map_err(|e| format!("{e:?}"))?;
    let vals: Vec<f64> = (0..a.r).map(|i| e.S()[i].re).collect();
    Ok((vals, CM::from_faer(e.U())))
}

/// SVD: `U`, descending singular values, `Vᴴ`; thin unless `full`.
pub(crate) fn svd(a: &CM, full: bool) -> Result<(CM, Vec<f64>, CM), String> {
    let k = a.r.min(a.c);
    if k == 0 {
        let eye = |n: usize| {
            let mut m = CM::zeros(n, n);
            for i in 0..n {
                m.set(i, i, c64::new(1.0, 0.0));
            }
            m
        };
        let u = if full { eye(a.r) } else { CM::zeros(a.r, 0) };
        let vh = if full { eye(a.c) } else { CM::zeros(0, a.c) };
        return Ok((u, Vec::new(), vh));
    }
    let f = a.to_faer();
    let s = if full { f.svd() } else { f.thin_svd() }.map_err(|e| format!("{e:?}"))?;
    let vals: Vec<f64> = (0..k).map(|i| s.S()[i].re).collect();
    Ok((CM::from_faer(s.U()), vals, CM::from_faer(s.V()).adjoint()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cm(r: usize, c: usize, d: &[(f64, f64)]) -> CM {
        CM {
            r,
            c,
            d: d.iter().map(|&(a, b)| c64::new(a, b)).collect(),
        }
    }

    fn matmul(a: &CM, b: &CM) -> CM {
        let mut o = CM::zeros(a.r, b.c);
        for i in 0..a.r {
            for j in 0..b.c {
                let mut s = c64::new(0.0, 0.0);
                for k in 0..a.c {
                    s += a.at(i, k) * b.at(k, j);
                }
                o.set(i, j, s);
            }
        }
        o
    }

    fn close(a: &CM, b: &CM) -> bool {
        a.d.iter().zip(&b.d).all(|(x, y)| (x - y).norm() < 1e-12)
    }

    const A: [(f64, f64); 9] = [
        (4.0, 0.0),
        (1.0, 2.0),
        (0.5, -1.0),
        (1.0, -2.0),
        (6.0, 0.0),
        (0.0, 1.5),
        (0.5, 1.0),
        (0.0, -1.5),
        (5.0, 0.0),
    ];

    #[test]
    fn cholesky_and_qr_reconstruct() {
        let a = cm(3, 3, &A); // Hermitian positive definite
        let (l, info) = cholesky(&a);
        assert_eq!(info, 0);
        assert!(close(&matmul(&l, &l.adjoint()), &a));
        let b = cm(
            3,
            2,
            &[
                (1.0, 1.0),
                (2.0, 0.0),
                (0.0, -1.0),
                (3.0, 2.0),
                (1.0, 0.0),
                (0.0, 0.5),
            ],
        );
        let (v, tau) = geqrf(&b);
        let q = ungqr(&v, &tau, 2);
        let mut r = CM::zeros(2, 2);
        for i in 0..2 {
            for j in i..2 {
                r.set(i, j, v.at(i, j));
            }
            assert_eq!(r.at(i, i).im, 0.0); // real diagonal, as zgeqrf
        }
        assert!(close(&matmul(&q, &r), &b));
        assert!(close(
            &matmul(&q.adjoint(), &q),
            &cm(2, 2, &[(1.0, 0.0), (0.0, 0.0), (0.0, 0.0), (1.0, 0.0)])
        ));
    }

    #[test]
    fn slogdet_of_a_diagonal_and_a_permutation() {
        let d = cm(2, 2, &[(0.0, 2.0), (0.0, 0.0), (0.0, 0.0), (3.0, 0.0)]);
        let (s, l) = slogdet(&d);
        assert!((s - c64::new(0.0, 1.0)).norm() < 1e-15 && (l - 6f64.ln()).abs() < 1e-15);
        let p = cm(2, 2, &[(0.0, 0.0), (1.0, 0.0), (1.0, 0.0), (0.0, 0.0)]);
        assert!((slogdet(&p).0 - c64::new(-1.0, 0.0)).norm() < 1e-15);
    }

    #[test]
    fn eigh_svd_and_triangular_solve() {
        let a = cm(3, 3, &A);
        let (vals, v) = eigh(&a, true).unwrap();
        let mut d = CM::zeros(3, 3);
        for (i, &v) in vals.iter().enumerate() {
            d.set(i, i, c64::new(v, 0.0));
        }
        assert!(close(&matmul(&matmul(&v, &d), &v.adjoint()), &a));
        let (u, s, vh) = svd(&a, false).unwrap();
        let mut sd = CM::zeros(3, 3);
        for (i, &v) in s.iter().enumerate() {
            sd.set(i, i, c64::new(v, 0.0));
        }
        assert!(close(&matmul(&matmul(&u, &sd), &vh), &a));
        let (l, _) = cholesky(&a);
        let b = cm(3, 1, &[(1.0, 0.0), (0.0, 1.0), (2.0, -1.0)]);
        assert!(close(
            &matmul(&l, &solve_triangular(&l, &b, false, true, false)),
            &b
        ));
        let bt = b.adjoint();
        let x = solve_triangular(&l, &bt, false, false, false);
        assert!(close(&matmul(&x, &l), &bt));
    }
}

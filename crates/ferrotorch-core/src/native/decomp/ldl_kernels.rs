//! The Bunch-Kaufman kernels behind `ldl_factor`/`ldl_solve` (Note [LDLᵀ
//! in LAPACK's form]), one algorithm over real and complex entries:
//! LAPACK's `sytf2`/`sytrs` (`A = P L D Lᵀ Pᵀ`; real, and complex
//! symmetric with `hermitian=False`) and `zhetf2`/`zhetrs` (`hermitian=True`:
//! `A = P L D Lᴴ Pᵀ`, `D` Hermitian), with LAPACK's pivot choices on `|x|`
//! (real) or `|re| + |im|` (`izamax`'s measure).

use faer::c64;
use std::ops::{Add, Div, Mul, Sub};

/// A matrix entry: `f64` or `c64`.
pub(super) trait Field:
    Copy + Add<Output = Self> + Sub<Output = Self> + Mul<Output = Self> + Div<Output = Self>
{
    fn of(x: f64) -> Self;
    fn re(self) -> f64;
    fn conj(self) -> Self;
    /// LAPACK's pivot measure (`|x|`, or `|re| + |im|`).
    fn abs1(self) -> f64;
    fn modulus(self) -> f64;
}

impl Field for f64 {
    fn of(x: f64) -> f64 {
        x
    }
    fn re(self) -> f64 {
        self
    }
    fn conj(self) -> f64 {
        self
    }
    fn abs1(self) -> f64 {
        self.abs()
    }
    fn modulus(self) -> f64 {
        self.abs()
    }
}

impl Field for c64 {
    fn of(x: f64) -> c64 {
        c64::new(x, 0.0)
    }
    fn re(self) -> f64 {
        self.re
    }
    fn conj(self) -> c64 {
        c64::new(self.re, -self.im)
    }
    fn abs1(self) -> f64 {
        self.re.abs() + self.im.abs()
    }
    fn modulus(self) -> f64 {
        self.re.hypot(self.im)
    }
}

/// A row-major `n × c` matrix of entries over a slice.
struct Mat<'a, T> {
    d: &'a mut [T],
    c: usize,
}

impl<T: Field> Mat<'_, T> {
    fn at(&self, i: usize, j: usize) -> T {
        self.d[i * self.c + j]
    }
    fn set(&mut self, i: usize, j: usize, v: T) {
        self.d[i * self.c + j] = v;
    }
}

/// Bunch-Kaufman on one `n × n` row-major matrix (its lower triangle), in
/// place: `d` becomes `LD` (upper triangle zeroed); returns the 1-based
/// pivots and LAPACK's `info` (the first zero pivot, 1-based; 0 when none).
/// `herm` only matters for complex entries.
pub(super) fn factor<T: Field>(d: &mut [T], n: usize, herm: bool) -> (Vec<i32>, i32) {
    let mut a = Mat { d, c: n };
    let real = T::of;
    let cabs1 = T::abs1;
    let alpha = (1.0 + 17f64.sqrt()) / 8.0;
    let mut piv = vec![0i32; n];
    let mut info = 0;
    let mut k = 0;
    // the measure of a diagonal entry: a Hermitian matrix's diagonal is real
    let diag = |z: T| if herm { z.re().abs() } else { z.abs1() };
    while k < n {
        let mut kstep = 1;
        let absakk = diag(a.at(k, k));
        let (mut imax, mut colmax) = (k, 0.0f64);
        for i in k + 1..n {
            if cabs1(a.at(i, k)) > colmax {
                (imax, colmax) = (i, cabs1(a.at(i, k)));
            }
        }
        let kp;
        if absakk.max(colmax) == 0.0 || absakk.is_nan() {
            if info == 0 {
                info = k as i32 + 1;
            }
            kp = k;
            if herm {
                a.set(k, k, real(a.at(k, k).re()));
            }
        } else {
            if absakk >= alpha * colmax {
                kp = k;
            } else {
                let mut rowmax = 0.0f64;
                for j in k..imax {
                    rowmax = rowmax.max(cabs1(a.at(imax, j)));
                }
                for j in imax + 1..n {
                    rowmax = rowmax.max(cabs1(a.at(j, imax)));
                }
                if absakk >= alpha * colmax * (colmax / rowmax) {
                    kp = k;
                } else if diag(a.at(imax, imax)) >= alpha * rowmax {
                    kp = imax;
                } else {
                    kp = imax;
                    kstep = 2;
                }
            }
            let kk = k + kstep - 1;
            if kp != kk {
                for i in kp + 1..n {
                    let t = a.at(i, kk);
                    a.set(i, kk, a.at(i, kp));
                    a.set(i, kp, t);
                }
                for j in kk + 1..kp {
                    let t = a.at(j, kk);
                    if herm {
                        a.set(j, kk, a.at(kp, j).conj());
                        a.set(kp, j, t.conj());
                    } else {
                        a.set(j, kk, a.at(kp, j));
                        a.set(kp, j, t);
                    }
                }
                if herm {
                    a.set(kp, kk, a.at(kp, kk).conj());
                    let r1 = a.at(kk, kk).re();
                    a.set(kk, kk, real(a.at(kp, kp).re()));
                    a.set(kp, kp, real(r1));
                } else {
                    let t = a.at(kk, kk);
                    a.set(kk, kk, a.at(kp, kp));
                    a.set(kp, kp, t);
                }
                if kstep == 2 {
                    if herm {
                        a.set(k, k, real(a.at(k, k).re()));
                    }
                    let t = a.at(k + 1, k);
                    a.set(k + 1, k, a.at(kp, k));
                    a.set(kp, k, t);
                }
            } else if herm {
                a.set(k, k, real(a.at(k, k).re()));
                if kstep == 2 {
                    a.set(k + 1, k + 1, real(a.at(k + 1, k + 1).re()));
                }
            }
            if kstep == 1 {
                let d11 = if herm {
                    real(1.0 / a.at(k, k).re())
                } else {
                    real(1.0) / a.at(k, k)
                };
                for j in k + 1..n {
                    let xj = if herm { a.at(j, k).conj() } else { a.at(j, k) };
                    for i in j..n {
                        let v = a.at(i, j) - d11 * a.at(i, k) * xj;
                        a.set(i, j, v);
                    }
                    if herm {
                        a.set(j, j, real(a.at(j, j).re()));
                    }
                }
                for i in k + 1..n {
                    a.set(i, k, a.at(i, k) * d11);
                }
            } else if k + 2 < n {
                if herm {
                    let d = a.at(k + 1, k).modulus();
                    let d11 = a.at(k + 1, k + 1).re() / d;
                    let d22 = a.at(k, k).re() / d;
                    let tt = 1.0 / (d11 * d22 - 1.0);
                    let d21 = a.at(k + 1, k) / real(d);
                    let d = tt / d;
                    for j in k + 2..n {
                        let wk = real(d) * (real(d11) * a.at(j, k) - d21 * a.at(j, k + 1));
                        let wkp1 = real(d) * (real(d22) * a.at(j, k + 1) - d21.conj() * a.at(j, k));
                        for i in j..n {
                            let v =
                                a.at(i, j) - a.at(i, k) * wk.conj() - a.at(i, k + 1) * wkp1.conj();
                            a.set(i, j, v);
                        }
                        a.set(j, k, wk);
                        a.set(j, k + 1, wkp1);
                        a.set(j, j, real(a.at(j, j).re()));
                    }
                } else {
                    let one = real(1.0);
                    let d21 = a.at(k + 1, k);
                    let d11 = a.at(k + 1, k + 1) / d21;
                    let d22 = a.at(k, k) / d21;
                    let t = one / (d11 * d22 - one);
                    let d21 = t / d21;
                    for j in k + 2..n {
                        let wk = d21 * (d11 * a.at(j, k) - a.at(j, k + 1));
                        let wkp1 = d21 * (d22 * a.at(j, k + 1) - a.at(j, k));
                        for i in j..n {
                            let v = a.at(i, j) - a.at(i, k) * wk - a.at(i, k + 1) * wkp1;
                            a.set(i, j, v);
                        }
                        a.set(j, k, wk);
                        a.set(j, k + 1, wkp1);
                    }
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
    for i in 0..n {
        for j in i + 1..n {
            a.set(i, j, real(0.0));
        }
    }
    (piv, info)
}

/// `sytrs`/`zhetrs` (lower): solve `A X = B` from [`factor`]'s `n × n`
/// result `ld` and pivots; `b` (`n × m`, row-major) is overwritten with `X`.
pub(super) fn solve<T: Field>(ld: &[T], n: usize, piv: &[i32], b: &mut [T], m: usize, herm: bool) {
    let l = |i: usize, j: usize| ld[i * n + j];
    let mut b = Mat { d: b, c: m };
    let b = &mut b;
    let real = T::of;
    let cj = |z: T| if herm { z.conj() } else { z };
    let swap = |b: &mut Mat<'_, T>, i: usize, j: usize| {
        if i != j {
            for c in 0..m {
                let t = b.at(i, c);
                b.set(i, c, b.at(j, c));
                b.set(j, c, t);
            }
        }
    };
    let one = real(1.0);
    let mut k = 0;
    while k < n {
        if piv[k] > 0 {
            swap(b, k, piv[k] as usize - 1);
            for i in k + 1..n {
                for c in 0..m {
                    let v = b.at(i, c) - l(i, k) * b.at(k, c);
                    b.set(i, c, v);
                }
            }
            let s = if herm {
                real(1.0 / l(k, k).re())
            } else {
                one / l(k, k)
            };
            for c in 0..m {
                b.set(k, c, b.at(k, c) * s);
            }
            k += 1;
        } else {
            swap(b, k + 1, (-piv[k]) as usize - 1);
            for i in k + 2..n {
                for c in 0..m {
                    let v = b.at(i, c) - l(i, k) * b.at(k, c) - l(i, k + 1) * b.at(k + 1, c);
                    b.set(i, c, v);
                }
            }
            let akm1k = l(k + 1, k);
            let akm1 = l(k, k) / cj(akm1k);
            let ak = l(k + 1, k + 1) / akm1k;
            let denom = akm1 * ak - one;
            for c in 0..m {
                let bkm1 = b.at(k, c) / cj(akm1k);
                let bk = b.at(k + 1, c) / akm1k;
                b.set(k, c, (ak * bkm1 - bk) / denom);
                b.set(k + 1, c, (akm1 * bk - bkm1) / denom);
            }
            k += 2;
        }
    }
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
                    let v = b.at(r, c) - cj(l(i, r)) * b.at(i, c);
                    b.set(r, c, v);
                }
            }
        }
        swap(b, kk, piv[kk].unsigned_abs() as usize - 1);
        k -= rows.len();
    }
}

//! `torch.linalg` ops made of the others: vector and matrix norms,
//! `matrix_power`, `matrix_exp`, `multi_dot`, `vecdot`, `tensorinv`,
//! `tensorsolve` and `vander`.

use crate::dispatch::Registry;
use crate::dtype::DType;
use crate::error::Result;
use crate::native::movement::cat;
use crate::scalar::Scalar;
use crate::tensor::layout::wrap_dim;
use crate::tensor::Tensor;

fn matrix_dims(op: &str, a: &Tensor, dim: &[i64]) -> Result<(i64, i64)> {
    crate::ensure!(
        dim.len() == 2,
        Runtime,
        "{op}: dim must be a 2-tuple. Got {dim:?}"
    );
    crate::ensure!(
        a.dim() >= 2,
        Runtime,
        "{op}: The input tensor A must have at least 2 dimensions."
    );
    let (d0, d1) = (wrap_dim(dim[0], a.dim())?, wrap_dim(dim[1], a.dim())?);
    crate::ensure!(
        d0 != d1,
        Runtime,
        "{op}: dims must be different. Got ({}, {})",
        dim[0],
        dim[1]
    );
    crate::ensure!(
        a.is_floating_point() || a.is_complex(),
        Runtime,
        "{op}: Expected a floating point or complex tensor as input. Got {}",
        a.dtype().name_title()
    );
    Ok((d0 as i64, d1 as i64))
}

impl Tensor {
    /// `torch.linalg.vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None)`.
    pub fn linalg_vector_norm(
        &self,
        ord: f64,
        dim: Option<&[i64]>,
        keepdim: bool,
        dtype: Option<DType>,
    ) -> Result<Tensor> {
        let x = match dtype {
            Some(d) => self.to_dtype(d)?,
            None => Clone::clone(self),
        };
        // a complex vector's norm is its moduli's (real) norm
        let x = if x.is_complex() { x.abs()? } else { x };
        crate::ensure!(
            x.is_floating_point(),
            Runtime,
            "linalg.vector_norm: Expected a floating point or complex tensor as input. Got {}",
            x.dtype().name_title()
        );
        match dim {
            Some(d) if !d.is_empty() => x.norm(ord, Some(d), keepdim),
            _ => x.norm(ord, None, keepdim),
        }
    }

    /// The singular-value matrix norms (2, -2, nuc) over `dims`.
    fn svd_norm(&self, dims: (i64, i64), keepdim: bool, pick: &str) -> Result<Tensor> {
        let moved = self.movedim(&[dims.0, dims.1], &[-2, -1])?;
        let s = moved.linalg_svdvals()?;
        let r = match pick {
            "nuc" => s.sum_dim(Some(&[-1]), false, None)?,
            "max" => s.amax(&[-1], false)?,
            _ => s.amin(&[-1], false)?,
        };
        if keepdim {
            let (lo, hi) = if dims.0 < dims.1 {
                (dims.0, dims.1)
            } else {
                (dims.1, dims.0)
            };
            return r.unsqueeze(lo)?.unsqueeze(hi);
        }
        Ok(r)
    }

    /// `torch.linalg.matrix_norm(A, ord, dim=(-2, -1), keepdim=False)` for a numeric `ord`
    /// (±1, ±2, ±inf).
    pub fn linalg_matrix_norm(&self, ord: f64, dim: &[i64], keepdim: bool) -> Result<Tensor> {
        let op = "linalg.matrix_norm";
        let (d0, d1) = matrix_dims(op, self, dim)?;
        let abs = self.abs()?;
        let r = if ord == 2.0 || ord == -2.0 {
            return self.svd_norm((d0, d1), keepdim, if ord > 0.0 { "max" } else { "min" });
        } else if ord.abs() == 1.0 {
            // the largest (smallest) column sum
            let c = abs.sum_dim(Some(&[d0]), true, None)?;
            if ord > 0.0 {
                c.amax(&[d1], true)?
            } else {
                c.amin(&[d1], true)?
            }
        } else if ord.is_infinite() {
            let c = abs.sum_dim(Some(&[d1]), true, None)?;
            if ord > 0.0 {
                c.amax(&[d0], true)?
            } else {
                c.amin(&[d0], true)?
            }
        } else {
            crate::bail!(Runtime, "{op}: Order {ord} not supported.");
        };
        if keepdim {
            Ok(r)
        } else {
            r.squeeze_dims(&[d0, d1])
        }
    }

    /// `torch.linalg.matrix_norm` with `ord` `'fro'` or `'nuc'`.
    pub fn linalg_matrix_norm_str(&self, ord: &str, dim: &[i64], keepdim: bool) -> Result<Tensor> {
        let op = "linalg.matrix_norm";
        let (d0, d1) = matrix_dims(op, self, dim)?;
        match ord {
            "fro" if self.is_complex() => self.abs()?.norm(2.0, Some(&[d0, d1]), keepdim),
            "fro" => self.norm(2.0, Some(&[d0, d1]), keepdim),
            "nuc" => self.svd_norm((d0, d1), keepdim, "nuc"),
            _ => crate::bail!(Runtime, "{op}: Order {ord} not supported."),
        }
    }

    /// `torch.linalg.norm(A, ord=None, dim=None, keepdim=False)`: a vector
    /// or matrix norm, as `ord` and `dim` say.
    pub fn linalg_norm(
        &self,
        ord: Option<f64>,
        ord_str: Option<&str>,
        dim: Option<&[i64]>,
        keepdim: bool,
        dtype: Option<DType>,
    ) -> Result<Tensor> {
        let x = match dtype {
            Some(d) => self.to_dtype(d)?,
            None => Clone::clone(self),
        };
        let matrix = match dim {
            Some(d) => d.len() == 2,
            None => ord_str.is_some() || (ord.is_some() && x.dim() == 2),
        };
        if let Some(d) = dim {
            crate::ensure!(
                d.len() <= 2,
                Runtime,
                "linalg.norm: If dim is specified, it must be of length 1 or 2. Got {d:?}"
            );
        } else if ord.is_some() || ord_str.is_some() {
            crate::ensure!(
                x.dim() == 1 || x.dim() == 2,
                Runtime,
                "linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got {}D.",
                x.dim()
            );
        }
        if matrix {
            let d = dim.map_or(vec![-2, -1], <[i64]>::to_vec);
            return match ord_str {
                Some(s) => x.linalg_matrix_norm_str(s, &d, keepdim),
                None => match ord {
                    Some(o) => x.linalg_matrix_norm(o, &d, keepdim),
                    None => x.linalg_matrix_norm_str("fro", &d, keepdim),
                },
            };
        }
        crate::ensure!(
            ord_str.is_none(),
            Runtime,
            "linalg.norm: a string ord needs a matrix (2 dims)"
        );
        x.linalg_vector_norm(ord.unwrap_or(2.0), dim, keepdim, None)
    }

    /// `torch.linalg.matrix_power(A, n)`: `A` multiplied by itself `n` times
    /// (`n < 0`: of its inverse; 0: the identity).
    pub fn linalg_matrix_power(&self, n: i64) -> Result<Tensor> {
        super::check_matrix_c("linalg.matrix_power", self, true)?;
        let k = self.shape()[self.dim() - 1];
        if n == 0 {
            // the identity, still an output of `self` (gradient zero), as torch
            let out = self.deep_clone()?;
            out.copy_(&Tensor::eye(k, None, self.dtype())?.broadcast_to(self.shape())?)?;
            return Ok(out);
        }
        let base = if n < 0 {
            self.linalg_inv()?
        } else {
            Clone::clone(self)
        };
        let mut e = n.unsigned_abs();
        let mut result: Option<Tensor> = None;
        let mut p = base;
        loop {
            if e & 1 == 1 {
                result = Some(match result {
                    None => Clone::clone(&p),
                    Some(r) => r.matmul(&p)?,
                });
            }
            e >>= 1;
            if e == 0 {
                break;
            }
            p = p.matmul(&p)?;
        }
        Ok(result.expect("n != 0 sets a result"))
    }

    /// `torch.linalg.matrix_exp`: the matrix exponential, by scaling and
    /// squaring a degree-18 Taylor polynomial (tensor ops throughout, so
    /// it is differentiable).
    pub fn linalg_matrix_exp(&self) -> Result<Tensor> {
        super::check_matrix_c("linalg.matrix_exp", self, true)?;
        let k = self.shape()[self.dim() - 1];
        if self.numel() == 0 {
            return self.deep_clone();
        }
        // the largest 1-norm in the batch sets the scaling
        let norm = {
            let _g = crate::autograd::no_grad();
            self.abs()?
                .sum_dim(Some(&[-2]), false, None)?
                .amax(&[], false)?
                .item_f64()?
        };
        let s = if norm > 0.5 {
            (norm / 0.5).log2().ceil() as i32
        } else {
            0
        };
        // in f64: the squarings multiply rounding errors (Note [Factorizations in f64])
        let wide = if self.is_complex() {
            DType::C128
        } else {
            DType::F64
        };
        let a = self.to_dtype(wide)?.div(2f64.powi(s))?;
        let eye = Tensor::eye(k, None, wide)?;
        // Horner: I + A/1 (I + A/2 (I + ... (I + A/18)))
        let mut p = eye.broadcast_to(self.shape())?;
        for j in (1..=18).rev() {
            p = eye.add(&a.matmul(&p)?.div(j as f64)?)?;
        }
        for _ in 0..s {
            p = p.matmul(&p)?;
        }
        p.to_dtype(self.dtype())
    }

    /// `torch.linalg.vecdot(x, y, *, dim=-1)`.
    pub fn linalg_vecdot(&self, y: &Tensor, dim: i64) -> Result<Tensor> {
        // the first argument conjugated, as torch (⟨x, y⟩ = Σ conj(x) y)
        let x = if self.is_complex() {
            self.conj()?
        } else {
            Clone::clone(self)
        };
        x.mul(y)?.sum_dim(Some(&[dim]), false, None)
    }

    /// `torch.linalg.tensorinv(A, ind=2)`.
    pub fn linalg_tensorinv(&self, ind: i64) -> Result<Tensor> {
        crate::ensure!(
            ind > 0,
            Runtime,
            "Expected a strictly positive integer for 'ind', but got {ind}"
        );
        let ind = ind as usize;
        crate::ensure!(
            ind <= self.dim(),
            Runtime,
            "linalg.tensorinv: ind must not exceed the number of dims"
        );
        let (lead, rest) = self.shape().split_at(ind);
        let (p, q): (usize, usize) = (lead.iter().product(), rest.iter().product());
        crate::ensure!(
            p == q,
            Runtime,
            "Expected self to satisfy the requirement prod(self.shape[ind:]) == prod(self.shape[:ind]), but got {q} != {p}"
        );
        let mut out: Vec<i64> = rest.iter().map(|&s| s as i64).collect();
        out.extend(lead.iter().map(|&s| s as i64));
        self.reshape(&[p as i64, q as i64])?
            .linalg_inv()?
            .reshape(&out)
    }

    /// `torch.linalg.tensorsolve(A, B, dims=None)`.
    pub fn linalg_tensorsolve(&self, b: &Tensor, dims: Option<&[i64]>) -> Result<Tensor> {
        let a = match dims {
            Some(d) if !d.is_empty() => {
                let n = self.dim() as i64;
                let dest: Vec<i64> = (n - d.len() as i64..n).collect();
                self.movedim(d, &dest)?
            }
            _ => Clone::clone(self),
        };
        let nb = b.dim();
        crate::ensure!(
            nb <= a.dim(),
            Runtime,
            "linalg.tensorsolve: B has more dims than A"
        );
        let rows: usize = b.shape().iter().product();
        let rest = &a.shape()[nb..];
        let cols: usize = rest.iter().product();
        crate::ensure!(
            rows == cols,
            Runtime,
            "Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == prod(self.shape[:other.ndim]), but got {cols} != {rows}"
        );
        let out: Vec<i64> = rest.iter().map(|&s| s as i64).collect();
        a.reshape(&[rows as i64, cols as i64])?
            .linalg_solve(&b.reshape(&[rows as i64])?, true)?
            .reshape(&out)
    }

    /// `torch.linalg.vander(x, N=None)`: columns `x^0, x^1, ..., x^(N-1)`.
    pub fn linalg_vander(&self, n: Option<i64>) -> Result<Tensor> {
        let n = n.unwrap_or(self.shape().last().copied().unwrap_or(1) as i64);
        crate::ensure!(n > 1, Runtime, "N must be greater than 1.");
        let x = if self.dtype() == DType::Bool {
            self.to_dtype(DType::I64)?
        } else {
            Clone::clone(self)
        };
        // a 0-d x is one point, as torch
        let x = x.atleast_1d()?;
        let ones = x.unsqueeze(-1)?.ones_like()?;
        if x.is_complex() {
            // cumprod has no complex kernel: the powers one product at a time
            let col = x.unsqueeze(-1)?;
            let mut cols = vec![ones];
            for _ in 1..n {
                let next = cols.last().expect("starts with ones").mul(&col)?;
                cols.push(next);
            }
            return cat(&cols, -1);
        }
        let mut shape: Vec<i64> = x.shape().iter().map(|&s| s as i64).collect();
        shape.push(n - 1);
        let powers = x.unsqueeze(-1)?.expand(&shape)?.cumprod(-1, None)?;
        cat(&[ones, powers], -1)
    }
}

/// `torch.linalg.multi_dot`: the product of the matrices (the first and
/// last may be vectors).
pub fn multi_dot(tensors: &[Tensor]) -> Result<Tensor> {
    let n = tensors.len();
    crate::ensure!(
        n >= 2,
        Runtime,
        "multi_dot(): expected at least 2 tensors but got {n}"
    );
    for (i, t) in tensors.iter().enumerate() {
        let ok = if i == 0 || i == n - 1 {
            t.dim() == 1 || t.dim() == 2
        } else {
            t.dim() == 2
        };
        crate::ensure!(
            ok,
            Runtime,
            "multi_dot(): tensor {i} must be {}, got {}D",
            if i == 0 || i == n - 1 {
                "1D or 2D"
            } else {
                "2D"
            },
            t.dim()
        );
    }
    let first_vec = tensors[0].dim() == 1;
    let last_vec = tensors[n - 1].dim() == 1;
    let mut acc = if first_vec {
        tensors[0].unsqueeze(0)?
    } else {
        Clone::clone(&tensors[0])
    };
    for (i, t) in tensors.iter().enumerate().skip(1) {
        let t = if i == n - 1 && last_vec {
            t.unsqueeze(-1)?
        } else {
            Clone::clone(t)
        };
        acc = acc.matmul(&t)?;
    }
    match (first_vec, last_vec) {
        (true, true) => acc.reshape(&[]),
        (true, false) => acc.squeeze_dims(&[0]),
        (false, true) => acc.squeeze_dims(&[-1]),
        _ => Ok(acc),
    }
}

pub(crate) fn register(r: &mut Registry) {
    type T = Tensor;
    type Dt = Option<DType>;
    r.def_typed(
        "linalg_vector_norm(Tensor self, Scalar ord=2, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
        |x: T, o: Scalar, d: Option<Vec<i64>>, k: bool, dt: Dt| x.linalg_vector_norm(o.to_f64(), d.as_deref(), k, dt),
    );
    r.def_typed(
        "linalg_matrix_norm(Tensor self, Scalar ord, int[] dim=[-2,-1], bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
        |x: T, o: Scalar, d: Vec<i64>, k: bool, dt: Dt| {
            dt.map_or(Ok(Clone::clone(&x)), |t| x.to_dtype(t))?.linalg_matrix_norm(o.to_f64(), &d, k)
        },
    );
    r.def_typed(
        "linalg_matrix_norm.str_ord(Tensor self, str ord='fro', int[] dim=[-2,-1], bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
        |x: T, o: String, d: Vec<i64>, k: bool, dt: Dt| {
            dt.map_or(Ok(Clone::clone(&x)), |t| x.to_dtype(t))?.linalg_matrix_norm_str(&o, &d, k)
        },
    );
    r.def_typed(
        "linalg_norm(Tensor self, Scalar? ord=None, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
        |x: T, o: Option<Scalar>, d: Option<Vec<i64>>, k: bool, dt: Dt| {
            x.linalg_norm(o.map(|s| s.to_f64()), None, d.as_deref(), k, dt)
        },
    );
    r.def_typed(
        "linalg_norm.ord_str(Tensor self, str ord, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
        |x: T, o: String, d: Option<Vec<i64>>, k: bool, dt: Dt| x.linalg_norm(None, Some(&o), d.as_deref(), k, dt),
    );
    // torch.norm(input, p='fro'|'nuc', dim=None, keepdim=False): the
    // matrix norms by name ('fro' over every dim when dim is None)
    r.def_typed(
        "norm.str(Tensor self, str p, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
        |x: T, p: String, d: Option<Vec<i64>>, k: bool, dt: Dt| {
            let x = dt.map_or(Ok(Clone::clone(&x)), |t| x.to_dtype(t))?;
            match (p.as_str(), d.as_deref()) {
                ("fro", None) => x.norm(2.0, None, k),
                ("fro", Some(d)) if d.len() == 1 => x.norm(2.0, Some(d), k),
                (s, Some(d)) => x.linalg_matrix_norm_str(s, d, k),
                (s, None) => x.linalg_matrix_norm_str(s, &[-2, -1], k),
            }
        },
    );
    r.def_typed(
        "linalg_matrix_power(Tensor self, int n) -> Tensor",
        |x: T, n: i64| x.linalg_matrix_power(n),
    );
    r.def_typed(
        "matrix_power(Tensor self, int n) -> Tensor",
        |x: T, n: i64| x.linalg_matrix_power(n),
    );
    r.def_typed("linalg_matrix_exp(Tensor self) -> Tensor", |x: T| {
        x.linalg_matrix_exp()
    });
    r.def_typed("matrix_exp(Tensor self) -> Tensor", |x: T| {
        x.linalg_matrix_exp()
    });
    r.def_typed(
        "linalg_multi_dot(Tensor[] tensors) -> Tensor",
        |t: Vec<T>| multi_dot(&t),
    );
    r.def_typed("chain_matmul(Tensor[] matrices) -> Tensor", |t: Vec<T>| {
        if t.len() == 1 {
            Ok(Clone::clone(&t[0]))
        } else {
            multi_dot(&t)
        }
    });
    r.def_typed(
        "linalg_vecdot(Tensor x, Tensor y, *, int dim=-1) -> Tensor",
        |x: T, y: T, d: i64| x.linalg_vecdot(&y, d),
    );
    r.def_typed(
        "linalg_tensorinv(Tensor self, int ind=2) -> Tensor",
        |x: T, i: i64| x.linalg_tensorinv(i),
    );
    r.def_typed(
        "linalg_tensorsolve(Tensor self, Tensor other, int[]? dims=None) -> Tensor",
        |x: T, o: T, d: Option<Vec<i64>>| x.linalg_tensorsolve(&o, d.as_deref()),
    );
    r.def_typed(
        "linalg_vander(Tensor x, *, SymInt? N=None) -> Tensor",
        |x: T, n: Option<i64>| x.linalg_vander(n),
    );
    r.def_typed(
        "linalg_diagonal(Tensor(a) A, *, int offset=0, int dim1=-2, int dim2=-1) -> Tensor(a)",
        |x: T, o: i64, a: i64, b: i64| x.diagonal(o, a, b),
    );
}

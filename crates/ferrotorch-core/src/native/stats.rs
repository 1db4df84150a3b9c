//! Statistical reductions: `var`/`std` (with `correction`), `var_mean`/
//! `std_mean`, `logsumexp`, `norm`, `median`. All accumulate in f64 and
//! use the row layout of Note [Reduction layout].

use super::reduce::{map_rows, map_rows2, rows};
use crate::dispatch::Registry;
use crate::dtype::{get_default_dtype, DType, Element};
use crate::error::Result;
use crate::scalar::Scalar;
use crate::tensor::Tensor;

fn float_input(op: &str, x: &Tensor) -> Result<(Tensor, DType)> {
    crate::ensure!(
        x.is_floating_point(),
        NotImplemented,
        "{op}(): input dtype should be either floating point or complex dtypes. Got {} instead.",
        x.dtype().name_title()
    );
    Ok((x.to_dtype(DType::F64)?, x.dtype()))
}

/// Two-pass variance of a row with `correction` (Bessel's for 1).
fn row_var(row: &[f64], correction: f64) -> (f64, f64) {
    let n = row.len() as f64;
    let mean = row.iter().sum::<f64>() / n;
    let ss: f64 = row.iter().map(|v| (v - mean) * (v - mean)).sum();
    let dof = (n - correction).max(0.0);
    (ss / dof, mean)
}

crate::ops! {
    register = register_ops;
    /// Variance over `dims` (`None` = all) with `correction` (default 1).
    #[op = "var.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> Tensor"]
    pub fn var(&self, dims: Option<&[i64]>, correction: Option<f64>, keepdim: bool) -> Result<Tensor> {
        Ok(self
            .spread("VarBackward0", false, dims, correction, keepdim)?
            .0)
    }

    /// Standard deviation over `dims` with `correction` (default 1).
    #[op = "std.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> Tensor"]
    pub fn std(&self, dims: Option<&[i64]>, correction: Option<f64>, keepdim: bool) -> Result<Tensor> {
        Ok(self
            .spread("StdBackward0", true, dims, correction, keepdim)?
            .0)
    }

    /// (variance, mean) in one pass over the data (`torch.var_mean`).
    #[op = "var_mean.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> (Tensor, Tensor)"]
    pub fn var_mean(&self, dims: Option<&[i64]>, correction: Option<f64>, keepdim: bool) -> Result<(Tensor, Tensor)> {
        self.spread("VarMeanBackward0", false, dims, correction, keepdim)
    }

    /// (standard deviation, mean) (`torch.std_mean`).
    #[op = "std_mean.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> (Tensor, Tensor)"]
    pub fn std_mean(&self, dims: Option<&[i64]>, correction: Option<f64>, keepdim: bool) -> Result<(Tensor, Tensor)> {
        self.spread("StdMeanBackward0", true, dims, correction, keepdim)
    }

    /// (variance or standard deviation, mean), recorded as node `name`.
    fn spread(
        &self,
        name: &'static str,
        std: bool,
        dims: Option<&[i64]>,
        correction: Option<f64>,
        keepdim: bool,
    ) -> Result<(Tensor, Tensor)> {
        let c = correction.unwrap_or(1.0);
        let (v, m) = crate::autograd::raw(&[self], || -> Result<(Tensor, Tensor)> {
            let (x, dt) = float_input(if std { "std_mean" } else { "var_mean" }, self)?;
            let rw = rows("var_mean", &x, dims, keepdim)?;
            let (var, mean) = map_rows2::<f64, f64, f64>(&rw, DType::F64, |row| {
                let (v, m) = row_var(row, c);
                (if std { v.sqrt() } else { v }, m)
            })?;
            Ok((var.to_dtype(dt)?, mean.to_dtype(dt)?))
        })?;
        crate::autograd::derivatives::reduce::var_std_mean(name, std, self, dims, c, keepdim, v, m)
    }

    /// `log(sum(exp(x)))` over `dims`, stable (max subtracted first).
    /// Integer inputs give the default float dtype.
    #[op = "logsumexp(Tensor self, int[1] dim, bool keepdim=False) -> Tensor"]
    pub fn logsumexp(&self, dims: &[i64], keepdim: bool) -> Result<Tensor> {
        let y = crate::autograd::raw(&[self], || self.logsumexp_impl(dims, keepdim))?;
        crate::autograd::derivatives::reduce::logsumexp(self, dims, keepdim, y)
    }

    fn logsumexp_impl(&self, dims: &[i64], keepdim: bool) -> Result<Tensor> {
        let dt = if self.is_floating_point() {
            self.dtype()
        } else {
            get_default_dtype()
        };
        let x = self.to_dtype(DType::F64)?;
        let rw = rows("logsumexp", &x, Some(dims), keepdim)?;
        let r = map_rows::<f64, f64>(&rw, DType::F64, |row| {
            let m = row.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b));
            if m.is_infinite() {
                return if row.iter().any(|v| v.is_nan()) {
                    f64::NAN
                } else {
                    m
                };
            }
            m + row.iter().map(|v| (v - m).exp()).sum::<f64>().ln()
        })?;
        r.to_dtype(dt)
    }

    /// p-norm over `dims` (`None` = all): p = 2 by default; `inf`, `-inf`,
    /// 0 (count of nonzeros) and any other p (`torch.norm` / `linalg.vector_norm`).
    pub fn norm(&self, p: f64, dims: Option<&[i64]>, keepdim: bool) -> Result<Tensor> {
        match dims {
            None if !keepdim => crate::enter_op!("norm.Scalar", self, p),
            // every dim, listed only while a mode is on (the arguments
            // are boxed lazily)
            None => crate::enter_op!(
                "norm.ScalarOpt_dim",
                self,
                p,
                (0..self.dim() as i64).collect::<Vec<i64>>(),
                keepdim
            ),
            Some(d) => crate::enter_op!("norm.ScalarOpt_dim", self, p, d, keepdim),
        }
        let y = crate::autograd::raw(&[self], || self.norm_impl(p, dims, keepdim))?;
        crate::autograd::derivatives::reduce::norm(self, p, dims, keepdim, y)
    }

    fn norm_impl(&self, p: f64, dims: Option<&[i64]>, keepdim: bool) -> Result<Tensor> {
        let (x, dt) = float_input("norm", self)?;
        let rw = rows("norm", &x, dims, keepdim)?;
        let r = map_rows::<f64, f64>(&rw, DType::F64, move |row| {
            if p == f64::INFINITY {
                row.iter().fold(0.0f64, |a, v| {
                    if v.is_nan() || a.is_nan() {
                        f64::NAN
                    } else {
                        a.max(v.abs())
                    }
                })
            } else if p == f64::NEG_INFINITY {
                row.iter().fold(f64::INFINITY, |a, v| {
                    if v.is_nan() || a.is_nan() {
                        f64::NAN
                    } else {
                        a.min(v.abs())
                    }
                })
            } else if p == 0.0 {
                row.iter().filter(|v| **v != 0.0).count() as f64
            } else if p == 1.0 {
                row.iter().map(|v| v.abs()).sum()
            } else if p == 2.0 {
                row.iter().map(|v| v * v).sum::<f64>().sqrt()
            } else {
                row.iter()
                    .map(|v| v.abs().powf(p))
                    .sum::<f64>()
                    .powf(1.0 / p)
            }
        })?;
        r.to_dtype(dt)
    }

    /// Lower median of all elements (`t.median()`); NaN if any is NaN.
    #[op = "median(Tensor self) -> Tensor"]
    pub fn median(&self) -> Result<Tensor> {
        crate::ensure!(
            self.numel() > 0,
            Runtime,
            "median() input tensor cannot be empty"
        );
        let (v, _) = self.reshape(&[-1])?.median_dim(0, false)?;
        Ok(v)
    }

    /// Lower median along `dim` with its index (`torch.median(t, dim)`).
    #[op = "median.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)"]
    pub fn median_dim(&self, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
        let (v, i) = crate::autograd::raw(&[self], || self.median_dim_impl(dim, keepdim))?;
        self.select_recorded("MedianBackward1", dim, keepdim, v, &i)
    }

    fn median_dim_impl(&self, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
        let rw = rows("median", self, Some(&[dim]), keepdim)?;
        crate::ensure!(
            rw.r > 0,
            Index,
            "median(): Expected reduction dim {dim} to have non-zero size."
        );
        crate::dispatch_dtype!(self.dtype(), T => map_rows2::<T, T, i64>(&rw, self.dtype(), |row| {
            if let Some(j) = row.iter().position(|v| v.is_nan()) {
                return (row[j], j as i64);
            }
            let mut idx: Vec<usize> = (0..row.len()).collect();
            idx.sort_by(|&a, &b| row[a].partial_cmp(&row[b]).unwrap_or(std::cmp::Ordering::Equal));
            let k = idx[(row.len() - 1) / 2];
            (row[k], k as i64)
        }))
    }
}

pub(crate) fn register(r: &mut Registry) {
    register_ops(r);
    // overloads whose arguments are not the methods' (Note [Typed kernels])
    // the older `unbiased=` overloads (torch keeps them beside `correction`)
    let c = |unbiased: bool| Some(f64::from(u8::from(unbiased)));
    r.def_typed(
        "var(Tensor self, bool unbiased=True) -> Tensor",
        move |x: Tensor, u: bool| x.var(None, c(u), false),
    );
    r.def_typed(
        "var.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> Tensor",
        move |x: Tensor, dim: Option<Vec<i64>>, u: bool, keep: bool| {
            x.var(dim.as_deref(), c(u), keep)
        },
    );
    r.def_typed(
        "std(Tensor self, bool unbiased=True) -> Tensor",
        move |x: Tensor, u: bool| x.std(None, c(u), false),
    );
    r.def_typed(
        "std.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> Tensor",
        move |x: Tensor, dim: Option<Vec<i64>>, u: bool, keep: bool| {
            x.std(dim.as_deref(), c(u), keep)
        },
    );
    r.def_typed(
        "var_mean(Tensor self, bool unbiased=True) -> (Tensor, Tensor)",
        move |x: Tensor, u: bool| x.var_mean(None, c(u), false),
    );
    r.def_typed(
        "var_mean.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> (Tensor, Tensor)",
        move |x: Tensor, dim: Option<Vec<i64>>, u: bool, keep: bool| {
            x.var_mean(dim.as_deref(), c(u), keep)
        },
    );
    r.def_typed(
        "std_mean(Tensor self, bool unbiased=True) -> (Tensor, Tensor)",
        move |x: Tensor, u: bool| x.std_mean(None, c(u), false),
    );
    r.def_typed(
        "std_mean.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> (Tensor, Tensor)",
        move |x: Tensor, dim: Option<Vec<i64>>, u: bool, keep: bool| {
            x.std_mean(dim.as_deref(), c(u), keep)
        },
    );
    r.def_typed(
        "norm.ScalarOpt_dim(Tensor self, Scalar? p, int[1] dim, bool keepdim=False) -> Tensor",
        |x: Tensor, p: Option<Scalar>, dim: Vec<i64>, keep: bool| {
            x.norm(p.map_or(2.0, |s| s.to_f64()), Some(&dim), keep)
        },
    );
    r.def_typed(
        "norm.Scalar(Tensor self, Scalar p=2) -> Tensor",
        |x: Tensor, p: Scalar| x.norm(p.to_f64(), None, false),
    );
}

//! Scans along one dim: `cumsum`, `cumprod`, `cummax`, `cummin`,
//! `logcumsumexp`. The dim is moved last and made contiguous, each row is
//! scanned, and the result is permuted back.

use crate::dispatch::Registry;
use crate::dtype::{DType, Element};
use crate::error::Result;
use crate::tensor::layout::wrap_dim;
use crate::tensor::Tensor;
use ferrotorch_kernels::parallel;

/// Scan every row of `x` along `dim` with `f(row_in, row_out)`, producing a
/// tensor of `out_dtype` (element type `U`) shaped like `x`.
fn scan_rows<T: Element, U: Element>(
    x: &Tensor,
    dim: i64,
    f: impl Fn(&[T], &mut [U]) + Sync + Send,
) -> Result<Tensor> {
    let nd = x.dim();
    let d = wrap_dim(dim, nd)?;
    if nd == 0 {
        let v = x.to_vec::<T>()?;
        let mut o = vec![U::zero(); 1];
        f(&v, &mut o);
        return Tensor::from_vec(o, &[]);
    }
    let mut perm: Vec<usize> = (0..nd).filter(|&k| k != d).collect();
    perm.push(d);
    let src = x.permute_dims(&perm)?.contiguous()?;
    let r = x.shape()[d];
    let m = x.numel().checked_div(r).unwrap_or(0);
    let out = Tensor::empty(src.shape(), U::DTYPE)?;
    {
        let _g = crate::storage::lock_storages(&[src.storage()], &[out.storage()]);
        let (sp, dp) = (src.data_ptr() as usize, out.data_ptr() as usize);
        parallel::parallel_for(m, (4096 / r.max(1)).max(1), |range| {
            for i in range {
                // SAFETY: row i of two contiguous [m, r] buffers.
                unsafe {
                    let a = std::slice::from_raw_parts((sp as *const T).add(i * r), r);
                    let b = std::slice::from_raw_parts_mut((dp as *mut U).add(i * r), r);
                    f(a, b);
                }
            }
        });
    }
    // inverse permutation: the scanned dim goes back to position d
    let mut inv = vec![0usize; nd];
    for (k, &p) in perm.iter().enumerate() {
        inv[p] = k;
    }
    out.permute_dims(&inv)?.contiguous()
}

impl Tensor {
    /// Running sum along `dim`; integers and bool accumulate in int64.
    pub fn cumsum(&self, dim: i64, dtype: Option<DType>) -> Result<Tensor> {
        let x = self.accumulating(dtype)?;
        crate::dispatch_dtype!(x.dtype(), T => scan_rows::<T, T>(&x, dim, |a, b| {
            let mut acc = 0.0f64;
            let mut iacc = 0i64;
            for (o, &v) in b.iter_mut().zip(a) {
                if T::IS_FLOAT { acc += v.to_f64(); *o = T::from_f64(acc); }
                else { iacc = iacc.wrapping_add(v.to_i64()); *o = T::from_i64(iacc); }
            }
        }))
    }

    /// Running product along `dim`; integers and bool accumulate in int64.
    pub fn cumprod(&self, dim: i64, dtype: Option<DType>) -> Result<Tensor> {
        let x = self.accumulating(dtype)?;
        crate::dispatch_dtype!(x.dtype(), T => scan_rows::<T, T>(&x, dim, |a, b| {
            let mut acc = 1.0f64;
            let mut iacc = 1i64;
            for (o, &v) in b.iter_mut().zip(a) {
                if T::IS_FLOAT { acc *= v.to_f64(); *o = T::from_f64(acc); }
                else { iacc = iacc.wrapping_mul(v.to_i64()); *o = T::from_i64(iacc); }
            }
        }))
    }

    fn cum_extreme(&self, dim: i64, want_max: bool) -> Result<(Tensor, Tensor)> {
        let vals = crate::dispatch_dtype!(self.dtype(), T => scan_rows::<T, T>(self, dim, |a, b| {
            let mut best = a.first().copied().unwrap_or(T::zero());
            for (o, &v) in b.iter_mut().zip(a) {
                if !best.is_nan() && (v.is_nan() || if want_max { v >= best } else { v <= best }) { best = v; }
                *o = best;
            }
        }))?;
        let idx = crate::dispatch_dtype!(self.dtype(), T => scan_rows::<T, i64>(self, dim, |a, b| {
            let mut best = a.first().copied().unwrap_or(T::zero());
            let mut at = 0i64;
            for (j, (o, &v)) in b.iter_mut().zip(a).enumerate() {
                if !best.is_nan() && (v.is_nan() || if want_max { v >= best } else { v <= best }) { best = v; at = j as i64; }
                *o = at;
            }
        }))?;
        Ok((vals, idx))
    }

    /// Running maximum along `dim` and the index where it was reached
    /// (`torch.cummax`; ties take the later index, NaN sticks).
    pub fn cummax(&self, dim: i64) -> Result<(Tensor, Tensor)> {
        self.cum_extreme(dim, true)
    }

    /// Running minimum along `dim` and its index (`torch.cummin`).
    pub fn cummin(&self, dim: i64) -> Result<(Tensor, Tensor)> {
        self.cum_extreme(dim, false)
    }

    /// `log(cumsum(exp(x)))` along `dim`, computed stably.
    pub fn logcumsumexp(&self, dim: i64) -> Result<Tensor> {
        crate::ensure!(
            self.is_floating_point(),
            NotImplemented,
            "logcumsumexp: \"logcumsumexp_out_cpu\" not implemented for '{}'",
            self.dtype().name_title()
        );
        let x = self.to_dtype(DType::F64)?;
        scan_rows::<f64, f64>(&x, dim, |a, b| {
            let mut acc = f64::NEG_INFINITY;
            for (o, &v) in b.iter_mut().zip(a) {
                let (hi, lo) = if acc > v { (acc, v) } else { (v, acc) };
                acc = if hi == f64::NEG_INFINITY {
                    hi
                } else if hi.is_nan() || lo.is_nan() {
                    f64::NAN
                } else {
                    hi + (lo - hi).exp().ln_1p()
                };
                *o = acc;
            }
        })?
        .to_dtype(self.dtype())
    }
}

pub(crate) fn register(r: &mut Registry) {
    r.def(
        "cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor",
        |a| Ok(a.tensor(0)?.cumsum(a.int(1)?, a.opt_dtype(2)?)?.into()),
    );
    r.def(
        "cumprod(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor",
        |a| Ok(a.tensor(0)?.cumprod(a.int(1)?, a.opt_dtype(2)?)?.into()),
    );
    r.def(
        "cummax(Tensor self, int dim) -> (Tensor values, Tensor indices)",
        |a| Ok(a.tensor(0)?.cummax(a.int(1)?)?.into()),
    );
    r.def(
        "cummin(Tensor self, int dim) -> (Tensor values, Tensor indices)",
        |a| Ok(a.tensor(0)?.cummin(a.int(1)?)?.into()),
    );
    r.def("logcumsumexp(Tensor self, int dim) -> Tensor", |a| {
        Ok(a.tensor(0)?.logcumsumexp(a.int(1)?)?.into())
    });
}

//! Scans along one dim: `cumsum`, `cumprod`, `cummax`, `cummin`,
//! `logcumsumexp`, each a row function run by [`map_along_dim`].

use super::reduce::map_along_dim;
use crate::dtype::{DType, Element};
use crate::error::Result;
use crate::tensor::Tensor;

crate::ops! {
    register = register;
    /// Running sum along `dim`; integers and bool accumulate in int64.
    #[op = "cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor"]
    pub fn cumsum(&self, dim: i64, dtype: Option<DType>) -> Result<Tensor> {
        let x = self.accumulating(dtype)?;
        let y = crate::autograd::raw(&[&x], || x.cumsum_impl(dim))?;
        crate::autograd::derivatives::scan::cumsum(&x, dim, y)
    }

    fn cumsum_impl(&self, dim: i64) -> Result<Tensor> {
        let x = self;
        crate::dispatch_dtype!(x.dtype(), T => map_along_dim::<T, T>(x, dim, |a, b| {
            let mut acc = 0.0f64;
            let mut iacc = 0i64;
            for (o, &v) in b.iter_mut().zip(a) {
                if T::IS_FLOAT { acc += v.to_f64(); *o = T::from_f64(acc); }
                else { iacc = iacc.wrapping_add(v.to_i64()); *o = T::from_i64(iacc); }
            }
        }))
    }

    /// Running product along `dim`; integers and bool accumulate in int64.
    #[op = "cumprod(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor"]
    pub fn cumprod(&self, dim: i64, dtype: Option<DType>) -> Result<Tensor> {
        let x = self.accumulating(dtype)?;
        let y = crate::autograd::raw(&[&x], || x.cumprod_impl(dim))?;
        crate::autograd::derivatives::scan::cumprod(&x, dim, y)
    }

    fn cumprod_impl(&self, dim: i64) -> Result<Tensor> {
        let x = self;
        crate::dispatch_dtype!(x.dtype(), T => map_along_dim::<T, T>(x, dim, |a, b| {
            let mut acc = 1.0f64;
            let mut iacc = 1i64;
            for (o, &v) in b.iter_mut().zip(a) {
                if T::IS_FLOAT { acc *= v.to_f64(); *o = T::from_f64(acc); }
                else { iacc = iacc.wrapping_mul(v.to_i64()); *o = T::from_i64(iacc); }
            }
        }))
    }

    fn cum_extreme(&self, dim: i64, want_max: bool) -> Result<(Tensor, Tensor)> {
        let (v, i) = crate::autograd::raw(&[self], || self.cum_extreme_impl(dim, want_max))?;
        let name = if want_max {
            "CummaxBackward0"
        } else {
            "CumminBackward0"
        };
        let d = if self.dim() == 0 {
            0
        } else {
            crate::tensor::layout::wrap_dim(dim, self.dim())?
        };
        let v = crate::autograd::derivatives::shape::select_by_indices(name, self, d, true, v, &i)?;
        Ok((v, i))
    }

    fn cum_extreme_impl(&self, dim: i64, want_max: bool) -> Result<(Tensor, Tensor)> {
        let vals = crate::dispatch_dtype!(self.dtype(), T => map_along_dim::<T, T>(self, dim, |a, b| {
            let mut best = a.first().copied().unwrap_or(T::zero());
            for (o, &v) in b.iter_mut().zip(a) {
                if !best.is_nan() && (v.is_nan() || if want_max { v >= best } else { v <= best }) { best = v; }
                *o = best;
            }
        }))?;
        let idx = crate::dispatch_dtype!(self.dtype(), T => map_along_dim::<T, i64>(self, dim, |a, b| {
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
    #[op = "cummax(Tensor self, int dim) -> (Tensor values, Tensor indices)"]
    pub fn cummax(&self, dim: i64) -> Result<(Tensor, Tensor)> {
        self.cum_extreme(dim, true)
    }

    /// Running minimum along `dim` and its index (`torch.cummin`).
    #[op = "cummin(Tensor self, int dim) -> (Tensor values, Tensor indices)"]
    pub fn cummin(&self, dim: i64) -> Result<(Tensor, Tensor)> {
        self.cum_extreme(dim, false)
    }

    /// `log(cumsum(exp(x)))` along `dim`, computed stably.
    #[op = "logcumsumexp(Tensor self, int dim) -> Tensor"]
    pub fn logcumsumexp(&self, dim: i64) -> Result<Tensor> {
        let y = crate::autograd::raw(&[self], || self.logcumsumexp_impl(dim))?;
        crate::autograd::derivatives::scan::logcumsumexp(self, dim, y)
    }

    fn logcumsumexp_impl(&self, dim: i64) -> Result<Tensor> {
        crate::ensure!(
            self.is_floating_point(),
            NotImplemented,
            "logcumsumexp: \"logcumsumexp_out_cpu\" not implemented for '{}'",
            self.dtype().name_title()
        );
        let x = self.to_dtype(DType::F64)?;
        map_along_dim::<f64, f64>(&x, dim, |a, b| {
            let mut acc = f64::NEG_INFINITY;
            for (o, &v) in b.iter_mut().zip(a) {
                let (hi, lo) = if acc > v { (acc, v) } else { (v, acc) };
                // equal infinities (-inf + -inf, inf + inf) are themselves,
                // as PyTorch's log-add-exp: lo - hi would be NaN
                acc = if hi == lo && hi.is_infinite() {
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

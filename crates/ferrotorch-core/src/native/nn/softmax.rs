//! `softmax` and `log_softmax` along a dim, numerically stable (the row
//! maximum is subtracted). f32 rows use the vectorised kernel; other float
//! dtypes compute in f64.

use crate::dtype::DType;
use crate::error::Result;
use crate::native::reduce::map_along_dim;
use crate::tensor::Tensor;
use ferrotorch_kernels::softmax as ks;

fn softmax_impl(x: &Tensor, dim: i64, dtype: Option<DType>, log: bool) -> Result<Tensor> {
    let op = if log { "log_softmax" } else { "softmax" };
    let x = match dtype {
        Some(d) => x.to_dtype(d)?,
        None => x.clone(),
    };
    crate::ensure!(
        x.is_floating_point(),
        NotImplemented,
        "{op}: \"{op}_lastdim_kernel_impl\" not implemented for '{}'",
        x.dtype().name_title()
    );
    let nd = x.dim();
    if nd == 0 {
        return if log { x.mul(0) } else { x.mul(0)?.add(1) };
    }
    let work_dt = if x.dtype() == DType::F64 {
        DType::F64
    } else {
        DType::F32
    };
    let src = x.to_dtype(work_dt)?;
    let res = if work_dt == DType::F32 {
        // SAFETY: the kernel reads and writes exactly the two row slices.
        map_along_dim::<f32, f32>(&src, dim, |a, b| unsafe {
            ks::softmax_row_f32(a.as_ptr(), b.as_mut_ptr(), a.len(), log)
        })?
    } else {
        map_along_dim::<f64, f64>(&src, dim, |a, b| softmax_row_f64(a, b, log))?
    };
    res.to_dtype(x.dtype())
}

fn softmax_row_f64(a: &[f64], b: &mut [f64], log: bool) {
    let m = a.iter().fold(f64::NEG_INFINITY, |x, &y| {
        if x.is_nan() || y.is_nan() {
            f64::NAN
        } else {
            x.max(y)
        }
    });
    let shift = if m == f64::NEG_INFINITY { 0.0 } else { m };
    let s: f64 = a.iter().map(|v| (v - shift).exp()).sum();
    for (o, &v) in b.iter_mut().zip(a) {
        *o = if log {
            v - shift - s.ln()
        } else {
            (v - shift).exp() / s
        };
    }
}

crate::ops! {
    register = register;
    /// `softmax(self, dim, dtype)`.
    #[op = "softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor"]
    pub fn softmax(&self, dim: i64, dtype: Option<DType>) -> Result<Tensor> {
        let y = crate::autograd::raw(&[self], || softmax_impl(self, dim, dtype, false))?;
        crate::autograd::derivatives::nn::softmax(self, dim, y)
    }

    /// `log_softmax(self, dim, dtype)`, computed without forming `softmax`.
    #[op = "log_softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor"]
    pub fn log_softmax(&self, dim: i64, dtype: Option<DType>) -> Result<Tensor> {
        let y = crate::autograd::raw(&[self], || softmax_impl(self, dim, dtype, true))?;
        crate::autograd::derivatives::nn::log_softmax(self, dim, y)
    }
}

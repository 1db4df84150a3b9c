//! Closeness tests: `isclose`, `allclose`, `equal`.
//!
//! Computed with the elementwise ops in the inputs' own dtype, in torch's
//! order (`|a - b| <= atol + |rtol * b|`), so the float32 rounding of the
//! bound is torch's too.

use crate::dispatch::Registry;
use crate::error::Result;
use crate::tensor::Tensor;
use crate::DType;

impl Tensor {
    /// Elementwise `|self - other| <= atol + rtol·|other|`, with equal
    /// infinities close and NaNs close only under `equal_nan`
    /// (`torch.isclose`). Both inputs must have the same dtype.
    pub fn isclose(&self, other: &Tensor, rtol: f64, atol: f64, equal_nan: bool) -> Result<Tensor> {
        crate::ensure!(
            self.dtype() == other.dtype(),
            Runtime,
            "{} did not match {}",
            self.dtype().name_title(),
            other.dtype().name_title()
        );
        crate::ensure!(
            rtol >= 0.0,
            Runtime,
            "rtol must be greater than or equal to zero, but got {rtol}"
        );
        crate::ensure!(
            atol >= 0.0,
            Runtime,
            "atol must be greater than or equal to zero, but got {atol}"
        );
        let mut close = self.eq(other)?;
        if self.dtype() == DType::Bool {
            return Ok(close);
        }
        if equal_nan && (self.is_floating_point() || self.is_complex()) {
            close = close.logical_or(&self.isnan()?.logical_and(&other.isnan()?)?)?;
        }
        if rtol == 0.0 && atol == 0.0 {
            return Ok(close);
        }
        let allowed = other.mul(rtol)?.abs()?.add(atol)?;
        let actual = self.sub(other)?.abs()?;
        let within = actual.isfinite()?.logical_and(&actual.le(&allowed)?)?;
        close.logical_or(&within)
    }

    /// Whether every element is close (`torch.allclose`).
    pub fn allclose(&self, other: &Tensor, rtol: f64, atol: f64, equal_nan: bool) -> Result<bool> {
        Ok(self
            .isclose(other, rtol, atol, equal_nan)?
            .all()?
            .item()?
            .to_bool())
    }

    /// Same shape and equal elements (`torch.equal`; NaN is not equal to
    /// itself; dtypes may differ).
    pub fn equal(&self, other: &Tensor) -> Result<bool> {
        if self.shape() != other.shape() {
            return Ok(false);
        }
        Ok(self.eq(other)?.all()?.item()?.to_bool())
    }
}

pub(crate) fn register(r: &mut Registry) {
    // typed kernels: adapters generated from the schemas (Note [Typed kernels])
    r.def_typed(
        "isclose(Tensor self, Tensor other, float rtol=1e-05, float atol=1e-08, bool equal_nan=False) -> Tensor",
        |x: Tensor, y: Tensor, rtol: f64, atol: f64, equal_nan: bool| x.isclose(&y, rtol, atol, equal_nan),
    );
    r.def_typed(
        "allclose(Tensor self, Tensor other, float rtol=1e-05, float atol=1e-08, bool equal_nan=False) -> bool",
        |x: Tensor, y: Tensor, rtol: f64, atol: f64, equal_nan: bool| x.allclose(&y, rtol, atol, equal_nan),
    );
    r.def_typed(
        "equal(Tensor self, Tensor other) -> bool",
        |x: Tensor, y: Tensor| x.equal(&y),
    );
}

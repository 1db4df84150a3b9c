//! Reading and copying data: `contiguous`, `clone`, `copy_`, `to(dtype)`,
//! `item`, `to_vec`, `fill_`.

use super::Tensor;
use crate::dtype::{DType, Element};
use crate::error::Result;
use crate::native::iter::{empty_like_layout, map_unary};
use crate::scalar::Scalar;
use crate::tensor::memory_format::MemoryFormat;

/// Copy `src` into `dst` (broadcasting src, casting dtypes), no checks.
pub(crate) fn copy_cast(src: &Tensor, dst: &Tensor) {
    crate::dispatch_dtype!(src.dtype(), S => {
        crate::dispatch_dtype!(dst.dtype(), D => {
            map_unary::<S, D>(src, dst, |x| x.cast::<D>())
        })
    })
}

impl Tensor {
    /// This tensor if already contiguous, else a contiguous copy
    /// (`t.contiguous()`).
    pub fn contiguous(&self) -> Result<Tensor> {
        crate::enter_op!("contiguous", self, MemoryFormat::Contiguous);
        if self.is_contiguous() {
            return Ok(self.clone());
        }
        let out = Tensor::empty(self.shape(), self.dtype())?;
        copy_cast(self, &out);
        crate::autograd::derivatives::shape::clone(self, out)
    }

    /// A copy of the data with the same layout style (PyTorch's `t.clone()`;
    /// Rust's `Clone` shares instead).
    pub fn deep_clone(&self) -> Result<Tensor> {
        crate::enter_op!("clone", self, None::<MemoryFormat>);
        let out = empty_like_layout(self.shape(), self.dtype(), Some(self))?;
        copy_cast(self, &out);
        crate::autograd::derivatives::shape::clone(self, out)
    }

    /// A copy of `self` laid out like `like` (same shape): `like`'s strides
    /// when it is non-overlapping and dense, else contiguous (PyTorch's
    /// `clone_obey_contract`, Note [Gradient layout contract]). Recorded
    /// like [`Tensor::deep_clone`].
    pub(crate) fn clone_laid_out_like(&self, like: &Tensor) -> Result<Tensor> {
        let out = empty_like_layout(self.shape(), self.dtype(), Some(like))?;
        copy_cast(self, &out);
        crate::autograd::derivatives::shape::clone(self, out)
    }

    /// Convert to `dtype` (`t.to(dtype)`); returns `self` (shared) when the
    /// dtype already matches.
    pub fn to_dtype(&self, dtype: DType) -> Result<Tensor> {
        crate::enter_op!("to.dtype", self, dtype);
        if dtype == self.dtype() {
            return Ok(self.clone());
        }
        let out = empty_like_layout(self.shape(), dtype, Some(self))?;
        copy_cast(self, &out);
        if !dtype.is_differentiable() {
            return Ok(out);
        }
        crate::autograd::derivatives::shape::to_copy(self, out)
    }

    /// Copy `src` into `self` in place, broadcasting `src` to `self`'s shape
    /// and converting its dtype (`t.copy_(src)`).
    pub fn copy_(&self, src: &Tensor) -> Result<()> {
        static OP: crate::dispatch::OpHandle = crate::dispatch::OpHandle::new("copy_");
        if let Some(r) =
            crate::dispatch::handle::intercept(&OP, || vec![self.into(), src.into(), false.into()])
        {
            return r.map(|_| ());
        }
        let b = crate::tensor::layout::broadcast_shapes(self.shape(), src.shape())
            .map_err(|e| e.context("copy_"))?;
        crate::ensure!(
            b.as_slice() == self.shape(),
            Runtime,
            "copy_: source of shape {:?} cannot be broadcast to destination of shape {:?}",
            src.shape(),
            self.shape()
        );
        if crate::autograd::derivatives::inplace::check("copy_", self, std::slice::from_ref(src))? {
            return crate::autograd::derivatives::inplace::run(self, false, |old| {
                let out = Tensor::empty(old.shape(), old.dtype())?;
                copy_cast(src, &out);
                crate::autograd::derivatives::indexing::copy(old, src, out)
            });
        }
        let src = if src.storage().is_same(self.storage()) {
            src.deep_clone()?
        } else {
            src.clone()
        };
        copy_cast(&src, self);
        self.storage().bump_version();
        Ok(())
    }

    /// Set every element to `value` (`t.fill_(value)`).
    pub fn fill_(&self, value: impl Into<Scalar>) -> Result<()> {
        let v = value.into();
        static OP: crate::dispatch::OpHandle = crate::dispatch::OpHandle::new("fill_.Scalar");
        if let Some(r) = crate::dispatch::handle::intercept(&OP, || vec![self.into(), v.into()]) {
            return r.map(|_| ());
        }
        v.check_fits(self.dtype())?;
        if crate::autograd::derivatives::inplace::check("fill_", self, &[])? {
            return crate::autograd::derivatives::inplace::run(self, false, |old| {
                Tensor::full(old.shape(), v, old.dtype())
            });
        }
        self.fill_raw(v);
        self.storage().bump_version();
        Ok(())
    }

    /// Set every element to zero (`t.zero_()`).
    pub fn zero_(&self) -> Result<()> {
        static OP: crate::dispatch::OpHandle = crate::dispatch::OpHandle::new("zero_");
        if let Some(r) = crate::dispatch::handle::intercept(&OP, || vec![self.into()]) {
            return r.map(|_| ());
        }
        self.fill_(0)
    }

    /// The elements in row-major order. `T` must be this tensor's dtype.
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        crate::ensure!(
            T::DTYPE == self.dtype(),
            Type,
            "to_vec: tensor has dtype {} but {} was requested",
            self.dtype(),
            T::DTYPE
        );
        // a conjugated view's values, not its memory (Note [The conjugate bit])
        let c = self.resolved()?.contiguous()?;
        let n = c.numel();
        let _g = crate::storage::lock_storages(&[c.storage()], &[]);
        // SAFETY: c is contiguous with n elements of T.
        Ok(unsafe { std::slice::from_raw_parts(c.data_ptr() as *const T, n) }.to_vec())
    }

    /// The elements converted to f64, in row-major order.
    pub fn to_vec_f64(&self) -> Result<Vec<f64>> {
        self.to_dtype(DType::F64)?.to_vec::<f64>()
    }

    /// The elements converted to i64, in row-major order.
    pub fn to_vec_i64(&self) -> Result<Vec<i64>> {
        self.to_dtype(DType::I64)?.to_vec::<i64>()
    }

    /// The single value of a one-element tensor (`t.item()`).
    pub fn item(&self) -> Result<Scalar> {
        crate::ensure!(
            self.numel() == 1,
            Runtime,
            "a Tensor with {} elements cannot be converted to Scalar",
            self.numel()
        );
        if self.is_conj() {
            // the value, not the memory (Note [The conjugate bit])
            return self.resolved()?.item();
        }
        let _g = crate::storage::lock_storages(&[self.storage()], &[]);
        Ok(crate::dispatch_dtype!(self.dtype(), T => {
            // SAFETY: one element at data_ptr.
            let v = unsafe { *(self.data_ptr() as *const T) };
            if self.dtype() == DType::Bool { Scalar::Bool(v.to_bool()) }
            else if T::IS_COMPLEX { let (re, im) = v.to_complex(); Scalar::Complex(re, im) }
            else if T::IS_FLOAT { Scalar::Float(v.to_f64()) }
            else { Scalar::Int(v.to_i64()) }
        }))
    }

    /// `t.item()` as f64.
    pub fn item_f64(&self) -> Result<f64> {
        Ok(self.item()?.to_f64())
    }
}

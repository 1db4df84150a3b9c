//! Between complex and real: `view_as_real`, `view_as_complex`, `real`,
//! `imag` (views), and `complex`, `polar` (new tensors).

use crate::autograd::{needs_grad, record1};
use crate::dtype::DType;
use crate::error::Result;
use crate::native::movement::stack;
use crate::tensor::layout::Layout;
use crate::tensor::Tensor;

crate::ops! {
    register = register_views;
    /// `torch.view_as_real`: the same storage as a real tensor with a
    /// trailing dimension of size 2 holding `(re, im)`.
    #[op = "view_as_real(Tensor(a) self) -> Tensor(a)"]
    pub fn view_as_real(&self) -> Result<Tensor> {
        crate::ensure!(
            self.dtype().is_complex(),
            Runtime,
            "view_as_real is only supported for complex tensors"
        );
        let y = self.real_view_raw();
        if !needs_grad(&[self]) {
            return Ok(y);
        }
        record1(
            "ViewAsRealBackward0",
            &[self],
            y,
            smallvec::smallvec![],
            |c| {
                Ok(smallvec::smallvec![Some(
                    c.grad().contiguous()?.into_complex()?
                )])
            },
        )
    }

    /// The real view without autograd (Note [Complex numbers]).
    pub(crate) fn real_view_raw(&self) -> Tensor {
        let mut sizes: crate::tensor::layout::Dims = self.shape().into();
        let mut strides: crate::tensor::layout::Dims =
            self.stride().iter().map(|&s| 2 * s).collect();
        sizes.push(2);
        strides.push(1);
        let layout = Layout::new(sizes, strides, 2 * self.storage_offset());
        let base = self.view_base().unwrap_or_else(|| self.clone());
        Tensor::with_base(
            self.storage().clone(),
            layout,
            self.dtype().to_real(),
            Some(base),
        )
    }

    /// `torch.view_as_complex`: a half, float or double tensor whose last
    /// dimension is `(re, im)` with stride 1, seen as complex (`complex32`,
    /// `complex64`, `complex128`).
    #[op = "view_as_complex(Tensor(a) self) -> Tensor(a)"]
    pub fn view_as_complex(&self) -> Result<Tensor> {
        self.as_complex(false)
    }

    /// `view_as_complex` of a real tensor that nothing else holds (a fresh
    /// result: `torch.tensor` of complex data, complex arithmetic on the
    /// real view), as a complex tensor of its own rather than a view of a
    /// temporary, as torch's results are (`_base` is None, and in-place ops
    /// on it rewrite its own history, Note [In-place autograd]). A tensor
    /// that is held elsewhere or is itself a view still gives a view.
    pub fn into_complex(self) -> Result<Tensor> {
        let owner = !self.is_view() && std::sync::Arc::strong_count(&self.0) == 1;
        self.as_complex(owner)
    }

    /// [`Tensor::view_as_complex`], or with `owner` the same memory as a
    /// tensor of its own (not a view).
    fn as_complex(&self, owner: bool) -> Result<Tensor> {
        let d = self.dtype();
        crate::ensure!(
            matches!(d, DType::F16 | DType::F32 | DType::F64),
            Runtime,
            "view_as_complex is only supported for half, float and double tensors, but got a tensor of scalar type: {}",
            d.name_title()
        );
        crate::ensure!(
            self.dim() > 0,
            Runtime,
            "Input tensor must have one or more dimensions"
        );
        let n = self.dim();
        crate::ensure!(
            self.shape()[n - 1] == 2,
            Runtime,
            "Tensor must have a last dimension of size 2"
        );
        crate::ensure!(
            self.stride()[n - 1] == 1,
            Runtime,
            "Tensor must have a last dimension with stride 1"
        );
        crate::ensure!(
            self.stride()[..n - 1].iter().all(|s| s.is_multiple_of(2)),
            Runtime,
            "Tensor must have a stride divisible by 2 for all but last dimension"
        );
        crate::ensure!(
            self.storage_offset().is_multiple_of(2),
            Runtime,
            "Tensor must have a storage_offset divisible by 2"
        );
        let sizes = self.shape()[..n - 1].into();
        let strides = self.stride()[..n - 1].iter().map(|&s| s / 2).collect();
        let layout = Layout::new(sizes, strides, self.storage_offset() / 2);
        let base = if owner {
            None
        } else {
            Some(self.view_base().unwrap_or_else(|| self.clone()))
        };
        let cd = d.to_complex().expect("float dtype");
        let y = Tensor::with_base(self.storage().clone(), layout, cd, base);
        if !needs_grad(&[self]) {
            return Ok(y);
        }
        record1(
            "ViewAsComplexBackward0",
            &[self],
            y,
            smallvec::smallvec![],
            |c| Ok(smallvec::smallvec![Some(c.grad().view_as_real()?)]),
        )
    }

    /// `torch.real`: the real parts as a view (the tensor itself when it
    /// is real).
    #[op = "real(Tensor(a) self) -> Tensor(a)"]
    pub fn real(&self) -> Result<Tensor> {
        if !self.dtype().is_complex() {
            return Ok(self.clone());
        }
        self.view_as_real()?.select(-1, 0)
    }

    /// `torch.imag`: the imaginary parts as a view; real tensors have none.
    #[op = "imag(Tensor(a) self) -> Tensor(a)"]
    pub fn imag(&self) -> Result<Tensor> {
        crate::ensure!(
            self.dtype().is_complex(),
            Runtime,
            "imag is not implemented for tensors with non-complex dtypes."
        );
        self.view_as_real()?.select(-1, 1)
    }

    /// `t.is_complex()`.
    pub fn is_complex(&self) -> bool {
        self.dtype().is_complex()
    }

    /// The complex conjugate, computed (real tensors are returned as they
    /// are). The `conj` op called through the dispatcher (Python's
    /// `t.conj()`) returns a lazily conjugated view instead
    /// ([`Tensor::conj_view`], Note [The conjugate bit]); this typed method
    /// is what code inside ferrotorch calls, and stays eager.
    pub fn conj(&self) -> Result<Tensor> {
        if !self.dtype().is_complex() {
            return Ok(self.clone());
        }
        self.conj_physical()
    }

    /// `torch.conj_physical`: the conjugate, computed.
    #[op = "conj_physical(Tensor self) -> Tensor"]
    pub fn conj_physical(&self) -> Result<Tensor> {
        if !self.dtype().is_complex() {
            return Ok(self.clone());
        }
        let (re, im) = super::arith::parts(self)?;
        complex(&re, &im.neg()?)
    }

    /// `torch.resolve_conj`: a conjugated view's values as an ordinary
    /// tensor; any other tensor as it is.
    pub fn resolve_conj(&self) -> Result<Tensor> {
        self.resolved()
    }
}

crate::ops! {
    register = register_parts;
/// `torch.complex(real, imag)`: a complex tensor from half, float or
/// double parts of the same dtype (broadcast); half parts make `complex32`.
#[op = "complex(Tensor real, Tensor imag) -> Tensor"]
pub fn complex(real: &Tensor, imag: &Tensor) -> Result<Tensor> {
    let (a, b) = (real.dtype(), imag.dtype());
    crate::ensure!(
        matches!(a, DType::F32 | DType::F64 | DType::F16),
        Runtime,
        "Expected both inputs to be Half, Float or Double tensors but got {} and {}",
        a.name_title(),
        b.name_title()
    );
    crate::ensure!(
        a == b,
        Runtime,
        "Expected object of scalar type {} but got scalar type {} for second argument",
        a.name_title(),
        b.name_title()
    );
    let (re, im) = (real, imag);
    let shape = crate::tensor::layout::broadcast_shapes(re.shape(), im.shape())?;
    let shape: Vec<i64> = shape.iter().map(|&s| s as i64).collect();
    // the stacked pairs are fresh and held by nothing else
    stack(&[re.expand(&shape)?, im.expand(&shape)?], -1)?.into_complex()
}

/// `torch.polar(abs, angle)`: `abs·(cos angle + i sin angle)`.
#[op = "polar(Tensor abs, Tensor angle) -> Tensor"]
pub fn polar(abs: &Tensor, angle: &Tensor) -> Result<Tensor> {
    complex(&abs.mul(&angle.cos()?)?, &abs.mul(&angle.sin()?)?)
}
}

crate::ops! {
    register = register_signs;
    /// `torch.angle`: the argument of each element in `(-π, π]`; for real
    /// tensors π where negative, 0 elsewhere (NaN stays NaN), as torch.
    #[op = "angle(Tensor self) -> Tensor"]
    pub fn angle(&self) -> Result<Tensor> {
        if self.dtype().is_complex() {
            return super::arith::angle(self);
        }
        let x = if self.is_floating_point() {
            self.clone()
        } else {
            self.to_dtype(crate::dtype::get_default_dtype())?
        };
        let pi = x.lt(0.0)?.to_dtype(x.dtype())?.mul(std::f64::consts::PI)?;
        // NaN propagates: x·0 is NaN only for NaN (and ±inf, which is not NaN-free either way)
        let nan = x.isnan()?;
        crate::native::where_(&nan, &x, &pi)
    }

    /// `torch.sgn`: `z / |z|` for complex tensors (0 at 0), `sign` for real.
    #[op = "sgn(Tensor self) -> Tensor"]
    pub fn sgn(&self) -> Result<Tensor> {
        if self.dtype().is_complex() {
            return super::arith::unary("sgn", self);
        }
        self.sign()
    }
}

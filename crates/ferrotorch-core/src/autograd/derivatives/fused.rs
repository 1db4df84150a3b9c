//! # Note [Fused pointwise backward]
//! A unary formula such as `g · cos(x)` written with tensor ops makes two
//! tensors (`cos(x)`, then the product). Without `create_graph` nothing
//! records the formula, so the common ones run as one elementwise kernel
//! over `g` and the saved tensor instead, as ATen's `tanh_backward` and
//! `sigmoid_backward` do: on small tensors that halves the formula's cost
//! (it is allocation-bound). The loop is the row's own formula
//! instantiated for `f32`/`f64` (Note [Pointwise rows]); the row's
//! `Fuse` says when: formulas of the result (`exp`, `tanh`, `sigmoid`)
//! are plain arithmetic and fuse at any size; `sin`/`cos` use the scalar
//! `cos`/`sin`, slower per element than the vectorised kernels, so they
//! fuse only up to `FUSE_SMALL_MAX` elements. The activations' rows fuse
//! the same way (Note [Activation rows]). `relu`'s threshold
//! backward is one select pass instead of a comparison tensor and a
//! `where`. Same-dtype f32/f64
//! operands of one shape only; anything else takes the composed formula.

use crate::autograd::mode::is_grad_enabled;
use crate::error::Result;
use crate::native::iter::empty_like_layout;
use crate::rows::{Fuse, UnaryRow, FUSE_SMALL_MAX};
use crate::tensor::Tensor;
use crate::DType;

/// The output of a fused formula over `g` and the saved tensor `t`, or
/// `None` when they cannot fuse (Note [Fused pointwise backward]).
fn output(g: &Tensor, t: &Tensor) -> Result<Option<Tensor>> {
    let dt = g.dtype();
    if is_grad_enabled()
        || !matches!(dt, DType::F32 | DType::F64)
        || t.dtype() != dt
        || t.shape() != g.shape()
    {
        return Ok(None);
    }
    empty_like_layout(g.shape(), dt, Some(g)).map(Some)
}

/// The fused gradient of a unary row, or `None` when it takes the tensor
/// formula (Note [Fused pointwise backward]); `t` is the saved tensor.
pub(crate) fn unary(row: &UnaryRow, g: &Tensor, t: &Tensor) -> Result<Option<Tensor>> {
    match row.fuse {
        Fuse::Never => return Ok(None),
        Fuse::Small if g.numel() > FUSE_SMALL_MAX => return Ok(None),
        _ => {}
    }
    let Some(f) = row.fused(g.dtype()) else {
        return Ok(None);
    };
    let Some(out) = output(g, t)? else {
        return Ok(None);
    };
    f(g, t, &out);
    Ok(Some(out))
}

/// The fused gradient of `gelu` from its input `x` (float32, contiguous
/// operands): `g·(Φ(x) + x·φ(x))`, or for the tanh approximation
/// `g·(½(1 + t) + ½x(1 - t²)·k(1 + 3·0.044715x²))` with
/// `t = tanh(k(x + 0.044715x³))`, `k = √(2/π)`, in one pass of
/// `ferrotorch_kernels::backward::gelu_backward` (within 2 ulp of the
/// composed formula, which made eight tensors).
pub(crate) fn gelu(g: &Tensor, x: &Tensor, tanh: bool) -> Result<Option<Tensor>> {
    if g.dtype() != DType::F32 || !g.is_contiguous() || !x.is_contiguous() {
        return Ok(None);
    }
    let Some(out) = output(g, x)? else {
        return Ok(None);
    };
    crate::tensor::access::zip_slices_mut::<f32>("gelu_backward", &[&out], &[g, x], |w, r| {
        ferrotorch_kernels::backward::gelu_backward(r[0], r[1], w[0], tanh)
    })?;
    Ok(Some(out))
}

//! # Note [Fused pointwise backward]
//! A unary formula such as `g · cos(x)` written with tensor ops makes two
//! tensors (`cos(x)`, then the product). Without `create_graph` nothing
//! records the formula, so the common ones run as one elementwise kernel
//! over `g` and the saved tensor instead, as ATen's `tanh_backward` and
//! `sigmoid_backward` do: on small tensors that halves the formula's cost
//! (it is allocation-bound). Formulas of the result (`exp`, `tanh`,
//! `sigmoid`) are plain arithmetic and fuse at any size; `sin`/`cos` use
//! the scalar `cos`/`sin`, slower per element than the vectorised kernels,
//! so they fuse only below `TRANSCENDENTAL_MAX` elements. Same-dtype
//! f32/f64 operands of one shape only; anything else takes the composed
//! formula.

use crate::autograd::mode::is_grad_enabled;
use crate::error::Result;
use crate::native::iter::{empty_like_layout, map_binary};
use crate::tensor::Tensor;
use crate::DType;

const TRANSCENDENTAL_MAX: usize = 4096;

macro_rules! fused {
    ($g:expr, $t:expr, $out:expr, |$a:ident, $v:ident| $body:expr) => {
        match $g.dtype() {
            DType::F32 => map_binary::<f32, f32, f32>($g, $t, $out, |$a: f32, $v: f32| $body),
            _ => map_binary::<f64, f64, f64>($g, $t, $out, |$a: f64, $v: f64| $body),
        }
    };
}

/// The fused gradient of unary `op`, or `None` when it takes the composed
/// formula (Note [Fused pointwise backward]).
pub(crate) fn unary(op: &str, g: &Tensor, x: &Tensor, y: &Tensor) -> Result<Option<Tensor>> {
    if is_grad_enabled() {
        return Ok(None);
    }
    let t = match op {
        "sin" | "cos" if g.numel() <= TRANSCENDENTAL_MAX => x,
        "exp" | "tanh" | "sigmoid" => y,
        _ => return Ok(None),
    };
    let dt = g.dtype();
    if !matches!(dt, DType::F32 | DType::F64) || t.dtype() != dt || t.shape() != g.shape() {
        return Ok(None);
    }
    let out = empty_like_layout(g.shape(), dt, Some(g))?;
    match op {
        "sin" => fused!(g, t, &out, |a, v| a * v.cos()),
        "cos" => fused!(g, t, &out, |a, v| -(a * v.sin())),
        "exp" => fused!(g, t, &out, |a, v| a * v),
        "tanh" => fused!(g, t, &out, |a, v| a * (1.0 - v * v)),
        _ => fused!(g, t, &out, |a, v| a * (v * (1.0 - v))),
    }
    Ok(Some(out))
}

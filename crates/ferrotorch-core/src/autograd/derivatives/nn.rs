//! Derivatives of the nn kernels: softmax family, activations, pooling.

use crate::autograd::node::Save;
use crate::autograd::{needs_grad, record1, Ctx};
use crate::error::Result;
use crate::tensor::Tensor;

/// The softmax (log-softmax) gradient as one kernel over rows
/// (`ferrotorch_kernels::softmax::softmax_backward`), for float32 over the
/// last dim without `create_graph` (Note [Fused pointwise backward]);
/// `None` takes the composed formula.
fn fused_softmax_backward(g: &Tensor, y: &Tensor, d: i64, log: bool) -> Result<Option<Tensor>> {
    let nd = y.dim() as i64;
    if crate::autograd::mode::is_grad_enabled()
        || nd == 0
        || (if d < 0 { d + nd } else { d }) != nd - 1
        || g.dtype() != crate::DType::F32
        || y.dtype() != crate::DType::F32
        || g.shape() != y.shape()
        || !y.is_contiguous()
        || y.numel() == 0
    {
        return Ok(None);
    }
    let g = g.contiguous()?;
    let dx = Tensor::empty(y.shape(), crate::DType::F32)?;
    let n = y.shape()[y.dim() - 1];
    crate::tensor::access::contiguous_slices_mut::<f32>(
        "softmax_backward",
        &[&dx],
        &[&g, y],
        |o, r| ferrotorch_kernels::softmax::softmax_backward(r[0], r[1], o[0], n, log),
    )?;
    Ok(Some(dx))
}

/// `softmax(dim)`: y · (g - Σ g·y).
pub(crate) fn softmax(x: &Tensor, d: i64, y: Tensor) -> Result<Tensor> {
    if !needs_grad(&[x]) {
        return Ok(y);
    }
    record1(
        "SoftmaxBackward0",
        &[x],
        y,
        smallvec::smallvec![Save::Output(0)],
        move |c: &Ctx| {
            let (g, y) = (c.grad(), c.saved(0));
            if let Some(dx) = fused_softmax_backward(g, y, d, false)? {
                return Ok(smallvec::smallvec![Some(dx)]);
            }
            let s = g.mul(y)?.sum_dim(Some(&[d]), true, None)?;
            Ok(smallvec::smallvec![Some(y.mul(&g.sub(&s)?)?)])
        },
    )
}

/// `log_softmax(dim)`: g - exp(y) · Σ g.
pub(crate) fn log_softmax(x: &Tensor, d: i64, y: Tensor) -> Result<Tensor> {
    if !needs_grad(&[x]) {
        return Ok(y);
    }
    record1(
        "LogSoftmaxBackward0",
        &[x],
        y,
        smallvec::smallvec![Save::Output(0)],
        move |c: &Ctx| {
            let (g, y) = (c.grad(), c.saved(0));
            if let Some(dx) = fused_softmax_backward(g, y, d, true)? {
                return Ok(smallvec::smallvec![Some(dx)]);
            }
            let s = g.sum_dim(Some(&[d]), true, None)?;
            Ok(smallvec::smallvec![Some(g.sub(&y.exp()?.mul(&s)?)?)])
        },
    )
}

/// `elu(alpha, scale, input_scale)`: its activation row's derivative
/// (Note [Activation rows]).
pub(crate) fn elu(
    x: &Tensor,
    alpha: f64,
    scale: f64,
    input_scale: f64,
    y: Tensor,
) -> Result<Tensor> {
    crate::rows::act_named("elu").record(x, y, &[alpha, scale, input_scale])
}

/// `gelu(approximate)`: one vectorised pass for float32
/// (`super::fused::gelu`), else its activation row's derivative.
pub(crate) fn gelu(x: &Tensor, tanh: bool, y: Tensor) -> Result<Tensor> {
    if !needs_grad(&[x]) {
        return Ok(y);
    }
    let p = [if tanh { 1.0 } else { 0.0 }];
    record1(
        "GeluBackward0",
        &[x],
        y,
        smallvec::smallvec![Save::Tensor(x)],
        move |c: &Ctx| {
            let x = c.saved(0);
            if let Some(gx) = super::fused::gelu(c.grad(), x, tanh)? {
                return Ok(smallvec::smallvec![Some(gx)]);
            }
            Ok(smallvec::smallvec![Some(
                crate::rows::act_named("gelu").backward(c.grad(), x, &p)?
            )])
        },
    )
}

/// Max pooling (`max_pool2d`, `adaptive_max_pool2d`) on `[N, C, H, W]`:
/// each output's gradient goes to the input position its flat per-plane
/// index names.
pub(crate) fn pool_indices(
    name: &'static str,
    x: &Tensor,
    y: Tensor,
    indices: &Tensor,
) -> Result<Tensor> {
    if !needs_grad(&[x]) {
        return Ok(y);
    }
    let shape: Vec<i64> = x.shape().iter().map(|&s| s as i64).collect();
    let (n, c) = (shape[0], shape[1]);
    record1(
        name,
        &[x],
        y,
        smallvec::smallvec![Save::Tensor(indices)],
        move |ctx: &Ctx| {
            let g = ctx.grad().reshape(&[n, c, -1])?;
            let idx = ctx.saved(0).reshape(&[n, c, -1])?;
            let z = Tensor::zeros(
                &[n as usize, c as usize, (shape[2] * shape[3]) as usize],
                g.dtype(),
            )?;
            Ok(smallvec::smallvec![Some(
                z.scatter_add(2, &idx, &g)?.reshape(&shape)?
            )])
        },
    )
}

/// Average pooling (`avg_pool2d`, `adaptive_avg_pool2d`) and its transpose
/// as a pair of linear maps: the gradient of one is the other, so every
/// order of derivative is available.
pub(crate) fn avg_pool(
    pool: std::sync::Arc<crate::native::nn::pool::AvgPool>,
    x: &Tensor,
    transpose: bool,
) -> Result<Tensor> {
    let y = crate::autograd::raw(&[x], || {
        if transpose {
            pool.transpose(x)
        } else {
            pool.forward(x)
        }
    })?;
    if !needs_grad(&[x]) {
        return Ok(y);
    }
    let name = if transpose {
        "AvgPool2DBackwardBackward0"
    } else {
        "AvgPool2DBackward0"
    };
    record1(name, &[x], y, smallvec::smallvec![], move |c: &Ctx| {
        Ok(smallvec::smallvec![Some(avg_pool(
            pool.clone(),
            c.grad(),
            !transpose
        )?)])
    })
}

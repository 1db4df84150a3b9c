//! Derivatives of `conv2d` and `conv_transpose2d`, each written with the
//! other (and with convolutions of the input against the gradient for the
//! weight), so double backward works through them.
//!
//! For `y = conv2d(x, w)` with stride s, padding p, dilation d:
//! - `dx = conv_transpose2d(g, w, s, p, output_padding, d)`, the output
//!   padding restoring rows the forward never reached;
//! - `dw[o, c, i, j] = Σ_{n,h,w} g[n, o, h, w] x[n, c, h s + i d - p, ..]`,
//!   which is `conv2d(xᵀ, gᵀ)` with batch and channels swapped and the
//!   roles of stride and dilation exchanged, cut to the kernel size.

use super::want;
use crate::autograd::node::Save;
use crate::autograd::{needs_grad, record1, Ctx};
use crate::error::Result;
use crate::tensor::Tensor;

/// Geometry of a 2-D convolution.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ConvParams {
    pub(crate) stride: [usize; 2],
    pub(crate) padding: [usize; 2],
    pub(crate) dilation: [usize; 2],
    pub(crate) groups: usize,
}

/// Per-group `conv2d(aᵀ, bᵀ)` (batch and channels swapped), cut to
/// `[kh, kw]`, its two leading dims swapped back, and concatenated over
/// groups: the weight gradient of both convolutions (`a` is the operand
/// whose channels are the weight's second dim).
fn weight_grad(a: &Tensor, b: &Tensor, p: ConvParams, kernel: [usize; 2]) -> Result<Tensor> {
    if p.groups == 1
        && a.dtype() == crate::DType::F32
        && b.dtype() == crate::DType::F32
        && !crate::autograd::is_grad_enabled()
        && crate::native::nn::conv_weight_grad::applies(
            a, b, kernel, p.stride, p.padding, p.dilation,
        )
    {
        // no graph of the backward is recorded: one GEMM (Note
        // [Convolution weight gradient])
        return crate::native::nn::conv_weight_grad::weight_grad_f32(
            a, b, kernel, p.stride, p.padding, p.dilation,
        );
    }
    let g = p.groups as i64;
    let (ca, cb) = (a.shape()[1] as i64 / g, b.shape()[1] as i64 / g);
    let parts = (0..g)
        .map(|k| {
            let ak = a.narrow(1, k * ca, ca as usize)?.transpose(0, 1)?;
            let bk = b.narrow(1, k * cb, cb as usize)?.transpose(0, 1)?;
            let r = ak.conv2d(&bk, None, &p.dilation, &p.padding, &p.stride, 1)?;
            r.narrow(2, 0, kernel[0])?
                .narrow(3, 0, kernel[1])?
                .transpose(0, 1)
        })
        .collect::<Result<Vec<_>>>()?;
    if parts.len() == 1 {
        return Ok(parts.into_iter().next().expect("one group"));
    }
    crate::native::movement::cat(&parts, 0)
}

/// `g` narrowed to `size` in its last two dims when larger.
fn fit(g: Tensor, size: &[usize]) -> Result<Tensor> {
    let mut g = g;
    for (k, &s) in size.iter().enumerate() {
        let d = 2 + k;
        if g.shape()[d] > s {
            g = g.narrow(d as i64, 0, s)?;
        }
    }
    Ok(g)
}

/// The differentiable inputs of a convolution: input, weight, and bias
/// when there is one.
pub(crate) fn inputs<'a>(x: &'a Tensor, w: &'a Tensor, b: Option<&'a Tensor>) -> Vec<&'a Tensor> {
    [Some(x), Some(w), b].into_iter().flatten().collect()
}

fn bias_grad(g: &Tensor) -> Result<Tensor> {
    g.sum_dim(Some(&[0, 2, 3]), false, None)
}

/// `conv2d(x, w, b)` on `[N, C, H, W]`.
pub(crate) fn conv2d(
    x: &Tensor,
    w: &Tensor,
    b: Option<&Tensor>,
    p: ConvParams,
    y: Tensor,
) -> Result<Tensor> {
    let ins = inputs(x, w, b);
    if !needs_grad(&ins) {
        return Ok(y);
    }
    let (xs, ks) = ([x.shape()[2], x.shape()[3]], [w.shape()[2], w.shape()[3]]);
    let (ys, with_bias) = ([y.shape()[2], y.shape()[3]], b.is_some());
    let mut op = [0; 2];
    for k in 0..2 {
        let reach = (ys[k] - 1) * p.stride[k] + p.dilation[k] * (ks[k] - 1) + 1;
        op[k] = (xs[k] + 2 * p.padding[k]).saturating_sub(reach);
    }
    record1(
        "ConvolutionBackward0",
        &ins,
        y,
        smallvec::smallvec![Save::Tensor(x), Save::Tensor(w)],
        move |c: &Ctx| {
            let (g, x, w) = (c.grad(), c.saved(0), c.saved(1));
            let mut out = smallvec::smallvec![
                want(c, 0, || {
                    // stride or dilation may leave more unreached rows
                    // than output_padding allows; add them by padding.
                    let opad = [
                        op[0].min(p.stride[0].max(p.dilation[0]) - 1),
                        op[1].min(p.stride[1].max(p.dilation[1]) - 1),
                    ];
                    let gx = g.conv_transpose2d(
                        w,
                        None,
                        &p.stride,
                        &p.padding,
                        &opad,
                        p.groups,
                        &p.dilation,
                    )?;
                    let (dh, dw) = (
                        xs[0] as i64 - gx.shape()[2] as i64,
                        xs[1] as i64 - gx.shape()[3] as i64,
                    );
                    if dh > 0 || dw > 0 {
                        gx.pad(&[0, dw.max(0), 0, dh.max(0)], "constant", 0.0)
                    } else {
                        fit(gx, &xs)
                    }
                })?,
                want(c, 1, || weight_grad(x, g, p, ks))?,
            ];
            if with_bias {
                out.push(want(c, 2, || bias_grad(g))?);
            }
            Ok(out)
        },
    )
}

/// `conv_transpose2d(x, w, b)` on `[N, Cin, H, W]` with `w` of shape
/// `[Cin, Cout/groups, kh, kw]`.
pub(crate) fn conv_transpose2d(
    x: &Tensor,
    w: &Tensor,
    b: Option<&Tensor>,
    p: ConvParams,
    y: Tensor,
) -> Result<Tensor> {
    let ins = inputs(x, w, b);
    if !needs_grad(&ins) {
        return Ok(y);
    }
    let (xs, ks) = ([x.shape()[2], x.shape()[3]], [w.shape()[2], w.shape()[3]]);
    let with_bias = b.is_some();
    record1(
        "ConvolutionBackward0",
        &ins,
        y,
        smallvec::smallvec![Save::Tensor(x), Save::Tensor(w)],
        move |c: &Ctx| {
            let (g, x, w) = (c.grad(), c.saved(0), c.saved(1));
            let mut out = smallvec::smallvec![
                want(c, 0, || {
                    let gx = g.conv2d(w, None, &p.stride, &p.padding, &p.dilation, p.groups)?;
                    fit(gx, &xs)
                })?,
                want(c, 1, || weight_grad(g, x, p, ks))?,
            ];
            if with_bias {
                out.push(want(c, 2, || bias_grad(g))?);
            }
            Ok(out)
        },
    )
}

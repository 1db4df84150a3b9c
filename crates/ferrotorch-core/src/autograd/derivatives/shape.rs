//! Derivatives of views and data movement. Views send the gradient back
//! with the inverse view (`transpose` ↔ `transpose`, `expand` ↔ `sum_to`,
//! `slice` ↔ zero `pad`), so they stay differentiable for higher orders.

use super::want;
use crate::autograd::node::Save;
use crate::autograd::{needs_grad, record1, sum_to, Ctx};
use crate::error::Result;
use crate::tensor::Tensor;

fn shape_i64(s: &[usize]) -> Vec<i64> {
    s.iter().map(|&d| d as i64).collect()
}

/// Record a one-input op whose gradient depends only on `g` and the
/// captured parameters.
fn simple(
    name: &'static str,
    x: &Tensor,
    y: Tensor,
    f: impl Fn(&Tensor) -> Result<Tensor> + Send + Sync + 'static,
) -> Result<Tensor> {
    if !needs_grad(&[x]) {
        return Ok(y);
    }
    record1(name, &[x], y, smallvec::smallvec![], move |c: &Ctx| {
        Ok(smallvec::smallvec![Some(f(c.grad())?)])
    })
}

/// `view` / `reshape` / `squeeze` / `unsqueeze` / `flatten`: reshape back.
pub(crate) fn view(name: &'static str, x: &Tensor, y: Tensor) -> Result<Tensor> {
    let s = shape_i64(x.shape());
    simple(name, x, y, move |g| g.reshape(&s))
}

pub(crate) fn transpose(x: &Tensor, d0: i64, d1: i64, y: Tensor) -> Result<Tensor> {
    simple("TransposeBackward0", x, y, move |g| g.transpose(d0, d1))
}

pub(crate) fn permute(x: &Tensor, dims: &[usize], y: Tensor) -> Result<Tensor> {
    let mut inv = vec![0usize; dims.len()];
    for (i, &d) in dims.iter().enumerate() {
        inv[d] = i;
    }
    simple("PermuteBackward0", x, y, move |g| g.permute_dims(&inv))
}

pub(crate) fn expand(x: &Tensor, y: Tensor) -> Result<Tensor> {
    let s = x.shape().to_vec();
    simple("ExpandBackward0", x, y, move |g| sum_to(g, &s))
}

/// Gradient of `x.slice(d, start.., step)` (of length `g.shape[d]`): `g`
/// placed at those positions of a zero tensor shaped like `x`, built from
/// `pad` and `reshape` so that it is differentiable itself.
pub(crate) fn slice_backward(
    g: &Tensor,
    shape: &[usize],
    d: usize,
    start: usize,
    step: usize,
) -> Result<Tensor> {
    let size = shape[d];
    let len = g.shape()[d];
    let mut g = g.clone();
    if step > 1 && len > 0 {
        // interleave zeros: [.., len, ..] -> [.., len, step, ..] (each
        // element followed by step-1 zeros) -> [.., len*step, ..], cut to
        // the size left after `start`
        let u = g.unsqueeze(d as i64 + 1)?;
        let mut spec = vec![0i64; 2 * (u.dim() - d - 1)];
        let k = spec.len();
        spec[k - 1] = step as i64 - 1;
        let mut sh = shape_i64(g.shape());
        sh[d] = (len * step) as i64;
        g = u.pad(&spec, "constant", 0.0)?.reshape(&sh)?;
        g = g.narrow(d as i64, 0, (size - start).min(len * step))?;
    }
    let len = g.shape()[d];
    let mut pads = vec![0i64; 2 * (g.dim() - d)];
    let k = pads.len();
    pads[k - 2] = start as i64;
    pads[k - 1] = (size - start - len) as i64;
    if pads.iter().all(|&p| p == 0) {
        return Ok(g);
    }
    g.pad(&pads, "constant", 0.0)
}

pub(crate) fn slice(x: &Tensor, d: usize, start: usize, step: usize, y: Tensor) -> Result<Tensor> {
    let s = x.shape().to_vec();
    simple("SliceBackward0", x, y, move |g| {
        slice_backward(g, &s, d, start, step)
    })
}

pub(crate) fn select(x: &Tensor, d: usize, index: usize, y: Tensor) -> Result<Tensor> {
    let s = x.shape().to_vec();
    simple("SelectBackward0", x, y, move |g| {
        slice_backward(&g.unsqueeze(d as i64)?, &s, d, index, 1)
    })
}

/// # Note [One node for all pieces]
/// `split`, `chunk` and `unbind` record one node with an output per piece
/// (torch's `SplitBackward0`, `UnbindBackward0`), whose backward
/// concatenates (stacks) the pieces' gradients, zeros where a piece got
/// none. A node per piece would scatter each gradient into its own
/// zero tensor the size of the input and add those up: quadratic in the
/// number of pieces, which an RNN's `unbind` over time steps made the
/// largest cost of its backward pass.
pub(crate) fn pieces(
    name: &'static str,
    x: &Tensor,
    d: usize,
    squeeze: bool,
    out: Vec<Tensor>,
) -> Result<Vec<Tensor>> {
    if !needs_grad(&[x]) || out.is_empty() {
        return Ok(out);
    }
    let refs: Vec<&Tensor> = out.iter().collect();
    crate::autograd::record(name, &[x], &refs, smallvec::smallvec![], move |c: &Ctx| {
        let g = if squeeze {
            crate::native::stack(&c.grads[..], d as i64)?
        } else {
            crate::native::cat(&c.grads[..], d as i64)?
        };
        Ok(smallvec::smallvec![Some(g)])
    })?;
    Ok(out)
}

/// Constant padding (negative amounts crop): the gradient is the same
/// padding negated, which crops the padded border and zero-fills the
/// cropped one.
pub(crate) fn constant_pad(x: &Tensor, pads: &[i64], y: Tensor) -> Result<Tensor> {
    let neg: Vec<i64> = pads.iter().map(|p| -p).collect();
    simple("ConstantPadNdBackward0", x, y, move |g| {
        g.pad(&neg, "constant", 0.0)
    })
}

/// `x.unfold(d, size, step)`: window element `k` of window `w` came from
/// position `w·step + k`, so the gradient is the sum over `k` of the
/// strided slice backward of `g[..., k]`.
pub(crate) fn unfold(x: &Tensor, d: usize, size: usize, step: usize, y: Tensor) -> Result<Tensor> {
    let s = x.shape().to_vec();
    simple("UnfoldBackward0", x, y, move |g| {
        let mut acc = Tensor::zeros(&s, g.dtype())?;
        for k in 0..size {
            let part = g.select(-1, k as i64)?;
            acc = acc.add(&slice_backward(&part, &s, d, k, step)?)?;
        }
        Ok(acc)
    })
}

/// Ops that copy (`clone`, `contiguous` of a strided tensor): identity.
pub(crate) fn clone(x: &Tensor, y: Tensor) -> Result<Tensor> {
    simple("CloneBackward0", x, y, |g| Ok(g.clone()))
}

/// A conjugated view (Note [The conjugate bit]): the gradient is conjugated
/// back, computed (never a marked tensor).
pub(crate) fn conj_view(x: &Tensor, y: Tensor) -> Result<Tensor> {
    // nothing saved: after an in-place write to the memory the view is
    // re-derived from its base (`inplace::rederive_view`)
    simple("ConjBackward0", x, y, |g| g.conj_physical())
}

/// `to(dtype)`: the engine casts the gradient back to the input dtype.
pub(crate) fn to_copy(x: &Tensor, y: Tensor) -> Result<Tensor> {
    simple("ToCopyBackward0", x, y, |g| Ok(g.clone()))
}

/// `as_strided` and `diagonal`: add the gradient into a zero buffer laid
/// out like the input's storage, at the storage positions of the output's
/// elements (first order). Added, not copied: an `as_strided` view may
/// reach one element several times (strides of 0 or overlapping ones),
/// and each use contributes.
pub(crate) fn strided_view(name: &'static str, x: &Tensor, y: Tensor) -> Result<Tensor> {
    if !needs_grad(&[x]) {
        return Ok(y);
    }
    let (xl, yl) = (x.layout().clone(), y.layout().clone());
    let elems = x.storage().nbytes() / x.element_size();
    record1(name, &[x], y, smallvec::smallvec![], move |c: &Ctx| {
        let g = c.grad();
        // each output element's storage position: offset + sum(i_k * stride_k)
        let mut pos = Tensor::full(&[], yl.offset() as i64, crate::DType::I64)?;
        let nd = yl.sizes().len();
        for (k, (&n, &st)) in yl.sizes().iter().zip(yl.strides()).enumerate() {
            let mut shape = vec![1i64; nd];
            shape[k] = n as i64;
            let steps = Tensor::arange(0i64, n as i64, 1i64, crate::DType::I64)?
                .mul(st as i64)?
                .reshape(&shape)?;
            pos = pos.add(&steps)?;
        }
        let pos = pos.expand(&yl.sizes().iter().map(|&s| s as i64).collect::<Vec<_>>())?;
        let buf = crate::autograd::with_no_grad(|| {
            Tensor::zeros(&[elems], g.dtype())?.scatter_add(
                0,
                &pos.reshape(&[-1])?,
                &g.reshape(&[-1])?,
            )
        })?;
        let gx = buf
            .as_strided(xl.sizes(), xl.strides(), Some(xl.offset()))?
            .contiguous()?;
        Ok(smallvec::smallvec![Some(gx)])
    })
}

/// Value-selecting ops with indices along `dim` (`max/min(dim)`, `sort`,
/// `topk`, `median(dim)`, `cummax`): the gradient goes to the chosen
/// positions.
pub(crate) fn select_by_indices(
    name: &'static str,
    x: &Tensor,
    d: usize,
    keepdim: bool,
    values: Tensor,
    indices: &Tensor,
) -> Result<Tensor> {
    if !needs_grad(&[x]) {
        return Ok(values);
    }
    let s = x.shape().to_vec();
    record1(
        name,
        &[x],
        values,
        smallvec::smallvec![Save::Tensor(indices)],
        move |c: &Ctx| {
            let (mut g, mut idx) = (c.grad().clone(), c.saved(0).clone());
            if !keepdim && !s.is_empty() {
                g = g.unsqueeze(d as i64)?;
                idx = idx.unsqueeze(d as i64)?;
            }
            let z = Tensor::zeros(&s, g.dtype())?;
            if s.is_empty() {
                return Ok(smallvec::smallvec![Some(g)]);
            }
            Ok(smallvec::smallvec![Some(
                z.scatter_add(d as i64, &idx, &g)?
            )])
        },
    )
}

/// `where(cond, a, b)`.
pub(crate) fn where_(cond: &Tensor, a: &Tensor, b: &Tensor, y: Tensor) -> Result<Tensor> {
    if !needs_grad(&[a, b]) {
        return Ok(y);
    }
    record1(
        "WhereBackward0",
        &[a, b],
        y,
        smallvec::smallvec![Save::Tensor(cond)],
        move |c: &Ctx| {
            let (g, m) = (c.grad(), c.saved(0));
            Ok(smallvec::smallvec![
                want(c, 0, || g.masked_fill(&m.logical_not()?, 0.0))?,
                want(c, 1, || g.masked_fill(m, 0.0))?,
            ])
        },
    )
}

/// `masked_fill(mask, value)`: filled positions get no gradient.
pub(crate) fn masked_fill(
    x: &Tensor,
    mask: &Tensor,
    value: Option<&Tensor>,
    y: Tensor,
) -> Result<Tensor> {
    let mut inputs = vec![x];
    inputs.extend(value);
    if !needs_grad(&inputs) {
        return Ok(y);
    }
    let n = inputs.len();
    record1(
        "MaskedFillBackward0",
        &inputs,
        y,
        smallvec::smallvec![Save::Tensor(mask)],
        move |c: &Ctx| {
            let (g, m) = (c.grad(), c.saved(0));
            let mut out = smallvec::smallvec![want(c, 0, || g.masked_fill(m, 0.0))?];
            if n > 1 {
                out.push(want(c, 1, || crate::native::where_(m, g, 0.0)?.sum())?);
            }
            Ok(out)
        },
    )
}

//! Derivatives of reductions and scans. A reduction over `dims` without
//! keepdim gets its gradient unsqueezed back at those dims, then expanded.

use crate::autograd::node::Save;
use crate::autograd::{needs_grad, record1, Ctx};
use crate::error::Result;
use crate::tensor::layout::wrap_dims;
use crate::tensor::Tensor;

/// Reduced dims of `x` (all of them for an empty list), sorted.
pub(crate) fn reduced_dims(x: &Tensor, dims: &[i64]) -> Result<Vec<usize>> {
    let mut d: Vec<usize> = if dims.is_empty() {
        (0..x.dim()).collect()
    } else {
        wrap_dims("sum", dims, x.dim())?.to_vec()
    };
    d.sort_unstable();
    Ok(d)
}

/// `g` (reduced over `dims`, with or without keepdim) reshaped so it
/// broadcasts against the input.
pub(crate) fn unreduce(g: &Tensor, dims: &[usize], keepdim: bool, ndim: usize) -> Result<Tensor> {
    if keepdim || ndim == 0 {
        return Ok(g.clone());
    }
    let mut g = g.clone();
    for &d in dims {
        g = g.unsqueeze(d as i64)?;
    }
    Ok(g)
}

fn shape_i64(s: &[usize]) -> Vec<i64> {
    s.iter().map(|&d| d as i64).collect()
}

/// `sum` / `mean` over `dims` as the op received them (`None` = all, named
/// `SumBackward0` / `MeanBackward0`; a dim list gives `...Backward1`): the
/// gradient is broadcast back (and divided by the count for the mean).
pub(crate) fn sum_or_mean(
    mean: bool,
    x: &Tensor,
    dims: Option<&[i64]>,
    keep: bool,
    y: Tensor,
) -> Result<Tensor> {
    if !needs_grad(&[x]) {
        return Ok(y);
    }
    let shape = shape_i64(x.shape());
    let n = x.dim();
    let (overload, dims, keep) = match dims {
        None => (0, (0..n).collect::<Vec<_>>(), false),
        Some(d) => (1, reduced_dims(x, d)?, keep),
    };
    let count: usize = dims.iter().map(|&d| x.shape()[d]).product();
    let name = super::node_name(if mean { "mean" } else { "sum" }, overload);
    record1(&name, &[x], y, vec![], move |c: &Ctx| {
        let g = unreduce(c.grad(), &dims, keep, n)?.expand(&shape)?;
        Ok(vec![Some(if mean { g.div(count as f64)? } else { g })])
    })
}

/// `amax`/`amin`/`max()`/`min()`: the gradient is shared evenly by the
/// elements equal to the extreme.
pub(crate) fn extreme(
    name: &str,
    x: &Tensor,
    dims: &[usize],
    keep: bool,
    y: Tensor,
) -> Result<Tensor> {
    if !needs_grad(&[x]) {
        return Ok(y);
    }
    let (dims, n) = (dims.to_vec(), x.dim());
    let di: Vec<i64> = dims.iter().map(|&d| d as i64).collect();
    record1(
        name,
        &[x],
        y,
        vec![Save::Tensor(x), Save::Output(0)],
        move |c: &Ctx| {
            let (x, y) = (c.saved(0), c.saved(1));
            let yb = unreduce(y, &dims, keep, n)?;
            let mask = x.eq(&yb)?.to_dtype(x.dtype())?;
            let count = if di.is_empty() {
                mask.sum()?
            } else {
                mask.sum_dim(Some(&di), true, None)?
            };
            let g = unreduce(c.grad(), &dims, keep, n)?;
            Ok(vec![Some(g.mul(&mask)?.div(&count)?)])
        },
    )
}

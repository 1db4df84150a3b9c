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

/// [`reduced_dims`] for an optional list (`None` = every dim).
fn all_or(x: &Tensor, dims: Option<&[i64]>) -> Result<Vec<usize>> {
    match dims {
        None => Ok((0..x.dim()).collect()),
        Some(d) => reduced_dims(x, d),
    }
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
    // a 0-d tensor reduced over its dim 0 (or -1) counts one element
    let count: usize = dims
        .iter()
        .map(|&d| x.shape().get(d).copied().unwrap_or(1))
        .product();
    let name = super::node_name(if mean { "mean" } else { "sum" }, overload);
    record1(name, &[x], y, smallvec::smallvec![], move |c: &Ctx| {
        let g = unreduce(c.grad(), &dims, keep, n)?.expand(&shape)?;
        Ok(smallvec::smallvec![Some(if mean {
            g.div(count as f64)?
        } else {
            g
        })])
    })
}

/// `amax`/`amin`/`max()`/`min()`: the gradient is shared evenly by the
/// elements equal to the extreme. `max()`/`min()` (over everything) are
/// torch's `evenly_distribute_backward`: a NaN result shares it among the
/// NaN elements, and the others get 0 by a select; `amax`/`amin` are its
/// `scale_grad_by_count`, a product with the mask.
pub(crate) fn extreme(
    name: &'static str,
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
        smallvec::smallvec![Save::Tensor(x), Save::Output(0)],
        move |c: &Ctx| {
            let (x, y) = (c.saved(0), c.saved(1));
            let yb = unreduce(y, &dims, keep, n)?;
            if matches!(name, "MaxBackward1" | "MinBackward1") {
                let hit = x
                    .eq(&yb)?
                    .logical_or(&x.isnan()?.logical_and(&yb.isnan()?)?)?;
                let count = hit.to_dtype(x.dtype())?.sum()?;
                let share = c.grad().div(&count)?;
                return Ok(smallvec::smallvec![Some(crate::native::where_(
                    &hit, &share, 0.0
                )?)]);
            }
            let mask = x.eq(&yb)?.to_dtype(x.dtype())?;
            let count = if di.is_empty() {
                mask.sum()?
            } else {
                mask.sum_dim(Some(&di), true, None)?
            };
            let g = unreduce(c.grad(), &dims, keep, n)?;
            Ok(smallvec::smallvec![Some(g.mul(&mask)?.div(&count)?)])
        },
    )
}

/// `var_mean` / `std_mean` (and `var` / `std`, which keep the first
/// output): `d var / dx = 2 (x - mean) / (N - correction)`; the standard
/// deviation divides that by `2 std` (0 where std is 0, as PyTorch); the
/// mean spreads its gradient evenly. `name` is the node's name.
#[allow(clippy::too_many_arguments)]
pub(crate) fn var_std_mean(
    name: &'static str,
    std: bool,
    x: &Tensor,
    dims: Option<&[i64]>,
    correction: f64,
    keep: bool,
    spread: Tensor,
    mean: Tensor,
) -> Result<(Tensor, Tensor)> {
    if !needs_grad(&[x]) {
        return Ok((spread, mean));
    }
    let n = x.dim();
    let dims = all_or(x, dims)?;
    let di: Vec<i64> = dims.iter().map(|&d| d as i64).collect();
    // a 0-d tensor reduced over its dim 0 (or -1) counts one element
    let count: usize = dims
        .iter()
        .map(|&d| x.shape().get(d).copied().unwrap_or(1))
        .product();
    let shape = shape_i64(x.shape());
    crate::autograd::record(
        name,
        &[x],
        &[&spread, &mean],
        smallvec::smallvec![Save::Tensor(x), Save::Output(0)],
        move |c: &Ctx| {
            let (x, s) = (c.saved(0), c.saved(1));
            let mut gs = unreduce(c.grad_at(0), &dims, keep, n)?;
            if std {
                let su = unreduce(s, &dims, keep, n)?;
                gs = gs.div(&su.mul(2.0)?)?.masked_fill(&su.eq(0.0)?, 0.0)?;
            }
            let centered = x.sub(&x.mean_dim(Some(&di), true, None)?)?;
            let dof = (count as f64 - correction).max(0.0);
            let gv = gs.mul(&centered)?.mul(2.0 / dof)?;
            let gm = unreduce(c.grad_at(1), &dims, keep, n)?
                .expand(&shape)?
                .div(count as f64)?;
            Ok(smallvec::smallvec![Some(gv.add(&gm)?)])
        },
    )?;
    Ok((spread, mean))
}

/// `logsumexp`: the gradient is weighted by `softmax = exp(x - y)`.
pub(crate) fn logsumexp(x: &Tensor, dims: &[i64], keep: bool, y: Tensor) -> Result<Tensor> {
    if !needs_grad(&[x]) {
        return Ok(y);
    }
    let (dims, n) = (reduced_dims(x, dims)?, x.dim());
    record1(
        "LogsumexpBackward0",
        &[x],
        y,
        smallvec::smallvec![Save::Tensor(x), Save::Output(0)],
        move |c: &Ctx| {
            let (x, y) = (c.saved(0), c.saved(1));
            let w = x.sub(&unreduce(y, &dims, keep, n)?)?.exp()?;
            Ok(smallvec::smallvec![Some(
                unreduce(c.grad(), &dims, keep, n)?.mul(&w)?
            )])
        },
    )
}

/// `norm(p)` (PyTorch's `norm_backward`): `sign(x)` for p = 1, `x / ‖x‖`
/// for p = 2, the elements attaining the extreme for ±inf (shared evenly;
/// a NaN row's NaNs, so its gradient is 0),
/// `x |x|^(p-2) / ‖x‖^(p-1)` otherwise; 0 where the norm is 0.
pub(crate) fn norm(
    x: &Tensor,
    p: f64,
    dims: Option<&[i64]>,
    keep: bool,
    y: Tensor,
) -> Result<Tensor> {
    if !needs_grad(&[x]) {
        return Ok(y);
    }
    let n = x.dim();
    let dims = all_or(x, dims)?;
    let keep = keep || dims.is_empty() && n == 0;
    let di: Vec<i64> = dims.iter().map(|&d| d as i64).collect();
    record1(
        "LinalgVectorNormBackward0",
        &[x],
        y,
        smallvec::smallvec![Save::Tensor(x), Save::Output(0)],
        move |c: &Ctx| {
            let (x, y) = (c.saved(0), c.saved(1));
            let g = unreduce(c.grad(), &dims, keep, n)?;
            let yu = unreduce(y, &dims, keep, n)?;
            let zero = yu.eq(0.0)?;
            let gx = if p == 0.0 {
                x.mul(0.0)?.mul(&g)?
            } else if p == 1.0 {
                g.mul(&x.sign()?)?
            } else if p == 2.0 {
                g.div(&yu)?.masked_fill(&zero, 0.0)?.mul(x)?
            } else if p.is_infinite() {
                // the elements attaining the norm, or NaN (torch's mask:
                // a NaN row shares g among its NaNs, whose sign is 0)
                let ax = x.abs()?;
                let hit = ax.eq(&yu)?.logical_or(&ax.isnan()?)?.to_dtype(x.dtype())?;
                let count = if di.is_empty() {
                    hit.sum()?
                } else {
                    hit.sum_dim(Some(&di), true, None)?
                };
                g.mul(&x.sign()?)?.mul(&hit)?.div(&count)?
            } else {
                let scale = g.div(&yu.pow(p - 1.0)?)?.masked_fill(&zero, 0.0)?;
                // x |x|^(p-2) is 0 at x = 0 (torch's subgradient), not 0·inf
                let dir = x
                    .mul(&x.abs()?.pow(p - 2.0)?)?
                    .masked_fill(&x.eq(0.0)?, 0.0)?;
                dir.mul(&scale)?
            };
            Ok(smallvec::smallvec![Some(gx)])
        },
    )
}

/// `x` with `dims` moved last and flattened into one: `[rest.., prod(dims)]`,
/// and the permutation that moves them back.
fn dims_last(x: &Tensor, dims: &[usize]) -> Result<(Tensor, Vec<usize>)> {
    let rest: Vec<usize> = (0..x.dim()).filter(|d| !dims.contains(d)).collect();
    let mut perm = rest.clone();
    perm.extend(dims);
    let mut shape: Vec<i64> = rest.iter().map(|&d| x.shape()[d] as i64).collect();
    shape.push(-1);
    let mut inv = vec![0; perm.len()];
    for (i, &p) in perm.iter().enumerate() {
        inv[p] = i;
    }
    Ok((x.permute_dims(&perm)?.reshape(&shape)?, inv))
}

/// Product of all other elements along the last dim, for each element
/// (exclusive products from both ends, so zeros need no division).
fn product_of_others(x: &Tensor) -> Result<Tensor> {
    let d = x.dim() as i64 - 1;
    let len = x.shape()[x.dim() - 1];
    let mut one_shape = x.shape().to_vec();
    *one_shape.last_mut().expect("dim >= 1") = 1;
    let one = Tensor::ones(&one_shape, x.dtype())?;
    let head = crate::native::movement::cat(&[one.clone(), x.narrow(d, 0, len - 1)?], d)?;
    let tail = crate::native::movement::cat(&[x.narrow(d, 1, len - 1)?, one], d)?;
    let before = head.cumprod(d, None)?;
    let after = tail.flip(&[d])?.cumprod(d, None)?.flip(&[d])?;
    before.mul(&after)
}

/// `prod` over `dims` (`None` = all): `g · y / x` when `x` has no zeros;
/// otherwise `g` times the product of the other elements.
pub(crate) fn prod(x: &Tensor, dims: Option<&[i64]>, keep: bool, y: Tensor) -> Result<Tensor> {
    if !needs_grad(&[x]) {
        return Ok(y);
    }
    let n = x.dim();
    let (name, dims, keep) = match dims {
        None => ("ProdBackward0", (0..n).collect::<Vec<_>>(), false),
        Some(d) => ("ProdBackward1", reduced_dims(x, d)?, keep),
    };
    record1(
        name,
        &[x],
        y,
        smallvec::smallvec![Save::Tensor(x), Save::Output(0)],
        move |c: &Ctx| {
            let (x, y) = (c.saved(0), c.saved(1));
            let g = unreduce(c.grad(), &dims, keep, n)?;
            let has_zero = crate::autograd::with_no_grad(|| x.eq(0.0)?.any()?.item())?.to_bool();
            if !has_zero || n == 0 {
                return Ok(smallvec::smallvec![Some(
                    g.mul(&unreduce(y, &dims, keep, n)?)?.div(x)?
                )]);
            }
            let (flat, inv) = dims_last(x, &dims)?;
            let others = product_of_others(&flat)?;
            let mut sh: Vec<i64> = (0..n)
                .filter(|d| !dims.contains(d))
                .map(|d| x.shape()[d] as i64)
                .collect();
            sh.extend(dims.iter().map(|&d| x.shape()[d] as i64));
            let others = others.reshape(&sh)?.permute_dims(&inv)?;
            Ok(smallvec::smallvec![Some(g.mul(&others)?)])
        },
    )
}

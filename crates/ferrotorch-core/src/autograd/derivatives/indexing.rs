//! Derivatives of indexing and data movement: `index_select`, `gather`,
//! the `scatter` family, `masked_select`, `cat`, `index_put`, `copy_` and
//! `fill_`. Gathers send gradients back with a scatter-add and scatters
//! with a gather, so each formula is differentiable again.

use super::want;
use crate::autograd::node::Save;
use crate::autograd::{needs_grad, record1, Ctx};
use crate::error::Result;
use crate::tensor::Tensor;

/// `index` (1-D, along `d`) reshaped and expanded to `like`'s shape, so a
/// scatter along `d` places whole slices.
fn slice_index(index: &Tensor, d: usize, like: &[usize]) -> Result<Tensor> {
    let mut shape = vec![1i64; like.len()];
    shape[d] = -1;
    let e: Vec<i64> = like.iter().map(|&s| s as i64).collect();
    index.reshape(&shape)?.expand(&e)
}

/// `x.index_select(d, index)`: the gradient adds each selected slice back
/// at its index (repeated indices accumulate).
pub(crate) fn index_select(x: &Tensor, d: usize, index: &Tensor, y: Tensor) -> Result<Tensor> {
    if !needs_grad(&[x]) {
        return Ok(y);
    }
    let shape = x.shape().to_vec();
    record1(
        "IndexSelectBackward0",
        &[x],
        y,
        smallvec::smallvec![Save::Tensor(index)],
        move |c: &Ctx| {
            let g = c.grad();
            if shape.is_empty() {
                return Ok(smallvec::smallvec![Some(g.reshape(&[])?)]);
            }
            if let Some(gx) = index_add_rows(&shape, d, c.saved(0), g)? {
                return Ok(smallvec::smallvec![Some(gx)]);
            }
            let z = Tensor::zeros(&shape, g.dtype())?;
            let idx = slice_index(&c.saved(0).reshape(&[-1])?, d, g.shape())?;
            Ok(smallvec::smallvec![Some(z.scatter_add(d as i64, &idx, g)?)])
        },
    )
}

/// The gradient of `index_select` (and so `embedding`) without
/// `create_graph`: zeros shaped like the input, with each slice of `g`
/// added at its index as one loop over contiguous rows, instead of
/// `scatter_add` with an index expanded to `g`'s shape (an index per
/// element, 13x slower for an embedding's backward). `None` (the
/// differentiable scatter) for other dtypes or under `create_graph`.
fn index_add_rows(shape: &[usize], d: usize, index: &Tensor, g: &Tensor) -> Result<Option<Tensor>> {
    use crate::DType;
    if crate::autograd::mode::is_grad_enabled() || !matches!(g.dtype(), DType::F32 | DType::F64) {
        return Ok(None);
    }
    let idx = index
        .reshape(&[-1])?
        .to_dtype(DType::I64)?
        .to_vec::<i64>()?;
    let n = shape[d];
    let (outer, inner): (usize, usize) =
        (shape[..d].iter().product(), shape[d + 1..].iter().product());
    let k = idx.len();
    if g.numel() != outer * k * inner || idx.iter().any(|&i| i < 0 || i as usize >= n) {
        return Ok(None);
    }
    let g = g.contiguous()?;
    let out = Tensor::zeros(shape, g.dtype())?;
    fn add_rows<T: crate::dtype::Element + std::ops::AddAssign>(
        o: &mut [T],
        g: &[T],
        idx: &[i64],
        (outer, n, inner): (usize, usize, usize),
    ) {
        let k = idx.len();
        for ou in 0..outer {
            for (i, &ix) in idx.iter().enumerate() {
                let dst = &mut o[(ou * n + ix as usize) * inner..][..inner];
                let src = &g[(ou * k + i) * inner..][..inner];
                for (a, &b) in dst.iter_mut().zip(src) {
                    *a += b;
                }
            }
        }
    }
    let dims = (outer, n, inner);
    match g.dtype() {
        DType::F32 => crate::tensor::access::contiguous_slices_mut::<f32>(
            "index_select_backward",
            &[&out],
            &[&g],
            |o, r| add_rows(o[0], r[0], &idx, dims),
        )?,
        _ => crate::tensor::access::contiguous_slices_mut::<f64>(
            "index_select_backward",
            &[&out],
            &[&g],
            |o, r| add_rows(o[0], r[0], &idx, dims),
        )?,
    }
    Ok(Some(out))
}

/// `x.gather(d, index)`: scatter-add the gradient at the gathered positions.
pub(crate) fn gather(x: &Tensor, d: usize, index: &Tensor, y: Tensor) -> Result<Tensor> {
    if !needs_grad(&[x]) {
        return Ok(y);
    }
    let shape = x.shape().to_vec();
    record1(
        "GatherBackward0",
        &[x],
        y,
        smallvec::smallvec![Save::Tensor(index)],
        move |c: &Ctx| {
            let z = Tensor::zeros(&shape, c.grad().dtype())?;
            Ok(smallvec::smallvec![Some(z.scatter_add(
                d as i64,
                c.saved(0),
                c.grad()
            )?)])
        },
    )
}

/// `self.scatter_reduce(d, index, src, reduce, include_self)` (plain
/// `scatter` is `reduce = None`, `scatter_add` is `"sum"`), with PyTorch's
/// formulas: positions that were overwritten get no gradient; `mean`
/// divides by the count; `amax`/`amin` share the gradient evenly among the
/// elements equal to the result; `prod` divides the result by each factor,
/// with zeros handled as torch does.
pub(crate) fn scatter_reduce(
    x: &Tensor,
    d: usize,
    index: &Tensor,
    src: &Tensor,
    reduce: Option<&str>,
    include_self: bool,
    y: Tensor,
) -> Result<Tensor> {
    if !needs_grad(&[x, src]) {
        return Ok(y);
    }
    let mode = match reduce {
        None => "none",
        Some("add") => "sum",
        Some("multiply") => "prod",
        Some(m) => m,
    }
    .to_string();
    let name = match reduce {
        None => "ScatterBackward0",
        Some("sum" | "add") if include_self => "ScatterAddBackward0",
        _ => "ScatterReduceBackward0",
    };
    let di = d as i64;
    let x_shape = x.shape().to_vec();
    // Save only what the mode's formula reads (more would make harmless
    // in-place updates of x or src fail the version check): the index
    // always; self, src and the result for amax/amin/prod.
    let mut saves = smallvec::smallvec![Save::Tensor(index)];
    if matches!(mode.as_str(), "amax" | "amin" | "prod") {
        saves.extend([Save::Tensor(x), Save::Tensor(src), Save::Output(0)]);
    }
    record1(name, &[x, src], y, saves, move |c: &Ctx| {
        let (g, idx) = (c.grad(), c.saved(0));
        // self, the src values that took part (the corner shaped like the
        // index) and the result, for the modes that saved them
        let values = || -> Result<(&Tensor, Tensor, &Tensor)> {
            let src = crate::native::movement::scatter_source(c.saved(2), idx.shape())?;
            Ok((c.saved(1), src, c.saved(3)))
        };
        let zero_scattered = |t: &Tensor| t.scatter(di, idx, &Tensor::zeros(&[], t.dtype())?);
        Ok(match mode.as_str() {
            "none" => smallvec::smallvec![
                want(c, 0, || zero_scattered(g))?,
                want(c, 1, || g.gather(di, idx))?,
            ],
            "sum" => smallvec::smallvec![
                want(c, 0, || {
                    if include_self {
                        Ok(g.clone())
                    } else {
                        zero_scattered(g)
                    }
                })?,
                want(c, 1, || g.gather(di, idx))?,
            ],
            "mean" => {
                let init = if include_self { 1.0 } else { 0.0 };
                let n = Tensor::full(&x_shape, init, g.dtype())?.scatter_add(
                    di,
                    idx,
                    &Tensor::ones(idx.shape(), g.dtype())?,
                )?;
                let n = n.masked_fill(&n.eq(0.0)?, 1.0)?;
                let gn = g.div(&n)?;
                smallvec::smallvec![
                    want(c, 0, || {
                        if include_self {
                            Ok(gn.clone())
                        } else {
                            zero_scattered(&gn)
                        }
                    })?,
                    want(c, 1, || gn.gather(di, idx))?,
                ]
            }
            "amax" | "amin" => {
                let (xs, src, out) = values()?;
                let self_is = xs.eq(out)?.to_dtype(g.dtype())?;
                let self_is = if include_self {
                    self_is
                } else {
                    zero_scattered(&self_is)?
                };
                let src_is = src.eq(&out.gather(di, idx)?)?.to_dtype(g.dtype())?;
                let count = self_is.scatter_add(di, idx, &src_is)?;
                let share = g.div(&count)?;
                smallvec::smallvec![
                    want(c, 0, || share.mul(&self_is))?,
                    want(c, 1, || src_is.mul(&share.gather(di, idx)?))?,
                ]
            }
            _ => {
                // torch's formula: zeros are divided out by masking them to
                // 1 and recomputing the product; a src zero alone at its
                // target gets the product of the others there, two or more
                // zeros at one target give 0
                let (xs, src, out) = values()?;
                let prod = Some("prod");
                let grad_self = || {
                    if !include_self {
                        return zero_scattered(g);
                    }
                    let masked = xs.masked_fill(&xs.eq(0.0)?, 1.0)?;
                    g.mul(&masked.scatter_reduce(di, idx, &src, prod, true)?)?
                        .div(&masked)
                };
                let grad_src = || {
                    let zero = src.eq(0.0)?;
                    let n_zeros = Tensor::zeros(&x_shape, g.dtype())?
                        .scatter_add(di, idx, &zero.to_dtype(g.dtype())?)?
                        .gather(di, idx)?;
                    let single = zero.logical_and(&n_zeros.eq(1.0)?)?;
                    let others = xs.scatter_reduce(
                        di,
                        idx,
                        &src.masked_fill(&single, 1.0)?,
                        prod,
                        include_self,
                    )?;
                    crate::native::pointwise::where_(
                        &single,
                        &g.mul(&others)?.gather(di, idx)?,
                        &g.mul(out)?
                            .gather(di, idx)?
                            .div(&src.masked_fill(&zero, 1.0)?)?,
                    )
                };
                smallvec::smallvec![want(c, 0, grad_self)?, want(c, 1, grad_src)?]
            }
        })
    })
}

/// `x.masked_select(mask)`: the 1-D gradient goes back to the selected
/// positions of the broadcast shape (the engine sums it to `x`'s shape).
pub(crate) fn masked_select(
    x: &Tensor,
    mask: &Tensor,
    shape: &[usize],
    y: Tensor,
) -> Result<Tensor> {
    if !needs_grad(&[x]) {
        return Ok(y);
    }
    let shape = shape.to_vec();
    let e: Vec<i64> = shape.iter().map(|&s| s as i64).collect();
    let positions = mask
        .broadcast_to(&shape)?
        .reshape(&[-1])?
        .nonzero()?
        .reshape(&[-1])?;
    record1(
        "MaskedSelectBackward0",
        &[x],
        y,
        smallvec::smallvec![Save::Tensor(&positions)],
        move |c: &Ctx| {
            let g = c.grad();
            let n: usize = shape.iter().product();
            let z = Tensor::zeros(&[n], g.dtype())?;
            Ok(smallvec::smallvec![Some(
                z.scatter_add(0, c.saved(0), g)?.reshape(&e)?
            )])
        },
    )
}

/// `cat(tensors, d)`: each input gets its slice of the gradient (skipped
/// empty 1-D inputs get an empty one).
pub(crate) fn cat(tensors: &[Tensor], d: usize, y: Tensor) -> Result<Tensor> {
    let ins: Vec<&Tensor> = tensors.iter().collect();
    if !needs_grad(&ins) {
        return Ok(y);
    }
    let sizes: Vec<Option<usize>> = tensors
        .iter()
        .map(|t| (!(t.dim() == 1 && t.numel() == 0)).then(|| t.shape()[d]))
        .collect();
    record1(
        "CatBackward0",
        &ins,
        y,
        smallvec::smallvec![],
        move |c: &Ctx| {
            let g = c.grad();
            let mut off = 0;
            sizes
                .iter()
                .enumerate()
                .map(|(i, s)| match s {
                    None => want(c, i, || Tensor::zeros(&[0], g.dtype())),
                    Some(n) => {
                        let r = want(c, i, || g.narrow(d as i64, off as i64, *n));
                        off += n;
                        r
                    }
                })
                .collect()
        },
    )
}

/// `stack(tensors, d)`: one node (torch's `StackBackward0`); each input
/// gets its slice of the gradient along `d`.
pub(crate) fn stack(tensors: &[Tensor], d: usize, y: Tensor) -> Result<Tensor> {
    let ins: Vec<&Tensor> = tensors.iter().collect();
    if !needs_grad(&ins) {
        return Ok(y);
    }
    let n = tensors.len();
    record1(
        "StackBackward0",
        &ins,
        y,
        smallvec::smallvec![],
        move |c: &Ctx| {
            let g = c.grad();
            (0..n)
                .map(|i| want(c, i, || g.select(d as i64, i as i64)))
                .collect()
        },
    )
}

/// `x.index_put(indices, values, accumulate)` out of place: without
/// accumulate the written positions get no gradient; `values` gets the
/// gradient read back at those positions (summed to its shape).
pub(crate) fn index_put(
    x: &Tensor,
    indices: &[crate::tensor::index::TensorIndex],
    values: &Tensor,
    accumulate: bool,
    y: Tensor,
) -> Result<Tensor> {
    if !needs_grad(&[x, values]) {
        return Ok(y);
    }
    let idx = indices.to_vec();
    record1(
        "IndexPutBackward0",
        &[x, values],
        y,
        smallvec::smallvec![],
        move |c: &Ctx| {
            let g = c.grad();
            Ok(smallvec::smallvec![
                want(c, 0, || {
                    if accumulate {
                        Ok(g.clone())
                    } else {
                        g.index_put(&idx, &Tensor::zeros(&[], g.dtype())?, false)
                    }
                })?,
                want(c, 1, || g.index(&idx))?,
            ])
        },
    )
}

/// `dst.copy_(src)` seen out of place: the old value of `dst` gets no
/// gradient, `src` gets all of it (summed over broadcasting, cast back).
pub(crate) fn copy(old: &Tensor, src: &Tensor, y: Tensor) -> Result<Tensor> {
    if !needs_grad(&[old, src]) {
        return Ok(y);
    }
    record1(
        "CopyBackwards",
        &[old, src],
        y,
        smallvec::smallvec![],
        move |c: &Ctx| {
            let g = c.grad();
            Ok(smallvec::smallvec![
                want(c, 0, || g.zeros_like())?,
                want(c, 1, || Ok(g.clone()))?,
            ])
        },
    )
}

/// `t.fill_(v)` seen out of place: the old value gets no gradient.
pub(crate) fn fill(old: &Tensor, y: Tensor) -> Result<Tensor> {
    if !needs_grad(&[old]) {
        return Ok(y);
    }
    record1(
        "FillBackward0",
        &[old],
        y,
        smallvec::smallvec![],
        |c: &Ctx| Ok(smallvec::smallvec![Some(c.grad().zeros_like()?)]),
    )
}

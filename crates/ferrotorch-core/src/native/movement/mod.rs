//! Data movement: `cat`, `stack`, `index_select`, `gather`, `scatter`
//! (plain, add, reduce), `take`, `take_along_dim`, `masked_select`,
//! `nonzero`, `repeat`, `repeat_interleave`, `tile`, `flip`, `roll`,
//! `tril`/`triu` (those that rearrange whole tensors in [`arrange`]).
//!
//! Ops that only move elements copy them by element size (1, 2, 4 or 8
//! bytes), so they are compiled four times rather than once per dtype.

mod arrange;

pub use arrange::{cat, stack};

use crate::dispatch::Registry;
use crate::dtype::{DType, Element};
use crate::error::Result;
use crate::tensor::layout::{broadcast_shapes, wrap_dim};
use crate::tensor::Tensor;

/// Run `$body` with `$T` an unsigned integer type of `$size` bytes.
macro_rules! by_size {
    ($size:expr, $T:ident => $body:expr) => {
        match $size {
            1 => {
                type $T = u8;
                $body
            }
            2 => {
                type $T = u16;
                $body
            }
            4 => {
                type $T = u32;
                $body
            }
            8 => {
                type $T = u64;
                $body
            }
            _ => {
                // 16 bytes: complex128 (complex64 is 8)
                type $T = u128;
                $body
            }
        }
    };
}

/// Index values as i64, checked against `n` of dimension `dim`: negative
/// indices are out of range, as in PyTorch's `index_select`, `gather` and
/// `scatter` (only `take` and tensor indexing wrap them, through
/// [`wrap_negative`] first). An out-of-range index is an IndexError for
/// `index_select` (PyTorch's "index out of range in self"; its kernel for
/// inner dims raises RuntimeError instead, which we do not copy) and a
/// RuntimeError for `gather`/`scatter`, as in PyTorch.
fn indices(op: &str, index: &Tensor, dim: usize, n: usize) -> Result<Vec<usize>> {
    let kind = if op.starts_with("gather") || op.starts_with("scatter") {
        crate::ErrorKind::Runtime
    } else {
        crate::ErrorKind::Index
    };
    // an empty index of another integer dtype selects nothing: torch accepts it
    crate::ensure!(
        matches!(index.dtype(), DType::I64 | DType::I32)
            || (index.numel() == 0 && !index.is_floating_point() && index.dtype() != DType::Bool),
        Runtime,
        "{op}(): Expected dtype int32/int64 for index but got: {}",
        index.dtype()
    );
    index
        .to_vec_i64()?
        .into_iter()
        .map(|i| {
            if i < 0 || i >= n as i64 {
                return Err(crate::Error::new(
                    kind,
                    format!("{op}(): index {i} is out of bounds for dimension {dim} with size {n}"),
                ));
            }
            Ok(i as usize)
        })
        .collect()
}

/// `index` with negative values counted from the end of a dimension of
/// size `n` (tensor indexing and `take`), or `err(i)` for the first value
/// outside `-n..n`.
pub(crate) fn wrap_negative(
    index: &Tensor,
    n: usize,
    err: impl Fn(i64) -> crate::Error,
) -> Result<Tensor> {
    let v = index.to_vec_i64()?;
    let mut out = crate::storage::try_vec(v.len())?;
    for i in v {
        let j = if i < 0 { i + n as i64 } else { i };
        if j < 0 || j >= n as i64 {
            return Err(err(i));
        }
        out.push(j);
    }
    Tensor::from_vec(out, index.shape())
}

/// Copy elements of contiguous `src` into contiguous `dst` by
/// `(src_index, dst_index)` pairs.
fn copy_pairs(src: &Tensor, dst: &Tensor, pairs: impl Iterator<Item = (usize, usize)>) {
    debug_assert!(src.is_contiguous() && dst.is_contiguous() && src.dtype() == dst.dtype());
    let _g = crate::storage::lock_storages(&[src.storage()], &[dst.storage()]);
    by_size!(src.element_size(), U => {
        let (s, d) = (src.data_ptr() as *const U, dst.data_ptr() as *mut U);
        // SAFETY: callers produce indices within both tensors.
        for (i, j) in pairs { unsafe { *d.add(j) = *s.add(i) } }
    })
}

/// The values a scatter reads from `src`: a one-element `src` broadcast to
/// the index's shape, otherwise the leading corner of `src` shaped like
/// the index.
pub(crate) fn scatter_source(src: &Tensor, index_shape: &[usize]) -> Result<Tensor> {
    if src.numel() == 1 {
        let e: Vec<i64> = index_shape.iter().map(|&s| s as i64).collect();
        return src.reshape(&[])?.expand(&e);
    }
    let mut t = src.clone();
    for (k, &s) in index_shape.iter().enumerate() {
        if t.shape()[k] != s {
            t = t.narrow(k as i64, 0, s)?;
        }
    }
    t.contiguous()
}

crate::ops! {
    register = register_ops;
    /// Elements at `index` along `dim` (`torch.index_select`).
    #[op = "index_select(Tensor self, int dim, Tensor index) -> Tensor"]
    pub fn index_select(&self, dim: i64, index: &Tensor) -> Result<Tensor> {
        let y = crate::autograd::raw(&[self], || self.index_select_impl(dim, index))?;
        let d = if self.dim() == 0 {
            0
        } else {
            wrap_dim(dim, self.dim())?
        };
        crate::autograd::derivatives::indexing::index_select(self, d, index, y)
    }

    fn index_select_impl(&self, dim: i64, index: &Tensor) -> Result<Tensor> {
        crate::ensure!(
            index.dim() <= 1,
            Index,
            "index_select(): Index is supposed to be a vector"
        );
        let d = wrap_dim(dim, self.dim())?;
        let n = if self.dim() == 0 { 1 } else { self.shape()[d] };
        let idx = indices("index_select", index, d, n)?;
        let src = self.contiguous()?;
        let mut shape = self.shape().to_vec();
        if self.dim() > 0 {
            shape[d] = idx.len();
        }
        let out = Tensor::empty(&shape, self.dtype())?;
        let outer: usize = self.shape()[..d.min(self.dim())].iter().product();
        let inner: usize = if self.dim() == 0 {
            1
        } else {
            self.shape()[d + 1..].iter().product()
        };
        // whole rows of `inner` elements at a time (an embedding lookup
        // copies rows of the embedding width)
        {
            let _g = crate::storage::lock_storages(&[src.storage()], &[out.storage()]);
            by_size!(src.element_size(), U => {
                let (s, dp) = (src.data_ptr() as *const U, out.data_ptr() as *mut U);
                for o in 0..outer {
                    for (k, &i) in idx.iter().enumerate() {
                        // SAFETY: `indices` checked every i < n, so the row lies
                        // in `src` ([outer, n, inner]); the destination row lies
                        // in `out` ([outer, len, inner]); they are different
                        // allocations.
                        unsafe {
                            std::ptr::copy_nonoverlapping(
                                s.add((o * n + i) * inner),
                                dp.add((o * idx.len() + k) * inner),
                                inner,
                            )
                        }
                    }
                }
            });
        }
        Ok(out)
    }

    /// `out[..i..] = self[..index[..i..]..]` along `dim` (`torch.gather`).
    pub fn gather(&self, dim: i64, index: &Tensor) -> Result<Tensor> {
        crate::enter_op!("gather", self, dim, index, false);
        let y = crate::autograd::raw(&[self], || self.gather_impl(dim, index))?;
        let d = wrap_dim(dim, self.dim())?;
        crate::autograd::derivatives::indexing::gather(self, d, index, y)
    }

    fn gather_impl(&self, dim: i64, index: &Tensor) -> Result<Tensor> {
        let d = wrap_dim(dim, self.dim())?;
        if index.numel() == 0 {
            // torch checks nothing else for an empty index (any rank, any dtype)
            return Tensor::empty(index.shape(), self.dtype());
        }
        crate::ensure!(
            index.dim() == self.dim() || (self.dim() == 0 && index.dim() <= 1),
            Runtime,
            "Index tensor must have the same number of dimensions as input tensor"
        );
        for k in 0..index.dim() {
            crate::ensure!(
                k == d || index.shape()[k] <= self.shape()[k],
                Runtime,
                "Size does not match at dimension {k} expected index {:?} to be no larger than self {:?} apart from dimension {d}",
                index.shape(),
                self.shape()
            );
        }
        let n = if self.dim() == 0 { 1 } else { self.shape()[d] };
        let idx = indices("gather", index, d, n)?;
        let src = self.contiguous()?;
        let out = Tensor::empty(index.shape(), self.dtype())?;
        let sst = crate::tensor::layout::contiguous_strides(self.shape());
        // a 0-d self has one element: every (in-range) index reads it
        let ishape = if self.dim() == 0 {
            vec![]
        } else {
            index.shape().to_vec()
        };
        let pairs = idx.iter().enumerate().map(|(flat, &i)| {
            let mut rem = flat;
            let mut off = 0;
            for k in (0..ishape.len()).rev() {
                let c = rem % ishape[k];
                rem /= ishape[k];
                off += if k == d { i } else { c } * sst[k];
            }
            (off, flat)
        });
        copy_pairs(&src, &out, pairs);
        Ok(out)
    }

    /// Scatter `src` (or a scalar) into a copy of `self` at `index` along
    /// `dim`, optionally reducing (`"sum"`, `"prod"`, `"mean"`, `"amax"`,
    /// `"amin"`) with the existing values (`torch.scatter_reduce`; plain
    /// `scatter` is `reduce = None`).
    pub fn scatter_reduce(
        &self,
        dim: i64,
        index: &Tensor,
        src: &Tensor,
        reduce: Option<&str>,
        include_self: bool,
    ) -> Result<Tensor> {
        let y = crate::autograd::raw(&[self, src], || {
            self.scatter_reduce_impl(dim, index, src, reduce, include_self)
        })?;
        let d = wrap_dim(dim, self.dim())?;
        crate::autograd::derivatives::indexing::scatter_reduce(
            self,
            d,
            index,
            src,
            reduce,
            include_self,
            y,
        )
    }

    fn scatter_reduce_impl(
        &self,
        dim: i64,
        index: &Tensor,
        src: &Tensor,
        reduce: Option<&str>,
        include_self: bool,
    ) -> Result<Tensor> {
        let d = wrap_dim(dim, self.dim())?;
        if index.numel() == 0 {
            // torch checks nothing else for an empty index: nothing is written
            return self.contiguous()?.deep_clone();
        }
        // a 0-d self takes a 0-d or one-element 1-d index, as in gather
        let rank_ok = |r: usize| r == self.dim() || (self.dim() == 0 && r <= 1);
        crate::ensure!(
            rank_ok(index.dim()) && (src.dim() == index.dim() || src.numel() == 1),
            Runtime,
            "Index tensor must have the same number of dimensions as self tensor"
        );
        for k in 0..index.dim() {
            crate::ensure!(
                (src.numel() == 1 || index.shape()[k] <= src.shape()[k])
                    && (k == d || self.dim() == 0 || index.shape()[k] <= self.shape()[k]),
                Runtime,
                "Expected index {:?} to be smaller than self {:?} apart from dimension {d} and to be smaller size than src {:?}",
                index.shape(),
                self.shape(),
                src.shape()
            );
        }
        let n = if self.dim() == 0 { 1 } else { self.shape()[d] };
        let idx = indices("scatter", index, d, n)?;
        let out = self.contiguous()?.deep_clone()?;
        let src_vals = scatter_source(&src.to_dtype(self.dtype())?, index.shape())?;
        let ost = crate::tensor::layout::contiguous_strides(self.shape());
        let ishape = if self.dim() == 0 {
            vec![]
        } else {
            index.shape().to_vec()
        };
        let mode = reduce.unwrap_or("none");
        if matches!(mode, "sum" | "add") && include_self && self.dim() > 0 {
            if let Some(t) =
                scatter_sum_fast(&out, &src_vals, &idx, &ishape_of(self, index), d, &ost)?
            {
                return Ok(t);
            }
        }
        let targets: Vec<usize> = idx
            .iter()
            .enumerate()
            .map(|(flat, &i)| {
                let mut rem = flat;
                let mut off = 0;
                for k in (0..ishape.len()).rev() {
                    let c = rem % ishape[k];
                    rem /= ishape[k];
                    off += if k == d { i } else { c } * ost[k];
                }
                off
            })
            .collect();
        crate::ensure!(
            matches!(
                mode,
                "none" | "sum" | "add" | "prod" | "multiply" | "mean" | "amax" | "amin"
            ),
            Runtime,
            "reduce argument must be either sum, prod, mean, amax or amin, got {mode}"
        );
        crate::dispatch_dtype!(self.dtype(), T => {
            let vals = src_vals.to_vec::<T>()?;
            let mut data = out.to_vec::<T>()?;
            let mut count = vec![if include_self { 1usize } else { 0 }; data.len()];
            let mut seen = vec![false; data.len()];
            for (&t, &v) in targets.iter().zip(&vals) {
                let cur = data[t];
                let first = !include_self && !seen[t];
                seen[t] = true;
                count[t] += 1;
                data[t] = match mode {
                    "none" => v,
                    _ if first => v,
                    "sum" | "add" | "mean" => T::from_f64(cur.to_f64() + v.to_f64()),
                    "prod" | "multiply" => T::from_f64(cur.to_f64() * v.to_f64()),
                    "amax" => if v > cur || v.is_nan() { v } else { cur },
                    _ => if v < cur || v.is_nan() { v } else { cur },
                };
            }
            if mode == "mean" {
                for (x, &c) in data.iter_mut().zip(&count) {
                    if c > 0 {
                        *x = if T::IS_FLOAT { T::from_f64(x.to_f64() / c as f64) } else { T::from_f64((x.to_f64() / c as f64).floor()) };
                    }
                }
            }
            Tensor::from_vec(data, self.shape())
        })
    }

    /// `torch.scatter(self, dim, index, src)`.
    #[op = "scatter.src(Tensor self, int dim, Tensor index, Tensor src) -> Tensor"]
    pub fn scatter(&self, dim: i64, index: &Tensor, src: &Tensor) -> Result<Tensor> {
        self.scatter_reduce(dim, index, src, None, true)
    }

    /// `torch.scatter_add(self, dim, index, src)`.
    #[op = "scatter_add(Tensor self, int dim, Tensor index, Tensor src) -> Tensor"]
    pub fn scatter_add(&self, dim: i64, index: &Tensor, src: &Tensor) -> Result<Tensor> {
        self.scatter_reduce(dim, index, src, Some("sum"), true)
    }

    /// Elements of the flattened tensor at `index`, shaped like `index`.
    #[op = "take(Tensor self, Tensor index) -> Tensor"]
    pub fn take(&self, index: &Tensor) -> Result<Tensor> {
        let n = self.numel();
        let flat = wrap_negative(&index.reshape(&[-1])?, n, |i| {
            crate::Error::new(
                crate::ErrorKind::Index,
                format!("out of range: tried to access index {i} on a tensor of {n} elements."),
            )
        })?;
        self.reshape(&[-1])?
            .index_select(0, &flat)?
            .reshape(&index.shape().iter().map(|&s| s as i64).collect::<Vec<_>>())
    }

    /// `torch.take_along_dim`: gather with broadcasting between `self` and
    /// `indices` (flattened when `dim` is `None`).
    #[op = "take_along_dim(Tensor self, Tensor indices, int? dim=None) -> Tensor"]
    pub fn take_along_dim(&self, indices: &Tensor, dim: Option<i64>) -> Result<Tensor> {
        crate::ensure!(
            self.dim() > 0 || dim.is_none(),
            Index,
            "Dimension specified as {} but tensor has no dimensions",
            dim.unwrap_or(0)
        );
        let Some(dim) = dim else {
            return self.reshape(&[-1])?.gather(0, &indices.reshape(&[-1])?);
        };
        let d = wrap_dim(dim, self.dim())?;
        crate::ensure!(
            self.dim() == indices.dim(),
            Runtime,
            "torch.take_along_dim(): input and indices should have the same number of dimensions, but got {} dimensions for input, and {} dimensions for indices",
            self.dim(),
            indices.dim()
        );
        let mut s1 = self.shape().to_vec();
        let mut s2 = indices.shape().to_vec();
        s1[d] = 1;
        s2[d] = 1;
        let b = broadcast_shapes(&s1, &s2)?;
        let mut sa: Vec<i64> = b.iter().map(|&x| x as i64).collect();
        let mut si = sa.clone();
        sa[d] = self.shape()[d] as i64;
        si[d] = indices.shape()[d] as i64;
        // negative indices count from the end, as torch's take_along_dim
        // (gather itself refuses them)
        let n = self.shape()[d] as i64;
        let indices = indices.add(&indices.lt(0)?.to_dtype(indices.dtype())?.mul(n)?)?;
        self.expand(&sa)?.gather(dim, &indices.expand(&si)?)
    }

    /// Elements where `mask` is true, as a 1-D tensor (`torch.masked_select`).
    #[op = "masked_select(Tensor self, Tensor mask) -> Tensor"]
    pub fn masked_select(&self, mask: &Tensor) -> Result<Tensor> {
        crate::ensure!(
            mask.dtype() == DType::Bool,
            Runtime,
            "masked_select: expected BoolTensor for mask"
        );
        let s =
            broadcast_shapes(self.shape(), mask.shape()).map_err(|e| e.context("masked_select"))?;
        let y = crate::autograd::raw(&[self], || self.masked_select_impl(mask, &s))?;
        crate::autograd::derivatives::indexing::masked_select(self, mask, &s, y)
    }

    fn masked_select_impl(&self, mask: &Tensor, s: &[usize]) -> Result<Tensor> {
        let x = self.broadcast_to(s)?.contiguous()?;
        let m = mask.broadcast_to(s)?.to_vec::<bool>()?;
        let sel: Vec<usize> = m
            .iter()
            .enumerate()
            .filter(|(_, &b)| b)
            .map(|(i, _)| i)
            .collect();
        let out = Tensor::empty(&[sel.len()], self.dtype())?;
        copy_pairs(&x, &out, sel.into_iter().enumerate().map(|(j, i)| (i, j)));
        Ok(out)
    }

    /// Indices of nonzero elements, `[n, ndim]` int64 (`torch.nonzero`).
    #[op = "nonzero(Tensor self) -> Tensor"]
    pub fn nonzero(&self) -> Result<Tensor> {
        let nz = self.ne(0)?.to_vec::<bool>()?;
        let shape = self.shape().to_vec();
        let mut out = Vec::new();
        let mut count = 0;
        for (flat, &b) in nz.iter().enumerate() {
            if b {
                count += 1;
                let mut rem = flat;
                let mut coords = vec![0i64; shape.len()];
                for k in (0..shape.len()).rev() {
                    coords[k] = (rem % shape[k]) as i64;
                    rem /= shape[k];
                }
                out.extend(coords);
            }
        }
        Tensor::from_vec(out, &[count, shape.len()])
    }
}

pub(crate) fn register(r: &mut Registry) {
    register_ops(r);
    arrange::register_arrange(r);
    arrange::register_join(r);
    // overloads whose arguments are not their methods' (Note [Typed kernels])
    r.def_typed(
        "gather(Tensor self, int dim, Tensor index, *, bool sparse_grad=False) -> Tensor",
        |x: Tensor, dim: i64, index: Tensor, _sparse: bool| x.gather(dim, &index),
    );
    r.def_typed(
        "scatter.value(Tensor self, int dim, Tensor index, Scalar value) -> Tensor",
        |x: Tensor, dim: i64, index: Tensor, value: crate::Scalar| {
            let v = Tensor::full(&[], value, x.dtype())?;
            x.scatter(dim, &index, &v)
        },
    );
    // the old `reduce=` forms: "add" and "multiply" are scatter_reduce's
    // "sum" and "prod" with the input included
    fn old_reduce(reduce: &str) -> Result<&'static str> {
        match reduce {
            "add" => Ok("sum"),
            "multiply" => Ok("prod"),
            r => crate::bail!(
                Runtime,
                "reduce argument must be either add or multiply. Got {r}"
            ),
        }
    }
    r.def_typed(
        "scatter.reduce(Tensor self, int dim, Tensor index, Tensor src, *, str reduce) -> Tensor",
        |x: Tensor, dim: i64, index: Tensor, src: Tensor, reduce: String| {
            x.scatter_reduce(dim, &index, &src, Some(old_reduce(&reduce)?), true)
        },
    );
    r.def_typed(
        "scatter.value_reduce(Tensor self, int dim, Tensor index, Scalar value, *, str reduce) -> Tensor",
        |x: Tensor, dim: i64, index: Tensor, value: crate::Scalar, reduce: String| {
            let v = Tensor::full(index.shape(), value, x.dtype())?;
            x.scatter_reduce(dim, &index, &v, Some(old_reduce(&reduce)?), true)
        },
    );
    r.def_typed(
        "scatter_reduce.two(Tensor self, int dim, Tensor index, Tensor src, str reduce, *, bool include_self=True) -> Tensor",
        |x: Tensor, dim: i64, index: Tensor, src: Tensor, reduce: String, include_self: bool| {
            x.scatter_reduce(dim, &index, &src, Some(&reduce), include_self)
        },
    );
    r.def_typed(
        "repeat_interleave.self_int(Tensor self, SymInt repeats, int? dim=None, *, SymInt? output_size=None) -> Tensor",
        |x: Tensor, repeats: i64, dim: Option<i64>, _output_size: Option<i64>| {
            x.repeat_interleave(&Tensor::from_slice(&[repeats]), dim)
        },
    );
    r.def_typed(
        "repeat_interleave.self_Tensor(Tensor self, Tensor repeats, int? dim=None, *, SymInt? output_size=None) -> Tensor",
        |x: Tensor, repeats: Tensor, dim: Option<i64>, _output_size: Option<i64>| {
            x.repeat_interleave(&repeats, dim)
        },
    );
}

fn ishape_of(t: &Tensor, index: &Tensor) -> Vec<usize> {
    if t.dim() == 0 {
        vec![]
    } else {
        index.shape().to_vec()
    }
}

/// `scatter_add` into `out` (contiguous, float32 or float64) without the
/// general path's per-element offset arithmetic and reduction dispatch:
/// the offset of index element `(o, m, i)` (outer dims, `d`, inner dims)
/// is `outer[o] + idx * stride[d] + inner[i]`, each part computed once.
/// `None` for other dtypes (the general path runs).
fn scatter_sum_fast(
    out: &Tensor,
    src_vals: &Tensor,
    idx: &[usize],
    ishape: &[usize],
    d: usize,
    ost: &[usize],
) -> Result<Option<Tensor>> {
    fn offsets(shape: &[usize], strides: &[usize]) -> Vec<usize> {
        let mut offs = vec![0usize];
        for (&n, &st) in shape.iter().zip(strides) {
            offs = offs
                .iter()
                .flat_map(|&o| (0..n).map(move |c| o + c * st))
                .collect();
        }
        offs
    }
    let outer = offsets(&ishape[..d], &ost[..d]);
    let inner = offsets(&ishape[d + 1..], &ost[d + 1..]);
    let (mid, sd) = (ishape[d], ost[d]);
    macro_rules! run {
        ($t:ty) => {{
            let vals = src_vals.to_vec::<$t>()?;
            let mut data = out.to_vec::<$t>()?;
            let mut k = 0;
            for &o in &outer {
                for _ in 0..mid {
                    for &i in &inner {
                        data[o + idx[k] * sd + i] += vals[k];
                        k += 1;
                    }
                }
            }
            Tensor::from_vec(data, out.shape()).map(Some)
        }};
    }
    match out.dtype() {
        DType::F32 => run!(f32),
        DType::F64 => run!(f64),
        _ => Ok(None),
    }
}

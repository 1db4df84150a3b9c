//! NumPy/PyTorch indexing from Rust: `t.i((.., 1..3, NEW_AXIS))`,
//! `t.index(&[...])`, and assignment with `index_put_`.
//!
//! Basic indices (integers, ranges with steps, new axes, an ellipsis) give
//! views. Integer-tensor and boolean-mask indices ("advanced" indexing)
//! gather a copy; as in NumPy, when the advanced indices are adjacent their
//! broadcast shape replaces them in place, otherwise it goes first. Advanced
//! indexing is composed of `index_select` and reshapes, so it inherits their
//! checks.

use super::Tensor;
use crate::dispatch::IValue;
use crate::dtype::{DType, Element};
use crate::error::Result;
use std::ops::{Range, RangeFrom, RangeFull, RangeInclusive, RangeTo, RangeToInclusive};

/// One entry of an index expression.
#[derive(Clone, Debug)]
pub enum TensorIndex {
    /// `t[i]`: select (removes the dim); negative counts from the end.
    Int(i64),
    /// `t[start:stop:step]` with Python's clamping; `step > 0`.
    Slice {
        /// First index (default 0).
        start: Option<i64>,
        /// One past the last (default: the end).
        stop: Option<i64>,
        /// Stride (default 1).
        step: i64,
    },
    /// `t[None]`: insert a size-1 dim.
    NewAxis,
    /// `t[...]`: as many full slices as needed.
    Ellipsis,
    /// An int64/int32 index tensor or a bool mask.
    Tensor(Tensor),
}

/// `None` in a Python index: insert a new axis.
pub const NEW_AXIS: TensorIndex = TensorIndex::NewAxis;
/// `...` in a Python index.
pub const ELLIPSIS: TensorIndex = TensorIndex::Ellipsis;

/// A slice with a step: `step(1..10, 2)` is Python's `1:10:2`.
pub fn step(range: impl Into<TensorIndex>, step: i64) -> TensorIndex {
    match range.into() {
        TensorIndex::Slice { start, stop, .. } => TensorIndex::Slice { start, stop, step },
        other => other,
    }
}

macro_rules! index_from_int {
    ($($t:ty),*) => {$(
        impl From<$t> for TensorIndex { fn from(v: $t) -> Self { TensorIndex::Int(v as i64) } }
        impl From<Range<$t>> for TensorIndex {
            fn from(r: Range<$t>) -> Self { TensorIndex::Slice { start: Some(r.start as i64), stop: Some(r.end as i64), step: 1 } }
        }
        impl From<RangeFrom<$t>> for TensorIndex {
            fn from(r: RangeFrom<$t>) -> Self { TensorIndex::Slice { start: Some(r.start as i64), stop: None, step: 1 } }
        }
        impl From<RangeTo<$t>> for TensorIndex {
            fn from(r: RangeTo<$t>) -> Self { TensorIndex::Slice { start: None, stop: Some(r.end as i64), step: 1 } }
        }
        impl From<RangeInclusive<$t>> for TensorIndex {
            fn from(r: RangeInclusive<$t>) -> Self {
                TensorIndex::Slice { start: Some(*r.start() as i64), stop: Some(*r.end() as i64 + 1), step: 1 }
            }
        }
        impl From<RangeToInclusive<$t>> for TensorIndex {
            fn from(r: RangeToInclusive<$t>) -> Self { TensorIndex::Slice { start: None, stop: Some(r.end as i64 + 1), step: 1 } }
        }
    )*};
}
index_from_int!(i32, i64, usize);

impl From<RangeFull> for TensorIndex {
    fn from(_: RangeFull) -> Self {
        TensorIndex::Slice {
            start: None,
            stop: None,
            step: 1,
        }
    }
}
impl From<Tensor> for TensorIndex {
    fn from(t: Tensor) -> Self {
        TensorIndex::Tensor(t)
    }
}
impl From<&Tensor> for TensorIndex {
    fn from(t: &Tensor) -> Self {
        TensorIndex::Tensor(t.clone())
    }
}

/// Things that can index a tensor: a slice/`Vec` of [`TensorIndex`], a
/// single index, or a tuple of up to six index-like values.
pub trait IntoIndices {
    /// The index expression as a list.
    fn into_indices(self) -> Vec<TensorIndex>;
}

impl IntoIndices for Vec<TensorIndex> {
    fn into_indices(self) -> Vec<TensorIndex> {
        self
    }
}
impl IntoIndices for &[TensorIndex] {
    fn into_indices(self) -> Vec<TensorIndex> {
        self.to_vec()
    }
}
impl<T: Into<TensorIndex>> IntoIndices for T {
    fn into_indices(self) -> Vec<TensorIndex> {
        vec![self.into()]
    }
}
macro_rules! tuple_indices {
    ($($n:ident),+) => {
        impl<$($n: Into<TensorIndex>),+> IntoIndices for ($($n,)+) {
            #[allow(non_snake_case)]
            fn into_indices(self) -> Vec<TensorIndex> {
                let ($($n,)+) = self;
                vec![$($n.into()),+]
            }
        }
    };
}
tuple_indices!(A);
tuple_indices!(A, B);
tuple_indices!(A, B, C);
tuple_indices!(A, B, C, D);
tuple_indices!(A, B, C, D, E);
tuple_indices!(A, B, C, D, E, F);

/// The result of basic indexing: a view, plus the advanced index tensors
/// with the view dim each applies to.
struct Basic {
    view: Tensor,
    advanced: Vec<(usize, Tensor)>,
}

/// One index after bool masks are expanded: a plain index, or a 0-dim
/// bool (`t[True]`), which adds a dim of size 1 and keeps it (`True`) or
/// empties it (`False`), as in NumPy and torch.
enum Item {
    Index(TensorIndex),
    Scalar(bool),
}

/// How many dims of the indexed tensor `i` consumes.
fn consumes(i: &TensorIndex) -> usize {
    match i {
        TensorIndex::NewAxis | TensorIndex::Ellipsis => 0,
        TensorIndex::Tensor(m) if is_mask(m) => m.dim(),
        _ => 1,
    }
}

fn is_mask(m: &Tensor) -> bool {
    m.dtype() == DType::Bool || m.dtype() == DType::U8
}

fn basic(t: &Tensor, idx: &[TensorIndex]) -> Result<Basic> {
    let consumed: usize = idx.iter().map(consumes).sum();
    let ellipses = idx
        .iter()
        .filter(|i| matches!(i, TensorIndex::Ellipsis))
        .count();
    crate::ensure!(
        ellipses <= 1,
        Index,
        "an index can only have a single ellipsis ('...')"
    );
    crate::ensure!(
        consumed <= t.dim(),
        Index,
        "too many indices for tensor of dimension {} (got {consumed})",
        t.dim()
    );
    // Expand bool masks into one long index per mask dim, checking each
    // mask's shape against the dims it covers (`pos`: the first of them).
    let mut items: Vec<Item> = Vec::new();
    let mut pos = 0usize;
    for i in idx {
        match i {
            TensorIndex::Tensor(m) if is_mask(m) => {
                if m.dim() == 0 {
                    items.push(Item::Scalar(m.item()?.to_bool()));
                    continue;
                }
                for (j, &n) in m.shape().iter().enumerate() {
                    crate::ensure!(
                        n == t.shape()[pos + j],
                        Index,
                        "The shape of the mask {:?} at index {j} does not match the shape of the indexed tensor {:?} at index {}",
                        m.shape(),
                        t.shape(),
                        pos + j
                    );
                }
                pos += m.dim();
                let nz = m.ne(0)?.nonzero()?;
                for k in 0..m.dim() {
                    items.push(Item::Index(TensorIndex::Tensor(nz.select(1, k as i64)?)));
                }
            }
            TensorIndex::Tensor(x) => {
                crate::ensure!(
                    x.dtype().is_integral(false),
                    Index,
                    "tensors used as indices must be long, int, byte or bool tensors (got {})",
                    x.dtype()
                );
                pos += 1;
                items.push(Item::Index(i.clone()));
            }
            TensorIndex::Ellipsis => {
                pos += t.dim() - consumed;
                items.push(Item::Index(i.clone()));
            }
            other => {
                pos += consumes(other);
                items.push(Item::Index(other.clone()));
            }
        }
    }
    let mut view = t.clone();
    let mut dim = 0usize; // position in `view`
    let mut advanced = Vec::new();
    for it in items {
        let it = match it {
            Item::Index(it) => it,
            Item::Scalar(keep) => {
                view = view.unsqueeze(dim as i64)?;
                advanced.push((dim, Tensor::zeros(&[usize::from(keep)], DType::I64)?));
                dim += 1;
                continue;
            }
        };
        match it {
            TensorIndex::Int(i) => {
                let n = view.shape()[dim] as i64;
                crate::ensure!(
                    i >= -n && i < n,
                    Index,
                    "index {i} is out of bounds for dimension {dim} with size {n}"
                );
                view = view.select(dim as i64, i)?;
            }
            TensorIndex::Slice { start, stop, step } => {
                crate::ensure!(step > 0, Value, "step must be greater than zero");
                view = view.slice(dim as i64, start, stop, step)?;
                dim += 1;
            }
            TensorIndex::NewAxis => {
                view = view.unsqueeze(dim as i64)?;
                dim += 1;
            }
            TensorIndex::Ellipsis => dim += t.dim() - consumed,
            TensorIndex::Tensor(x) => {
                advanced.push((dim, x));
                dim += 1;
            }
        }
    }
    Ok(Basic { view, advanced })
}

/// Broadcast the advanced indices and flatten them into one linear index
/// over the (permuted-first) advanced dims of `view`.
fn linear_index(view: &Tensor, advanced: &[(usize, Tensor)]) -> Result<(Tensor, Vec<usize>)> {
    let mut shape: Vec<usize> = Vec::new();
    for (_, x) in advanced {
        shape = crate::tensor::layout::broadcast_shapes(&shape, x.shape())
            .map_err(|_| {
                crate::Error::new(
                    crate::ErrorKind::Index,
                    format!(
                        "shape mismatch: indexing tensors could not be broadcast together with shapes {:?}",
                        advanced.iter().map(|(_, x)| x.shape().to_vec()).collect::<Vec<_>>()
                    ),
                )
            })?
            .to_vec();
    }
    let mut lin = Tensor::zeros(&shape, DType::I64)?;
    let mut mult = 1i64;
    for (d, x) in advanced.iter().rev() {
        let n = view.shape()[*d] as i64;
        if shape.contains(&0) {
            // the indices broadcast to nothing: none is used, so none is
            // out of range (NumPy and torch agree)
            continue;
        }
        let wrapped = crate::native::movement::wrap_negative(x, n as usize, |i| {
            crate::Error::new(
                crate::ErrorKind::Index,
                format!("index {i} is out of bounds for dimension {d} with size {n}"),
            )
        })?;
        lin = lin.add(&wrapped.mul(mult)?)?;
        mult *= n;
    }
    Ok((lin, shape))
}

impl Tensor {
    /// Index with a list of [`TensorIndex`] (Python's `t[...]`).
    pub fn index(&self, indices: &[TensorIndex]) -> Result<Tensor> {
        let Basic { view, advanced } = basic(self, indices)?;
        if advanced.is_empty() {
            return Ok(view);
        }
        let adv_dims: Vec<usize> = advanced.iter().map(|(d, _)| *d).collect();
        let rest: Vec<usize> = (0..view.dim()).filter(|d| !adv_dims.contains(d)).collect();
        let mut perm = adv_dims.clone();
        perm.extend(&rest);
        let moved = view.permute_dims(&perm)?;
        let adv_numel: usize = adv_dims.iter().map(|&d| view.shape()[d]).product();
        let mut flat_shape = vec![adv_numel as i64];
        flat_shape.extend(rest.iter().map(|&d| view.shape()[d] as i64));
        let flat = moved.reshape(&flat_shape)?;
        let (lin, bshape) = linear_index(&view, &advanced)?;
        let picked = flat.index_select(0, &lin.reshape(&[-1])?)?;
        let mut out_shape: Vec<i64> = bshape.iter().map(|&s| s as i64).collect();
        out_shape.extend(rest.iter().map(|&d| view.shape()[d] as i64));
        let out = picked.reshape(&out_shape)?;
        // Adjacent advanced dims go where the first one was (NumPy rule).
        let adjacent = adv_dims.windows(2).all(|w| w[1] == w[0] + 1);
        if adjacent && adv_dims[0] > 0 {
            let nb = bshape.len();
            let first = adv_dims[0];
            let mut p: Vec<usize> = (nb..nb + first).collect();
            p.extend(0..nb);
            p.extend(nb + first..out.dim());
            return out.permute_dims(&p)?.contiguous();
        }
        Ok(out)
    }

    /// Index with anything [`IntoIndices`]: `t.i((.., 1..3))`, `t.i(2)`.
    pub fn i(&self, indices: impl IntoIndices) -> Result<Tensor> {
        self.index(&indices.into_indices())
    }

    /// Python's `t[indices] = values` (broadcasting `values`); with
    /// `accumulate`, values add up, repeated indices included
    /// (`index_put_`).
    pub fn index_put_(
        &self,
        indices: &[TensorIndex],
        values: &Tensor,
        accumulate: bool,
    ) -> Result<()> {
        // only while a mode is on: the indices are not boxed otherwise
        let boxed = crate::dispatch::keys::interposed()
            .then(|| as_optional_tensors(indices))
            .flatten();
        if let Some(idx) = boxed {
            crate::enter_op_inplace!(
                "index_put_",
                self,
                IValue::OptTensorList(idx),
                values,
                accumulate
            );
        }
        if crate::autograd::derivatives::inplace::check(
            "index_put_",
            self,
            std::slice::from_ref(values),
        )? {
            return crate::autograd::derivatives::inplace::run(self, false, |old| {
                old.index_put(indices, values, accumulate)
            });
        }
        self.index_put_raw(indices, values, accumulate)
    }

    /// `index_put_` out of place: a copy of `self` with `values` written
    /// (or added) at `indices` (`torch.index_put`).
    pub fn index_put(
        &self,
        indices: &[TensorIndex],
        values: &Tensor,
        accumulate: bool,
    ) -> Result<Tensor> {
        // only while a mode is on: the indices are not boxed otherwise
        let boxed = crate::dispatch::keys::interposed()
            .then(|| as_optional_tensors(indices))
            .flatten();
        if let Some(idx) = boxed {
            crate::enter_op!(
                "index_put",
                self,
                IValue::OptTensorList(idx),
                values,
                accumulate
            );
        }
        let y = crate::autograd::raw(&[self, values], || -> Result<Tensor> {
            let out = self.deep_clone()?;
            out.index_put_raw(indices, values, accumulate)?;
            Ok(out)
        })?;
        crate::autograd::derivatives::indexing::index_put(self, indices, values, accumulate, y)
    }

    fn index_put_raw(
        &self,
        indices: &[TensorIndex],
        values: &Tensor,
        accumulate: bool,
    ) -> Result<()> {
        let Basic { view, advanced } = basic(self, indices)?;
        if advanced.is_empty() {
            return if accumulate {
                view.copy_(&view.add(values)?)
            } else {
                view.copy_(values)
            };
        }
        crate::ensure!(
            !view.shape().is_empty(),
            Index,
            "index_put_: indexing a 0-dim tensor with an index tensor"
        );
        let adv_dims: Vec<usize> = advanced.iter().map(|(d, _)| *d).collect();
        let (lin, bshape) = linear_index(&view, &advanced)?;
        let rest: Vec<usize> = (0..view.dim()).filter(|d| !adv_dims.contains(d)).collect();
        // Target shape of `values` in [broadcast..., rest...] order.
        let mut tshape: Vec<usize> = bshape.clone();
        tshape.extend(rest.iter().map(|&d| view.shape()[d]));
        let adjacent = adv_dims.windows(2).all(|w| w[1] == w[0] + 1);
        let vals = if adjacent && adv_dims[0] > 0 {
            // values are laid out as the gather result would be: move the
            // broadcast dims to the front to match `tshape`.
            let first = adv_dims[0];
            let nb = bshape.len();
            let mut natural: Vec<usize> = rest[..first].iter().map(|&d| view.shape()[d]).collect();
            natural.extend(&bshape);
            natural.extend(rest[first..].iter().map(|&d| view.shape()[d]));
            let v = values.to_dtype(self.dtype())?.broadcast_to(&natural)?;
            let mut p: Vec<usize> = (first..first + nb).collect();
            p.extend(0..first);
            p.extend(first + nb..natural.len());
            v.permute_dims(&p)?
        } else {
            values.to_dtype(self.dtype())?.broadcast_to(&tshape)?
        };
        let vals = vals.contiguous()?;
        // Element offsets (in storage elements) of every target position.
        let lin = lin.reshape(&[-1])?.to_vec::<i64>()?;
        let adv_sizes: Vec<usize> = adv_dims.iter().map(|&d| view.shape()[d]).collect();
        let rest_sizes: Vec<usize> = rest.iter().map(|&d| view.shape()[d]).collect();
        let rest_strides: Vec<usize> = rest.iter().map(|&d| view.stride()[d]).collect();
        let rest_offs: Vec<usize> = {
            let n: usize = rest_sizes.iter().product();
            (0..n)
                .map(|mut f| {
                    let mut o = 0;
                    for k in (0..rest_sizes.len()).rev() {
                        o += (f % rest_sizes[k]) * rest_strides[k];
                        f /= rest_sizes[k];
                    }
                    o
                })
                .collect()
        };
        let mut targets = Vec::with_capacity(lin.len() * rest_offs.len());
        for &l in &lin {
            let mut rem = l as usize;
            let mut base = view.storage_offset();
            for k in (0..adv_dims.len()).rev() {
                base += (rem % adv_sizes[k]) * view.stride()[adv_dims[k]];
                rem /= adv_sizes[k];
            }
            targets.extend(rest_offs.iter().map(|&o| base + o));
        }
        crate::dispatch_dtype!(self.dtype(), T => {
            let src = vals.to_vec::<T>()?;
            let _g = crate::storage::lock_storages(&[], &[self.storage()]);
            let p = self.storage().data_ptr() as *mut T;
            for (&t, &v) in targets.iter().zip(&src) {
                // SAFETY: every target lies inside `view`, which lies inside the storage.
                unsafe {
                    let cur = p.add(t);
                    *cur = if accumulate { T::from_f64((*cur).to_f64() + v.to_f64()) } else { v };
                }
            }
        });
        self.storage().bump_version();
        Ok(())
    }
}

/// Indices as the schemas' `Tensor?[]` (tensors and full slices, `None`
/// for a full slice), when they are only that.
fn as_optional_tensors(indices: &[TensorIndex]) -> Option<Vec<Option<Tensor>>> {
    indices
        .iter()
        .map(|i| match i {
            TensorIndex::Tensor(t) => Some(Some(t.clone())),
            TensorIndex::Slice {
                start: None,
                stop: None,
                step: 1,
            } => Some(None),
            _ => None,
        })
        .collect()
}

/// `Tensor?[]` from the dispatcher: `None` is a full slice.
fn from_optional(indices: Vec<Option<Tensor>>) -> Vec<TensorIndex> {
    indices
        .into_iter()
        .map(|i| i.map_or_else(|| (..).into(), TensorIndex::Tensor))
        .collect()
}

pub(crate) fn register(r: &mut crate::dispatch::Registry) {
    r.def_typed(
        "index.Tensor(Tensor self, Tensor?[] indices) -> Tensor",
        |x: Tensor, idx: Vec<Option<Tensor>>| x.index(&from_optional(idx)),
    );
    r.def_typed(
        "index_put(Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor",
        |x: Tensor, idx: Vec<Option<Tensor>>, v: Tensor, acc: bool| {
            let t = x.deep_clone()?;
            t.index_put_(&from_optional(idx), &v, acc).map(|()| t)
        },
    );
    r.def_typed(
        "index_put_(Tensor(a!) self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor(a!)",
        |x: Tensor, idx: Vec<Option<Tensor>>, v: Tensor, acc: bool| {
            x.index_put_(&from_optional(idx), &v, acc).map(|()| x)
        },
    );
}

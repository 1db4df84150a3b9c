//! View ops: new sizes/strides/offset over the same storage, never a copy.
//!
//! `view`, `reshape` (a view when possible), `as_strided`, `transpose`/`t`/
//! `permute`/`movedim`, `narrow`, `slice` with steps, `select`, `squeeze`/
//! `unsqueeze`, `expand`/`broadcast_to`, `flatten`/`unflatten`, `unfold`,
//! `diagonal`, `split`/`chunk`/`unbind`.

use super::layout::{
    broadcast_shapes, checked_numel, contiguous_strides, wrap_dim, wrap_dim_insert, Dims, Layout,
};
use super::Tensor;
use crate::error::Result;
use smallvec::SmallVec;

/// Resolve a shape with at most one `-1` against `numel`.
pub(crate) fn infer_shape(op: &str, shape: &[i64], numel: usize) -> Result<Dims> {
    let mut infer = None;
    let mut known: usize = 1;
    for (i, &s) in shape.iter().enumerate() {
        if s == -1 {
            crate::ensure!(
                infer.is_none(),
                Runtime,
                "only one dimension can be inferred"
            );
            infer = Some(i);
        } else {
            crate::ensure!(s >= 0, Runtime, "invalid shape dimension {s}");
            known = known.checked_mul(s as usize).ok_or_else(|| {
                crate::Error::new(
                    crate::ErrorKind::Runtime,
                    format!("{op}: shape {shape:?} is too large"),
                )
            })?;
        }
    }
    let mut out: Dims = shape.iter().map(|&s| s.max(0) as usize).collect();
    match infer {
        Some(i) => {
            crate::ensure!(
                known != 0 && numel.is_multiple_of(known),
                Runtime,
                "shape '{shape:?}' is invalid for input of size {numel}"
            );
            out[i] = numel / known;
        }
        None => crate::ensure!(
            known == numel,
            Runtime,
            "shape '{shape:?}' is invalid for input of size {numel}"
        ),
    }
    Ok(out)
}

/// Strides for viewing `(sizes, strides)` as `new` without copying, if
/// possible (ATen's `computeStride`).
fn compute_stride(sizes: &[usize], strides: &[usize], new: &[usize]) -> Option<Dims> {
    let numel: usize = sizes.iter().product();
    // an empty tensor, or a 0-d one (one element, no strides to follow)
    if numel == 0 || sizes.is_empty() {
        return Some(contiguous_strides(new));
    }
    let mut out: Dims = SmallVec::from_elem(0, new.len());
    let mut view_d = new.len() as isize - 1;
    let mut chunk_base_stride = *strides.last().unwrap_or(&1);
    let mut tensor_numel = 1usize;
    let mut view_numel = 1usize;
    for td in (0..sizes.len()).rev() {
        tensor_numel *= sizes[td];
        if td == 0 || (sizes[td - 1] != 1 && strides[td - 1] != tensor_numel * chunk_base_stride) {
            while view_d >= 0 && (view_numel < tensor_numel || new[view_d as usize] == 1) {
                out[view_d as usize] = view_numel * chunk_base_stride;
                view_numel *= new[view_d as usize];
                view_d -= 1;
            }
            if view_numel != tensor_numel {
                return None;
            }
            if td > 0 {
                chunk_base_stride = strides[td - 1];
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    if view_d != -1 {
        return None;
    }
    Some(out)
}

crate::ops! {
    register = register_views;
    fn view_of(&self, sizes: Dims, strides: Dims, offset: usize) -> Tensor {
        self.with_layout(Layout::new(sizes, strides, offset))
    }

    /// Same data with a new shape (`t.view(shape)`); one dim may be -1.
    /// Fails, as PyTorch, when the strides cannot express the new shape.
    #[op = "view(Tensor(a) self, SymInt[] size) -> Tensor(a)"]
    pub fn view(&self, shape: &[i64]) -> Result<Tensor> {
        let new = infer_shape("view", shape, self.numel())?;
        match compute_stride(self.shape(), self.stride(), &new) {
            Some(st) => crate::autograd::derivatives::shape::view(
                "ViewBackward0",
                self,
                self.view_of(new, st, self.storage_offset()),
            ),
            None => crate::bail!(
                Runtime,
                "view size is not compatible with input tensor's size and stride (at least one dimension spans across two contiguous subspaces). Use .reshape(...) instead."
            ),
        }
    }

    /// A view with the new shape when possible, else a contiguous copy
    /// (`t.reshape(shape)`).
    #[op = "reshape(Tensor(a) self, SymInt[] shape) -> Tensor(a)"]
    pub fn reshape(&self, shape: &[i64]) -> Result<Tensor> {
        let new = infer_shape("reshape", shape, self.numel())?;
        match compute_stride(self.shape(), self.stride(), &new) {
            Some(st) => crate::autograd::derivatives::shape::view(
                "ViewBackward0",
                self,
                self.view_of(new, st, self.storage_offset()),
            ),
            None => {
                let c = self.contiguous()?;
                let v = c.view_of(new.clone(), contiguous_strides(&new), c.storage_offset());
                crate::autograd::derivatives::shape::view("UnsafeViewBackward0", &c, v)
            }
        }
    }

    /// A view with arbitrary sizes, strides and offset (`torch.as_strided`),
    /// checked against the storage's extent.
    #[op = "as_strided(Tensor(a) self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) -> Tensor(a)"]
    pub fn as_strided(
        &self,
        size: &[usize],
        stride: &[usize],
        storage_offset: Option<usize>,
    ) -> Result<Tensor> {
        crate::ensure!(
            size.len() == stride.len(),
            Runtime,
            "mismatch in length of strides and shape ({} vs {})",
            stride.len(),
            size.len()
        );
        checked_numel("as_strided", size)?;
        let layout = Layout::new(
            size.into(),
            stride.into(),
            storage_offset.unwrap_or(self.storage_offset()),
        );
        let y = Tensor::from_storage(self.storage().clone(), layout, self.dtype())?;
        crate::autograd::derivatives::shape::strided_view("AsStridedBackward0", self, y)
    }

    /// Swap two dims (`t.transpose(d0, d1)`).
    #[op = "transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)"]
    pub fn transpose(&self, dim0: i64, dim1: i64) -> Result<Tensor> {
        let (a, b) = (wrap_dim(dim0, self.dim())?, wrap_dim(dim1, self.dim())?);
        if self.dim() == 0 {
            return Ok(self.clone());
        }
        let mut sz: Dims = self.shape().into();
        let mut st: Dims = self.stride().into();
        sz.swap(a, b);
        st.swap(a, b);
        let y = self.view_of(sz, st, self.storage_offset());
        crate::autograd::derivatives::shape::transpose(self, dim0, dim1, y)
    }

    /// Transpose of a tensor with at most 2 dims (`t.t()`).
    #[op = "t(Tensor(a) self) -> Tensor(a)"]
    pub fn t(&self) -> Result<Tensor> {
        crate::ensure!(
            self.dim() <= 2,
            Runtime,
            "t() expects a tensor with <= 2 dimensions, but self is {}D",
            self.dim()
        );
        if self.dim() < 2 {
            return Ok(self.clone());
        }
        self.transpose(0, 1)
    }

    /// Reorder dims (`t.permute(dims)`); negative dims allowed.
    #[op = "permute(Tensor(a) self, int[] dims) -> Tensor(a)"]
    pub fn permute(&self, dims: &[i64]) -> Result<Tensor> {
        crate::ensure!(
            dims.len() == self.dim(),
            Runtime,
            "permute(sparse_coo): number of dimensions in the tensor input does not match the length of the desired ordering of dimensions i.e. input.dim() = {} is not equal to len(dims) = {}",
            self.dim(),
            dims.len()
        );
        let w: Vec<usize> = super::layout::wrap_dims("permute", dims, self.dim())
            .map_err(|_| {
                crate::Error::new(
                    crate::ErrorKind::Runtime,
                    "permute(): duplicate dims are not allowed.",
                )
            })?
            .to_vec();
        self.permute_dims(&w)
    }

    /// `permute` with already-wrapped, distinct dims.
    pub(crate) fn permute_dims(&self, dims: &[usize]) -> Result<Tensor> {
        let sz: Dims = dims.iter().map(|&d| self.shape()[d]).collect();
        let st: Dims = dims.iter().map(|&d| self.stride()[d]).collect();
        let y = self.view_of(sz, st, self.storage_offset());
        crate::autograd::derivatives::shape::permute(self, dims, y)
    }

    /// Move dims `source` to positions `destination` (`torch.movedim`).
    #[op = "movedim.intlist(Tensor(a) self, int[] source, int[] destination) -> Tensor(a)"]
    pub fn movedim(&self, source: &[i64], destination: &[i64]) -> Result<Tensor> {
        crate::ensure!(
            source.len() == destination.len(),
            Runtime,
            "movedim: Invalid source or destination dims: source ({source:?} dims) should contain the same number of dims as destination ({destination:?} dims)"
        );
        let n = self.dim();
        let src = super::layout::wrap_dims("movedim", source, n)?;
        let dst = super::layout::wrap_dims("movedim", destination, n)?;
        if n == 0 {
            // dims 0 / -1 of a 0-dim tensor: nothing to move
            return Ok(self.clone());
        }
        let mut order: Vec<Option<usize>> = vec![None; n];
        for (s, d) in src.iter().zip(dst.iter()) {
            order[*d] = Some(*s);
        }
        let mut rest = (0..n).filter(|d| !src.contains(d));
        let perm: Vec<usize> = order
            .into_iter()
            .map(|o| o.unwrap_or_else(|| rest.next().unwrap_or(0)))
            .collect();
        self.permute_dims(&perm)
    }

    /// Elements `start..start+length` along `dim` (`t.narrow`).
    #[op = "narrow(Tensor(a) self, int dim, SymInt start, SymInt length) -> Tensor(a)"]
    pub fn narrow(&self, dim: i64, start: i64, length: usize) -> Result<Tensor> {
        crate::ensure!(
            self.dim() > 0,
            Runtime,
            "narrow() cannot be applied to a 0-dim tensor."
        );
        let d = wrap_dim(dim, self.dim())?;
        let size = self.shape()[d] as i64;
        let s = if start < 0 { start + size } else { start };
        crate::ensure!(
            s >= 0 && s <= size,
            Index,
            "start out of range (expected to be in range of [{}, {}], but got {start})",
            -size,
            size
        );
        crate::ensure!(
            s as usize + length <= size as usize,
            Runtime,
            "start ({s}) + length ({length}) exceeds dimension size ({size})."
        );
        self.slice(dim, Some(s), Some(s + length as i64), 1)
    }

    /// Python slicing `t[.., start:end:step]` along `dim`; bounds clamp as in
    /// Python; `step` must be positive.
    #[op = "slice.Tensor(Tensor(a) self, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) -> Tensor(a)"]
    pub fn slice(
        &self,
        dim: i64,
        start: Option<i64>,
        end: Option<i64>,
        step: i64,
    ) -> Result<Tensor> {
        crate::ensure!(
            self.dim() > 0,
            Index,
            "slice() cannot be applied to a 0-dim tensor."
        );
        crate::ensure!(step > 0, Value, "step must be greater than zero");
        let d = wrap_dim(dim, self.dim())?;
        let n = self.shape()[d] as i64;
        let clampi = |v: i64| if v < 0 { (v + n).max(0) } else { v.min(n) };
        let s = clampi(start.unwrap_or(0));
        let e = clampi(end.unwrap_or(n)).max(s);
        let len = ((e - s) + step - 1) / step;
        let mut sz: Dims = self.shape().into();
        let mut st: Dims = self.stride().into();
        let off = self.storage_offset() + s as usize * st[d];
        sz[d] = len as usize;
        st[d] *= step as usize;
        let y = self.view_of(sz, st, if len == 0 { self.storage_offset() } else { off });
        crate::autograd::derivatives::shape::slice(self, d, s as usize, step as usize, y)
    }

    /// The slice at `index` along `dim`, removing that dim (`t.select`).
    #[op = "select.int(Tensor(a) self, int dim, SymInt index) -> Tensor(a)"]
    pub fn select(&self, dim: i64, index: i64) -> Result<Tensor> {
        crate::ensure!(
            self.dim() > 0,
            Index,
            "select() cannot be applied to a 0-dim tensor."
        );
        let d = wrap_dim(dim, self.dim())?;
        let n = self.shape()[d] as i64;
        crate::ensure!(
            index >= -n && index < n,
            Index,
            "select(): index {index} out of range for tensor of size {:?} at dimension {d}",
            self.shape()
        );
        let i = if index < 0 { index + n } else { index } as usize;
        let mut sz: Dims = self.shape().into();
        let mut st: Dims = self.stride().into();
        let off = self.storage_offset() + i * st[d];
        sz.remove(d);
        st.remove(d);
        let y = self.view_of(sz, st, off);
        crate::autograd::derivatives::shape::select(self, d, i, y)
    }

    /// Remove every size-1 dim (`t.squeeze()`).
    #[op = "squeeze(Tensor(a) self) -> Tensor(a)"]
    pub fn squeeze(&self) -> Result<Tensor> {
        let keep: Vec<usize> = (0..self.dim()).filter(|&d| self.shape()[d] != 1).collect();
        let y = self.view_of(
            keep.iter().map(|&d| self.shape()[d]).collect(),
            keep.iter().map(|&d| self.stride()[d]).collect(),
            self.storage_offset(),
        );
        crate::autograd::derivatives::shape::view("SqueezeBackward0", self, y)
    }

    /// Remove `dims` that have size 1; others are left (`t.squeeze(dims)`).
    #[op = "squeeze.dims(Tensor(a) self, int[] dim) -> Tensor(a)"]
    pub fn squeeze_dims(&self, dims: &[i64]) -> Result<Tensor> {
        let w = super::layout::wrap_dims("squeeze", dims, self.dim())?;
        let keep: Vec<usize> = (0..self.dim())
            .filter(|d| !(w.contains(d) && self.shape()[*d] == 1))
            .collect();
        let y = self.view_of(
            keep.iter().map(|&d| self.shape()[d]).collect(),
            keep.iter().map(|&d| self.stride()[d]).collect(),
            self.storage_offset(),
        );
        crate::autograd::derivatives::shape::view("SqueezeBackward0", self, y)
    }

    /// Insert a size-1 dim at `dim` (`t.unsqueeze`).
    #[op = "unsqueeze(Tensor(a) self, int dim) -> Tensor(a)"]
    pub fn unsqueeze(&self, dim: i64) -> Result<Tensor> {
        let d = wrap_dim_insert(dim, self.dim())?;
        let mut sz: Dims = self.shape().into();
        let mut st: Dims = self.stride().into();
        let s = if d < self.dim() { st[d] * sz[d] } else { 1 };
        sz.insert(d, 1);
        st.insert(d, s);
        let y = self.view_of(sz, st, self.storage_offset());
        crate::autograd::derivatives::shape::view("UnsqueezeBackward0", self, y)
    }

    /// Broadcast to a larger shape without copying (`t.expand`); -1 keeps a dim.
    pub fn expand(&self, shape: &[i64]) -> Result<Tensor> {
        crate::enter_op!("expand", self, shape, false);
        let nd = self.dim();
        crate::ensure!(
            shape.len() >= nd,
            Runtime,
            "expand: the number of sizes provided ({}) must be greater or equal to the number of dimensions in the tensor ({nd})",
            shape.len()
        );
        let off = shape.len() - nd;
        let mut sz: Dims = SmallVec::new();
        let mut st: Dims = SmallVec::new();
        for (i, &s) in shape.iter().enumerate() {
            if i < off {
                crate::ensure!(
                    s >= 0,
                    Runtime,
                    "expand: -1 is not allowed in a leading, non-existing dimension {i}"
                );
                sz.push(s as usize);
                st.push(0);
                continue;
            }
            let (cur, cst) = (self.shape()[i - off], self.stride()[i - off]);
            let target = if s == -1 { cur } else { s.max(0) as usize };
            if cur == target {
                sz.push(cur);
                st.push(cst);
            } else if cur == 1 {
                sz.push(target);
                st.push(0);
            } else {
                crate::bail!(
                    Runtime,
                    "The expanded size of the tensor ({target}) must match the existing size ({cur}) at non-singleton dimension {i}.  Target sizes: {shape:?}.  Tensor sizes: {:?}",
                    self.shape()
                );
            }
        }
        checked_numel("expand", &sz)?;
        let y = self.view_of(sz, st, self.storage_offset());
        crate::autograd::derivatives::shape::expand(self, y)
    }

    /// `torch.broadcast_to`.
    #[op = "broadcast_to(Tensor(a) self, SymInt[] size) -> Tensor(a)"]
    pub fn broadcast_to(&self, shape: &[usize]) -> Result<Tensor> {
        let s = broadcast_shapes(self.shape(), shape)?;
        crate::ensure!(
            s.as_slice() == shape,
            Runtime,
            "broadcast_to: shape {:?} cannot be broadcast to {shape:?}",
            self.shape()
        );
        self.expand(&shape.iter().map(|&s| s as i64).collect::<Vec<_>>())
    }

    /// Merge dims `start..=end` into one (`t.flatten`); a view when possible.
    #[op = "flatten.using_ints(Tensor(a) self, int start_dim=0, int end_dim=-1) -> Tensor(a)"]
    pub fn flatten(&self, start_dim: i64, end_dim: i64) -> Result<Tensor> {
        if self.dim() == 0 {
            return self.reshape(&[1]);
        }
        let (s, e) = (
            wrap_dim(start_dim, self.dim())?,
            wrap_dim(end_dim, self.dim())?,
        );
        crate::ensure!(
            s <= e,
            Runtime,
            "flatten() has invalid args: start_dim cannot come after end_dim"
        );
        let mut shape: Vec<i64> = self.shape()[..s].iter().map(|&x| x as i64).collect();
        shape.push(self.shape()[s..=e].iter().product::<usize>() as i64);
        shape.extend(self.shape()[e + 1..].iter().map(|&x| x as i64));
        self.reshape(&shape)
    }

    /// Split dim `dim` into `sizes` (`t.unflatten`); one size may be -1.
    #[op = "unflatten.int(Tensor(a) self, int dim, SymInt[] sizes) -> Tensor(a)"]
    pub fn unflatten(&self, dim: i64, sizes: &[i64]) -> Result<Tensor> {
        crate::ensure!(
            self.dim() > 0,
            Runtime,
            "unflatten: Dimension specified as {dim} but tensor has no dimensions"
        );
        let d = wrap_dim(dim, self.dim())?;
        let inner = infer_shape("unflatten", sizes, self.shape()[d])
            .map_err(|_| crate::Error::new(crate::ErrorKind::Runtime, format!("unflatten: Provided sizes {sizes:?} don't multiply up to the size of dim {dim} ({}) in the input tensor", self.shape()[d])))?;
        let mut shape: Vec<i64> = self.shape()[..d].iter().map(|&x| x as i64).collect();
        shape.extend(inner.iter().map(|&x| x as i64));
        shape.extend(self.shape()[d + 1..].iter().map(|&x| x as i64));
        self.view(&shape).or_else(|_| self.reshape(&shape))
    }

    /// Sliding windows of `size` with `step` along `dim`, as a new last dim
    /// (`t.unfold`).
    #[op = "unfold(Tensor(a) self, int dimension, int size, int step) -> Tensor(a)"]
    pub fn unfold(&self, dim: i64, size: usize, step: usize) -> Result<Tensor> {
        let d = wrap_dim(dim, self.dim())?;
        let n = if self.dim() == 0 { 1 } else { self.shape()[d] };
        crate::ensure!(
            size <= n,
            Runtime,
            "maximum size for tensor at dimension {d} is {n} but size is {size}"
        );
        crate::ensure!(step > 0, Runtime, "step is {step} but must be > 0");
        let mut sz: Dims = self.shape().into();
        let mut st: Dims = self.stride().into();
        if self.dim() == 0 {
            let y = self.view_of(
                SmallVec::from_slice(&[size]),
                SmallVec::from_slice(&[1]),
                self.storage_offset(),
            );
            return crate::autograd::derivatives::shape::strided_view("UnfoldBackward0", self, y);
        }
        let ds = st[d];
        sz[d] = (n - size) / step + 1;
        st[d] = ds * step;
        sz.push(size);
        st.push(ds);
        let y = self.view_of(sz, st, self.storage_offset());
        crate::autograd::derivatives::shape::unfold(self, d, size, step, y)
    }

    /// The diagonal at `offset` of the (dim1, dim2) planes, as a new last dim
    /// (`torch.diagonal`).
    #[op = "diagonal(Tensor(a) self, int offset=0, int dim1=0, int dim2=1) -> Tensor(a)"]
    pub fn diagonal(&self, offset: i64, dim1: i64, dim2: i64) -> Result<Tensor> {
        let (a, b) = (wrap_dim(dim1, self.dim())?, wrap_dim(dim2, self.dim())?);
        crate::ensure!(
            a != b,
            Runtime,
            "diagonal dimensions cannot be identical {dim1}, {dim2}"
        );
        let (na, nb) = (self.shape()[a] as i64, self.shape()[b] as i64);
        let (len, off) = if offset >= 0 {
            (
                (na.min(nb - offset)).max(0),
                offset as usize * self.stride()[b],
            )
        } else {
            (
                (nb.min(na + offset)).max(0),
                (-offset) as usize * self.stride()[a],
            )
        };
        let mut sz: Dims = SmallVec::new();
        let mut st: Dims = SmallVec::new();
        for d in 0..self.dim() {
            if d != a && d != b {
                sz.push(self.shape()[d]);
                st.push(self.stride()[d]);
            }
        }
        sz.push(len as usize);
        st.push(self.stride()[a] + self.stride()[b]);
        let o = if len == 0 {
            self.storage_offset()
        } else {
            self.storage_offset() + off
        };
        let y = self.view_of(sz, st, o);
        crate::autograd::derivatives::shape::strided_view("DiagonalBackward0", self, y)
    }

    /// Split into pieces of `split_size` along `dim` (the last may be smaller).
    #[op = "split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]"]
    pub fn split(&self, split_size: usize, dim: i64) -> Result<Vec<Tensor>> {
        crate::ensure!(
            self.dim() > 0,
            Runtime,
            "split expects at least a 1-dimensional tensor"
        );
        let d = wrap_dim(dim, self.dim())?;
        let n = self.shape()[d];
        crate::ensure!(
            split_size > 0 || n == 0,
            Runtime,
            "split_size can only be 0 if dimension size is 0, but got dimension size of {n}"
        );
        if n == 0 {
            return Ok(vec![self.clone()]);
        }
        let sizes: Vec<usize> = (0..n.div_ceil(split_size))
            .map(|i| split_size.min(n - i * split_size))
            .collect();
        self.pieces("SplitBackward0", d, &sizes, false)
    }

    /// Split into pieces of the given sizes along `dim` (`split_with_sizes`).
    #[op = "split_with_sizes(Tensor(a -> *) self, SymInt[] split_sizes, int dim=0) -> Tensor(a)[]"]
    #[op = "split.sizes(Tensor(a -> *) self, SymInt[] split_size, int dim=0) -> Tensor(a)[]"]
    pub fn split_with_sizes(&self, sizes: &[usize], dim: i64) -> Result<Vec<Tensor>> {
        crate::ensure!(
            self.dim() > 0,
            Runtime,
            "split_with_sizes expects at least a 1-dimensional tensor"
        );
        let d = wrap_dim(dim, self.dim())?;
        let total = sizes.iter().try_fold(0usize, |a, &s| a.checked_add(s));
        crate::ensure!(
            total == Some(self.shape()[d]),
            Runtime,
            "split_with_sizes expects split_sizes to sum exactly to {} (input tensor's size at dimension {d}), but got split_sizes={sizes:?}",
            self.shape()[d]
        );
        self.pieces("SplitWithSizesBackward0", d, sizes, false)
    }

    /// Consecutive views of `sizes[i]` along `d` (each of size 1 with `d`
    /// dropped when `squeeze`), recorded as one node whose backward
    /// concatenates (or stacks) the pieces' gradients (Note [One node for
    /// all pieces]).
    fn pieces(
        &self,
        name: &'static str,
        d: usize,
        sizes: &[usize],
        squeeze: bool,
    ) -> Result<Vec<Tensor>> {
        let stride = self.stride()[d];
        let mut start = 0;
        let out: Vec<Tensor> = sizes
            .iter()
            .map(|&len| {
                let (mut sz, mut st): (Dims, Dims) = (self.shape().into(), self.stride().into());
                if squeeze {
                    sz.remove(d);
                    st.remove(d);
                } else {
                    sz[d] = len;
                }
                let offset = if len == 0 && !squeeze {
                    self.storage_offset()
                } else {
                    self.storage_offset() + start * stride
                };
                start += len;
                self.view_of(sz, st, offset)
            })
            .collect();
        crate::autograd::derivatives::shape::pieces(name, self, d, squeeze, out)
    }

    /// Split into `chunks` nearly equal pieces along `dim` (`t.chunk`).
    #[op = "chunk(Tensor(a -> *) self, int chunks, int dim=0) -> Tensor(a)[]"]
    pub fn chunk(&self, chunks: usize, dim: i64) -> Result<Vec<Tensor>> {
        crate::ensure!(
            self.dim() > 0,
            Runtime,
            "chunk expects at least a 1-dimensional tensor"
        );
        crate::ensure!(
            chunks > 0,
            Runtime,
            "chunk expects `chunks` to be greater than 0, got: {chunks}"
        );
        let d = wrap_dim(dim, self.dim())?;
        let n = self.shape()[d];
        self.split(n.div_ceil(chunks).max(1), d as i64)
    }

    /// All slices along `dim` (`t.unbind`).
    #[op = "unbind.int(Tensor(a -> *) self, int dim=0) -> Tensor(a)[]"]
    pub fn unbind(&self, dim: i64) -> Result<Vec<Tensor>> {
        crate::ensure!(
            self.dim() > 0,
            Index,
            "Dimension specified as {dim} but tensor has no dimensions"
        );
        let d = wrap_dim(dim, self.dim())?;
        self.pieces("UnbindBackward0", d, &vec![1; self.shape()[d]], true)
    }
}

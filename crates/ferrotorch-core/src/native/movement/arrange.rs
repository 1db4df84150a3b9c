//! Copies that rearrange whole tensors: `repeat`, `tile`,
//! `repeat_interleave`, `flip`, `roll`, `tril`/`triu`, `cat`, `stack`.

use crate::dtype::{result_type, DType, ResultTypeArg};
use crate::error::Result;
use crate::tensor::layout::wrap_dim;
use crate::tensor::Tensor;

crate::ops! {
    register = register_arrange;
    /// Repeat the whole tensor along each dim (`t.repeat(sizes)`);
    /// `sizes` may have more entries than `self` has dims.
    #[op = "repeat(Tensor self, SymInt[] repeats) -> Tensor"]
    pub fn repeat(&self, sizes: &[usize]) -> Result<Tensor> {
        crate::ensure!(
            sizes.len() >= self.dim(),
            Runtime,
            "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor"
        );
        let lead = sizes.len() - self.dim();
        let mut padded = vec![1usize; lead];
        padded.extend_from_slice(self.shape());
        let x = self.reshape(&padded.iter().map(|&s| s as i64).collect::<Vec<_>>())?;
        // [s0, s1, ..] -> [1, s0, 1, s1, ..] -> expand [r0, s0, r1, s1, ..]
        let mut inter = Vec::new();
        let mut exp = Vec::new();
        let mut fin = Vec::new();
        for (&r, &s) in sizes.iter().zip(&padded) {
            inter.extend([1, s as i64]);
            exp.extend([r as i64, s as i64]);
            fin.push((r * s) as i64);
        }
        x.reshape(&inter)?.expand(&exp)?.contiguous()?.reshape(&fin)
    }

    /// `torch.tile`: like `repeat`, padding `dims` with leading 1s.
    #[op = "tile(Tensor self, SymInt[] dims) -> Tensor"]
    pub fn tile(&self, dims: &[usize]) -> Result<Tensor> {
        let mut d = vec![1usize; self.dim().saturating_sub(dims.len())];
        d.extend_from_slice(dims);
        self.repeat(&d)
    }

    /// Repeat each element `repeats[i]` times along `dim` (flattened when
    /// `dim` is `None`); `repeats` is one count or one per element.
    pub fn repeat_interleave(&self, repeats: &Tensor, dim: Option<i64>) -> Result<Tensor> {
        crate::ensure!(
            self.dim() > 0 || dim.is_none(),
            Index,
            "Dimension specified as {} but tensor has no dimensions",
            dim.unwrap_or(0)
        );
        let (x, d) = match dim {
            Some(d) => (self.clone(), wrap_dim(d, self.dim())?),
            None => (self.reshape(&[-1])?, 0),
        };
        let n = x.shape()[d];
        let reps = repeats.to_vec_i64()?;
        crate::ensure!(
            reps.len() == 1 || reps.len() == n,
            Runtime,
            "repeats must have the same size as input along dim, but got repeats.size(0) = {} and input.size({d}) = {n}",
            reps.len()
        );
        crate::ensure!(
            reps.iter().all(|&r| r >= 0),
            Runtime,
            "repeats can not be negative"
        );
        let rep = |i: usize| reps[if reps.len() == 1 { 0 } else { i }] as u64;
        let total = (0..n).try_fold(0u64, |acc, i| acc.checked_add(rep(i)));
        let total = total.and_then(|t| usize::try_from(t).ok()).ok_or_else(|| {
            crate::Error::new(
                crate::ErrorKind::Runtime,
                "repeat_interleave: the total number of repeats overflows".to_string(),
            )
        })?;
        let mut idx: Vec<i64> = crate::storage::try_vec(total)?;
        for i in 0..n {
            idx.extend(std::iter::repeat_n(i as i64, rep(i) as usize));
        }
        x.index_select(d as i64, &Tensor::from_slice(&idx))
    }

    /// Reverse the order of elements along `dims` (`torch.flip`; a copy).
    #[op = "flip(Tensor self, int[] dims) -> Tensor"]
    pub fn flip(&self, dims: &[i64]) -> Result<Tensor> {
        if self.dim() == 0 {
            crate::tensor::layout::wrap_dims("flip", dims, 0)?;
            return self.deep_clone();
        }
        let ds = crate::tensor::layout::wrap_dims("flip", dims, self.dim())?;
        let mut out = self.clone();
        for d in ds {
            let n = self.shape()[d] as i64;
            let idx: Vec<i64> = (0..n).rev().collect();
            out = out.index_select(d as i64, &Tensor::from_slice(&idx))?;
        }
        if dims.is_empty() {
            out = out.deep_clone()?;
        }
        Ok(out)
    }

    /// Shift elements cyclically by `shifts` along `dims` (flattened when
    /// `dims` is empty) (`torch.roll`).
    #[op = "roll(Tensor self, SymInt[1] shifts, int[1] dims=[]) -> Tensor"]
    pub fn roll(&self, shifts: &[i64], dims: &[i64]) -> Result<Tensor> {
        crate::ensure!(
            self.dim() > 0 || dims.is_empty(),
            Index,
            "Dimension specified as {} but tensor has no dimensions",
            dims[0]
        );
        if dims.is_empty() {
            crate::ensure!(
                shifts.len() == 1,
                Runtime,
                "roll: shifts must have one entry when dims is empty"
            );
            let flat = self.reshape(&[-1])?.roll(shifts, &[0])?;
            return flat.reshape(&self.shape().iter().map(|&s| s as i64).collect::<Vec<_>>());
        }
        crate::ensure!(
            shifts.len() == dims.len(),
            Runtime,
            "shifts and dimensions must align. shifts: {}, dims:{}",
            shifts.len(),
            dims.len()
        );
        let mut out = self.clone();
        for (&s, &dim) in shifts.iter().zip(dims) {
            let d = wrap_dim(dim, self.dim())?;
            let n = self.shape()[d] as i64;
            if n == 0 {
                continue;
            }
            let k = s.rem_euclid(n);
            let idx: Vec<i64> = (0..n).map(|i| (i - k).rem_euclid(n)).collect();
            out = out.index_select(d as i64, &Tensor::from_slice(&idx))?;
        }
        Ok(out)
    }

    fn tri(&self, op: &str, diagonal: i64, lower: bool) -> Result<Tensor> {
        crate::ensure!(
            self.dim() >= 2,
            Runtime,
            "{op}: input tensor must have at least 2 dimensions"
        );
        let (r, c) = (self.shape()[self.dim() - 2], self.shape()[self.dim() - 1]);
        let rows = Tensor::arange(0, r as i64, 1, DType::I64)?.unsqueeze(1)?;
        let cols = Tensor::arange(0, c as i64, 1, DType::I64)?.unsqueeze(0)?;
        let diff = cols.sub(&rows)?;
        let keep = if lower {
            diff.le(diagonal)?
        } else {
            diff.ge(diagonal)?
        };
        self.masked_fill(&keep.logical_not()?, 0)
    }

    /// Lower triangle (elements above `diagonal` zeroed), batched.
    #[op = "tril(Tensor self, int diagonal=0) -> Tensor"]
    pub fn tril(&self, diagonal: i64) -> Result<Tensor> {
        self.tri("tril", diagonal, true)
    }

    /// Upper triangle (elements below `diagonal` zeroed), batched.
    #[op = "triu(Tensor self, int diagonal=0) -> Tensor"]
    pub fn triu(&self, diagonal: i64) -> Result<Tensor> {
        self.tri("triu", diagonal, false)
    }
}

crate::ops! {
    register = register_join;
/// Concatenate along `dim` (`torch.cat`); dtypes promote, and 1-D empty
/// tensors are skipped as in PyTorch.
#[op = "cat(Tensor[] tensors, int dim=0) -> Tensor"]
pub fn cat(tensors: &[Tensor], dim: i64) -> Result<Tensor> {
    let ins: Vec<&Tensor> = tensors.iter().collect();
    let y = crate::autograd::raw(&ins, || cat_impl(tensors, dim))?;
    if y.dim() == 0 {
        return Ok(y);
    }
    // only legacy empty (0,) inputs: the result is (0,) and still part of the graph
    let d = if tensors.iter().all(|t| t.dim() == 1 && t.numel() == 0) {
        0
    } else {
        wrap_dim(dim, y.dim())?
    };
    crate::autograd::derivatives::indexing::cat(tensors, d, y)
}

/// Stack equal-shaped tensors along a new dim (`torch.stack`).
#[op = "stack(Tensor[] tensors, int dim=0) -> Tensor"]
pub fn stack(tensors: &[Tensor], dim: i64) -> Result<Tensor> {
    crate::ensure!(
        !tensors.is_empty(),
        Runtime,
        "stack expects a non-empty TensorList"
    );
    for (i, t) in tensors.iter().enumerate() {
        crate::ensure!(
            t.shape() == tensors[0].shape(),
            Runtime,
            "stack expects each tensor to be equal size, but got {:?} at entry 0 and {:?} at entry {i}",
            tensors[0].shape(),
            t.shape()
        );
    }
    let d = crate::tensor::layout::wrap_dim_insert(dim, tensors[0].dim())?;
    let ins: Vec<&Tensor> = tensors.iter().collect();
    let y = crate::autograd::raw(&ins, || {
        let parts: Vec<Tensor> = tensors
            .iter()
            .map(|t| t.unsqueeze(d as i64))
            .collect::<Result<_>>()?;
        cat(&parts, d as i64)
    })?;
    crate::autograd::derivatives::indexing::stack(tensors, d, y)
}
}

fn cat_impl(tensors: &[Tensor], dim: i64) -> Result<Tensor> {
    crate::ensure!(
        !tensors.is_empty(),
        Value,
        "torch.cat(): expected a non-empty list of Tensors"
    );
    let parts: Vec<&Tensor> = tensors
        .iter()
        .filter(|t| !(t.dim() == 1 && t.numel() == 0))
        .collect();
    let dt = result_type(
        &tensors
            .iter()
            .map(|t| ResultTypeArg::Tensor(t.dtype(), 1))
            .collect::<Vec<_>>(),
    );
    let Some(first) = parts.first() else {
        return Tensor::empty(&[0], dt);
    };
    crate::ensure!(
        first.dim() > 0,
        Runtime,
        "zero-dimensional tensor (at position 0) cannot be concatenated"
    );
    let d = wrap_dim(dim, first.dim())?;
    let mut total = 0;
    for (i, t) in parts.iter().enumerate() {
        crate::ensure!(
            t.dim() == first.dim(),
            Runtime,
            "Tensors must have same number of dimensions: got {} and {}",
            first.dim(),
            t.dim()
        );
        for k in 0..t.dim() {
            crate::ensure!(
                k == d || t.shape()[k] == first.shape()[k],
                Runtime,
                "Sizes of tensors must match except in dimension {d}. Expected size {} but got size {} for tensor number {i} in the list.",
                first.shape()[k],
                t.shape()[k]
            );
        }
        total += t.shape()[d];
    }
    let mut shape = first.shape().to_vec();
    shape[d] = total;
    let out = Tensor::empty(&shape, dt)?;
    let mut off = 0;
    for t in parts {
        let n = t.shape()[d];
        if n > 0 {
            crate::tensor::data::copy_cast(t, &out.narrow(d as i64, off as i64, n)?);
        }
        off += n;
    }
    Ok(out)
}

//! Counting along rows: `mode`, `nanmedian`, `histc`, `histogram`.

use super::reduce::{map_rows2, rows};
use crate::dispatch::Registry;
use crate::dtype::{DType, Element};
use crate::error::Result;
use crate::tensor::Tensor;
use std::cmp::Ordering;

/// The most frequent value of a row (the smallest on ties) and the index
/// of its last occurrence, as torch's CPU kernel.
fn mode_row<T: Element>(row: &[T]) -> (T, i64) {
    let mut idx: Vec<usize> = (0..row.len()).collect();
    idx.sort_by(|&a, &b| {
        row[a]
            .partial_cmp(&row[b])
            .unwrap_or(Ordering::Equal)
            .then(a.cmp(&b))
    });
    let (mut best, mut best_n, mut best_at) = (row[idx[0]], 0usize, idx[0]);
    let mut i = 0;
    while i < idx.len() {
        let mut j = i;
        while j + 1 < idx.len() && row[idx[j + 1]] == row[idx[i]] {
            j += 1;
        }
        if j - i + 1 > best_n {
            (best, best_n, best_at) = (row[idx[i]], j - i + 1, idx[j]);
        }
        i = j + 1;
    }
    (best, best_at as i64)
}

/// The lower median of a row's non-NaN values and its index (NaN when the
/// row holds nothing else).
fn nanmedian_row<T: Element>(row: &[T]) -> (T, i64) {
    let mut idx: Vec<usize> = (0..row.len()).filter(|&i| !row[i].is_nan()).collect();
    if idx.is_empty() {
        return (row[0], 0);
    }
    idx.sort_by(|&a, &b| row[a].partial_cmp(&row[b]).unwrap_or(Ordering::Equal));
    let k = idx[(idx.len() - 1) / 2];
    (row[k], k as i64)
}

crate::ops! {
    register = register_ops;
    /// `torch.mode(input, dim=-1, keepdim=False)`: the most frequent value
    /// along `dim` (the smallest on ties) and the index of its last
    /// occurrence.
    #[op = "mode(Tensor self, int dim=-1, bool keepdim=False) -> (Tensor values, Tensor indices)"]
    pub fn mode(&self, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
        let (v, i) = crate::autograd::raw(&[self], || {
            let rw = rows("mode", self, Some(&[dim]), keepdim)?;
            crate::ensure!(
                rw.r > 0,
                Index,
                "mode(): Expected reduction dim {dim} to have non-zero size."
            );
            crate::dispatch_dtype!(self.dtype(), T => map_rows2::<T, T, i64>(&rw, self.dtype(), mode_row::<T>))
        })?;
        self.select_recorded("ModeBackward0", dim, keepdim, v, &i)
    }

    /// `torch.nanmedian(input)`: the lower median ignoring NaNs.
    #[op = "nanmedian(Tensor self) -> Tensor"]
    pub fn nanmedian(&self) -> Result<Tensor> {
        crate::ensure!(
            self.numel() > 0,
            Runtime,
            "nanmedian() input tensor cannot be empty"
        );
        Ok(self.reshape(&[-1])?.nanmedian_dim(0, false)?.0)
    }

    /// `torch.nanmedian(input, dim, keepdim=False)`: values and indices.
    #[op = "nanmedian.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)"]
    pub fn nanmedian_dim(&self, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
        let (v, i) = crate::autograd::raw(&[self], || {
            let rw = rows("nanmedian", self, Some(&[dim]), keepdim)?;
            crate::ensure!(
                rw.r > 0,
                Index,
                "nanmedian(): Expected reduction dim {dim} to have non-zero size."
            );
            crate::dispatch_dtype!(self.dtype(), T => map_rows2::<T, T, i64>(&rw, self.dtype(), nanmedian_row::<T>))
        })?;
        self.select_recorded("NanmedianBackward1", dim, keepdim, v, &i)
    }

    /// Record values picked along `dim` at `i` (their gradient goes back
    /// to those positions): `median`, `nanmedian`, `mode`.
    pub(crate) fn select_recorded(
        &self,
        name: &'static str,
        dim: i64,
        keepdim: bool,
        v: Tensor,
        i: &Tensor,
    ) -> Result<(Tensor, Tensor)> {
        let d = if self.dim() == 0 {
            0
        } else {
            crate::tensor::layout::wrap_dim(dim, self.dim())?
        };
        let v =
            crate::autograd::derivatives::shape::select_by_indices(name, self, d, keepdim, v, i)?;
        Ok((v, i.clone()))
    }

    /// `torch.histc(input, bins=100, min=0, max=0)`: counts in `bins`
    /// equal bins over `[min, max]` (the data's range when both are 0);
    /// values outside are ignored, `max` falls in the last bin.
    #[op = "histc(Tensor self, int bins=100, Scalar min=0, Scalar max=0) -> Tensor"]
    pub fn histc(&self, bins: i64, min: f64, max: f64) -> Result<Tensor> {
        crate::ensure!(
            self.is_floating_point(),
            NotImplemented,
            "\"histogram_cpu\" not implemented for '{}'",
            self.dtype().name_title()
        );
        crate::ensure!(
            bins > 0,
            Runtime,
            "torch.histc: bins must be > 0, but got {bins} for bins"
        );
        let v = self
            .detach()
            .to_dtype(DType::F64)?
            .contiguous()?
            .to_vec::<f64>()?;
        let (mut lo, mut hi) = (min, max);
        if lo == hi && !v.is_empty() {
            lo = v
                .iter()
                .copied()
                .filter(|x| !x.is_nan())
                .fold(f64::INFINITY, f64::min);
            hi = v
                .iter()
                .copied()
                .filter(|x| !x.is_nan())
                .fold(f64::NEG_INFINITY, f64::max);
        }
        if lo == hi {
            (lo, hi) = (lo - 1.0, hi + 1.0);
        }
        crate::ensure!(
            lo.is_finite() && hi.is_finite(),
            Runtime,
            "torch.histc: range of [{lo}, {hi}] is not finite"
        );
        crate::ensure!(lo < hi, Runtime, "torch.histc: max must be larger than min");
        let n = bins as usize;
        let mut counts: Vec<f64> = crate::storage::try_vec(n)?;
        counts.resize(n, 0.0);
        for x in v {
            if x >= lo && x <= hi {
                let b = (((x - lo) * n as f64 / (hi - lo)) as usize).min(n - 1);
                counts[b] += 1.0;
            }
        }
        Tensor::from_vec(counts, &[n])?.to_dtype(self.dtype())
    }

    /// `torch.histogram(input, bins, *, range=None, weight=None,
    /// density=False)` with `bins` equal bins: `(hist, bin_edges)`.
    pub fn histogram(
        &self,
        bins: i64,
        range: Option<(f64, f64)>,
        weight: Option<&Tensor>,
        density: bool,
    ) -> Result<(Tensor, Tensor)> {
        crate::ensure!(
            bins > 0,
            Runtime,
            "torch.histogram(): bins must be > 0, but got {bins} for dimension 0"
        );
        let (mut lo, mut hi) = match range {
            Some(r) => r,
            None => {
                let v = self
                    .detach()
                    .to_dtype(DType::F64)?
                    .contiguous()?
                    .to_vec::<f64>()?;
                let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
                let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                if v.is_empty() {
                    (0.0, 0.0)
                } else {
                    (lo, hi)
                }
            }
        };
        crate::ensure!(
            lo <= hi,
            Value,
            "torch.histogram(): max must be larger than min"
        );
        if lo == hi {
            (lo, hi) = (lo - 0.5, hi + 0.5);
        }
        let n = bins as usize;
        let mut edges: Vec<f64> = crate::storage::try_vec(n + 1)?;
        edges.extend((0..=n).map(|i| lo + (hi - lo) * i as f64 / n as f64));
        let edges = Tensor::from_vec(edges, &[n + 1])?.to_dtype(self.dtype())?;
        self.histogram_edges(&edges, weight, density)
    }

    /// `torch.histogram(input, bins: Tensor, ...)`: counts between the
    /// given increasing edges; the last bin includes its right edge.
    #[op = "histogram.bins_tensor(Tensor self, Tensor bins, *, Tensor? weight=None, bool density=False) -> (Tensor hist, Tensor bin_edges)"]
    pub fn histogram_edges(
        &self,
        edges: &Tensor,
        weight: Option<&Tensor>,
        density: bool,
    ) -> Result<(Tensor, Tensor)> {
        crate::ensure!(
            self.is_floating_point() && edges.dtype() == self.dtype(),
            Runtime,
            "torch.histogram: input tensor and bins tensors should have the same dtype, but got input {} and bins {}",
            self.dtype().name(),
            edges.dtype().name()
        );
        crate::ensure!(
            edges.dim() == 1 && edges.numel() >= 1,
            Runtime,
            "torch.histogram(): bins tensor should have one dimension and at least 1 element"
        );
        let e = edges
            .detach()
            .to_dtype(DType::F64)?
            .contiguous()?
            .to_vec::<f64>()?;
        let v = self
            .detach()
            .to_dtype(DType::F64)?
            .contiguous()?
            .to_vec::<f64>()?;
        let w = match weight {
            Some(w) => {
                crate::ensure!(w.shape() == self.shape(), Runtime, "torch.histogram: if weight tensor is provided it should have the same shape as the input tensor");
                w.detach()
                    .to_dtype(DType::F64)?
                    .contiguous()?
                    .to_vec::<f64>()?
            }
            None => vec![1.0; v.len()],
        };
        let n = e.len() - 1;
        let mut hist = vec![0.0f64; n];
        if n > 0 {
            for (&x, &wt) in v.iter().zip(&w) {
                if !(x >= e[0] && x <= e[n]) {
                    continue;
                }
                // the last edge at or below x; x == the right edge: last bin
                let b = e
                    .partition_point(|&edge| edge <= x)
                    .saturating_sub(1)
                    .min(n - 1);
                hist[b] += wt;
            }
        }
        if density {
            let total: f64 = hist.iter().sum();
            for (b, h) in hist.iter_mut().enumerate() {
                *h /= total * (e[b + 1] - e[b]);
            }
        }
        Ok((
            Tensor::from_vec(hist, &[n])?.to_dtype(self.dtype())?,
            edges.detach(),
        ))
    }
}

pub(crate) fn register(r: &mut Registry) {
    register_ops(r);
    type T = Tensor;
    r.def_typed(
        "histogram.bin_ct(Tensor self, int bins=100, *, float[]? range=None, Tensor? weight=None, bool density=False) -> (Tensor hist, Tensor bin_edges)",
        |x: T, b: i64, range: Option<Vec<f64>>, w: Option<T>, d: bool| {
            let range = match range.as_deref() {
                None => None,
                Some([lo, hi]) => Some((*lo, *hi)),
                Some(r) => crate::bail!(Runtime, "torch.histogram(): range should have 2 elements, got {}", r.len()),
            };
            x.histogram(b, range, w.as_ref(), d)
        },
    );
}

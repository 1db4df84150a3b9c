//! Ordering ops: `sort`/`argsort` (stable), `topk`, `unique`,
//! `searchsorted`, `bincount`.
//!
//! NaN sorts as larger than every number, as in PyTorch.

use super::reduce::rows;
use crate::dispatch::Registry;
use crate::dtype::{DType, Element};
use crate::error::Result;
use crate::tensor::layout::wrap_dim;
use crate::tensor::Tensor;
use std::cmp::Ordering;

/// Total order with NaN last.
fn cmp_nan_last<T: Element>(a: &T, b: &T) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        _ => a.partial_cmp(b).unwrap_or(Ordering::Equal),
    }
}

crate::ops! {
    register = register_ops;
    /// Sort along `dim` (stable): (values, original indices).
    #[op = "sort(Tensor self, int dim=-1, bool descending=False) -> (Tensor values, Tensor indices)"]
    pub fn sort(&self, dim: i64, descending: bool) -> Result<(Tensor, Tensor)> {
        let (v, i) = crate::autograd::raw(&[self], || self.sort_impl(dim, descending))?;
        let d = if self.dim() == 0 {
            0
        } else {
            wrap_dim(dim, self.dim())?
        };
        let v = crate::autograd::derivatives::shape::select_by_indices(
            "SortBackward0",
            self,
            d,
            true,
            v,
            &i,
        )?;
        Ok((v, i))
    }

    fn sort_impl(&self, dim: i64, descending: bool) -> Result<(Tensor, Tensor)> {
        if self.dim() == 0 {
            return Ok((self.deep_clone()?, Tensor::zeros(&[], DType::I64)?));
        }
        let d = wrap_dim(dim, self.dim())?;
        let nd = self.dim();
        let rw = rows("sort", self, Some(&[d as i64]), true)?;
        let (m, r) = (rw.m, rw.r);
        let (vals, idx) = crate::dispatch_dtype!(self.dtype(), T => {
            let data = rw.data.to_vec::<T>()?;
            let mut v = Vec::with_capacity(m * r);
            let mut ix = Vec::with_capacity(m * r);
            for row in data.chunks(r.max(1)).take(m) {
                let mut order: Vec<usize> = (0..row.len()).collect();
                if descending {
                    order.sort_by(|&a, &b| cmp_nan_last(&row[b], &row[a]));
                } else {
                    order.sort_by(|&a, &b| cmp_nan_last(&row[a], &row[b]));
                }
                v.extend(order.iter().map(|&j| row[j]));
                ix.extend(order.iter().map(|&j| j as i64));
            }
            (Tensor::from_vec(v, rw.data.shape())?, Tensor::from_vec(ix, rw.data.shape())?)
        });
        // rows() put the sorted dim last; move it back.
        let back = |t: Tensor| t.movedim(&[nd as i64 - 1], &[d as i64])?.contiguous();
        Ok((back(vals)?, back(idx)?))
    }

    /// Indices that sort along `dim` (`torch.argsort`, stable).
    #[op = "argsort(Tensor self, int dim=-1, bool descending=False) -> Tensor"]
    pub fn argsort(&self, dim: i64, descending: bool) -> Result<Tensor> {
        Ok(self.sort(dim, descending)?.1)
    }

    /// The `k` largest (or smallest) elements along `dim`, sorted, with
    /// their indices (`torch.topk`).
    #[op = "topk(Tensor self, SymInt k, int dim=-1, bool largest=True, bool sorted=True) -> (Tensor values, Tensor indices)"]
    pub fn topk(
        &self,
        k: usize,
        dim: i64,
        largest: bool,
        sorted: bool,
    ) -> Result<(Tensor, Tensor)> {
        let d = wrap_dim(dim, self.dim())?;
        let n = if self.dim() == 0 { 1 } else { self.shape()[d] };
        crate::ensure!(k <= n, Runtime, "selected index k out of range");
        let _ = sorted;
        let (v, i) = crate::autograd::raw(&[self], || -> Result<(Tensor, Tensor)> {
            let (v, i) = self.sort_impl(d as i64, largest)?;
            if self.dim() == 0 {
                return Ok((v, i));
            }
            Ok((
                v.narrow(d as i64, 0, k)?.contiguous()?,
                i.narrow(d as i64, 0, k)?.contiguous()?,
            ))
        })?;
        let v = crate::autograd::derivatives::shape::select_by_indices(
            "TopkBackward0",
            self,
            d,
            true,
            v,
            &i,
        )?;
        Ok((v, i))
    }

    /// Sorted unique elements of the flattened tensor, with the inverse
    /// mapping and the counts (`torch.unique(sorted=True, ...)`).
    pub fn unique(&self) -> Result<(Tensor, Tensor, Tensor)> {
        self.unique_all(None)
    }

    /// For each value, the insertion index into the sorted last dim of
    /// `self` that keeps it sorted (`torch.searchsorted`; `right` picks the
    /// upper bound). `self` is 1-D or matches `values` in its leading dims.
    pub fn searchsorted(&self, values: &Tensor, right: bool) -> Result<Tensor> {
        crate::ensure!(self.dim() >= 1, Runtime, "searchsorted: boundaries tensor should be 1 dimension or the first N-1 dimensions of boundaries tensor and input value tensor must match");
        let seq = self.to_dtype(DType::F64)?.contiguous()?.to_vec::<f64>()?;
        let vals = values.to_dtype(DType::F64)?.to_vec::<f64>()?;
        let r = self.shape()[self.dim() - 1];
        let leading_ok = self.dim() == 1
            || (self.dim() == values.dim()
                && self.shape()[..self.dim() - 1] == values.shape()[..values.dim() - 1]);
        crate::ensure!(
            leading_ok,
            Runtime,
            "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions of boundaries tensor and input value tensor must match, but we got boundaries tensor {:?} and input value tensor {:?}",
            self.shape(),
            values.shape()
        );
        let per_row = if values.dim() == 0 {
            1
        } else {
            values.shape()[values.dim() - 1]
        };
        let out: Vec<i64> = vals
            .iter()
            .enumerate()
            .map(|(k, &v)| {
                let row = if self.dim() == 1 {
                    0
                } else {
                    k / per_row.max(1)
                };
                let s = &seq[row * r..(row + 1) * r];
                let pos = if right {
                    s.partition_point(|&x| cmp_nan_last(&x, &v) != Ordering::Greater)
                } else {
                    s.partition_point(|&x| cmp_nan_last(&x, &v) == Ordering::Less)
                };
                pos as i64
            })
            .collect();
        Tensor::from_vec(out, values.shape())
    }

    /// Count occurrences of each non-negative integer (`torch.bincount`),
    /// summing `weights` instead of 1 when given.
    #[op = "bincount(Tensor self, Tensor? weights=None, SymInt minlength=0) -> Tensor"]
    pub fn bincount(&self, weights: Option<&Tensor>, minlength: usize) -> Result<Tensor> {
        crate::ensure!(
            self.dim() == 1 && self.dtype().is_integral(false),
            Runtime,
            "bincount only supports 1-d non-negative integral inputs."
        );
        let v = self.to_vec_i64()?;
        crate::ensure!(
            v.iter().all(|&x| x >= 0),
            Runtime,
            "bincount only supports 1-d non-negative integral inputs."
        );
        let n = (v.iter().copied().max().map_or(0, |m| m as usize + 1)).max(minlength);
        match weights {
            None => {
                let mut c = vec![0i64; n];
                for &x in &v {
                    c[x as usize] += 1;
                }
                Tensor::from_vec(c, &[n])
            }
            Some(w) => {
                crate::ensure!(
                    w.shape() == self.shape(),
                    Runtime,
                    "weights should be 1-d and have the same length as input"
                );
                let wv = w.to_vec_f64()?;
                let mut c = vec![0f64; n];
                for (&x, &wt) in v.iter().zip(&wv) {
                    c[x as usize] += wt;
                }
                let dt = if w.dtype() == DType::F32 {
                    DType::F32
                } else {
                    DType::F64
                };
                Tensor::from_vec(c, &[n])?.to_dtype(dt)
            }
        }
    }
}

pub(crate) fn register(r: &mut Registry) {
    register_ops(r);
    // overloads whose arguments are not their methods' (Note [Typed kernels])
    r.def_typed(
        "sort.stable(Tensor self, *, bool? stable, int dim=-1, bool descending=False) -> (Tensor values, Tensor indices)",
        // every sort here is stable
        |x: Tensor, _stable: Option<bool>, dim: i64, descending: bool| x.sort(dim, descending),
    );
    // every sort here is stable, so `stable=` changes nothing
    r.def_typed(
        "argsort.stable(Tensor self, *, bool stable, int dim=-1, bool descending=False) -> Tensor",
        |x: Tensor, _stable: bool, dim: i64, descending: bool| x.argsort(dim, descending),
    );
    r.def_typed(
        "searchsorted.Tensor(Tensor sorted_sequence, Tensor self, *, bool out_int32=False, bool right=False, str? side=None, Tensor? sorter=None) -> Tensor",
        |seq: Tensor, x: Tensor, int32: bool, right: bool, side: Option<String>, _sorter: Option<Tensor>| {
            let out = seq.searchsorted(&x, right || side.as_deref() == Some("right"))?;
            if int32 {
                out.to_dtype(crate::DType::I32)
            } else {
                Ok(out)
            }
        },
    );
}

//! Indexing and selection ops made of other ops: `index_add`,
//! `index_copy`, `index_fill`, `masked_scatter`, `put`, `kthvalue`,
//! `bucketize`, `isin`, `argwhere`, `combinations`, and the `*_copy`
//! forms of the view ops (a view's values in fresh memory).

use crate::dispatch::Registry;
use crate::dtype::{promote_types, DType};
use crate::error::Result;
use crate::native::binary::Operand;
use crate::native::where_;
use crate::scalar::Scalar;
use crate::tensor::layout::wrap_dim;
use crate::tensor::Tensor;

/// `index` (1-D, along `dim`) spread to `like`'s shape, for scatter.
fn spread_index(index: &Tensor, dim: usize, like: &Tensor) -> Result<Tensor> {
    let mut view = vec![1i64; like.dim().max(1)];
    if like.dim() > 0 {
        view[dim] = -1;
    }
    let idx = index.to_dtype(DType::I64)?.reshape(&view)?;
    let shape: Vec<i64> = like.shape().iter().map(|&s| s as i64).collect();
    if like.dim() == 0 {
        return idx.reshape(&[]);
    }
    idx.expand(&shape)
}

fn check_index(op: &str, index: &Tensor) -> Result<()> {
    crate::ensure!(
        matches!(index.dtype(), DType::I64 | DType::I32),
        Runtime,
        "{op}(): Expected dtype int32/int64 for index"
    );
    crate::ensure!(
        index.dim() <= 1,
        Index,
        "{op}(): Index is supposed to be a vector"
    );
    Ok(())
}

impl Tensor {
    /// `torch.index_reduce(self, dim, index, source, reduce, *,
    /// include_self=True)`: `source`'s slices combined into the slices
    /// `index` names by `prod`, `mean`, `amax` or `amin` (a `scatter_reduce`
    /// with the index spread over the slices).
    pub fn index_reduce(
        &self,
        dim: i64,
        index: &Tensor,
        source: &Tensor,
        reduce: &str,
        include_self: bool,
    ) -> Result<Tensor> {
        check_index("index_reduce", index)?;
        crate::ensure!(
            matches!(reduce, "prod" | "mean" | "amax" | "amin"),
            Runtime,
            "index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}."
        );
        crate::ensure!(
            index.dim() <= 1,
            Index,
            "index_reduce(): Index is supposed to be a vector"
        );
        let d = wrap_dim(dim, self.dim())?;
        crate::ensure!(
            source.dim() == self.dim() || (self.dim() == 0 && source.dim() <= 1),
            Index,
            "index_reduce(): Source/destination tensor must have same number of dimensions"
        );
        crate::ensure!(
            self.dim() == 0 || source.shape()[d] == index.numel(),
            Index,
            "index_reduce(): Number of indices ({}) should be equal to source.size(dim) ({})",
            index.numel(),
            if self.dim() == 0 {
                1
            } else {
                source.shape()[d]
            }
        );
        self.scatter_reduce(
            d as i64,
            &spread_index(index, d, source)?,
            source,
            Some(reduce),
            include_self,
        )
    }

    /// `torch.index_add(self, dim, index, source, *, alpha=1)`: `source`'s
    /// slices added into the slices `index` names (repeats accumulate).
    pub fn index_add(
        &self,
        dim: i64,
        index: &Tensor,
        source: &Tensor,
        alpha: Scalar,
    ) -> Result<Tensor> {
        check_index("index_add", index)?;
        let d = wrap_dim(dim, self.dim())?;
        let src = if alpha.to_f64() == 1.0 {
            Clone::clone(source)
        } else {
            source.mul(alpha)?
        };
        self.scatter_add(d as i64, &spread_index(index, d, source)?, &src)
    }

    /// `torch.index_copy(self, dim, index, source)`.
    pub fn index_copy(&self, dim: i64, index: &Tensor, source: &Tensor) -> Result<Tensor> {
        check_index("index_copy", index)?;
        let d = wrap_dim(dim, self.dim())?;
        self.scatter(d as i64, &spread_index(index, d, source)?, source)
    }

    /// `torch.index_fill(self, dim, index, value)`: the slices `index` names set to `value`.
    pub fn index_fill(
        &self,
        dim: i64,
        index: &Tensor,
        value: impl Into<Operand>,
    ) -> Result<Tensor> {
        check_index("index_fill", index)?;
        let d = wrap_dim(dim, self.dim())?;
        let n = if self.dim() == 0 { 1 } else { self.shape()[d] };
        let mut hit = vec![false; n];
        for i in index.to_vec_i64()? {
            let j = if i < 0 { i + n as i64 } else { i };
            crate::ensure!(
                j >= 0 && (j as usize) < n,
                Index,
                "index_fill(): index {i} is out of bounds for dimension {d} with size {n}"
            );
            hit[j as usize] = true;
        }
        let mut view = vec![1usize; self.dim()];
        if self.dim() > 0 {
            view[d] = n;
        }
        let mask = Tensor::from_vec(hit, &view)?;
        match value.into() {
            Operand::Tensor(v) => {
                crate::ensure!(v.dim() == 0, Runtime, "index_fill_ only supports a 0-dimensional value tensor, but got tensor with {} dimension(s).", v.dim());
                where_(&mask, &v.to_dtype(self.dtype())?, self)
            }
            Operand::Scalar(s) => self.masked_fill(&mask, s),
        }
    }

    /// `torch.masked_scatter(self, mask, source)`: where `mask` is true,
    /// `source`'s elements in order.
    pub fn masked_scatter(&self, mask: &Tensor, source: &Tensor) -> Result<Tensor> {
        crate::ensure!(
            mask.dtype() == DType::Bool,
            Runtime,
            "masked_scatter_ only supports boolean masks, but got mask with dtype {}",
            mask.dtype().name()
        );
        let shape = crate::tensor::layout::broadcast_shapes(self.shape(), mask.shape())?.to_vec();
        let m = mask.broadcast_to(&shape)?;
        let count = m.to_dtype(DType::I64)?.reshape(&[-1])?.cumsum(0, None)?;
        let total = count.to_vec_i64()?.last().copied().unwrap_or(0);
        crate::ensure!(
            total as usize <= source.numel(),
            Runtime,
            "masked_scatter: expected source to have at least {total} elements, got {}",
            source.numel()
        );
        let pos = count.sub(1)?.clamp(Some(0), None::<i64>)?;
        let flat = source.reshape(&[-1])?;
        let picked = if flat.numel() == 0 {
            self.broadcast_to(&shape)?.reshape(&[-1])?
        } else {
            flat.index_select(0, &pos)?
        };
        let picked = picked.reshape(&shape.iter().map(|&s| s as i64).collect::<Vec<_>>())?;
        where_(
            &m,
            &picked.to_dtype(self.dtype())?,
            &self.broadcast_to(&shape)?,
        )
    }

    /// `torch.put(self, index, source, accumulate=False)`: `source` at the
    /// flat positions `index` (negative ones from the end).
    pub fn put(&self, index: &Tensor, source: &Tensor, accumulate: bool) -> Result<Tensor> {
        crate::ensure!(index.numel() == source.numel(), Runtime, "put_(): Expected source and index to have the same number of elements, but got source.numel() = {}, index.numel() = {}", source.numel(), index.numel());
        let n = self.numel() as i64;
        let mut idx = index.to_vec_i64()?;
        for i in &mut idx {
            crate::ensure!(
                *i >= -n && *i < n,
                Index,
                "out of range: tried to access index {i} on a tensor of {n} elements."
            );
            if *i < 0 {
                *i += n;
            }
        }
        let len = idx.len();
        let idx = Tensor::from_vec(idx, &[len])?;
        let flat = self.reshape(&[-1])?;
        let src = source.reshape(&[-1])?.to_dtype(self.dtype())?;
        let out = if accumulate {
            flat.scatter_add(0, &idx, &src)?
        } else {
            flat.scatter(0, &idx, &src)?
        };
        out.reshape(&self.shape().iter().map(|&s| s as i64).collect::<Vec<_>>())
    }

    /// `torch.kthvalue(self, k, dim=-1, keepdim=False)`: the k-th smallest
    /// values and their indices.
    pub fn kthvalue(&self, k: i64, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
        let d = wrap_dim(dim, self.dim())? as i64;
        let n = if self.dim() == 0 {
            1
        } else {
            self.shape()[d as usize]
        } as i64;
        crate::ensure!(
            k >= 1 && k <= n,
            Index,
            "kthvalue(): selected number k out of range for dimension {d}"
        );
        let (_, order) = if self.dim() == 0 {
            (Clone::clone(self), Tensor::zeros(&[], DType::I64)?)
        } else {
            self.sort(d, false)?
        };
        let idx = if self.dim() == 0 {
            order
        } else {
            order.narrow(d, k - 1, 1)?
        };
        let vals = if self.dim() == 0 {
            Clone::clone(self)
        } else {
            self.gather(d, &idx)?
        };
        if keepdim || self.dim() == 0 {
            return Ok((vals, idx));
        }
        Ok((vals.squeeze_dims(&[d])?, idx.squeeze_dims(&[d])?))
    }

    /// `torch.bucketize(self, boundaries, *, out_int32=False, right=False)`.
    pub fn bucketize(&self, boundaries: &Tensor, out_int32: bool, right: bool) -> Result<Tensor> {
        crate::ensure!(
            boundaries.dim() == 1,
            Runtime,
            "boundaries tensor must be 1 dimension, but got dim({})",
            boundaries.dim()
        );
        let r = boundaries.searchsorted(self, right)?;
        if out_int32 {
            r.to_dtype(DType::I32)
        } else {
            Ok(r)
        }
    }

    /// `torch.isin(elements, test_elements, *, assume_unique=False, invert=False)`.
    pub fn isin(&self, test: &Tensor, invert: bool) -> Result<Tensor> {
        let dt = promote_types(self.dtype(), test.dtype());
        let sorted = test.to_dtype(dt)?.reshape(&[-1])?.sort(0, false)?.0;
        let x = self.to_dtype(dt)?;
        let found = if sorted.numel() == 0 {
            Tensor::zeros(self.shape(), DType::Bool)?
        } else {
            let pos = sorted
                .searchsorted(&x.reshape(&[-1])?, false)?
                .clamp(None::<i64>, Some(sorted.numel() as i64 - 1))?;
            let hit = sorted.index_select(0, &pos)?.eq(&x.reshape(&[-1])?)?;
            hit.reshape(&self.shape().iter().map(|&s| s as i64).collect::<Vec<_>>())?
        };
        if invert {
            found.logical_not()
        } else {
            Ok(found)
        }
    }

    /// `torch.argwhere`: the indices of the non-zero elements, one row each.
    pub fn argwhere(&self) -> Result<Tensor> {
        self.nonzero()
    }

    /// `torch.combinations(self, r=2, with_replacement=False)` of a 1-D tensor.
    pub fn combinations(&self, r: i64, with_replacement: bool) -> Result<Tensor> {
        crate::ensure!(
            self.dim() == 1,
            Runtime,
            "Expect a 1D vector, but got shape {:?}",
            self.shape()
        );
        crate::ensure!(r >= 0, Runtime, "Expect a non-negative number, but got {r}");
        // empty results are still outputs of `self` (differentiable), as torch's
        if r == 0 {
            return self.narrow(0, 0, 0);
        }
        let n = self.numel();
        let r = r as usize;
        let mut rows: Vec<Vec<i64>> = Vec::new();
        let mut cur = Vec::with_capacity(r);
        fn rec(
            start: usize,
            n: usize,
            r: usize,
            rep: bool,
            cur: &mut Vec<i64>,
            rows: &mut Vec<Vec<i64>>,
        ) {
            if cur.len() == r {
                rows.push(cur.clone());
                return;
            }
            for i in start..n {
                cur.push(i as i64);
                rec(if rep { i } else { i + 1 }, n, r, rep, cur, rows);
                cur.pop();
            }
        }
        rec(0, n, r, with_replacement, &mut cur, &mut rows);
        let count = rows.len();
        if count == 0 {
            return self.narrow(0, 0, 0)?.reshape(&[0, r as i64]);
        }
        let flat: Vec<i64> = rows.into_iter().flatten().collect();
        let idx = Tensor::from_vec(flat, &[count * r])?;
        self.index_select(0, &idx)?
            .reshape(&[count as i64, r as i64])
    }

    /// `torch.sum_to_size(*size)`: summed down to `size` (the reverse of an expand).
    pub fn sum_to_size(&self, size: &[usize]) -> Result<Tensor> {
        let ok = crate::tensor::layout::broadcast_shapes(size, self.shape())
            .map(|s| s.as_slice() == self.shape())
            .unwrap_or(false);
        crate::ensure!(
            ok,
            Runtime,
            "size {{{size:?}}} is not expandable to size {{{:?}}}.",
            self.shape()
        );
        crate::autograd::sum_to(self, size)
    }
}

/// Register the `*_copy` forms: the view op, then its values in fresh memory.
fn register_copies(r: &mut Registry) {
    type T = Tensor;
    r.def_typed("alias_copy(Tensor self) -> Tensor", |x: T| x.deep_clone());
    r.def_typed("t_copy(Tensor self) -> Tensor", |x: T| x.t()?.deep_clone());
    r.def_typed(
        "permute_copy(Tensor self, int[] dims) -> Tensor",
        |x: T, d: Vec<i64>| x.permute(&d)?.deep_clone(),
    );
    r.def_typed(
        "transpose_copy.int(Tensor self, int dim0, int dim1) -> Tensor",
        |x: T, a: i64, b: i64| x.transpose(a, b)?.deep_clone(),
    );
    r.def_typed(
        "expand_copy(Tensor self, SymInt[] size, *, bool implicit=False) -> Tensor",
        |x: T, s: Vec<i64>, _i: bool| x.expand(&s)?.deep_clone(),
    );
    r.def_typed(
        "view_copy(Tensor self, SymInt[] size) -> Tensor",
        |x: T, s: Vec<i64>| x.reshape(&s)?.deep_clone(),
    );
    r.def_typed(
        "unsqueeze_copy(Tensor self, int dim) -> Tensor",
        |x: T, d: i64| x.unsqueeze(d)?.deep_clone(),
    );
    r.def_typed("squeeze_copy(Tensor self) -> Tensor", |x: T| {
        let all: Vec<i64> = (0..x.dim() as i64).collect();
        x.squeeze_dims(&all)?.deep_clone()
    });
    r.def_typed(
        "squeeze_copy.dim(Tensor self, int dim) -> Tensor",
        |x: T, d: i64| x.squeeze_dims(&[d])?.deep_clone(),
    );
    r.def_typed(
        "squeeze_copy.dims(Tensor self, int[] dim) -> Tensor",
        |x: T, d: Vec<i64>| x.squeeze_dims(&d)?.deep_clone(),
    );
    r.def_typed(
        "diagonal_copy(Tensor self, int offset=0, int dim1=0, int dim2=1) -> Tensor",
        |x: T, o: i64, a: i64, b: i64| x.diagonal(o, a, b)?.deep_clone(),
    );
    r.def_typed(
        "narrow_copy(Tensor self, int dim, SymInt start, SymInt length) -> Tensor",
        |x: T, d: i64, s: i64, l: i64| {
            crate::ensure!(
                l >= 0,
                Runtime,
                "narrow_copy(): length must be non-negative."
            );
            x.narrow(d, s, l as usize)?.deep_clone()
        },
    );
    r.def_typed(
        "unfold_copy(Tensor self, int dimension, int size, int step) -> Tensor",
        |x: T, d: i64, s: i64, st: i64| {
            crate::ensure!(
                s >= 0 && st > 0,
                Runtime,
                "unfold_copy(): size must be non-negative and step positive"
            );
            x.unfold(d, s as usize, st as usize)?.deep_clone()
        },
    );
    r.def_typed(
        "unbind_copy.int(Tensor self, int dim=0) -> Tensor[]",
        |x: T, d: i64| {
            x.unbind(d)?
                .iter()
                .map(Tensor::deep_clone)
                .collect::<Result<Vec<_>>>()
        },
    );
    r.def_typed(
        "split_with_sizes_copy(Tensor self, SymInt[] split_sizes, int dim=0) -> Tensor[]",
        |x: T, s: Vec<usize>, d: i64| {
            x.split_with_sizes(&s, d)?
                .iter()
                .map(Tensor::deep_clone)
                .collect::<Result<Vec<_>>>()
        },
    );
    r.def_typed("as_strided_copy(Tensor self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) -> Tensor", |x: T, s: Vec<usize>, st: Vec<usize>, o: Option<usize>| {
        x.as_strided(&s, &st, o)?.deep_clone()
    });
}

pub(crate) fn register(r: &mut Registry) {
    type T = Tensor;
    register_copies(r);
    r.def_typed(
        "index_reduce(Tensor self, int dim, Tensor index, Tensor source, str reduce, *, bool include_self=True) -> Tensor",
        |x: T, d: i64, i: T, s: T, r: String, inc: bool| x.index_reduce(d, &i, &s, &r, inc),
    );
    r.def_typed(
        "index_add(Tensor self, int dim, Tensor index, Tensor source, *, Scalar alpha=1) -> Tensor",
        |x: T, d: i64, i: T, s: T, a: Scalar| x.index_add(d, &i, &s, a),
    );
    r.def_typed(
        "index_copy(Tensor self, int dim, Tensor index, Tensor source) -> Tensor",
        |x: T, d: i64, i: T, s: T| x.index_copy(d, &i, &s),
    );
    r.def_typed(
        "index_fill.int_Scalar(Tensor self, int dim, Tensor index, Scalar value) -> Tensor",
        |x: T, d: i64, i: T, v: Scalar| x.index_fill(d, &i, v),
    );
    r.def_typed(
        "index_fill.int_Tensor(Tensor self, int dim, Tensor index, Tensor value) -> Tensor",
        |x: T, d: i64, i: T, v: T| x.index_fill(d, &i, &v),
    );
    r.def_typed(
        "masked_scatter(Tensor self, Tensor mask, Tensor source) -> Tensor",
        |x: T, m: T, s: T| x.masked_scatter(&m, &s),
    );
    r.def_typed(
        "put(Tensor self, Tensor index, Tensor source, bool accumulate=False) -> Tensor",
        |x: T, i: T, s: T, a: bool| x.put(&i, &s, a),
    );
    r.def_typed("kthvalue(Tensor self, SymInt k, int dim=-1, bool keepdim=False) -> (Tensor values, Tensor indices)", |x: T, k: i64, d: i64, kd: bool| x.kthvalue(k, d, kd));
    r.def_typed("bucketize.Tensor(Tensor self, Tensor boundaries, *, bool out_int32=False, bool right=False) -> Tensor", |x: T, b: T, o: bool, rt: bool| x.bucketize(&b, o, rt));
    r.def_typed("bucketize.Scalar(Scalar self, Tensor boundaries, *, bool out_int32=False, bool right=False) -> Tensor", |x: Scalar, b: T, o: bool, rt: bool| {
        Tensor::scalar_tensor(x).to_dtype(b.dtype())?.bucketize(&b, o, rt)
    });
    r.def_typed("isin.Tensor_Tensor(Tensor elements, Tensor test_elements, *, bool assume_unique=False, bool invert=False) -> Tensor", |x: T, t: T, _u: bool, inv: bool| x.isin(&t, inv));
    r.def_typed("isin.Tensor_Scalar(Tensor elements, Scalar test_element, *, bool assume_unique=False, bool invert=False) -> Tensor", |x: T, t: Scalar, _u: bool, inv: bool| {
        x.isin(&Tensor::scalar_tensor(t), inv)
    });
    r.def_typed("isin.Scalar_Tensor(Scalar element, Tensor test_elements, *, bool assume_unique=False, bool invert=False) -> Tensor", |x: Scalar, t: T, _u: bool, inv: bool| {
        Tensor::scalar_tensor(x).isin(&t, inv)
    });
    r.def_typed("argwhere(Tensor self) -> Tensor", |x: T| x.argwhere());
    r.def_typed(
        "combinations(Tensor self, int r=2, bool with_replacement=False) -> Tensor",
        |x: T, n: i64, w: bool| x.combinations(n, w),
    );
    r.def_typed(
        "sum_to_size(Tensor self, SymInt[] size) -> Tensor",
        |x: T, s: Vec<usize>| x.sum_to_size(&s),
    );
}

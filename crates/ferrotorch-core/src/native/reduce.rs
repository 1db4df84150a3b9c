//! Reductions over a list of dims with `keepdim`: `sum`, `mean`, `prod`,
//! `amax`/`amin`, `max`/`min` (values and indices), `argmax`/`argmin`,
//! `all`/`any`, `count_nonzero`.
//!
//! # Note [Reduction layout]
//! Every reduction is planned as rows: the tensor is viewed (or, when its
//! strides do not allow it, copied once) as a contiguous `[M, R]` matrix
//! whose rows are the groups being reduced, so every kernel reads one
//! contiguous slice per output. Rows run in parallel; a single large row
//! (a full reduction) is split across threads instead.

use crate::dispatch::Registry;
use crate::dtype::{DType, Element};
use crate::error::Result;
use crate::tensor::layout::wrap_dims;
use crate::tensor::Tensor;
use ferrotorch_kernels::{parallel, reduce as kred};

/// A tensor arranged as `[m, r]` rows to reduce (Note [Reduction layout]).
pub(crate) struct Rows {
    /// Contiguous data, `m * r` elements.
    pub data: Tensor,
    /// Number of outputs.
    pub m: usize,
    /// Length of each reduced group.
    pub r: usize,
    /// Output shape with `keepdim` applied.
    pub out_shape: Vec<usize>,
}

/// Plan a reduction of `x` over `dims` (`None` or empty = all dims).
pub(crate) fn rows(op: &str, x: &Tensor, dims: Option<&[i64]>, keepdim: bool) -> Result<Rows> {
    let nd = x.dim();
    let red: Vec<usize> = match dims {
        None => (0..nd).collect(),
        Some([]) => (0..nd).collect(),
        Some(d) => {
            let w = wrap_dims(op, d, nd)?;
            // a 0-dim tensor accepts dim 0 / -1, as torch does, and reduces
            // nothing
            if nd == 0 {
                vec![]
            } else {
                w.to_vec()
            }
        }
    };
    let mut is_red = vec![false; nd];
    for &d in &red {
        is_red[d] = true;
    }
    let kept: Vec<usize> = (0..nd).filter(|&d| !is_red[d]).collect();
    let m: usize = kept.iter().map(|&d| x.shape()[d]).product();
    let r: usize = red.iter().map(|&d| x.shape()[d]).product();
    let out_shape: Vec<usize> = if keepdim {
        (0..nd)
            .map(|d| if is_red[d] { 1 } else { x.shape()[d] })
            .collect()
    } else {
        kept.iter().map(|&d| x.shape()[d]).collect()
    };
    let mut perm: Vec<usize> = kept.clone();
    let mut red_sorted = red.clone();
    red_sorted.sort_unstable();
    perm.extend(red_sorted);
    let p = x.permute_dims(&perm)?;
    let data = p.contiguous()?;
    Ok(Rows {
        data,
        m,
        r,
        out_shape,
    })
}

/// Apply `f` to every row of a contiguous `[m, r]` buffer of `T`, writing
/// one `U` per row into a new tensor of `out_shape`.
pub(crate) fn map_rows<T: Element, U: Element>(
    rw: &Rows,
    out_dtype: DType,
    f: impl Fn(&[T]) -> U + Sync + Send,
) -> Result<Tensor> {
    let out = Tensor::empty(&rw.out_shape, out_dtype)?;
    debug_assert_eq!(out_dtype, U::DTYPE);
    let (m, r) = (rw.m, rw.r);
    let src = rw.data.data_ptr() as usize;
    let dst = out.data_ptr() as usize;
    {
        let _g = crate::storage::lock_storages(&[rw.data.storage()], &[out.storage()]);
        parallel::parallel_for(m, (super::iter::GRAIN / r.max(1)).max(1), |range| {
            for i in range {
                // SAFETY: row i of the contiguous [m, r] input and output slot i.
                unsafe {
                    let row = std::slice::from_raw_parts((src as *const T).add(i * r), r);
                    *(dst as *mut U).add(i) = f(row);
                }
            }
        });
    }
    Ok(out)
}

/// Like [`map_rows`] for reductions that return two values per row (a
/// value and its index, a variance and its mean); the second output has
/// `V`'s dtype.
pub(crate) fn map_rows2<T: Element, U: Element, V: Element>(
    rw: &Rows,
    out_dtype: DType,
    f: impl Fn(&[T]) -> (U, V) + Sync + Send,
) -> Result<(Tensor, Tensor)> {
    let vals = Tensor::empty(&rw.out_shape, out_dtype)?;
    let idx = Tensor::empty(&rw.out_shape, V::DTYPE)?;
    let (m, r) = (rw.m, rw.r);
    let src = rw.data.data_ptr() as usize;
    let (dv, di) = (vals.data_ptr() as usize, idx.data_ptr() as usize);
    {
        let _g =
            crate::storage::lock_storages(&[rw.data.storage()], &[vals.storage(), idx.storage()]);
        parallel::parallel_for(m, (super::iter::GRAIN / r.max(1)).max(1), |range| {
            for i in range {
                // SAFETY: row i of the input; slot i of both outputs.
                unsafe {
                    let row = std::slice::from_raw_parts((src as *const T).add(i * r), r);
                    let (v, j) = f(row);
                    *(dv as *mut U).add(i) = v;
                    *(di as *mut V).add(i) = j;
                }
            }
        });
    }
    Ok((vals, idx))
}

/// Run `f(row_in, row_out)` on every 1-D slice of `x` along `dim` (moved
/// last and made contiguous, rows in parallel) and move the dim back: the
/// shared skeleton of scans, softmax and other per-row ops that keep the
/// shape.
pub(crate) fn map_along_dim<T: Element, U: Element>(
    x: &Tensor,
    dim: i64,
    f: impl Fn(&[T], &mut [U]) + Sync + Send,
) -> Result<Tensor> {
    let d = crate::tensor::layout::wrap_dim(dim, x.dim())?;
    let src = if x.dim() == 0 {
        x.reshape(&[1])?
    } else {
        x.movedim(&[d as i64], &[-1])?.contiguous()?
    };
    let r = *src.shape().last().unwrap_or(&1);
    let m = src.numel().checked_div(r).unwrap_or(0);
    let out = Tensor::empty(src.shape(), U::DTYPE)?;
    {
        let _g = crate::storage::lock_storages(&[src.storage()], &[out.storage()]);
        let (sp, dp) = (src.data_ptr() as usize, out.data_ptr() as usize);
        parallel::parallel_for(m, (4096 / r.max(1)).max(1), |range| {
            for i in range {
                // SAFETY: row i of two contiguous [m, r] buffers.
                unsafe {
                    let a = std::slice::from_raw_parts((sp as *const T).add(i * r), r);
                    let b = std::slice::from_raw_parts_mut((dp as *mut U).add(i * r), r);
                    f(a, b);
                }
            }
        });
    }
    if x.dim() == 0 {
        return out.reshape(&[]);
    }
    out.movedim(&[-1], &[d as i64])?.contiguous()
}

/// Half types reduce through f32 and convert back at the end.
fn widen(x: &Tensor) -> Result<Tensor> {
    match x.dtype() {
        DType::F16 | DType::BF16 => x.to_dtype(DType::F32),
        _ => Ok(x.clone()),
    }
}

/// Sum of a contiguous f32 tensor over its leading dims `0..k` (the batch
/// and sequence dims of a bias gradient, `sum_to`'s usual case): the
/// column sums of a `[rows, cols]` matrix, by `ferrotorch_kernels::reduce::
/// sum_rows` (64 columns at a time in vector registers, rows added in f32
/// blocks of 256 and the blocks in f64, split over threads by columns),
/// instead of transposing the input so that each output is a contiguous
/// row (15x slower on a transformer's `[32, 32, 256]` bias gradient).
/// `None` when the case does not apply (the general path handles it).
fn sum_leading_f32(x: &Tensor, dims: Option<&[i64]>, keepdim: bool) -> Result<Option<Tensor>> {
    let nd = x.dim();
    let Some(d) = dims.filter(|d| !d.is_empty()) else {
        return Ok(None);
    };
    if x.dtype() != DType::F32 || !x.is_contiguous() || nd == 0 {
        return Ok(None);
    }
    let mut red = wrap_dims("sum", d, nd)?.to_vec();
    red.sort_unstable();
    red.dedup();
    let k = red.len();
    if k >= nd || red.iter().enumerate().any(|(i, &r)| r != i) {
        return Ok(None);
    }
    let cols: usize = x.shape()[k..].iter().product();
    let rows: usize = x.shape()[..k].iter().product();
    let mut shape: Vec<usize> = if keepdim { vec![1; k] } else { vec![] };
    shape.extend_from_slice(&x.shape()[k..]);
    let out = Tensor::empty(&shape, DType::F32)?;
    crate::tensor::access::contiguous_slices_mut::<f32>("sum", &[&out], &[x], |w, r| {
        ferrotorch_kernels::reduce::sum_rows(r[0], rows, cols, w[0])
    })?;
    Ok(Some(out))
}

/// Sum of a contiguous f32 slice, split across threads when long.
fn sum_f32_slice(x: &[f32]) -> f64 {
    let p = x.as_ptr() as usize;
    parallel::parallel_map(x.len(), 1 << 18, |r| unsafe {
        kred::sum_f32((p as *const f32).add(r.start), r.len())
    })
    .into_iter()
    .sum()
}

/// Sum of a contiguous f64 slice, split across threads when long.
fn sum_f64_slice(x: &[f64]) -> f64 {
    let p = x.as_ptr() as usize;
    parallel::parallel_map(x.len(), 1 << 17, |r| unsafe {
        kred::sum_f64((p as *const f64).add(r.start), r.len())
    })
    .into_iter()
    .sum()
}

fn first_nan_or<T: Element>(row: &[T], better: impl Fn(T, T) -> bool) -> (T, i64) {
    let mut best = row[0];
    let mut at = 0usize;
    for (j, &v) in row.iter().enumerate() {
        if v.is_nan() {
            return (v, j as i64);
        }
        if better(v, best) {
            best = v;
            at = j;
        }
    }
    (best, at as i64)
}

crate::ops! {
    register = register_ops;
    /// The input of a sum-like op: cast to `dtype` when given, else
    /// integers and bool widen to int64 (as PyTorch accumulates them).
    pub(crate) fn accumulating(&self, dtype: Option<DType>) -> Result<Tensor> {
        match dtype {
            Some(d) => self.to_dtype(d),
            None if self.dtype().is_integral(true) => self.to_dtype(DType::I64),
            None => Ok(self.clone()),
        }
    }

    /// Sum of all elements (`t.sum()`); integers and bool sum to int64.
    pub fn sum(&self) -> Result<Tensor> {
        crate::enter_op!("sum", self, None::<DType>);
        self.sum_dim(None, false, None)
    }

    /// Sum over `dims` (`None` = all) with `keepdim`; `dtype` casts first.
    #[op = "sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor"]
    pub fn sum_dim(
        &self,
        dims: Option<&[i64]>,
        keepdim: bool,
        dtype: Option<DType>,
    ) -> Result<Tensor> {
        if self.dtype().is_complex() {
            return crate::native::complex::reduce_real_view(self, dims, |r, d| {
                r.sum_dim(Some(d), keepdim, dtype.map(DType::to_real))
            });
        }
        let y = crate::autograd::raw(&[self], || self.sum_dim_impl(dims, keepdim, dtype))?;
        crate::autograd::derivatives::reduce::sum_or_mean(false, self, dims, keepdim, y)
    }

    fn sum_dim_impl(
        &self,
        dims: Option<&[i64]>,
        keepdim: bool,
        dtype: Option<DType>,
    ) -> Result<Tensor> {
        let x = self.accumulating(dtype)?;
        let out_dt = x.dtype();
        if let Some(r) = sum_leading_f32(&x, dims, keepdim)? {
            return Ok(r);
        }
        let rw = rows("sum", &widen(&x)?, dims, keepdim)?;
        let r = match rw.data.dtype() {
            DType::F32 => map_rows::<f32, f32>(&rw, DType::F32, |row| sum_f32_slice(row) as f32)?,
            DType::F64 => map_rows::<f64, f64>(&rw, DType::F64, sum_f64_slice)?,
            DType::I64 => map_rows::<i64, i64>(&rw, DType::I64, |row| {
                row.iter().fold(0i64, |a, &b| a.wrapping_add(b))
            })?,
            d => crate::dispatch_dtype!(d, T => map_rows::<T, T>(&rw, d, |row| {
                T::from_i64(row.iter().fold(0i64, |a, &b| a.wrapping_add(b.to_i64())))
            })?),
        };
        r.to_dtype(out_dt)
    }

    /// Mean over `dims` (`None` = all); floating dtypes only, as PyTorch.
    #[op = "mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor"]
    pub fn mean_dim(
        &self,
        dims: Option<&[i64]>,
        keepdim: bool,
        dtype: Option<DType>,
    ) -> Result<Tensor> {
        if self.dtype().is_complex() {
            return crate::native::complex::reduce_real_view(self, dims, |r, d| {
                r.mean_dim(Some(d), keepdim, dtype.map(DType::to_real))
            });
        }
        let y = crate::autograd::raw(&[self], || self.mean_dim_impl(dims, keepdim, dtype))?;
        crate::autograd::derivatives::reduce::sum_or_mean(true, self, dims, keepdim, y)
    }

    fn mean_dim_impl(
        &self,
        dims: Option<&[i64]>,
        keepdim: bool,
        dtype: Option<DType>,
    ) -> Result<Tensor> {
        let dt = dtype.unwrap_or(self.dtype());
        crate::ensure!(
            dt.is_floating_point(),
            NotImplemented,
            "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: {}",
            dt.name_title()
        );
        let x = self.to_dtype(dt)?;
        let rw = rows("mean", &widen(&x)?, dims, keepdim)?;
        let n = rw.r as f64;
        let r = match rw.data.dtype() {
            DType::F32 => {
                map_rows::<f32, f32>(&rw, DType::F32, |row| (sum_f32_slice(row) / n) as f32)?
            }
            _ => map_rows::<f64, f64>(&rw, DType::F64, |row| sum_f64_slice(row) / n)?,
        };
        r.to_dtype(dt)
    }

    /// Mean of all elements.
    pub fn mean(&self) -> Result<Tensor> {
        crate::enter_op!("mean", self, None::<DType>);
        self.mean_dim(None, false, None)
    }

    /// Product over `dims` (`None` = all); integers and bool give int64.
    pub fn prod_dim(
        &self,
        dims: Option<&[i64]>,
        keepdim: bool,
        dtype: Option<DType>,
    ) -> Result<Tensor> {
        // torch's schemas: all elements, or one dim
        match dims {
            None if !keepdim => crate::enter_op!("prod", self, dtype),
            Some(&[d]) => crate::enter_op!("prod.dim_int", self, d, keepdim, dtype),
            _ => {}
        }
        let x = self.accumulating(dtype)?;
        let y = crate::autograd::raw(&[&x], || x.prod_impl(dims, keepdim))?;
        crate::autograd::derivatives::reduce::prod(&x, dims, keepdim, y)
    }

    fn prod_impl(&self, dims: Option<&[i64]>, keepdim: bool) -> Result<Tensor> {
        let x = self;
        let out_dt = x.dtype();
        let rw = rows("prod", &widen(x)?, dims, keepdim)?;
        let r = match rw.data.dtype() {
            DType::I64 => map_rows::<i64, i64>(&rw, DType::I64, |row| {
                row.iter().fold(1i64, |a, &b| a.wrapping_mul(b))
            })?,
            DType::F32 => map_rows::<f32, f32>(&rw, DType::F32, |row| {
                row.iter().fold(1f64, |a, &b| a * b as f64) as f32
            })?,
            _ => map_rows::<f64, f64>(&rw, DType::F64, |row| row.iter().product())?,
        };
        r.to_dtype(out_dt)
    }

    /// Product of all elements.
    pub fn prod(&self) -> Result<Tensor> {
        self.prod_dim(None, false, None)
    }

    fn minmax_reduce(
        &self,
        op: &str,
        dims: Option<&[i64]>,
        keepdim: bool,
        want_max: bool,
    ) -> Result<Tensor> {
        crate::ensure!(
            self.numel() > 0 || dims.is_some_and(|d| !d.is_empty()),
            Runtime,
            "{op}(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument."
        );
        let x = widen(self)?;
        let rw = rows(op, &x, dims, keepdim)?;
        crate::ensure!(
            rw.r > 0,
            Index,
            "{op}(): Expected reduction dim {:?} to have non-zero size.",
            dims.unwrap_or(&[])
        );
        let r = crate::dispatch_dtype!(x.dtype(), T => map_rows::<T, T>(&rw, x.dtype(), |row| {
            if want_max { first_nan_or(row, |a, b| a > b).0 } else { first_nan_or(row, |a, b| a < b).0 }
        })?);
        r.to_dtype(self.dtype())
    }

    /// Maximum over `dims` (`torch.amax`); NaN propagates.
    #[op = "amax(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor"]
    pub fn amax(&self, dims: &[i64], keepdim: bool) -> Result<Tensor> {
        let y = crate::autograd::raw(&[self], || {
            self.minmax_reduce("amax", Some(dims), keepdim, true)
        })?;
        let d = crate::autograd::derivatives::reduce::reduced_dims(self, dims)?;
        crate::autograd::derivatives::reduce::extreme("AmaxBackward0", self, &d, keepdim, y)
    }

    /// Minimum over `dims` (`torch.amin`); NaN propagates.
    #[op = "amin(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor"]
    pub fn amin(&self, dims: &[i64], keepdim: bool) -> Result<Tensor> {
        let y = crate::autograd::raw(&[self], || {
            self.minmax_reduce("amin", Some(dims), keepdim, false)
        })?;
        let d = crate::autograd::derivatives::reduce::reduced_dims(self, dims)?;
        crate::autograd::derivatives::reduce::extreme("AminBackward0", self, &d, keepdim, y)
    }

    /// Maximum of all elements (`t.max()`).
    #[op = "max(Tensor self) -> Tensor"]
    pub fn max(&self) -> Result<Tensor> {
        let y = crate::autograd::raw(&[self], || self.minmax_reduce("max", None, false, true))?;
        let d: Vec<usize> = (0..self.dim()).collect();
        crate::autograd::derivatives::reduce::extreme("MaxBackward1", self, &d, false, y)
    }

    /// Minimum of all elements (`t.min()`).
    #[op = "min(Tensor self) -> Tensor"]
    pub fn min(&self) -> Result<Tensor> {
        let y = crate::autograd::raw(&[self], || self.minmax_reduce("min", None, false, false))?;
        let d: Vec<usize> = (0..self.dim()).collect();
        crate::autograd::derivatives::reduce::extreme("MinBackward1", self, &d, false, y)
    }

    fn arg_reduce(
        &self,
        op: &str,
        dim: Option<i64>,
        keepdim: bool,
        want_max: bool,
    ) -> Result<(Tensor, Tensor)> {
        crate::ensure!(
            self.dtype() != DType::Bool || op.starts_with("max") || op.starts_with("min"),
            NotImplemented,
            "{op}(): does not support bool input"
        );
        let x = widen(self)?;
        let (x, dims): (Tensor, Option<Vec<i64>>) = match dim {
            Some(d) => (x, Some(vec![d])),
            None => (x.reshape(&[-1])?, None),
        };
        // with a dim, only that dim must be non-empty: argmax over dim 1
        // of a (0, 4) tensor is an empty (0,) result, as torch's
        crate::ensure!(
            dim.is_some() || x.numel() > 0,
            Index,
            "{op}(): Expected reduction dim to have non-zero size."
        );
        let rw = rows(op, &x, dims.as_deref(), keepdim && dim.is_some())?;
        crate::ensure!(
            rw.r > 0,
            Index,
            "{op}(): Expected reduction dim {} to have non-zero size.",
            dim.unwrap_or(0)
        );
        let (v, i) = crate::dispatch_dtype!(x.dtype(), T => map_rows2::<T, T, i64>(&rw, x.dtype(), |row| {
            if want_max { first_nan_or(row, |a, b| a > b) } else { first_nan_or(row, |a, b| a < b) }
        })?);
        let i = if keepdim && dim.is_none() {
            i.reshape(&vec![1i64; self.dim()])?
        } else {
            i
        };
        Ok((v.to_dtype(self.dtype())?, i))
    }

    /// `torch.max(t, dim, keepdim)`: (values, indices of the first maximum).
    #[op = "max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)"]
    pub fn max_dim(&self, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
        let (v, i) =
            crate::autograd::raw(&[self], || self.arg_reduce("max", Some(dim), keepdim, true))?;
        let d = if self.dim() == 0 {
            0
        } else {
            crate::tensor::layout::wrap_dim(dim, self.dim())?
        };
        let v = crate::autograd::derivatives::shape::select_by_indices(
            "MaxBackward0",
            self,
            d,
            keepdim,
            v,
            &i,
        )?;
        Ok((v, i))
    }

    /// `torch.min(t, dim, keepdim)`: (values, indices of the first minimum).
    #[op = "min.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)"]
    pub fn min_dim(&self, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
        let (v, i) = crate::autograd::raw(&[self], || {
            self.arg_reduce("min", Some(dim), keepdim, false)
        })?;
        let d = if self.dim() == 0 {
            0
        } else {
            crate::tensor::layout::wrap_dim(dim, self.dim())?
        };
        let v = crate::autograd::derivatives::shape::select_by_indices(
            "MinBackward0",
            self,
            d,
            keepdim,
            v,
            &i,
        )?;
        Ok((v, i))
    }

    /// Index of the maximum (`dim = None`: of the flattened tensor).
    #[op = "argmax(Tensor self, int? dim=None, bool keepdim=False) -> Tensor"]
    pub fn argmax(&self, dim: Option<i64>, keepdim: bool) -> Result<Tensor> {
        Ok(self.arg_reduce("argmax", dim, keepdim, true)?.1)
    }

    /// Index of the minimum (`dim = None`: of the flattened tensor).
    #[op = "argmin(Tensor self, int? dim=None, bool keepdim=False) -> Tensor"]
    pub fn argmin(&self, dim: Option<i64>, keepdim: bool) -> Result<Tensor> {
        Ok(self.arg_reduce("argmin", dim, keepdim, false)?.1)
    }

    /// Whether every element is nonzero, over `dims` (`None` = all).
    #[op = "all.dims(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor"]
    pub fn all_dim(&self, dims: Option<&[i64]>, keepdim: bool) -> Result<Tensor> {
        let b = self.ne(0)?;
        let rw = rows("all", &b, dims, keepdim)?;
        map_rows::<bool, bool>(&rw, DType::Bool, |row| row.iter().all(|&v| v))
    }

    /// Whether any element is nonzero, over `dims` (`None` = all).
    #[op = "any.dims(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor"]
    pub fn any_dim(&self, dims: Option<&[i64]>, keepdim: bool) -> Result<Tensor> {
        let b = self.ne(0)?;
        let rw = rows("any", &b, dims, keepdim)?;
        map_rows::<bool, bool>(&rw, DType::Bool, |row| row.iter().any(|&v| v))
    }

    /// `t.all()`: 0-dim bool.
    #[op = "all(Tensor self) -> Tensor"]
    pub fn all(&self) -> Result<Tensor> {
        self.all_dim(None, false)
    }

    /// `t.any()`: 0-dim bool.
    #[op = "any(Tensor self) -> Tensor"]
    pub fn any(&self) -> Result<Tensor> {
        self.any_dim(None, false)
    }

    /// Number of nonzero elements over `dims` (`None` = all), as int64.
    pub fn count_nonzero(&self, dims: Option<&[i64]>) -> Result<Tensor> {
        let b = self.ne(0)?;
        let rw = rows("count_nonzero", &b, dims, false)?;
        map_rows::<bool, i64>(&rw, DType::I64, |row| {
            row.iter().filter(|&&v| v).count() as i64
        })
    }
}

pub(crate) fn register(r: &mut Registry) {
    register_ops(r);
    // overloads whose arguments are not their methods' (Note [Typed kernels])
    type Dt = Option<DType>;
    r.def_typed(
        "sum(Tensor self, *, ScalarType? dtype=None) -> Tensor",
        |x: Tensor, dtype: Dt| x.sum_dim(None, false, dtype),
    );
    r.def_typed(
        "mean(Tensor self, *, ScalarType? dtype=None) -> Tensor",
        |x: Tensor, dtype: Dt| x.mean_dim(None, false, dtype),
    );
    r.def_typed(
        "prod(Tensor self, *, ScalarType? dtype=None) -> Tensor",
        |x: Tensor, dtype: Dt| x.prod_dim(None, false, dtype),
    );
    r.def_typed(
        "prod.dim_int(Tensor self, int dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
        |x: Tensor, dim: i64, keep: bool, dtype: Dt| x.prod_dim(Some(&[dim]), keep, dtype),
    );
    // `x.max(y)`: the elementwise maximum, as torch's overload
    r.def_typed(
        "max.other(Tensor self, Tensor other) -> Tensor",
        |x: Tensor, o: Tensor| x.maximum(&o),
    );
    r.def_typed(
        "min.other(Tensor self, Tensor other) -> Tensor",
        |x: Tensor, o: Tensor| x.minimum(&o),
    );
    r.def_typed(
        "count_nonzero.dim_IntList(Tensor self, int[] dim) -> Tensor",
        |x: Tensor, dim: Vec<i64>| x.count_nonzero(Some(&dim)),
    );
    r.def_typed(
        "count_nonzero(Tensor self, int? dim=None) -> Tensor",
        |x: Tensor, dim: Option<i64>| x.count_nonzero(dim.map(|d| vec![d]).as_deref()),
    );
}

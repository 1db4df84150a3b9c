//! Small ops torch has under their own names: `constant_pad_nd`, `fill`,
//! `scalar_tensor`, `empty_strided`, `new_empty_strided`, `empty_permuted`,
//! `randint_like`, `unsafe_chunk`, `unsafe_split`, `where(condition)`.

use crate::dispatch::Registry;
use crate::dtype::DType;
use crate::error::Result;
use crate::scalar::Scalar;
use crate::tensor::create_ops::{in_format, opts, DeviceArg, Strided, OPTS};
use crate::tensor::memory_format::MemoryFormat;
use crate::tensor::Tensor;

/// A zero-filled tensor with the given sizes and strides (fresh memory is
/// zeroed: "uninitialised" never exposes stale data), as `as_strided` over
/// a storage just large enough.
fn empty_strided(size: &[usize], stride: &[usize], dtype: DType) -> Result<Tensor> {
    crate::ensure!(
        size.len() == stride.len(),
        Runtime,
        "empty_strided: mismatch in length of strides and shape ({} vs {})",
        stride.len(),
        size.len()
    );
    let mut extent: usize = 1;
    for (&n, &s) in size.iter().zip(stride) {
        if n == 0 {
            extent = 0;
            break;
        }
        extent = (n - 1)
            .checked_mul(s)
            .and_then(|v| extent.checked_add(v))
            .ok_or_else(|| {
                crate::Error::new(
                    crate::ErrorKind::Runtime,
                    "empty_strided: size is too large",
                )
            })?;
    }
    let base = Tensor::zeros(&[extent], dtype)?;
    base.as_strided(size, stride, Some(0))
}

/// `empty_permuted`: a tensor of `size` whose memory holds the dims in
/// the order `physical_layout` gives.
fn empty_permuted(size: &[usize], layout: &[i64], dtype: DType) -> Result<Tensor> {
    crate::ensure!(
        layout.len() == size.len(),
        Runtime,
        "empty_permuted: Number of dimensions in size does not match the length of the physical_layout; i.e. len(size) = {} is not equal to len(physical_layout) = {}",
        size.len(),
        layout.len()
    );
    let physical: Vec<usize> = layout
        .iter()
        .map(|&d| crate::tensor::layout::wrap_dim(d, size.len()).map(|d| size[d]))
        .collect::<Result<_>>()?;
    let t = Tensor::zeros(&physical, dtype)?;
    let mut inverse = vec![0i64; layout.len()];
    for (i, &d) in layout.iter().enumerate() {
        inverse[crate::tensor::layout::wrap_dim(d, size.len())?] = i as i64;
    }
    t.permute(&inverse)
}

/// `self`'s shape filled with 0-d `value`, recorded as a `where`.
fn fill_like(x: &Tensor, value: &Tensor) -> Result<Tensor> {
    let all = Tensor::full(x.shape(), true, DType::Bool)?;
    crate::native::where_(&all, value, x)
}

pub(crate) fn register(r: &mut Registry) {
    type T = Tensor;
    type Dt = Option<DType>;
    type Pin = Option<bool>;
    r.def_typed(
        "constant_pad_nd(Tensor self, SymInt[] pad, Scalar value=0) -> Tensor",
        |x: T, pad: Vec<i64>, v: Scalar| x.pad(&pad, "constant", v.to_f64()),
    );
    // out of place and differentiable, as torch: no gradient reaches `self`
    // (where, not arithmetic, so NaNs in `self` do not leak into it)
    r.def_typed(
        "fill.Scalar(Tensor self, Scalar value) -> Tensor",
        |x: T, v: Scalar| fill_like(&x, &Tensor::full_cast(&[], v, x.dtype())?),
    );
    r.def_typed(
        "fill.Tensor(Tensor self, Tensor value) -> Tensor",
        |x: T, v: T| {
            crate::ensure!(
                v.dim() == 0,
                Runtime,
                "fill only supports 0-dimension value tensor but got tensor with {} dimensions.",
                v.dim()
            );
            fill_like(&x, &v.to_dtype(x.dtype())?)
        },
    );
    r.def_typed(
        &format!("scalar_tensor(Scalar s, *, {OPTS}) -> Tensor"),
        |s: Scalar, dt: Dt, _: Strided, dev: DeviceArg, _: Pin| {
            let dtype = opts(dt, dev)
                .dtype
                .unwrap_or_else(crate::dtype::get_default_dtype);
            Tensor::full_cast(&[], s, dtype)
        },
    );
    r.def_typed(
        &format!("empty_strided(SymInt[] size, SymInt[] stride, *, {OPTS}) -> Tensor"),
        |size: Vec<usize>, stride: Vec<usize>, dt: Dt, _: Strided, dev: DeviceArg, _: Pin| {
            let dtype = opts(dt, dev)
                .dtype
                .unwrap_or_else(crate::dtype::get_default_dtype);
            empty_strided(&size, &stride, dtype)
        },
    );
    r.def_typed(
        &format!(
            "new_empty_strided(Tensor self, SymInt[] size, SymInt[] stride, *, {OPTS}) -> Tensor"
        ),
        |x: T, size: Vec<usize>, stride: Vec<usize>, dt: Dt, _: Strided, dev: DeviceArg, _: Pin| {
            let dtype = opts(dt, dev).dtype.unwrap_or(x.dtype());
            empty_strided(&size, &stride, dtype)
        },
    );
    r.def_typed(
        &format!("empty_permuted(SymInt[] size, int[] physical_layout, *, {OPTS}) -> Tensor"),
        |size: Vec<usize>, layout: Vec<i64>, dt: Dt, _: Strided, dev: DeviceArg, _: Pin| {
            let dtype = opts(dt, dev)
                .dtype
                .unwrap_or_else(crate::dtype::get_default_dtype);
            empty_permuted(&size, &layout, dtype)
        },
    );
    r.def_typed(
        &format!("randint_like(Tensor self, SymInt high, *, {OPTS}, MemoryFormat? memory_format=None) -> Tensor"),
        |x: T, high: i64, dt: Dt, _: Strided, dev: DeviceArg, _: Pin, f: Option<MemoryFormat>| {
            randint_like(&x, 0, high, opts(dt.or(Some(x.dtype())), dev), f)
        },
    );
    r.def_typed(
        &format!("randint_like.low_dtype(Tensor self, SymInt low, SymInt high, *, {OPTS}, MemoryFormat? memory_format=None) -> Tensor"),
        |x: T, low: i64, high: i64, dt: Dt, _: Strided, dev: DeviceArg, _: Pin, f: Option<MemoryFormat>| {
            randint_like(&x, low, high, opts(dt.or(Some(x.dtype())), dev), f)
        },
    );
    r.def_typed(
        "unsafe_chunk(Tensor self, int chunks, int dim=0) -> Tensor[]",
        |x: T, c: usize, d: i64| x.chunk(c, d),
    );
    r.def_typed(
        "unsafe_split.Tensor(Tensor self, SymInt split_size, int dim=0) -> Tensor[]",
        |x: T, s: usize, d: i64| x.split(s, d),
    );
    r.def_typed("where(Tensor condition) -> Tensor[]", |c: T| {
        c.nonzero_numpy()
    });
}

impl Tensor {
    /// `torch.nonzero(self, as_tuple=True)` (`aten::nonzero_numpy`, also
    /// `torch.where(condition)` with one argument): one int64 tensor of
    /// indices per dimension, a 0-d tensor counting as 1-d.
    pub fn nonzero_numpy(&self) -> Result<Vec<Tensor>> {
        let idx = self.nonzero()?;
        if self.dim() == 0 {
            return Ok(vec![Tensor::zeros(&[idx.shape()[0]], DType::I64)?]);
        }
        idx.unbind(1)
    }
}

/// `torch.randint_like`: a tensor laid out as `x` (or in `format`), its
/// memory filled in order by `randint`'s stream, as torch fills it (so a
/// transposed `x` gets the same values as `randint` of its memory's shape).
fn randint_like(
    x: &Tensor,
    low: i64,
    high: i64,
    o: crate::tensor::TensorOptions,
    format: Option<MemoryFormat>,
) -> Result<Tensor> {
    let dtype = o.dtype.unwrap_or(x.dtype());
    // a fresh dense tensor whose storage is exactly its elements
    let t = in_format(x.full_like_dtype(0i64, dtype)?, format)?;
    let n = t.numel();
    let values = Tensor::randint(low, high, &[n], o)?;
    t.as_strided(&[n], &[1], Some(0))?.copy_(&values)?;
    Ok(t)
}

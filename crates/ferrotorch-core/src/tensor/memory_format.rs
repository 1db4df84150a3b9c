//! `torch.memory_format`: the order in which a dense tensor's dimensions
//! are laid out in memory.
//!
//! # Note [Memory formats]
//! Storage is strided, so a memory format is only a choice of strides:
//! `contiguous_format` is row-major, `channels_last` puts dimension 1 (the
//! channels of an `N, C, H, W` tensor) innermost (`N, H, W, C` order) and
//! `channels_last_3d` does the same for 5-D tensors. `preserve_format`
//! keeps the source's strides when they are dense and non-overlapping
//! (which every copying op here already does) and is row-major otherwise.
//! Every kernel accepts any strides, so a format changes speed (which
//! loops run unit-stride), never values. In the schemas a format is a
//! `MemoryFormat` argument passed by name (`"channels_last"`), which is how
//! Python's `ferrotorch.channels_last` (a `str` subclass) and the Node, C
//! and Go bindings pass it.

use crate::dispatch::typed::FromArg;
use crate::dispatch::{Args, IValue, Type};
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::layout::Layout;
use crate::tensor::Tensor;

/// A tensor memory format (`torch.contiguous_format`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemoryFormat {
    /// Row-major (`torch.contiguous_format`).
    Contiguous,
    /// The source's strides where dense (`torch.preserve_format`).
    Preserve,
    /// `N, H, W, C` order for 4-D tensors (`torch.channels_last`).
    ChannelsLast,
    /// `N, D, H, W, C` order for 5-D tensors (`torch.channels_last_3d`).
    ChannelsLast3d,
}

impl MemoryFormat {
    /// The format named as torch names it (`"channels_last"`; a leading
    /// `"torch."` is accepted).
    pub fn from_name(name: &str) -> Result<MemoryFormat> {
        Ok(match name.trim_start_matches("torch.") {
            "contiguous_format" => MemoryFormat::Contiguous,
            "preserve_format" => MemoryFormat::Preserve,
            "channels_last" => MemoryFormat::ChannelsLast,
            "channels_last_3d" => MemoryFormat::ChannelsLast3d,
            other => crate::bail!(
                Runtime,
                "unknown memory format '{other}' (expected contiguous_format, preserve_format, channels_last or channels_last_3d)"
            ),
        })
    }

    /// torch's name (`"channels_last"`).
    pub fn name(self) -> &'static str {
        match self {
            MemoryFormat::Contiguous => "contiguous_format",
            MemoryFormat::Preserve => "preserve_format",
            MemoryFormat::ChannelsLast => "channels_last",
            MemoryFormat::ChannelsLast3d => "channels_last_3d",
        }
    }

    /// The dimensions from outermost to innermost for a tensor of `rank`
    /// (`None` for `preserve_format`), with torch's rank errors.
    fn order(self, rank: usize) -> Result<Option<Vec<usize>>> {
        let channels_last = |want: usize| -> Result<Option<Vec<usize>>> {
            crate::ensure!(
                rank == want,
                Runtime,
                "required rank {want} tensor to use {} format",
                self.name()
            );
            let mut o = vec![0];
            o.extend(2..rank);
            o.push(1);
            Ok(Some(o))
        };
        match self {
            MemoryFormat::Contiguous => Ok(Some((0..rank).collect())),
            MemoryFormat::Preserve => Ok(None),
            MemoryFormat::ChannelsLast => channels_last(4),
            MemoryFormat::ChannelsLast3d => channels_last(5),
        }
    }

    /// Dense strides of `shape` in this format (`None` for preserve).
    fn strides(self, shape: &[usize]) -> Result<Option<Vec<usize>>> {
        Ok(self.order(shape.len())?.map(|order| {
            let mut st = vec![0; shape.len()];
            let mut acc = 1;
            for &d in order.iter().rev() {
                st[d] = acc;
                acc *= shape[d].max(1);
            }
            st
        }))
    }
}

impl Tensor {
    /// Whether the tensor is dense in `format` (`t.is_contiguous(memory_format=)`):
    /// strides of dimensions of size 1 are not looked at, as in torch.
    /// `preserve_format` asks for plain contiguity, as torch does.
    pub fn is_contiguous_as(&self, format: MemoryFormat) -> Result<bool> {
        if format == MemoryFormat::Preserve {
            return Ok(self.is_contiguous());
        }
        if self.numel() == 0 {
            return Ok(true);
        }
        let want = format.strides(self.shape())?.unwrap_or_default();
        Ok(self
            .shape()
            .iter()
            .zip(self.stride().iter().zip(&want))
            .all(|(&n, (&s, &w))| n == 1 || s == w))
    }

    /// An uninitialised tensor of `shape` and `dtype` in `format`
    /// (`preserve_format` takes `like`'s strides where dense).
    pub(crate) fn empty_as(
        shape: &[usize],
        dtype: DType,
        format: MemoryFormat,
        like: &Tensor,
    ) -> Result<Tensor> {
        match format.strides(shape)? {
            None => crate::native::iter::empty_like_layout(shape, dtype, Some(like)),
            Some(st) => {
                let n = crate::tensor::layout::checked_numel("empty", shape)?;
                let storage = crate::storage::Storage::new_uninit(n * dtype.size())?;
                let layout = Layout::new(shape.into(), st.as_slice().into(), 0);
                Ok(Tensor::from_parts(storage, layout, dtype))
            }
        }
    }

    /// `t.contiguous(memory_format=)`: this tensor when already dense in
    /// `format`, else a copy laid out in it (recorded like `clone`).
    pub fn contiguous_as(&self, format: MemoryFormat) -> Result<Tensor> {
        crate::enter_op!("contiguous", self, format);
        if self.is_contiguous_as(format)? {
            return Ok(self.clone());
        }
        crate::ensure!(
            format != MemoryFormat::Preserve,
            Runtime,
            "preserve memory format is unsupported by the contiguous operator"
        );
        self.copy_as(self.dtype(), format)
    }

    /// `t.clone(memory_format=)`: a copy laid out in `format`.
    pub fn clone_as(&self, format: MemoryFormat) -> Result<Tensor> {
        crate::enter_op!("clone", self, format);
        self.copy_as(self.dtype(), format)
    }

    /// `t.to(dtype, memory_format=)`: this tensor when the dtype matches
    /// and it is already in `format` (and `copy` is false), else a copy.
    pub fn to_as(&self, dtype: DType, format: MemoryFormat, copy: bool) -> Result<Tensor> {
        let in_format = format == MemoryFormat::Preserve || self.is_contiguous_as(format)?;
        if dtype == self.dtype() && in_format && !copy {
            return Ok(self.clone());
        }
        if format == MemoryFormat::Preserve {
            return if dtype == self.dtype() {
                self.deep_clone()
            } else {
                self.to_dtype(dtype)
            };
        }
        self.copy_as(dtype, format)
    }

    fn copy_as(&self, dtype: DType, format: MemoryFormat) -> Result<Tensor> {
        let out = Tensor::empty_as(self.shape(), dtype, format, self)?;
        crate::tensor::data::copy_cast(self, &out);
        if dtype != self.dtype() {
            if !dtype.is_differentiable() {
                return Ok(out);
            }
            return crate::autograd::derivatives::shape::to_copy(self, out);
        }
        crate::autograd::derivatives::shape::clone(self, out)
    }
}

impl From<MemoryFormat> for IValue {
    fn from(f: MemoryFormat) -> IValue {
        IValue::Str(f.name().to_string())
    }
}

fn is_format(ty: &Type) -> bool {
    matches!(ty, Type::Opaque(n) if n == "MemoryFormat")
}

fn read(a: &Args, i: usize) -> Result<Option<MemoryFormat>> {
    match a.get(i) {
        IValue::None => Ok(None),
        IValue::Str(s) => MemoryFormat::from_name(s).map(Some),
        v => crate::bail!(
            Type,
            "memory_format must be a torch.memory_format, not {}",
            v.type_name()
        ),
    }
}

impl FromArg for MemoryFormat {
    fn accepts(ty: &Type) -> bool {
        is_format(ty)
    }

    fn from_arg(a: &Args, i: usize) -> Result<Self> {
        Ok(read(a, i)?.unwrap_or(MemoryFormat::Contiguous))
    }
}

impl FromArg for Option<MemoryFormat> {
    fn accepts(ty: &Type) -> bool {
        matches!(ty, Type::Optional(t) if is_format(t))
    }

    fn from_arg(a: &Args, i: usize) -> Result<Self> {
        read(a, i)
    }
}

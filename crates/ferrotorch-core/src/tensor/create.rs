//! Creation ops: `empty`, `zeros`, `ones`, `full`, `arange`, `linspace`,
//! `logspace`, `eye`, the `_like` forms, and tensors from Rust data.

use super::layout::{checked_numel, Layout};
use super::Tensor;
use crate::device::Device;
use crate::dispatch::{IValue, OpHandle};
use crate::dtype::{get_default_dtype, DType, Element};
use crate::error::Result;
use crate::native::iter::for_each;
use crate::scalar::Scalar;
use crate::storage::Storage;

/// A creation op's entry while a mode is on (Note [Dispatch keys]): `op`
/// with its positional `args` and the resolved `dtype` as its keyword.
#[inline]
fn creation(
    op: &OpHandle,
    args: impl FnOnce() -> Vec<IValue>,
    dtype: DType,
) -> Option<Result<Tensor>> {
    crate::dispatch::handle::intercept_tensor_kw(op, || (args(), vec![("dtype", dtype.into())]))
}

/// Options for creation ops (`dtype=`, `device=`), as `TensorOptions`.
/// `DType` converts into it, so `zeros(&[2], DType::I64)` works.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TensorOptions {
    /// Element type; `None` means the op's default (usually the default float dtype).
    pub dtype: Option<DType>,
    /// Device; `None` means CPU.
    pub device: Option<Device>,
}

impl TensorOptions {
    /// Options with just a dtype.
    pub fn dtype(d: DType) -> TensorOptions {
        TensorOptions {
            dtype: Some(d),
            device: None,
        }
    }

    pub(crate) fn resolve(self, op: &str, default: DType) -> Result<DType> {
        if let Some(dev) = self.device {
            let _ = op;
            crate::ensure!(
                dev == Device::Cpu,
                Assertion,
                "Torch not compiled with CUDA enabled"
            );
        }
        Ok(self.dtype.unwrap_or(default))
    }
}

impl From<DType> for TensorOptions {
    fn from(d: DType) -> Self {
        TensorOptions::dtype(d)
    }
}

impl From<()> for TensorOptions {
    fn from(_: ()) -> Self {
        TensorOptions::default()
    }
}

impl Tensor {
    /// Uninitialised contiguous tensor (`torch.empty`).
    pub fn empty(shape: &[usize], dtype: DType) -> Result<Tensor> {
        let layout = Layout::contiguous("empty", shape)?;
        let storage = Storage::new_uninit(layout.numel() * dtype.size())?;
        Ok(Tensor::from_parts(storage, layout, dtype))
    }

    /// Tensor of zeros (`torch.zeros`).
    pub fn zeros(shape: &[usize], opts: impl Into<TensorOptions>) -> Result<Tensor> {
        let dtype = opts.into().resolve("zeros", get_default_dtype())?;
        static OP: OpHandle = OpHandle::new("zeros");
        if let Some(r) = creation(&OP, || vec![shape.into()], dtype) {
            return r;
        }
        let layout = Layout::contiguous("zeros", shape)?;
        let storage = Storage::new_zeroed(layout.numel() * dtype.size())?;
        Ok(Tensor::from_parts(storage, layout, dtype))
    }

    /// Tensor of ones (`torch.ones`).
    pub fn ones(shape: &[usize], opts: impl Into<TensorOptions>) -> Result<Tensor> {
        let dtype = opts.into().resolve("ones", get_default_dtype())?;
        static OP: OpHandle = OpHandle::new("ones");
        if let Some(r) = creation(&OP, || vec![shape.into()], dtype) {
            return r;
        }
        Tensor::full(shape, 1, dtype)
    }

    /// Tensor filled with `value` (`torch.full`). Without a dtype, the
    /// value's own kind decides it (float → default dtype, int → int64,
    /// bool → bool), as in PyTorch.
    pub fn full(
        shape: &[usize],
        value: impl Into<Scalar>,
        opts: impl Into<TensorOptions>,
    ) -> Result<Tensor> {
        let v = value.into();
        let dtype = opts.into().resolve("full", v.natural_dtype())?;
        static OP: OpHandle = OpHandle::new("full");
        if let Some(r) = creation(&OP, || vec![shape.into(), v.into()], dtype) {
            return r;
        }
        v.check_fits(dtype)?;
        Tensor::full_cast(shape, v, dtype)
    }

    /// [`Tensor::full`] converting `v` with C-cast semantics instead of a
    /// range check: for scalars that take part in arithmetic as wrapped
    /// numbers (`int8 + 300` wraps in torch; only creation and fills check).
    pub(crate) fn full_cast(shape: &[usize], v: Scalar, dtype: DType) -> Result<Tensor> {
        let t = Tensor::empty(shape, dtype)?;
        t.fill_raw(v);
        Ok(t)
    }

    /// Write `v` into every element, without version bump (fresh tensors).
    pub(crate) fn fill_raw(&self, v: Scalar) {
        crate::dispatch_dtype!(self.dtype(), T => {
            let x: T = v.to_elem();
            let _g = crate::storage::lock_storages(&[], &[self.storage()]);
            for_each(self.shape(), [self.data_ptr()], [self.stride()], [self.element_size()],
                |p, s, n| unsafe {
                    let d = p[0] as *mut T;
                    for i in 0..n as isize { *d.offset(i * s[0]) = x; }
                });
        })
    }

    /// Tensor from a flat `Vec` and a shape, keeping `T`'s dtype exactly.
    pub fn from_vec<T: Element>(data: Vec<T>, shape: &[usize]) -> Result<Tensor> {
        Tensor::from_slice_shape(&data, shape)
    }

    /// Tensor from a slice and a shape, keeping `T`'s dtype exactly.
    pub fn from_slice_shape<T: Element>(data: &[T], shape: &[usize]) -> Result<Tensor> {
        let n = checked_numel("from_vec", shape)?;
        crate::ensure!(
            n == data.len(),
            Runtime,
            "from_vec: shape {shape:?} needs {n} elements but {} were given",
            data.len()
        );
        let t = Tensor::empty(shape, T::DTYPE)?;
        // SAFETY: fresh contiguous storage of exactly n elements of T.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), t.data_ptr() as *mut T, n) };
        Ok(t)
    }

    /// 1-D tensor from a slice, keeping `T`'s dtype.
    pub fn from_slice<T: Element>(data: &[T]) -> Tensor {
        Tensor::from_slice_shape(data, &[data.len()]).expect("a slice always fits its own length")
    }

    /// 0-dim tensor holding `v`, with its natural dtype (`torch.tensor(3.5)`).
    pub fn scalar_tensor(v: impl Into<Scalar>) -> Tensor {
        let v = v.into();
        // no range check: a wrapped 1e300 is a float32 inf here, as in torch
        let t = Tensor::empty(&[], v.natural_dtype()).expect("a 0-dim tensor always allocates");
        t.fill_raw(v);
        t
    }

    /// `torch.empty_like` (same shape and dtype, laid out like `self`: see
    /// [`Tensor::full_like_dtype`]). Fresh memory is zeroed.
    pub fn empty_like(&self) -> Result<Tensor> {
        self.full_like_dtype(0, self.dtype())
    }

    /// `torch.zeros_like`, laid out like `self`.
    pub fn zeros_like(&self) -> Result<Tensor> {
        static OP: OpHandle = OpHandle::new("zeros_like");
        if let Some(r) = creation(&OP, || vec![self.into()], self.dtype()) {
            return r;
        }
        self.full_like_dtype(0, self.dtype())
    }

    /// `torch.ones_like`, laid out like `self`.
    pub fn ones_like(&self) -> Result<Tensor> {
        static OP: OpHandle = OpHandle::new("ones_like");
        if let Some(r) = creation(&OP, || vec![self.into()], self.dtype()) {
            return r;
        }
        self.full_like_dtype(1, self.dtype())
    }

    /// `torch.full_like`, laid out like `self`.
    pub fn full_like(&self, value: impl Into<Scalar>) -> Result<Tensor> {
        self.full_like_dtype(value, self.dtype())
    }

    /// A tensor of `self`'s shape filled with `value` in `dtype`, with
    /// PyTorch's `memory_format=torch.preserve_format` (the `_like`
    /// functions' default): `self`'s strides when `self` is non-overlapping
    /// and dense (a transposed weight gives a transposed result), else
    /// contiguous. Optimizer state and `.grad` rely on this (Note [Gradient
    /// layout contract]).
    pub fn full_like_dtype(&self, value: impl Into<Scalar>, dtype: DType) -> Result<Tensor> {
        let value: Scalar = value.into();
        static OP: OpHandle = OpHandle::new("full_like");
        if let Some(r) = creation(&OP, || vec![self.into(), value.into()], dtype) {
            return r;
        }
        if self.is_contiguous() || !self.layout().is_dense() {
            return Tensor::full(self.shape(), value, dtype);
        }
        let flat = Tensor::full(&[self.numel()], value, dtype)?;
        let layout = Layout::new(self.shape().into(), self.stride().into(), 0);
        Ok(Tensor::from_parts(flat.storage().clone(), layout, dtype))
    }

    /// `torch.arange(start, end, step)`. Integer arguments give int64, any
    /// float argument gives the default dtype, as PyTorch.
    pub fn arange(
        start: impl Into<Scalar>,
        end: impl Into<Scalar>,
        step: impl Into<Scalar>,
        opts: impl Into<TensorOptions>,
    ) -> Result<Tensor> {
        let (s, e, st) = (start.into(), end.into(), step.into());
        let any_float = s.is_floating_point() || e.is_floating_point() || st.is_floating_point();
        let natural = if any_float {
            get_default_dtype()
        } else {
            DType::I64
        };
        let dtype = opts.into().resolve("arange", natural)?;
        static OP: OpHandle = OpHandle::new("arange.start");
        if let Some(r) = creation(&OP, || vec![s.into(), e.into(), st.into()], dtype) {
            return r;
        }
        let (sf, ef, stf) = (s.to_f64(), e.to_f64(), st.to_f64());
        crate::ensure!(
            stf != 0.0 && stf.is_finite(),
            Runtime,
            "arange: step must be nonzero and finite (got {st})"
        );
        crate::ensure!(
            sf.is_finite() && ef.is_finite(),
            Runtime,
            "arange: unsupported range: {s} -> {e}"
        );
        crate::ensure!(
            (stf > 0.0 && ef >= sf) || (stf < 0.0 && ef <= sf),
            Runtime,
            "arange: upper bound and larger bound inconsistent with step sign"
        );
        let n = if any_float {
            ((ef - sf) / stf).ceil() as usize
        } else {
            let (si, ei, sti) = (s.to_i64() as i128, e.to_i64() as i128, st.to_i64() as i128);
            ((ei - si + sti - sti.signum()) / sti) as usize
        };
        let t = Tensor::empty(&[n], dtype)?;
        crate::dispatch_dtype!(dtype, T => {
            let p = t.data_ptr() as *mut T;
            for i in 0..n {
                let v = if any_float { T::from_f64(sf + i as f64 * stf) } else {
                    T::from_i64(s.to_i64().wrapping_add((i as i64).wrapping_mul(st.to_i64())))
                };
                // SAFETY: i < n elements of fresh storage.
                unsafe { *p.add(i) = v };
            }
        });
        Ok(t)
    }

    /// `torch.linspace(start, end, steps)`: computed from both ends, as
    /// PyTorch does, so the last element is exactly `end`.
    pub fn linspace(
        start: f64,
        end: f64,
        steps: usize,
        opts: impl Into<TensorOptions>,
    ) -> Result<Tensor> {
        let dtype = opts.into().resolve("linspace", get_default_dtype())?;
        // an integer dtype takes its endpoints as that dtype first, as torch
        let (start, end) = if dtype.is_floating_point() {
            (start, end)
        } else {
            (start.trunc(), end.trunc())
        };
        let t = Tensor::empty(&[steps], dtype)?;
        let step = if steps > 1 {
            (end - start) / (steps - 1) as f64
        } else {
            0.0
        };
        let half = steps / 2;
        crate::dispatch_dtype!(dtype, T => {
            let p = t.data_ptr() as *mut T;
            for i in 0..steps {
                // the first half counts up from start, the rest down from end
                // (one step: start, as torch)
                let v = if i < half || steps == 1 { start + step * i as f64 } else { end - step * (steps - 1 - i) as f64 };
                // SAFETY: i < steps elements of fresh storage.
                unsafe { *p.add(i) = T::from_f64(v) };
            }
        });
        Ok(t)
    }

    /// `torch.logspace(start, end, steps, base)`.
    pub fn logspace(
        start: f64,
        end: f64,
        steps: usize,
        base: f64,
        opts: impl Into<TensorOptions>,
    ) -> Result<Tensor> {
        let dtype = opts.into().resolve("logspace", get_default_dtype())?;
        let (start, end) = if dtype.is_floating_point() {
            (start, end)
        } else {
            (start.trunc(), end.trunc())
        };
        let e = Tensor::linspace(start, end, steps, DType::F64)?;
        let v: Vec<f64> = e
            .to_vec::<f64>()?
            .into_iter()
            .map(|x| base.powf(x))
            .collect();
        Tensor::from_vec(v, &[steps])?.to_dtype(dtype)
    }

    /// `torch.eye(n, m)`.
    pub fn eye(n: usize, m: Option<usize>, opts: impl Into<TensorOptions>) -> Result<Tensor> {
        let dtype = opts.into().resolve("eye", get_default_dtype())?;
        let m = m.unwrap_or(n);
        let t = Tensor::zeros(&[n, m], dtype)?;
        crate::dispatch_dtype!(dtype, T => {
            let p = t.data_ptr() as *mut T;
            for i in 0..n.min(m) {
                // SAFETY: (i, i) is inside the fresh n×m buffer.
                unsafe { *p.add(i * m + i) = T::one() };
            }
        });
        Ok(t)
    }
}

/// Rust data that [`tensor`](crate::tensor()) accepts: scalars, slices,
/// `Vec`s and nested arrays.
///
/// Like `torch.tensor`, float data becomes the default dtype (f32 unless
/// changed), integer data becomes int64 and bools become bool, whatever the
/// Rust type; use [`Tensor::from_vec`] to keep a Rust type exactly.
pub trait TensorData {
    /// Append the shape of this level.
    fn shape_into(&self, shape: &mut Vec<usize>);
    /// Append the values, flattened, as f64 (floats), i64 (ints) or bool.
    fn flatten_into(&self, out: &mut FlatData);
}

/// Flattened data of one kind, filled by [`TensorData`].
#[derive(Default, Debug)]
pub struct FlatData {
    floats: Vec<f64>,
    ints: Vec<i64>,
    bools: Vec<bool>,
}

macro_rules! leaf_data {
    ($($t:ty => $field:ident, $conv:expr);*) => {$(
        impl TensorData for $t {
            fn shape_into(&self, _: &mut Vec<usize>) {}
            fn flatten_into(&self, out: &mut FlatData) { out.$field.push($conv(*self)); }
        }
    )*};
}
leaf_data!(f32 => floats, |x: f32| x as f64; f64 => floats, |x: f64| x;
    i8 => ints, |x: i8| x as i64; i16 => ints, |x: i16| x as i64; i32 => ints, |x: i32| x as i64;
    i64 => ints, |x: i64| x; u8 => ints, |x: u8| x as i64; u32 => ints, |x: u32| x as i64;
    usize => ints, |x: usize| x as i64; bool => bools, |x: bool| x);

impl<D: TensorData, const N: usize> TensorData for [D; N] {
    fn shape_into(&self, shape: &mut Vec<usize>) {
        shape.push(N);
        if let Some(f) = self.first() {
            f.shape_into(shape)
        }
    }
    fn flatten_into(&self, out: &mut FlatData) {
        self.iter().for_each(|x| x.flatten_into(out))
    }
}

impl<D: TensorData> TensorData for [D] {
    fn shape_into(&self, shape: &mut Vec<usize>) {
        shape.push(self.len());
        if let Some(f) = self.first() {
            f.shape_into(shape)
        }
    }
    fn flatten_into(&self, out: &mut FlatData) {
        self.iter().for_each(|x| x.flatten_into(out))
    }
}

impl<D: TensorData> TensorData for Vec<D> {
    fn shape_into(&self, shape: &mut Vec<usize>) {
        self.as_slice().shape_into(shape)
    }
    fn flatten_into(&self, out: &mut FlatData) {
        self.as_slice().flatten_into(out)
    }
}

impl<D: TensorData + ?Sized> TensorData for &D {
    fn shape_into(&self, shape: &mut Vec<usize>) {
        (**self).shape_into(shape)
    }
    fn flatten_into(&self, out: &mut FlatData) {
        (**self).flatten_into(out)
    }
}

/// `torch.tensor(data)`: a new tensor holding a copy of `data`, with
/// PyTorch's dtype inference (see [`TensorData`]).
pub fn tensor(data: impl TensorData) -> Result<Tensor> {
    let mut shape = Vec::new();
    data.shape_into(&mut shape);
    let mut flat = FlatData::default();
    data.flatten_into(&mut flat);
    let n = checked_numel("tensor", &shape)?;
    let got = flat.floats.len() + flat.ints.len() + flat.bools.len();
    crate::ensure!(
        got == n,
        Value,
        "tensor: expected sequence of length {n} for shape {shape:?}, got {got} values (ragged nested data)"
    );
    // Rust data is homogeneous: exactly one of the three lists is filled.
    if n == 0 {
        // `torch.tensor([])` is empty in the default float dtype
        Tensor::empty(&shape, get_default_dtype())
    } else if !flat.floats.is_empty() {
        Tensor::from_vec(flat.floats, &shape)?.to_dtype(get_default_dtype())
    } else if !flat.ints.is_empty() {
        Tensor::from_vec(flat.ints, &shape)
    } else {
        Tensor::from_vec(flat.bools, &shape)
    }
}

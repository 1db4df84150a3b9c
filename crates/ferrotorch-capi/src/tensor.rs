//! `FtTensor`: creation, inspection, data in and out, lifetime.

use crate::handle::{free, get, handle_kind, new_handle};
use crate::status::{entry, put, Fail, FtStatus, Res};
use ferrotorch_core::{DType, Tensor, TensorOptions};
use std::ffi::{c_char, c_void, CString};

/// A reference to a tensor (Note [C handles]): freed with
/// `ft_tensor_free`; `ft_tensor_clone` makes another reference to the
/// same tensor (same storage, same autograd identity).
pub struct FtTensor {
    _opaque: [u8; 0],
}

handle_kind!(FtTensor, Tensor, 0x7E01);

/// Element types, numbered as torch's `ScalarType` (`c10::ScalarType`).
#[repr(i32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FtDType {
    /// `torch.uint8`
    FtUint8 = 0,
    /// `torch.int8`
    FtInt8 = 1,
    /// `torch.int16`
    FtInt16 = 2,
    /// `torch.int32`
    FtInt32 = 3,
    /// `torch.int64`
    FtInt64 = 4,
    /// `torch.float16`
    FtFloat16 = 5,
    /// `torch.float32`
    FtFloat32 = 6,
    /// `torch.float64`
    FtFloat64 = 7,
    /// `torch.complex32` (`torch.chalf`)
    FtComplex32 = 8,
    /// `torch.complex64`
    FtComplex64 = 9,
    /// `torch.complex128`
    FtComplex128 = 10,
    /// `torch.bool`
    FtBool = 11,
    /// `torch.bfloat16`
    FtBfloat16 = 15,
}

/// The core dtype for a C dtype code (checked: C passes plain ints).
pub(crate) fn dtype_of(what: &str, code: i32) -> Res<DType> {
    DType::from_scalar_type(i64::from(code)).ok_or_else(|| {
        Fail::new(
            FtStatus::FtErrorValue,
            format!("{what}: {code} is not an FtDType"),
        )
    })
}

/// The C code of a dtype.
pub(crate) fn code_of(d: DType) -> i32 {
    d.scalar_type() as i32
}

/// A checked slice from a C pointer and length (null only when empty).
pub(crate) fn slice<'a, T>(what: &str, p: *const T, n: usize) -> Res<&'a [T]> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(Fail::new(
            FtStatus::FtErrorNullHandle,
            format!("{what}: null array of {n} elements"),
        ));
    }
    if n > (isize::MAX as usize) / std::mem::size_of::<T>().max(1) {
        return Err(Fail::new(
            FtStatus::FtErrorValue,
            format!("{what}: {n} elements is too many"),
        ));
    }
    // SAFETY: non-null, and the caller promises n readable elements.
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

/// Sizes from C (`int64_t` each), refused when negative.
pub(crate) fn sizes(what: &str, shape: *const i64, ndim: usize) -> Res<Vec<usize>> {
    slice(what, shape, ndim)?
        .iter()
        .map(|&s| {
            usize::try_from(s).map_err(|_| {
                Fail::new(
                    FtStatus::FtErrorValue,
                    format!("{what}: negative size {s} in the shape"),
                )
            })
        })
        .collect()
}

/// Write a new tensor handle through `out` (checked before allocating).
pub(crate) fn out_tensor(what: &str, out: *mut *mut FtTensor, t: Tensor) -> Res<()> {
    if out.is_null() {
        return Err(Fail::new(
            FtStatus::FtErrorNullHandle,
            format!("{what}: the output pointer is null"),
        ));
    }
    put(what, out, new_handle::<FtTensor>(t))
}

/// The tensor behind a handle argument.
pub(crate) fn tensor<'a>(what: &str, h: *const FtTensor) -> Res<&'a Tensor> {
    get::<FtTensor>(what, h)
}

fn opts(what: &str, dtype: i32) -> Res<TensorOptions> {
    Ok(TensorOptions::dtype(dtype_of(what, dtype)?))
}

/// A tensor holding a copy of `nbytes` bytes at `data`, row-major, of
/// `shape` (`ndim` sizes) and `dtype`; `nbytes` must be exactly the
/// shape's size in bytes.
#[no_mangle]
pub extern "C" fn ft_tensor_from_data(
    data: *const c_void,
    nbytes: usize,
    shape: *const i64,
    ndim: usize,
    dtype: i32,
    out: *mut *mut FtTensor,
) -> FtStatus {
    let what = "ft_tensor_from_data";
    entry(what, || {
        let shape = sizes(what, shape, ndim)?;
        let d = dtype_of(what, dtype)?;
        let bytes = slice(what, data as *const u8, nbytes)?;
        let t = Tensor::from_bytes(bytes, &shape, d)?;
        t.check_bool_bytes(what)?;
        out_tensor(what, out, t)
    })
}

/// A tensor sharing the caller's memory (no copy): `shape`, element
/// `strides` (null: row-major) and `dtype` from `data`. `deleter(ctx)`
/// runs (on any thread) when the last tensor over the memory is freed,
/// or before an error returns; it may be null. The memory must stay valid
/// and aligned to its elements until then.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn ft_tensor_from_blob(
    data: *mut c_void,
    shape: *const i64,
    strides: *const i64,
    ndim: usize,
    dtype: i32,
    deleter: Option<extern "C" fn(*mut c_void)>,
    ctx: *mut c_void,
    out: *mut *mut FtTensor,
) -> FtStatus {
    let what = "ft_tensor_from_blob";
    let ctx = ctx as usize;
    let release = move || {
        if let Some(d) = deleter {
            d(ctx as *mut c_void)
        }
    };
    entry(what, || {
        let parsed = (|| -> Res<_> {
            let shape = sizes(what, shape, ndim)?;
            let strides = if strides.is_null() {
                None
            } else {
                Some(sizes(what, strides, ndim)?)
            };
            Ok((shape, strides, dtype_of(what, dtype)?))
        })();
        let (shape, strides, d) = match parsed {
            Ok(p) => p,
            Err(e) => {
                release();
                return Err(e);
            }
        };
        if out.is_null() {
            release();
            return put(what, out, std::ptr::null_mut());
        }
        // SAFETY: the caller promises the memory stays valid until the
        // deleter runs.
        let t = unsafe {
            Tensor::from_external(
                what,
                data as usize,
                d,
                &shape,
                strides.as_deref(),
                false,
                release,
            )
        }?;
        out_tensor(what, out, t)
    })
}

fn creation(
    what: &str,
    shape: *const i64,
    ndim: usize,
    dtype: i32,
    out: *mut *mut FtTensor,
    make: fn(&[usize], TensorOptions) -> ferrotorch_core::Result<Tensor>,
) -> FtStatus {
    entry(what, || {
        let s = sizes(what, shape, ndim)?;
        let o = opts(what, dtype)?;
        out_tensor(what, out, make(&s, o)?)
    })
}

/// `torch.zeros(shape, dtype=dtype)`.
#[no_mangle]
pub extern "C" fn ft_zeros(
    shape: *const i64,
    ndim: usize,
    dtype: i32,
    out: *mut *mut FtTensor,
) -> FtStatus {
    creation("ft_zeros", shape, ndim, dtype, out, |s, o| {
        Tensor::zeros(s, o)
    })
}

/// `torch.ones(shape, dtype=dtype)`.
#[no_mangle]
pub extern "C" fn ft_ones(
    shape: *const i64,
    ndim: usize,
    dtype: i32,
    out: *mut *mut FtTensor,
) -> FtStatus {
    creation("ft_ones", shape, ndim, dtype, out, |s, o| {
        Tensor::ones(s, o)
    })
}

/// `torch.randn(shape, dtype=dtype)`: standard normal samples from the
/// global generator.
#[no_mangle]
pub extern "C" fn ft_randn(
    shape: *const i64,
    ndim: usize,
    dtype: i32,
    out: *mut *mut FtTensor,
) -> FtStatus {
    creation("ft_randn", shape, ndim, dtype, out, |s, o| {
        Tensor::randn(s, o)
    })
}

/// `torch.rand(shape, dtype=dtype)`: uniform samples in [0, 1).
#[no_mangle]
pub extern "C" fn ft_rand(
    shape: *const i64,
    ndim: usize,
    dtype: i32,
    out: *mut *mut FtTensor,
) -> FtStatus {
    creation("ft_rand", shape, ndim, dtype, out, |s, o| {
        Tensor::rand(s, o)
    })
}

/// `torch.manual_seed(seed)`: seed the global generator.
#[no_mangle]
pub extern "C" fn ft_manual_seed(seed: u64) -> FtStatus {
    entry("ft_manual_seed", || {
        ferrotorch_core::native::random::manual_seed(seed);
        Ok(())
    })
}

/// Another reference to the same tensor (shares storage and autograd
/// state; `torch`'s `Tensor` copy), freed separately. For a copy of the
/// data, call the op `clone`.
#[no_mangle]
pub extern "C" fn ft_tensor_clone(t: *const FtTensor, out: *mut *mut FtTensor) -> FtStatus {
    let what = "ft_tensor_clone";
    entry(what, || out_tensor(what, out, tensor(what, t)?.clone()))
}

/// Release this reference. Null is a no-op; a freed handle is
/// `FT_ERROR_INVALID_HANDLE` (Note [C handles]).
#[no_mangle]
pub extern "C" fn ft_tensor_free(t: *mut FtTensor) -> FtStatus {
    entry("ft_tensor_free", || free("ft_tensor_free", t))
}

/// Release `n` references at once (`ts[0..n]`, nulls skipped), as `n`
/// calls of `ft_tensor_free` would: for bindings that collect handles
/// in batches (Go's finalizers queue them). Every handle is tried; the
/// status is the first failure's.
#[no_mangle]
pub extern "C" fn ft_tensor_free_many(ts: *const *mut FtTensor, n: usize) -> FtStatus {
    let what = "ft_tensor_free_many";
    entry(what, || {
        if n == 0 {
            return Ok(());
        }
        if ts.is_null() {
            return Err(Fail::new(
                FtStatus::FtErrorNullHandle,
                format!("{what}: got a null array of {n} handles"),
            ));
        }
        // SAFETY: the caller passes an array of n handles.
        let hs = unsafe { std::slice::from_raw_parts(ts, n) };
        let mut first = Ok(());
        for &h in hs {
            let r = free(what, h);
            if first.is_ok() {
                first = r;
            }
        }
        first
    })
}

/// Number of dimensions.
#[no_mangle]
pub extern "C" fn ft_tensor_ndim(t: *const FtTensor, out: *mut usize) -> FtStatus {
    let what = "ft_tensor_ndim";
    entry(what, || put(what, out, tensor(what, t)?.dim()))
}

/// The sizes, written to `shape[0..min(ndim, capacity)]`; returns the
/// number of dimensions through `ndim`.
#[no_mangle]
pub extern "C" fn ft_tensor_shape(
    t: *const FtTensor,
    shape: *mut i64,
    capacity: usize,
    ndim: *mut usize,
) -> FtStatus {
    let what = "ft_tensor_shape";
    entry(what, || {
        let t = tensor(what, t)?;
        write_dims(what, t.shape(), shape, capacity)?;
        put(what, ndim, t.dim())
    })
}

/// The strides in elements; as `ft_tensor_shape`.
#[no_mangle]
pub extern "C" fn ft_tensor_stride(
    t: *const FtTensor,
    strides: *mut i64,
    capacity: usize,
    ndim: *mut usize,
) -> FtStatus {
    let what = "ft_tensor_stride";
    entry(what, || {
        let t = tensor(what, t)?;
        write_dims(what, t.stride(), strides, capacity)?;
        put(what, ndim, t.dim())
    })
}

fn write_dims(what: &str, dims: &[usize], out: *mut i64, capacity: usize) -> Res<()> {
    let n = dims.len().min(capacity);
    if n > 0 && out.is_null() {
        return Err(Fail::new(
            FtStatus::FtErrorNullHandle,
            format!("{what}: null output array with capacity {capacity}"),
        ));
    }
    for (i, &d) in dims.iter().take(n).enumerate() {
        // SAFETY: i < capacity, and the caller promises that many slots.
        unsafe { out.add(i).write(d as i64) };
    }
    Ok(())
}

/// The element type (an `FtDType` code).
#[no_mangle]
pub extern "C" fn ft_tensor_dtype(t: *const FtTensor, out: *mut i32) -> FtStatus {
    let what = "ft_tensor_dtype";
    entry(what, || put(what, out, code_of(tensor(what, t)?.dtype())))
}

/// Number of elements.
#[no_mangle]
pub extern "C" fn ft_tensor_numel(t: *const FtTensor, out: *mut usize) -> FtStatus {
    let what = "ft_tensor_numel";
    entry(what, || put(what, out, tensor(what, t)?.numel()))
}

/// The address of the first element (the tensor's strides say where the
/// rest are). Valid while any reference to the tensor lives.
#[no_mangle]
pub extern "C" fn ft_tensor_data_ptr(t: *const FtTensor, out: *mut *mut c_void) -> FtStatus {
    let what = "ft_tensor_data_ptr";
    entry(what, || {
        let t = tensor(what, t)?;
        if t.is_conj() {
            // the memory holds the unconjugated values (Note [The conjugate bit])
            return Err(Fail::new(
                FtStatus::FtErrorValue,
                "ft_tensor_data_ptr: the tensor has the conjugate bit set; call resolve_conj first",
            ));
        }
        t.storage().mark_exported(); // Note [Moving a storage into shared memory]
        put(what, out, t.data_ptr() as *mut c_void)
    })
}

/// Copy the elements, row-major, into `buf`, whose `nbytes` must be
/// exactly the tensor's size in bytes.
#[no_mangle]
pub extern "C" fn ft_tensor_copy_to(
    t: *const FtTensor,
    buf: *mut c_void,
    nbytes: usize,
) -> FtStatus {
    let what = "ft_tensor_copy_to";
    entry(what, || {
        let t = tensor(what, t)?;
        let need = t.numel() * t.dtype().size();
        if nbytes != need {
            return Err(Fail::new(
                FtStatus::FtErrorValue,
                format!(
                    "{what}: a tensor of shape {:?} and dtype {} holds {need} bytes, the buffer {nbytes}",
                    t.shape(),
                    t.dtype().name()
                ),
            ));
        }
        if need == 0 {
            return Ok(());
        }
        if buf.is_null() {
            return Err(Fail::new(
                FtStatus::FtErrorNullHandle,
                format!("{what}: null buffer"),
            ));
        }
        // SAFETY: non-null, and the caller promises nbytes writable bytes.
        let out = unsafe { std::slice::from_raw_parts_mut(buf as *mut u8, nbytes) };
        Ok(t.write_bytes(out)?)
    })
}

/// The value of a one-element tensor as a double (`t.item()`).
#[no_mangle]
pub extern "C" fn ft_tensor_item_double(t: *const FtTensor, out: *mut f64) -> FtStatus {
    let what = "ft_tensor_item_double";
    entry(what, || put(what, out, tensor(what, t)?.item_f64()?))
}

/// The value of a one-element integer or bool tensor (`t.item()`).
#[no_mangle]
pub extern "C" fn ft_tensor_item_int64(t: *const FtTensor, out: *mut i64) -> FtStatus {
    let what = "ft_tensor_item_int64";
    entry(what, || {
        let t = tensor(what, t)?;
        let v = t.item()?;
        put(what, out, v.to_i64())
    })
}

/// torch's printed form (`str(t)`), as a new string freed with
/// `ft_string_free`.
#[no_mangle]
pub extern "C" fn ft_tensor_to_string(t: *const FtTensor, out: *mut *mut c_char) -> FtStatus {
    let what = "ft_tensor_to_string";
    entry(what, || {
        let s = tensor(what, t)?.to_string();
        let c = CString::new(s).unwrap_or_default();
        if out.is_null() {
            return put(what, out, std::ptr::null_mut());
        }
        put(what, out, c.into_raw())
    })
}

/// Free a string returned by ferrotorch (null is a no-op).
#[no_mangle]
pub extern "C" fn ft_string_free(s: *mut c_char) {
    if !s.is_null() {
        // SAFETY: made by CString::into_raw in this library.
        drop(unsafe { CString::from_raw(s) });
    }
}

/// `torch.set_num_threads(n)`: the threads intra-op parallelism uses
/// (`n` of 0 is refused).
#[no_mangle]
pub extern "C" fn ft_set_num_threads(n: i64) -> FtStatus {
    let what = "ft_set_num_threads";
    entry(what, || {
        let n = usize::try_from(n).ok().filter(|&n| n > 0).ok_or_else(|| {
            Fail::new(
                FtStatus::FtErrorValue,
                format!("{what}: Expected number of threads to be positive, got {n}"),
            )
        })?;
        ferrotorch_kernels::parallel::set_num_threads(n);
        Ok(())
    })
}

/// `torch.get_num_threads()`.
#[no_mangle]
pub extern "C" fn ft_get_num_threads() -> i64 {
    ferrotorch_kernels::parallel::get_num_threads() as i64
}

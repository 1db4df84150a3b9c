//! Tensors from JavaScript memory and back: `fromTypedArray` shares a
//! TypedArray's memory, `Tensor.data()` shares a tensor's.
//!
//! # Note [Shared JavaScript memory]
//! `fromTypedArray(a, shape)` makes a tensor over `a`'s bytes (no copy): a
//! write on either side is seen by the other. The tensor's storage holds a
//! strong N-API reference to the array, so V8 keeps it while any tensor
//! uses it. N-API references may be released only on the JavaScript
//! thread that made them (the main thread's, or a `worker_threads`
//! worker's); a storage dropped elsewhere (a `forwardAsync` job) queues
//! its reference, and that thread's next call into the add-on releases it. `t.data()` is
//! the reverse: an external ArrayBuffer over the tensor's bytes that keeps
//! the storage alive until V8 collects the buffer. A TypedArray whose
//! buffer is later transferred to a worker (detached) must not be used
//! through a tensor made from it: the memory moves with the transfer.

use crate::errors::{guarded, throw, type_error, OrThrow};
use crate::js::{Js, Raw};
use crate::tensor::{unwrap, wrap};
use ferrotorch_core::storage::Storage;
use ferrotorch_core::tensor::Layout;
use ferrotorch_core::{DType, Error, ErrorKind, Tensor as Core};
use napi::sys::TypedarrayType as TA;
use napi::{check_status, sys, Env};
use napi_derive::napi;
use parking_lot::Mutex;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::ThreadId;

/// A reference to a JavaScript value, to release on the JavaScript thread
/// that made it (the main thread's or a worker's).
struct PendingRef {
    env: usize,
    r: usize,
    thread: ThreadId,
}

static PENDING: Mutex<Vec<PendingRef>> = Mutex::new(Vec::new());
static ANY_PENDING: AtomicBool = AtomicBool::new(false);

fn release(p: PendingRef) {
    if p.thread == std::thread::current().id() {
        // SAFETY: on the JavaScript thread, with the env the reference was
        // made in (Note [Shared JavaScript memory]).
        unsafe { sys::napi_delete_reference(p.env as sys::napi_env, p.r as sys::napi_ref) };
    } else {
        PENDING.lock().push(p);
        ANY_PENDING.store(true, Ordering::Release);
    }
}

/// Release the references queued by other threads for this JavaScript
/// thread (called on entry from JavaScript).
pub(crate) fn drain_pending() {
    if ANY_PENDING.swap(false, Ordering::Acquire) {
        let me = std::thread::current().id();
        let mine: Vec<PendingRef> = {
            let mut all = PENDING.lock();
            let (mine, others) = std::mem::take(&mut *all)
                .into_iter()
                .partition(|p| p.thread == me);
            *all = others;
            if !all.is_empty() {
                ANY_PENDING.store(true, Ordering::Release);
            }
            mine
        };
        for p in mine {
            release(p);
        }
    }
}

fn dtype_of_array(ty: i32, requested: Option<DType>) -> Option<DType> {
    Some(match (ty, requested) {
        (TA::float32_array, None | Some(DType::F32)) => DType::F32,
        (TA::float64_array, None | Some(DType::F64)) => DType::F64,
        (TA::int32_array, None | Some(DType::I32)) => DType::I32,
        (TA::bigint64_array, None | Some(DType::I64)) => DType::I64,
        (TA::int16_array, None | Some(DType::I16)) => DType::I16,
        (TA::int8_array, None | Some(DType::I8)) => DType::I8,
        (TA::uint8_array | TA::uint8_clamped_array, None | Some(DType::U8)) => DType::U8,
        (TA::uint8_array, Some(DType::Bool)) => DType::Bool,
        (TA::uint16_array, Some(d @ (DType::F16 | DType::BF16))) => d,
        _ => return None,
    })
}

fn array_kind(ty: i32) -> &'static str {
    match ty {
        TA::int8_array => "Int8Array",
        TA::uint8_array => "Uint8Array",
        TA::uint8_clamped_array => "Uint8ClampedArray",
        TA::int16_array => "Int16Array",
        TA::uint16_array => "Uint16Array",
        TA::int32_array => "Int32Array",
        TA::uint32_array => "Uint32Array",
        TA::float32_array => "Float32Array",
        TA::float64_array => "Float64Array",
        TA::bigint64_array => "BigInt64Array",
        TA::biguint64_array => "BigUint64Array",
        _ => "TypedArray",
    }
}

/// The TypedArray class that holds a dtype's elements, and how many of
/// its entries one element takes (complex numbers: `re, im`).
fn array_type_of(d: DType) -> (i32, usize) {
    match d {
        DType::F32 => (TA::float32_array, 1),
        DType::F64 => (TA::float64_array, 1),
        DType::I32 => (TA::int32_array, 1),
        DType::I64 => (TA::bigint64_array, 1),
        DType::I16 => (TA::int16_array, 1),
        DType::I8 => (TA::int8_array, 1),
        DType::U8 | DType::Bool => (TA::uint8_array, 1),
        DType::F16 | DType::BF16 => (TA::uint16_array, 1),
        DType::C32 => (TA::uint16_array, 2),
        DType::C64 => (TA::float32_array, 2),
        DType::C128 => (TA::float64_array, 2),
    }
}

/// Options of `fromTypedArray`.
#[napi(object)]
pub struct FromArrayOptions {
    /// The dtype, where the array's type does not say it: `bool` for a
    /// Uint8Array of 0s and 1s, `float16`/`bfloat16` for a Uint16Array of
    /// their bits.
    pub dtype: Option<String>,
    /// Copy instead of sharing the memory.
    pub copy: Option<bool>,
}

/// A tensor over a TypedArray's memory (Note [Shared JavaScript memory]),
/// shaped `shape` (default: one dimension of the array's length).
#[napi(
    js_name = "fromTypedArray",
    ts_args_type = "array: ArrayBufferView, shape?: number[], options?: { dtype?: string, copy?: boolean }",
    ts_return_type = "Tensor"
)]
pub fn from_typed_array(
    env: Env,
    array: Raw,
    shape: Option<Vec<i64>>,
    options: Option<FromArrayOptions>,
) -> napi::Result<Raw> {
    let e = env.raw();
    let js = Js(e);
    drain_pending();
    if js.type_of(array.0)? != sys::ValueType::napi_object || !js.is_typedarray(array.0)? {
        return Err(type_error(
            e,
            "fromTypedArray(): argument 'array' must be a TypedArray",
        ));
    }
    let (ty, len, data) = js.typedarray_info(array.0)?;
    let requested =
        match options.as_ref().and_then(|o| o.dtype.as_deref()) {
            Some(name) => Some(DType::from_name(name).ok_or_else(|| {
                type_error(e, format!("fromTypedArray(): unknown dtype '{name}'"))
            })?),
            None => None,
        };
    let dtype = dtype_of_array(ty, requested).ok_or_else(|| {
        type_error(
            e,
            format!(
                "fromTypedArray(): a {} cannot hold {}",
                array_kind(ty),
                requested.map_or("any ferrotorch dtype", |d| d.name())
            ),
        )
    })?;
    let sizes: Vec<usize> = match shape {
        Some(s) => s
            .iter()
            .map(|&d| usize::try_from(d))
            .collect::<Result<_, _>>()
            .map_err(|_| {
                throw(
                    e,
                    Error::new(
                        ErrorKind::Value,
                        format!("fromTypedArray(): negative size in shape {s:?}"),
                    ),
                )
            })?,
        None => vec![len],
    };
    let numel = sizes.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
    if numel != Some(len) {
        return Err(throw(
            e,
            Error::new(
                ErrorKind::Runtime,
                format!(
                    "fromTypedArray(): shape {sizes:?} is invalid for an array of {len} elements"
                ),
            ),
        ));
    }
    let nbytes = len * dtype.size();
    let copy = options.as_ref().and_then(|o| o.copy).unwrap_or(false);
    let t = if copy || nbytes == 0 || data.is_null() {
        // SAFETY: the array's data holds nbytes bytes for this call.
        let bytes = if nbytes == 0 {
            &[][..]
        } else {
            unsafe { std::slice::from_raw_parts(data, nbytes) }
        };
        guarded(e, "fromTypedArray", || {
            Core::from_bytes(bytes, &sizes, dtype)
        })?
    } else {
        let mut r: sys::napi_ref = std::ptr::null_mut();
        // SAFETY: a strong reference keeps the array (and its buffer) alive.
        check_status!(unsafe { sys::napi_create_reference(e, array.0, 1, &mut r) })?;
        let pending = PendingRef {
            env: e as usize,
            r: r as usize,
            thread: std::thread::current().id(),
        };
        // SAFETY: data is valid for nbytes while the reference holds the
        // array (Note [Shared JavaScript memory]); TypedArrays are aligned
        // to their element size.
        let storage = unsafe {
            Storage::from_external(
                NonNull::new(data).expect("checked non-null"),
                nbytes,
                move || release(pending),
            )
        };
        let layout = Layout::contiguous("fromTypedArray", &sizes).or_throw(e)?;
        let t = Core::from_storage(storage, layout, dtype).or_throw(e)?;
        if dtype == DType::Bool {
            t.check_bool_bytes("fromTypedArray").or_throw(e)?;
        }
        t
    };
    wrap(e, t).map(Raw)
}

unsafe extern "C" fn drop_tensor(
    _env: sys::napi_env,
    _data: *mut std::ffi::c_void,
    hint: *mut std::ffi::c_void,
) {
    // SAFETY: hint is the Box made in `typed_view` and is finalized once.
    drop(unsafe { Box::from_raw(hint.cast::<Core>()) });
}

/// A TypedArray over a contiguous tensor's bytes (Note [Shared JavaScript
/// memory]).
pub(crate) fn typed_view(env: sys::napi_env, t: Core) -> napi::Result<sys::napi_value> {
    // a conjugated view's values, copied (Note [The conjugate bit])
    let t = if t.is_conj() {
        t.resolve_conj()
            .map_err(|e| napi::Error::from_reason(e.to_string()))?
    } else {
        t
    };
    let (ty, lanes) = array_type_of(t.dtype());
    let len = t.numel() * lanes;
    let nbytes = len * t.element_size();
    t.storage().mark_exported(); // Note [Moving a storage into shared memory]
    let ptr = t.data_ptr();
    let mut buf: sys::napi_value = std::ptr::null_mut();
    if nbytes == 0 {
        // SAFETY: env is live; a zero-length buffer needs no data.
        check_status!(unsafe {
            sys::napi_create_arraybuffer(env, 0, std::ptr::null_mut(), &mut buf)
        })?;
    } else {
        let keep = Box::into_raw(Box::new(t));
        // SAFETY: ptr is valid for nbytes while `keep` holds the storage;
        // drop_tensor frees `keep` when V8 collects the buffer.
        let status = unsafe {
            sys::napi_create_external_arraybuffer(
                env,
                ptr.cast(),
                nbytes,
                Some(drop_tensor),
                keep.cast(),
                &mut buf,
            )
        };
        if status != sys::Status::napi_ok {
            // SAFETY: not handed to V8.
            drop(unsafe { Box::from_raw(keep) });
            check_status!(status, "an external ArrayBuffer over the tensor's memory")?;
        }
    }
    let mut out: sys::napi_value = std::ptr::null_mut();
    // SAFETY: buf holds len elements of the array type.
    check_status!(unsafe { sys::napi_create_typedarray(env, ty, len, buf, 0, &mut out) })?;
    Ok(out)
}

/// `t.data()`: the elements as a TypedArray (Float32Array, BigInt64Array
/// for int64, Uint8Array for bool and uint8, Uint16Array of the bits for
/// float16/bfloat16): a view of the tensor's memory with no copy when it
/// is contiguous, else a copy in row-major order.
#[napi(js_name = "_data", ts_return_type = "ArrayBufferView")]
pub fn data(env: Env, h: Raw) -> napi::Result<Raw> {
    let e = env.raw();
    let t = unwrap(e, h.0)?.ok_or_else(|| type_error(e, "expected a Tensor"))?;
    let t = if t.is_contiguous() {
        t
    } else {
        guarded(e, "data", || t.contiguous())?
    };
    typed_view(e, t).map(Raw)
}

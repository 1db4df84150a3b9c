//! The JavaScript `Tensor`: a plain JavaScript class (`lib/tensor.js`)
//! whose objects hold the index of a slot of ours (`slots.rs`) that holds
//! a core tensor, freed when V8 collects the object or at once by
//! `dispose()`.
//!
//! # Note [Tensor handles]
//! A napi-rs class instance costs about 1.5 µs to make (a constructor call
//! through C++, a wrap, a type tag, a global map entry) and 0.3 µs per
//! method call: more than a whole 1-element `add`. An External per tensor
//! (Node's ExternalWrapper and its weak handle, plus the finalizer's
//! reference and another weak handle) still cost about 480 ns per result
//! against 220 ns for a finalizer added to the `Tensor` object itself
//! (`napi_add_finalizer`, one reference), measured with a bare N-API
//! add-on on Node 20. So a `Tensor` is a JavaScript object made in
//! JavaScript (`new Tensor(slot)`), whose `_h` is the index of a slot in
//! this thread's table of tensors (`slots.rs`), and whose finalizer frees
//! that slot when V8 collects it. The op path (Note [The op call path])
//! passes a fresh `Tensor` for the result and gets the slot index back;
//! other results are made here with `napi_new_instance`.
//!
//! An index names a tensor only while its slot is live, and a slot is
//! freed only when the object that owns it is collected, so a `Tensor`
//! never sees its slot reused. A number that is not a live slot (made up,
//! or copied from a collected object) is refused; a number copied from a
//! live `Tensor` into another object reads that tensor: no memory is ever
//! read as a tensor that is not one. Arguments that are objects count as
//! tensors only if they are `Tensor` instances.
//!
//! # Note [Tensor memory in V8]
//! V8 sees a `Tensor` object as a few bytes; the storage behind it lives in
//! Rust. Each slot therefore reports its tensor's bytes to V8
//! (`napi_adjust_external_memory`) when it is made and takes them back when
//! it is finalized or disposed, so a loop that drops large tensors makes V8
//! collect as often as their real size asks. The reports go in batches of
//! at least 1 MiB per thread: one call per 1-element tensor took 8 % of
//! `a.add(b)`, and V8 only compares the total against limits tens of MiB
//! wide. `dispose()` (and
//! `Symbol.dispose`, for `using`) frees the storage at once; a disposed
//! tensor throws on use.

use crate::errors::{guarded, throw, OrThrow};
use crate::js::{Js, Raw};
use crate::slots::{self, Lookup};
use ferrotorch_core::{DType, Error, ErrorKind, Scalar, Tensor as Core};
use napi::{check_status, sys, Env};
use napi_derive::napi;
use std::cell::Cell;
use std::ptr;

thread_local! {
    /// The `Tensor` class of `lib/tensor.js`.
    static CLASS: Cell<sys::napi_ref> = const { Cell::new(ptr::null_mut()) };
    /// Bytes made or freed on this thread not yet reported to V8 (Note
    /// [Tensor memory in V8]).
    static UNREPORTED: Cell<i64> = const { Cell::new(0) };
}

/// Report `delta` bytes of tensor memory to V8, in batches of at least
/// [`REPORT_BATCH`] (Note [Tensor memory in V8]).
fn report_external(env: sys::napi_env, delta: i64) {
    let pending = UNREPORTED.with(|u| {
        let p = u.get() + delta;
        if p.abs() < REPORT_BATCH {
            u.set(p);
            0
        } else {
            u.set(0);
            p
        }
    });
    if pending != 0 {
        let mut total = 0i64;
        // SAFETY: env is live; a GC-safe call, also from a finalizer (Note
        // [Finalizers in the collector]).
        unsafe { sys::napi_adjust_external_memory(env, pending, &mut total) };
    }
}

/// The smallest change of tensor memory reported to V8 at once.
const REPORT_BATCH: i64 = 1 << 20;

/// Register the JavaScript `Tensor` class (once, from `lib/tensor.js`).
#[napi(js_name = "_setTensorClass", ts_args_type = "cls: Function")]
pub fn set_tensor_class(env: Env, cls: Raw) -> napi::Result<()> {
    let mut r = ptr::null_mut();
    // SAFETY: env and cls are live; the reference is kept for the
    // process's life.
    check_status!(unsafe { sys::napi_create_reference(env.raw(), cls.0, 1, &mut r) })?;
    CLASS.with(|c| c.set(r));
    Ok(())
}

fn class(env: sys::napi_env) -> napi::Result<sys::napi_value> {
    let mut ctor = ptr::null_mut();
    // SAFETY: the class reference was made by `_setTensorClass`.
    check_status!(unsafe { sys::napi_get_reference_value(env, CLASS.with(Cell::get), &mut ctor) })?;
    Ok(ctor)
}

unsafe extern "C" fn finalize_slot(
    env: sys::napi_env,
    data: *mut std::ffi::c_void,
    _hint: *mut std::ffi::c_void,
) {
    report_external(env, -slots::remove(data as usize as u32));
}

/// Make `obj` the owner of slot `id`, which holds `bytes` (less any
/// deferred frees): its finalizer frees the slot (Note [Tensor handles]).
fn own(env: sys::napi_env, obj: sys::napi_value, id: u32, bytes: i64) -> napi::Result<()> {
    // SAFETY: env and obj are live; the finalizer frees the slot once.
    let s = unsafe {
        sys::napi_add_finalizer(
            env,
            obj,
            id as usize as *mut std::ffi::c_void,
            Some(finalize_slot),
            ptr::null_mut(),
            ptr::null_mut(),
        )
    };
    if s != sys::Status::napi_ok {
        // what `insert` counted, less the tensor given back
        report_external(env, bytes - slots::remove(id));
        check_status!(s, "a finalizer for a tensor")?;
    }
    report_external(env, bytes);
    Ok(())
}

/// Put `t` in a new slot owned by `obj`, a fresh `Tensor` (Note [Tensor
/// handles]): the slot's index, which the caller stores as `obj._h`.
pub(crate) fn adopt(env: sys::napi_env, obj: sys::napi_value, t: Core) -> napi::Result<u32> {
    let (id, bytes) = slots::insert(t);
    own(env, obj, id, bytes)?;
    Ok(id)
}

/// A new JavaScript `Tensor` for `t` (Note [Tensor handles]).
pub(crate) fn wrap(env: sys::napi_env, t: Core) -> napi::Result<sys::napi_value> {
    let ctor = class(env)?;
    let (id, bytes) = slots::insert(t);
    let mut obj = ptr::null_mut();
    let made = Js(env).number(id as f64).and_then(|h| {
        // SAFETY: ctor is the Tensor class; one argument, its `_h`.
        check_status!(unsafe { sys::napi_new_instance(env, ctor, 1, &h, &mut obj) })
    });
    if let Err(e) = made {
        // what `insert` counted, less the tensor given back
        report_external(env, bytes - slots::remove(id));
        return Err(e);
    }
    own(env, obj, id, bytes)?;
    Ok(obj)
}

/// The slot behind `v`: a slot index (a `Tensor`'s `_h`), or a `Tensor`
/// instance; `None` for anything else.
fn slot_of(env: sys::napi_env, v: sys::napi_value, ty: i32) -> napi::Result<Option<f64>> {
    let js = Js(env);
    match ty {
        sys::ValueType::napi_number => js.f64_of(v).map(Some),
        sys::ValueType::napi_object => {
            let mut is = false;
            // SAFETY: v is an object, the class a function.
            check_status!(unsafe { sys::napi_instanceof(env, v, class(env)?, &mut is) })?;
            if !is {
                return Ok(None);
            }
            let mut h = ptr::null_mut();
            // SAFETY: v is an object; the key is NUL-terminated.
            check_status!(unsafe { sys::napi_get_named_property(env, v, c"_h".as_ptr(), &mut h) })?;
            if js.type_of(h)? != sys::ValueType::napi_number {
                return Ok(None);
            }
            js.f64_of(h).map(Some)
        }
        _ => Ok(None),
    }
}

fn disposed(env: sys::napi_env) -> napi::Error {
    throw(
        env,
        Error::new(ErrorKind::Runtime, "Tensor: used after dispose()"),
    )
}

/// The core tensor of a `Tensor` (or its slot index), or `None` for any
/// other value; a disposed tensor throws.
pub(crate) fn unwrap(env: sys::napi_env, v: sys::napi_value) -> napi::Result<Option<Core>> {
    unwrap_typed(env, v, Js(env).type_of(v)?)
}

/// [`unwrap`] for a value whose `typeof` is known.
pub(crate) fn unwrap_typed(
    env: sys::napi_env,
    v: sys::napi_value,
    ty: i32,
) -> napi::Result<Option<Core>> {
    match slot_of(env, v, ty)?.map(slots::get) {
        Some(Lookup::Live(t)) => Ok(Some(t)),
        Some(Lookup::Disposed) => Err(disposed(env)),
        Some(Lookup::Missing) | None => Ok(None),
    }
}

/// The core tensor of a `Tensor` argument, or a thrown TypeError.
fn this(env: sys::napi_env, v: &Raw) -> napi::Result<Core> {
    unwrap(env, v.0)?.ok_or_else(|| crate::errors::type_error(env, "expected a Tensor"))
}

fn scalar_value(js: Js, s: Scalar) -> napi::Result<sys::napi_value> {
    match s {
        Scalar::Bool(b) => js.boolean(b),
        Scalar::Int(i) => js.number(i as f64),
        Scalar::Float(f) => js.number(f),
        // JavaScript has no complex numbers: `[re, im]`
        Scalar::Complex(re, im) => {
            crate::convert::array(js, [js.number(re), js.number(im)].into_iter())
        }
    }
}

/// Nested arrays of `flat` (row-major) shaped `shape`.
fn nested(js: Js, shape: &[usize], flat: &[sys::napi_value]) -> napi::Result<sys::napi_value> {
    match shape.split_first() {
        None => Ok(flat[0]),
        Some((&n, rest)) => {
            let step: usize = rest.iter().product();
            let arr = js.array(n)?;
            for i in 0..n {
                let v = nested(js, rest, &flat[i * step..(i + 1) * step])?;
                js.set_element(arr, i as u32, v)?;
            }
            Ok(arr)
        }
    }
}

// The `Tensor` members of lib/tensor.js call these with the object's
// handle (`this._h`).

/// `t.shape`.
#[napi(js_name = "_shape")]
pub fn shape(env: Env, h: Raw) -> napi::Result<Vec<u32>> {
    Ok(this(env.raw(), &h)?
        .shape()
        .iter()
        .map(|&s| s as u32)
        .collect())
}

/// `t.dtype`: `float32`, `int64`, `bool`, ...
#[napi(js_name = "_dtype")]
pub fn dtype(env: Env, h: Raw) -> napi::Result<&'static str> {
    Ok(this(env.raw(), &h)?.dtype().name())
}

/// `t.device`: `cpu`.
#[napi(js_name = "_device")]
pub fn device(env: Env, h: Raw) -> napi::Result<String> {
    Ok(this(env.raw(), &h)?.device().to_string())
}

/// `t.ndim`.
#[napi(js_name = "_ndim")]
pub fn ndim(env: Env, h: Raw) -> napi::Result<u32> {
    Ok(this(env.raw(), &h)?.dim() as u32)
}

/// `t.numel()`.
#[napi(js_name = "_numel")]
pub fn numel(env: Env, h: Raw) -> napi::Result<f64> {
    Ok(this(env.raw(), &h)?.numel() as f64)
}

/// `t.stride()`, in elements.
#[napi(js_name = "_stride")]
pub fn stride(env: Env, h: Raw) -> napi::Result<Vec<u32>> {
    Ok(this(env.raw(), &h)?
        .stride()
        .iter()
        .map(|&s| s as u32)
        .collect())
}

/// `t.isContiguous()`.
#[napi(js_name = "_isContiguous")]
pub fn is_contiguous(env: Env, h: Raw) -> napi::Result<bool> {
    Ok(this(env.raw(), &h)?.is_contiguous())
}

/// `t.requiresGrad`.
#[napi(js_name = "_requiresGrad")]
pub fn requires_grad(env: Env, h: Raw) -> napi::Result<bool> {
    Ok(this(env.raw(), &h)?.requires_grad())
}

/// `t.requiresGrad = value` (leaves only, as in torch).
#[napi(js_name = "_setRequiresGrad")]
pub fn set_requires_grad(env: Env, h: Raw, value: bool) -> napi::Result<()> {
    let e = env.raw();
    this(e, &h)?.requires_grad_(value).or_throw(e).map(|_| ())
}

/// `t.isLeaf`.
#[napi(js_name = "_isLeaf")]
pub fn is_leaf(env: Env, h: Raw) -> napi::Result<bool> {
    Ok(this(env.raw(), &h)?.is_leaf())
}

/// `t.grad`, or `null`.
#[napi(js_name = "_grad_of", ts_return_type = "Tensor | null")]
pub fn grad_of(env: Env, h: Raw) -> napi::Result<Raw> {
    let e = env.raw();
    match this(e, &h)?.grad() {
        Some(g) => wrap(e, g).map(Raw),
        None => Js(e).null().map(Raw),
    }
}

/// `t.grad = value` (a Tensor or `null`).
#[napi(js_name = "_setGrad")]
pub fn set_grad(env: Env, h: Raw, value: Raw) -> napi::Result<()> {
    let e = env.raw();
    let g = unwrap(e, value.0)?;
    this(e, &h)?.set_grad(g).or_throw(e)
}

/// `t.toString()`, as torch prints it: `tensor([1., 2.])`.
#[napi(js_name = "_toString")]
pub fn to_js_string(env: Env, h: Raw) -> napi::Result<String> {
    Ok(this(env.raw(), &h)?.to_string())
}

/// `t.item()`: a number, or a boolean for `bool`.
#[napi(js_name = "_item", ts_return_type = "number | boolean")]
pub fn item(env: Env, h: Raw) -> napi::Result<Raw> {
    let e = env.raw();
    let t = this(e, &h)?;
    let s = guarded(e, "item", || t.item())?;
    scalar_value(Js(e), s).map(Raw)
}

/// `t.toArray()`: nested arrays of numbers (int64 beyond 2^53 loses
/// precision; `data()` is exact) or booleans.
#[napi(js_name = "_toArray", ts_return_type = "any")]
pub fn to_array(env: Env, h: Raw) -> napi::Result<Raw> {
    let e = env.raw();
    let js = Js(e);
    let t = this(e, &h)?;
    let flat: Vec<sys::napi_value> = if t.dtype() == DType::Bool {
        let v = guarded(e, "toArray", || t.to_vec::<bool>())?;
        v.into_iter()
            .map(|b| js.boolean(b))
            .collect::<napi::Result<_>>()?
    } else {
        let v = guarded(e, "toArray", || t.to_vec_f64())?;
        v.into_iter()
            .map(|x| js.number(x))
            .collect::<napi::Result<_>>()?
    };
    nested(js, t.shape(), &flat).map(Raw)
}

/// Options of `backward`.
#[napi(object)]
#[derive(Default)]
pub struct BackwardOptions {
    /// Keep the graph for another backward (default: `createGraph`).
    pub retain_graph: Option<bool>,
    /// Record the backward pass itself, for higher derivatives.
    pub create_graph: Option<bool>,
}

/// `t.backward(gradient?, {retainGraph, createGraph})`.
#[napi(js_name = "_backward")]
pub fn backward(
    env: Env,
    h: Raw,
    gradient: Option<Raw>,
    options: Option<BackwardOptions>,
) -> napi::Result<()> {
    let e = env.raw();
    let t = this(e, &h)?;
    let g = match gradient {
        Some(v) => unwrap(e, v.0)?,
        None => None,
    };
    let o = options.unwrap_or_default();
    guarded(e, "backward", || {
        t.backward_with(g.as_ref(), o.retain_graph, o.create_graph.unwrap_or(false))
    })
}

/// `t.detach()`: the storage shared, outside autograd.
#[napi(js_name = "_detach", ts_return_type = "Tensor")]
pub fn detach(env: Env, h: Raw) -> napi::Result<Raw> {
    let e = env.raw();
    let d = this(e, &h)?.detach();
    wrap(e, d).map(Raw)
}

/// `t.dispose()`: free the memory now (Note [Tensor memory in V8]); twice
/// is fine.
#[napi(js_name = "_dispose")]
pub fn dispose(env: Env, h: Raw) -> napi::Result<()> {
    let e = env.raw();
    let js = Js(e);
    if let Some(id) = slot_of(e, h.0, js.type_of(h.0)?)? {
        if let Some(bytes) = slots::dispose(id) {
            report_external(e, -bytes);
        }
    }
    Ok(())
}

/// `t.isDisposed`.
#[napi(js_name = "_isDisposed")]
pub fn is_disposed(env: Env, h: Raw) -> napi::Result<bool> {
    let e = env.raw();
    let js = Js(e);
    Ok(match slot_of(e, h.0, js.type_of(h.0)?)? {
        Some(id) => matches!(slots::get(id), Lookup::Disposed),
        None => false,
    })
}

/// An External (pointing at a static byte), so tests can check that such
/// values, and the objects of other add-ons, are refused as tensors.
#[napi(js_name = "_foreignExternal", ts_return_type = "unknown")]
pub fn foreign_external(env: Env) -> napi::Result<Raw> {
    static BYTE: u8 = 0;
    let mut ext = ptr::null_mut();
    // SAFETY: env is live; the data is static and never freed.
    check_status!(unsafe {
        sys::napi_create_external(
            env.raw(),
            ptr::addr_of!(BYTE).cast_mut().cast(),
            None,
            ptr::null_mut(),
            &mut ext,
        )
    })?;
    Ok(Raw(ext))
}

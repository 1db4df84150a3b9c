//! The JavaScript `Tensor`: a handle to a core tensor, freed when V8
//! collects it or at once by `dispose()`.
//!
//! # Note [Tensor memory in V8]
//! V8 sees a `Tensor` object as a few bytes; the storage behind it lives in
//! Rust. Each wrapper therefore reports its tensor's bytes to V8
//! (`napi_adjust_external_memory`) when it is made and takes them back when
//! it is finalized or disposed, so a loop that drops large tensors makes V8
//! collect as often as their real size asks. `dispose()` (and
//! `Symbol.dispose`, for `using`) frees the storage at once; a disposed
//! tensor throws on use.

use crate::errors::{guarded, OrThrow};
use crate::js::{Js, Raw};
use ferrotorch_core::{DType, Scalar, Tensor as Core};
use napi::bindgen_prelude::{ObjectFinalize, ToNapiValue, TypeTag};
use napi::check_status;
use napi::{sys, Env};
use napi_derive::napi;

/// A tensor (`torch.Tensor`): an n-dimensional array over shared, strided
/// storage, with autograd. Made by the creation functions and by ops.
#[napi(custom_finalize)]
pub struct Tensor {
    pub(crate) t: Option<Core>,
    bytes: i64,
}

impl ObjectFinalize for Tensor {
    fn finalize(self, env: Env) -> napi::Result<()> {
        if self.bytes != 0 {
            env.adjust_external_memory(-self.bytes)?;
        }
        Ok(())
    }
}

/// A new JavaScript `Tensor` for `t` (Note [Tensor memory in V8]).
pub(crate) fn wrap(env: sys::napi_env, t: Core) -> napi::Result<sys::napi_value> {
    let bytes = (t.numel() * t.element_size()) as i64;
    if bytes != 0 {
        let mut total = 0i64;
        // SAFETY: env is the live environment of the current call.
        unsafe { sys::napi_adjust_external_memory(env, bytes, &mut total) };
    }
    // SAFETY: as above; the class is registered at module load.
    unsafe { Tensor::to_napi_value(env, Tensor { t: Some(t), bytes }) }
}

/// The core tensor of a JavaScript value that is a `Tensor`, or `None`:
/// the class's N-API type tag is checked before the object is unwrapped,
/// so no other object is ever read as a tensor.
pub(crate) fn unwrap(env: sys::napi_env, v: sys::napi_value) -> napi::Result<Option<Core>> {
    if crate::js::Js(env).type_of(v)? != sys::ValueType::napi_object {
        return Ok(None);
    }
    unwrap_object(env, v)
}

/// [`unwrap`] for a value already known to be an object (the type-tag
/// check throws on `null` and `undefined`).
pub(crate) fn unwrap_object(env: sys::napi_env, v: sys::napi_value) -> napi::Result<Option<Core>> {
    let tag = <Tensor as TypeTag>::type_tag();
    let mut tagged = false;
    // SAFETY: env and v are live for the call; the out-pointer is valid.
    let s = unsafe { sys::napi_check_object_type_tag(env, v, &tag, &mut tagged) };
    if s != sys::Status::napi_ok || !tagged {
        return Ok(None);
    }
    let mut p: *mut std::ffi::c_void = std::ptr::null_mut();
    // SAFETY: as above.
    check_status!(unsafe { sys::napi_unwrap(env, v, &mut p) })?;
    // SAFETY: an object with Tensor's type tag wraps a live `Tensor`,
    // which is finalized only after the object is collected; only the
    // JavaScript thread touches it.
    let t = unsafe { &*(p as *const Tensor) };
    t.get(env).cloned().map(Some)
}

fn dtype_name(d: DType) -> &'static str {
    d.name()
}

impl Tensor {
    /// The core tensor, or a thrown error once disposed.
    pub(crate) fn get(&self, env: sys::napi_env) -> napi::Result<&Core> {
        self.t.as_ref().ok_or_else(|| {
            crate::errors::throw(
                env,
                ferrotorch_core::Error::new(
                    ferrotorch_core::ErrorKind::Runtime,
                    "Tensor: used after dispose()",
                ),
            )
        })
    }
}

fn scalar_value(js: Js, s: Scalar) -> napi::Result<sys::napi_value> {
    match s {
        Scalar::Bool(b) => js.boolean(b),
        Scalar::Int(i) => js.number(i as f64),
        Scalar::Float(f) => js.number(f),
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

#[napi]
impl Tensor {
    /// The sizes (`t.shape`), as an array of numbers.
    #[napi(getter)]
    pub fn shape(&self, env: Env) -> napi::Result<Vec<u32>> {
        Ok(self
            .get(env.raw())?
            .shape()
            .iter()
            .map(|&s| s as u32)
            .collect())
    }

    /// The element type's name: `float32`, `int64`, `bool`, ...
    #[napi(getter)]
    pub fn dtype(&self, env: Env) -> napi::Result<&'static str> {
        Ok(dtype_name(self.get(env.raw())?.dtype()))
    }

    /// The device: `cpu`.
    #[napi(getter)]
    pub fn device(&self, env: Env) -> napi::Result<String> {
        Ok(self.get(env.raw())?.device().to_string())
    }

    /// The number of dimensions.
    #[napi(getter)]
    pub fn ndim(&self, env: Env) -> napi::Result<u32> {
        Ok(self.get(env.raw())?.dim() as u32)
    }

    /// Whether autograd records ops on it (`t.requires_grad`).
    #[napi(getter)]
    pub fn requires_grad(&self, env: Env) -> napi::Result<bool> {
        Ok(self.get(env.raw())?.requires_grad())
    }

    /// Set `requires_grad` (only on leaves, as in torch).
    #[napi(setter)]
    pub fn set_requires_grad(&self, env: Env, value: bool) -> napi::Result<()> {
        let t = self.get(env.raw())?;
        t.requires_grad_(value).or_throw(env.raw()).map(|_| ())
    }

    /// Whether it is a leaf of the autograd graph.
    #[napi(getter)]
    pub fn is_leaf(&self, env: Env) -> napi::Result<bool> {
        Ok(self.get(env.raw())?.is_leaf())
    }

    /// Its accumulated gradient (`t.grad`), or `null`.
    #[napi(getter, ts_return_type = "Tensor | null")]
    pub fn grad(&self, env: Env) -> napi::Result<Raw> {
        let e = env.raw();
        match self.get(e)?.grad() {
            Some(g) => wrap(e, g).map(Raw),
            None => Js(e).null().map(Raw),
        }
    }

    /// Set or clear the gradient.
    #[napi(setter, ts_args_type = "value: Tensor | null")]
    pub fn set_grad(&self, env: Env, value: Raw) -> napi::Result<()> {
        let e = env.raw();
        let g = unwrap(e, value.0)?;
        self.get(e)?.set_grad(g).or_throw(e)
    }

    /// The number of elements.
    #[napi]
    pub fn numel(&self, env: Env) -> napi::Result<f64> {
        Ok(self.get(env.raw())?.numel() as f64)
    }

    /// The number of dimensions (`t.dim()`).
    #[napi]
    pub fn dim(&self, env: Env) -> napi::Result<u32> {
        self.ndim(env)
    }

    /// The strides, in elements.
    #[napi]
    pub fn stride(&self, env: Env) -> napi::Result<Vec<u32>> {
        Ok(self
            .get(env.raw())?
            .stride()
            .iter()
            .map(|&s| s as u32)
            .collect())
    }

    /// Whether its elements are laid out contiguously in row-major order.
    #[napi]
    pub fn is_contiguous(&self, env: Env) -> napi::Result<bool> {
        Ok(self.get(env.raw())?.is_contiguous())
    }

    /// Printed as torch prints it: `tensor([1., 2.])`.
    #[napi(js_name = "toString")]
    pub fn to_js_string(&self, env: Env) -> napi::Result<String> {
        Ok(self.get(env.raw())?.to_string())
    }

    /// The value of a one-element tensor (`t.item()`): a number, or a
    /// boolean for `bool`.
    #[napi(ts_return_type = "number | boolean")]
    pub fn item(&self, env: Env) -> napi::Result<Raw> {
        let e = env.raw();
        let t = self.get(e)?;
        let s = guarded(e, "item", || t.item())?;
        scalar_value(Js(e), s).map(Raw)
    }

    /// The elements as nested arrays (`t.tolist()`): numbers (int64 values
    /// beyond 2^53 lose precision; `data()` gives them exactly) or booleans.
    #[napi(ts_return_type = "any")]
    pub fn to_array(&self, env: Env) -> napi::Result<Raw> {
        let e = env.raw();
        let js = Js(e);
        let t = self.get(e)?;
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

    /// Backward from this tensor (`t.backward(gradient, {retainGraph,
    /// createGraph})`).
    #[napi(
        ts_args_type = "gradient?: Tensor | null, options?: { retainGraph?: boolean, createGraph?: boolean }"
    )]
    pub fn backward(
        &self,
        env: Env,
        gradient: Option<Raw>,
        options: Option<BackwardOptions>,
    ) -> napi::Result<()> {
        let e = env.raw();
        let t = self.get(e)?.clone();
        let g = match gradient {
            Some(v) => unwrap(e, v.0)?,
            None => None,
        };
        let o = options.unwrap_or_default();
        guarded(e, "backward", || {
            t.backward_with(g.as_ref(), o.retain_graph, o.create_graph.unwrap_or(false))
        })
    }

    /// A tensor sharing the storage, outside autograd (`t.detach()`).
    #[napi(ts_return_type = "Tensor")]
    pub fn detach(&self, env: Env) -> napi::Result<Raw> {
        let e = env.raw();
        let d = self.get(e)?.detach();
        wrap(e, d).map(Raw)
    }

    /// Free the tensor's memory now (Note [Tensor memory in V8]); later
    /// use throws. Disposing twice does nothing.
    #[napi]
    pub fn dispose(&mut self, env: Env) -> napi::Result<()> {
        if self.t.take().is_some() && self.bytes != 0 {
            env.adjust_external_memory(-self.bytes)?;
            self.bytes = 0;
        }
        Ok(())
    }

    /// Whether `dispose()` was called.
    #[napi(getter)]
    pub fn is_disposed(&self) -> bool {
        self.t.is_none()
    }
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

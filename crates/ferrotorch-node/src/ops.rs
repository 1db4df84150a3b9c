//! Every dispatcher op, callable from JavaScript: the road the generated
//! functions and `Tensor` methods of `lib/ops.js` take (Note [One binding
//! layer] in the core).

use crate::convert::{from_ivalue, to_ivalue, to_kwargs};
use crate::errors::{guarded, type_error};
use crate::js::{Js, Raw};
use crate::tensor::unwrap;
use ferrotorch_core::dispatch::binding::{binding_ops, BindingOp};
use ferrotorch_core::dispatch::{IValue, OpHandle};
use napi::{check_status, sys, Env};
use napi_derive::napi;
use std::sync::OnceLock;

/// The ops by id (the index into this list, which `_bindingOps` gives
/// out), each with its static handle; read once, so ids stay the same for
/// the process's life.
fn ops() -> &'static [(BindingOp, &'static OpHandle)] {
    static OPS: OnceLock<Vec<(BindingOp, &'static OpHandle)>> = OnceLock::new();
    OPS.get_or_init(|| {
        binding_ops()
            .into_iter()
            .map(|o| {
                let h = o.handle();
                (o, h)
            })
            .collect()
    })
}

/// One op as the JavaScript layer generates it.
#[napi(object)]
pub struct OpInfo {
    /// The id `_call` takes.
    pub id: u32,
    /// torch's name (`log_softmax`).
    pub name: String,
    /// Also a `Tensor` method.
    pub is_method: bool,
    /// Writes and returns `self`: the call returns the object it was given.
    pub writes_self: bool,
    /// The position of a trailing size list that may be given as numbers.
    pub vararg_sizes: Option<u32>,
    /// A creation op: takes `requiresGrad`.
    pub creation: bool,
    /// The overloads' schemas, for documentation.
    pub schemas: Vec<String>,
    /// The overloads' arguments and result types, for declarations.
    pub overloads: Vec<OverloadInfo>,
    /// The result names of a multi-result overload (`values`, `indices`).
    pub return_names: Vec<String>,
}

/// One argument of an overload.
#[napi(object)]
pub struct ArgInfo {
    /// Its name in the schema (`self`, `dim`).
    pub name: String,
    /// Its schema type (`Tensor`, `int[1]?`, `Scalar`).
    pub r#type: String,
    /// It has a default: it may be left out.
    pub has_default: bool,
    /// Declared after `*`: only by name, in the options object.
    pub kwarg_only: bool,
}

/// One overload's signature.
#[napi(object)]
pub struct OverloadInfo {
    /// The arguments in order.
    pub args: Vec<ArgInfo>,
    /// The result types.
    pub returns: Vec<String>,
}

fn info(id: usize, o: &BindingOp) -> OpInfo {
    let return_names = o
        .overloads
        .iter()
        .find(|s| s.return_names.len() > 1 && s.return_names.iter().all(Option::is_some))
        .map(|s| s.return_names.iter().flatten().cloned().collect())
        .unwrap_or_default();
    OpInfo {
        id: id as u32,
        name: o.name.clone(),
        is_method: o.is_method,
        writes_self: o.writes_self,
        vararg_sizes: o.vararg_sizes.map(|v| v as u32),
        creation: o.creation,
        schemas: o.overloads.iter().map(|s| s.to_string()).collect(),
        overloads: o
            .overloads
            .iter()
            .map(|s| OverloadInfo {
                args: s
                    .args
                    .iter()
                    .map(|a| ArgInfo {
                        name: a.name.clone(),
                        r#type: a.ty.to_string(),
                        has_default: a.default.is_some(),
                        kwarg_only: a.kwarg_only,
                    })
                    .collect(),
                returns: s.returns.iter().map(|t| t.to_string()).collect(),
            })
            .collect(),
        return_names,
    }
}

/// Every op, for `lib/ops.js` to generate functions and methods from.
#[napi(js_name = "_bindingOps")]
pub fn binding_ops_js() -> Vec<OpInfo> {
    ops()
        .iter()
        .enumerate()
        .map(|(i, (o, _))| info(i, o))
        .collect()
}

/// A call's converted arguments: positional, then keyword.
type CallArgs = (Vec<IValue>, Vec<(String, IValue)>);

/// A tensor argument given as its slot index (`self`, or a positional
/// argument whose bit is set in the call's mask).
fn tensor_arg(js: Js, v: sys::napi_value) -> napi::Result<IValue> {
    match unwrap(js.0, v)? {
        Some(t) => Ok(IValue::Tensor(t)),
        None => Err(type_error(js.0, "expected a Tensor: not a live tensor")),
    }
}

/// The arguments of a call: `self` (a slot index, or `undefined` for a
/// function call), the positional values (those whose bit is set in
/// `mask` given as slot indices) and the keyword `kwargs` object (Note
/// [JavaScript arguments]).
fn arguments(
    js: Js,
    this: sys::napi_value,
    mask: u32,
    args: &[sys::napi_value],
    kwargs: sys::napi_value,
) -> napi::Result<CallArgs> {
    let mut pos: Vec<IValue> = Vec::with_capacity(args.len() + 1);
    if js.type_of(this)? != sys::ValueType::napi_undefined {
        pos.push(tensor_arg(js, this)?);
    }
    for (i, &a) in args.iter().enumerate() {
        pos.push(if mask & (1 << i) != 0 {
            tensor_arg(js, a)?
        } else {
            to_ivalue(js, a)?
        });
    }
    let kw = if js.type_of(kwargs)? == sys::ValueType::napi_object {
        to_kwargs(js, kwargs)?
    } else {
        Vec::new()
    };
    Ok((pos, kw))
}

/// The most positional arguments the op-call path takes (torch's ops have
/// fewer; more is a TypeError).
const MAX_ARGS: usize = 16;

/// The op-call path's fixed arguments: id, self, kwargs, out, mask.
const FIXED: usize = 5;

fn call_op(env: sys::napi_env, argv: &[sys::napi_value]) -> napi::Result<sys::napi_value> {
    let js = Js(env);
    crate::create::drain_pending();
    let mut id = 0u32;
    let mut mask = 0u32;
    // SAFETY: env and argv[0], argv[4] are live for the call.
    if unsafe { sys::napi_get_value_uint32(env, argv[0], &mut id) } != sys::Status::napi_ok
        || unsafe { sys::napi_get_value_uint32(env, argv[4], &mut mask) } != sys::Status::napi_ok
    {
        return Err(type_error(
            env,
            "_call(): the op id and mask must be numbers",
        ));
    }
    let Some((op, handle)) = ops().get(id as usize) else {
        return Err(type_error(env, format!("no op with id {id}")));
    };
    let (pos, kw) = arguments(js, argv[1], mask, &argv[FIXED..], argv[2])?;
    let out = guarded(env, &op.name, || {
        let kwr: Vec<(&str, IValue)> = kw.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
        handle.call(&pos, &kwr)
    })?;
    match out {
        // the common case: the slot of `out`, a fresh Tensor
        IValue::Tensor(t) => {
            let slot = crate::tensor::adopt(env, argv[3], t)?;
            js.number(slot as f64)
        }
        other => {
            let v = from_ivalue(js, other)?;
            js.array_of(&[v])
        }
    }
}

/// `call(id, self, kwargs, out, mask, ...args)`, as a raw N-API callback.
///
/// # Note [The op call path]
/// Every generated function and method ends here, so it is written
/// against N-API directly: napi-rs's generated glue (argument scopes,
/// borrow tracking) cost as much as a 1-element `add` itself. It reads
/// its arguments in one call (positional ones as separate JavaScript
/// arguments: no array to build or walk), tensors as their slot indices
/// (`self`, and the arguments whose bit is set in `mask`: a number is
/// otherwise a scalar), runs the op under the shared panic guard, and
/// puts a single tensor result in a new slot owned by `out`, a fresh
/// `Tensor` that `lib/ops.js` made, returning the slot's index (Note
/// [Tensor handles]); any other result comes back as a one-element array.
/// Errors are thrown as Note [Errors in Node] says; nothing unwinds out of
/// it.
unsafe extern "C" fn call_raw(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> sys::napi_value {
    let run = || -> napi::Result<sys::napi_value> {
        let mut argc = MAX_ARGS + FIXED;
        let mut argv = [std::ptr::null_mut(); MAX_ARGS + FIXED];
        // SAFETY: argv holds argc slots; N-API fills missing ones with
        // `undefined` and sets argc to the number given.
        check_status!(unsafe {
            sys::napi_get_cb_info(
                env,
                info,
                &mut argc,
                argv.as_mut_ptr(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        })?;
        if argc > MAX_ARGS + FIXED {
            return Err(type_error(
                env,
                format!("an op takes at most {MAX_ARGS} positional arguments"),
            ));
        }
        call_op(env, &argv[..argc.max(FIXED)])
    };
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)) {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => {
            if e.status != napi::Status::PendingException {
                crate::errors::throw(
                    env,
                    ferrotorch_core::Error::new(
                        ferrotorch_core::ErrorKind::Runtime,
                        e.reason.clone(),
                    ),
                );
            }
            std::ptr::null_mut()
        }
        Err(_) => {
            crate::errors::throw(
                env,
                ferrotorch_core::Error::new(
                    ferrotorch_core::ErrorKind::Runtime,
                    "internal error in _call (please report this bug)",
                ),
            );
            std::ptr::null_mut()
        }
    }
}

/// The op-call function `lib/ops.js` uses (Note [The op call path]):
/// `call(id, self, kwargs, out, mask, ...args)`, tensors in as slot
/// indices, a single tensor result out as its slot index.
#[napi(
    js_name = "_opCaller",
    ts_return_type = "(id: number, self: unknown, kwargs: object | undefined, out: object, mask: number, ...args: unknown[]) => any"
)]
pub fn op_caller(env: Env) -> napi::Result<Raw> {
    let mut f = std::ptr::null_mut();
    // SAFETY: env is live; the name is NUL-terminated.
    check_status!(unsafe {
        sys::napi_create_function(
            env.raw(),
            c"_call".as_ptr(),
            5,
            Some(call_raw),
            std::ptr::null_mut(),
            &mut f,
        )
    })?;
    Ok(Raw(f))
}

/// Call an op by its name (`add`, `add.Tensor`, a custom op's
/// `ns::name`): the slow road, one name lookup per call, for ops the
/// generated functions do not cover (`ops.call` in `lib/ops.js`).
#[napi(
    js_name = "_callByName",
    ts_args_type = "name: string, args: unknown[], kwargs?: object",
    ts_return_type = "any"
)]
pub fn call_by_name(env: Env, name: String, args: Raw, kwargs: Option<Raw>) -> napi::Result<Raw> {
    let e = env.raw();
    let js = Js(e);
    let undefined = js.undefined()?;
    let values = (0..js.array_len(args.0)?)
        .map(|i| js.element(args.0, i))
        .collect::<napi::Result<Vec<_>>>()?;
    let (pos, kw) = arguments(js, undefined, 0, &values, kwargs.map_or(undefined, |k| k.0))?;
    let out = guarded(e, &name, || {
        let kwr: Vec<(&str, IValue)> = kw.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
        ferrotorch_core::dispatch::call(&name, &pos, &kwr)
    })?;
    from_ivalue(js, out).map(Raw)
}

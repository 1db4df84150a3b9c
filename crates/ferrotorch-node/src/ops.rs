//! Every dispatcher op, callable from JavaScript: the road the generated
//! functions and `Tensor` methods of `lib/ops.js` take (Note [One binding
//! layer] in the core).

use crate::convert::{from_ivalue, to_ivalue, to_kwargs};
use crate::errors::{guarded, type_error};
use crate::js::{Js, Raw};
use ferrotorch_core::dispatch::binding::{binding_ops, BindingOp};
use ferrotorch_core::dispatch::{IValue, OpHandle};
use napi::{sys, Env};
use napi_derive::napi;
use std::sync::OnceLock;

/// The ops by id: the index into this list, given out by `_bindingOps`.
fn handles() -> &'static Vec<(&'static OpHandle, String)> {
    static H: OnceLock<Vec<(&'static OpHandle, String)>> = OnceLock::new();
    H.get_or_init(|| {
        binding_ops()
            .iter()
            .map(|o| (o.handle(), o.name.clone()))
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
    let _ = handles();
    binding_ops()
        .iter()
        .enumerate()
        .map(|(i, o)| info(i, o))
        .collect()
}

/// Call op `id` with `self` (a `Tensor`, or `undefined` for a function
/// call), positional `args` and keyword `kwargs` (Note [JavaScript
/// arguments]).
#[napi(
    js_name = "_call",
    ts_args_type = "id: number, self: Tensor | undefined, args: unknown[], kwargs?: object",
    ts_return_type = "any"
)]
pub fn call(env: Env, id: u32, this: Raw, args: Raw, kwargs: Option<Raw>) -> napi::Result<Raw> {
    let e = env.raw();
    let js = Js(e);
    let Some((handle, name)) = handles().get(id as usize) else {
        return Err(type_error(e, format!("no op with id {id}")));
    };
    let n = js.array_len(args.0)?;
    let mut pos: Vec<IValue> = Vec::with_capacity(n as usize + 1);
    if js.type_of(this.0)? != sys::ValueType::napi_undefined {
        pos.push(to_ivalue(js, this.0)?);
    }
    for i in 0..n {
        pos.push(to_ivalue(js, js.element(args.0, i)?)?);
    }
    let kw = match kwargs {
        Some(k) if js.type_of(k.0)? == sys::ValueType::napi_object => to_kwargs(js, k.0)?,
        _ => Vec::new(),
    };
    let out = guarded(e, name, || {
        let kwr: Vec<(&str, IValue)> = kw.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
        handle.call(&pos, &kwr)
    })?;
    from_ivalue(js, out).map(Raw)
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
    let n = js.array_len(args.0)?;
    let mut pos: Vec<IValue> = Vec::with_capacity(n as usize);
    for i in 0..n {
        pos.push(to_ivalue(js, js.element(args.0, i)?)?);
    }
    let kw = match kwargs {
        Some(k) if js.type_of(k.0)? == sys::ValueType::napi_object => to_kwargs(js, k.0)?,
        _ => Vec::new(),
    };
    let out = guarded(e, &name, || {
        let kwr: Vec<(&str, IValue)> = kw.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
        ferrotorch_core::dispatch::call(&name, &pos, &kwr)
    })?;
    from_ivalue(js, out).map(Raw)
}

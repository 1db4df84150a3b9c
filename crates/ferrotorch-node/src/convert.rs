//! JavaScript values to boxed op arguments ([`IValue`]) and back.
//!
//! # Note [JavaScript arguments]
//! JavaScript has one number type, so an integral number is an `int` and
//! any other a `float` (`t.mul(2)` and `t.mul(2.0)` are the same call; the
//! schema binder widens an int where a float is declared). A BigInt is an
//! `int` (checked to fit int64); a string where a dtype is declared names
//! it (`{dtype: 'float64'}`); `null` and `undefined` are `None`; an array
//! is a list by its elements, as torch's Python parser reads lists; a
//! `Tensor` is a tensor. Option keys may be camelCase (`requiresGrad`,
//! `keepDim` is not torch's: `keepdim`); they are matched as snake_case.

use crate::errors::type_error;
use crate::js::Js;
use crate::tensor::{unwrap_typed, wrap};
use ferrotorch_core::dispatch::IValue;
use napi::sys;
use napi::sys::ValueType as V;

/// The largest integer a JavaScript number holds exactly.
const MAX_SAFE: f64 = 9007199254740991.0;

/// Convert one JavaScript argument.
pub(crate) fn to_ivalue(js: Js, v: sys::napi_value) -> napi::Result<IValue> {
    match js.type_of(v)? {
        V::napi_undefined | V::napi_null => Ok(IValue::None),
        V::napi_boolean => Ok(IValue::Bool(js.bool_of(v)?)),
        V::napi_number => {
            let x = js.f64_of(v)?;
            Ok(if x.fract() == 0.0 && x.abs() <= MAX_SAFE {
                IValue::Int(x as i64)
            } else {
                IValue::Float(x)
            })
        }
        V::napi_bigint => {
            let (i, lossless) = js.bigint_of(v)?;
            if !lossless {
                return Err(type_error(js.0, "a BigInt argument does not fit in int64"));
            }
            Ok(IValue::Int(i))
        }
        V::napi_string => Ok(IValue::Str(js.string_of(v)?)),
        V::napi_external => Err(type_error(
            js.0,
            "unsupported argument: an External that is not a Tensor",
        )),
        V::napi_object => {
            // an array is never a tensor: no `_h` lookup for size lists
            if js.is_array(v)? {
                let n = js.array_len(v)?;
                let mut items = Vec::with_capacity(n as usize);
                for i in 0..n {
                    let e = js.element(v, i)?;
                    if js.type_of(e)? == V::napi_object && js.is_array(e)? {
                        return Err(type_error(
                            js.0,
                            "a nested array is not an argument; make a tensor with tensor()",
                        ));
                    }
                    items.push(to_ivalue(js, e)?);
                }
                return list(js, items);
            }
            if let Some(t) = unwrap_typed(js.0, v, V::napi_object)? {
                return Ok(IValue::Tensor(t));
            }
            if js.is_typedarray(v)? {
                return Err(type_error(
                    js.0,
                    "a TypedArray is not an argument; make a tensor with fromTypedArray(array, shape)",
                ));
            }
            Err(type_error(
                js.0,
                "unsupported argument: an object that is not a Tensor",
            ))
        }
        other => Err(type_error(
            js.0,
            format!(
                "unsupported argument of JavaScript type {}",
                type_name(other)
            ),
        )),
    }
}

fn type_name(t: i32) -> &'static str {
    match t {
        V::napi_symbol => "symbol",
        V::napi_function => "function",
        V::napi_external => "external",
        _ => "unknown",
    }
}

fn list(js: Js, items: Vec<IValue>) -> napi::Result<IValue> {
    ferrotorch_core::dispatch::binding::list_value(items)
        .ok_or_else(|| type_error(js.0, "unsupported array argument: a mix of element types"))
}

/// `requiresGrad` → `requires_grad` (Note [JavaScript arguments]).
pub(crate) fn snake_case(key: &str) -> String {
    let mut s = String::with_capacity(key.len() + 4);
    for c in key.chars() {
        if c.is_ascii_uppercase() {
            s.push('_');
            s.push(c.to_ascii_lowercase());
        } else {
            s.push(c);
        }
    }
    s
}

/// An options object's entries as keyword arguments.
pub(crate) fn to_kwargs(js: Js, obj: sys::napi_value) -> napi::Result<Vec<(String, IValue)>> {
    let keys = js.property_names(obj)?;
    let n = js.array_len(keys)?;
    let mut out = Vec::with_capacity(n as usize);
    for i in 0..n {
        let k = js.element(keys, i)?;
        let v = js.property(obj, k)?;
        if js.type_of(v)? == V::napi_undefined {
            continue; // `{dim: undefined}` means "not given", as in JS APIs
        }
        out.push((snake_case(&js.string_of(k)?), to_ivalue(js, v)?));
    }
    Ok(out)
}

/// A JavaScript array of converted values.
pub(crate) fn array(
    js: Js,
    vals: impl Iterator<Item = napi::Result<sys::napi_value>>,
) -> napi::Result<sys::napi_value> {
    js.array_of(&vals.collect::<napi::Result<Vec<_>>>()?)
}

/// Convert a result back, tensors as new `Tensor` objects (the op path
/// makes a single tensor result itself: Note [The op call path]).
pub(crate) fn from_ivalue(js: Js, v: IValue) -> napi::Result<sys::napi_value> {
    let tensor = |t| wrap(js.0, t);

    match v {
        IValue::None => js.null(),
        IValue::Tensor(t) | IValue::SymInt(t) | IValue::SymScalar(t) => tensor(t),
        IValue::Bool(b) => js.boolean(b),
        IValue::Int(i) => js.number(i as f64),
        IValue::Float(f) => js.number(f),
        IValue::Complex(re, im) => array(js, [js.number(re), js.number(im)].into_iter()),
        IValue::Str(s) => js.string(&s),
        IValue::DType(d) => js.string(d.name()),
        IValue::IntList(l) => array(js, l.into_iter().map(|i| js.number(i as f64))),
        IValue::FloatList(l) => array(js, l.into_iter().map(|f| js.number(f))),
        IValue::BoolList(l) => array(js, l.into_iter().map(|b| js.boolean(b))),
        IValue::TensorList(l) => array(js, l.into_iter().map(tensor)),
        IValue::OptTensorList(l) => array(
            js,
            l.into_iter().map(|t| match t {
                Some(t) => tensor(t),
                None => js.null(),
            }),
        ),
        IValue::Tuple(items) | IValue::SymIntList(items) => {
            array(js, items.into_iter().map(|v| from_ivalue(js, v)))
        }
        IValue::Generator(_) => Err(type_error(
            js.0,
            "a Generator result has no JavaScript form",
        )),
        IValue::Object(o) => Err(type_error(
            js.0,
            format!(
                "a custom class object ({}) has no JavaScript form yet",
                o.class().name()
            ),
        )),
    }
}

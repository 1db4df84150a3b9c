//! `FtValue`: the C mirror of the dispatcher's boxed values, for calling
//! any op by name.
//!
//! # Note [Boxed values in C]
//! An argument is an `FtValue` whose `tag` says which field holds it; the
//! caller owns everything it points to and keeps it valid for the call.
//! Lists are a pointer and a length (`int64_t`, `double`, `uint8_t` for
//! bools, `FtTensor*` for tensors; null elements of an optional-tensor list
//! mean `None`). A result is an `FtValue` too: a tensor is a new handle the
//! caller frees (with its size in bytes in `len`); an op returning a tuple gives one result per element; an
//! op returning a list of tensors (`chunk`, `unbind`) gives one result per
//! tensor; an int or float list points into a per-thread buffer that stays
//! valid until the next call on this thread, as `ft_last_error()` does.

use crate::status::{Fail, FtStatus, Res};
use crate::tensor::{code_of, dtype_of, out_tensor, slice, tensor, FtTensor};
use ferrotorch_core::dispatch::IValue;
use ferrotorch_core::Tensor;
use std::cell::RefCell;
use std::ffi::{c_char, c_void, CStr, CString};

/// Which field of an [`FtValue`] holds the value.
#[repr(i32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FtTag {
    /// `None` (an omitted optional).
    FtTagNone = 0,
    /// `tensor`.
    FtTagTensor = 1,
    /// `i`.
    FtTagInt = 2,
    /// `f`.
    FtTagFloat = 3,
    /// `i` (0 or 1).
    FtTagBool = 4,
    /// `str` (UTF-8, NUL-terminated).
    FtTagStr = 5,
    /// `i` (an `FtDType` code).
    FtTagDtype = 6,
    /// `list` of `len` `int64_t`.
    FtTagIntList = 7,
    /// `list` of `len` `double`.
    FtTagFloatList = 8,
    /// `list` of `len` `uint8_t` (0 or 1).
    FtTagBoolList = 9,
    /// `list` of `len` `FtTensor*`.
    FtTagTensorList = 10,
    /// `list` of `len` `FtTensor*`, null meaning `None`.
    FtTagOptTensorList = 11,
}

/// A boxed value (Note [Boxed values in C]).
#[repr(C)]
pub struct FtValue {
    /// Which field holds the value.
    pub tag: i32,
    /// An int, a bool (0/1) or a dtype code.
    pub i: i64,
    /// A float.
    pub f: f64,
    /// A tensor.
    pub tensor: *mut FtTensor,
    /// A list's elements.
    pub list: *const c_void,
    /// A list's length; for a tensor result, the tensor's size in bytes
    /// (a hint for a garbage-collected caller's memory accounting).
    pub len: usize,
    /// A string.
    pub str: *const c_char,
}

/// A keyword argument: `name=value`.
#[repr(C)]
pub struct FtKwarg {
    /// The argument's name in the op's schema (`alpha`, `keepdim`).
    pub name: *const c_char,
    /// Its value.
    pub value: FtValue,
}

impl FtValue {
    pub(crate) fn empty() -> FtValue {
        FtValue {
            tag: FtTag::FtTagNone as i32,
            i: 0,
            f: 0.0,
            tensor: std::ptr::null_mut(),
            list: std::ptr::null(),
            len: 0,
            str: std::ptr::null(),
        }
    }
}

/// A C string argument.
pub(crate) fn c_str<'a>(what: &str, s: *const c_char) -> Res<&'a str> {
    if s.is_null() {
        return Err(Fail::new(
            FtStatus::FtErrorNullHandle,
            format!("{what}: null string"),
        ));
    }
    // SAFETY: non-null; the caller promises a NUL-terminated string.
    unsafe { CStr::from_ptr(s) }.to_str().map_err(|_| {
        Fail::new(
            FtStatus::FtErrorValue,
            format!("{what}: the string is not valid UTF-8"),
        )
    })
}

/// The dispatcher's value for an argument.
pub(crate) fn to_ivalue(what: &str, v: &FtValue) -> Res<IValue> {
    let tensors = |opt: bool| -> Res<Vec<Option<Tensor>>> {
        slice(what, v.list as *const *const FtTensor, v.len)?
            .iter()
            .map(|&h| {
                if h.is_null() && opt {
                    Ok(None)
                } else {
                    tensor(what, h).map(|t| Some(t.clone()))
                }
            })
            .collect()
    };
    Ok(match v.tag {
        0 => IValue::None,
        1 => IValue::Tensor(tensor(what, v.tensor)?.clone()),
        2 => IValue::Int(v.i),
        3 => IValue::Float(v.f),
        4 => IValue::Bool(v.i != 0),
        5 => IValue::Str(c_str(what, v.str)?.to_string()),
        6 => IValue::DType(dtype_of(what, v.i as i32)?),
        7 => IValue::IntList(slice(what, v.list as *const i64, v.len)?.to_vec()),
        8 => IValue::FloatList(slice(what, v.list as *const f64, v.len)?.to_vec()),
        9 => IValue::BoolList(
            slice(what, v.list as *const u8, v.len)?
                .iter()
                .map(|&b| b != 0)
                .collect(),
        ),
        10 => IValue::TensorList(tensors(false)?.into_iter().flatten().collect()),
        11 => IValue::OptTensorList(tensors(true)?),
        t => {
            return Err(Fail::new(
                FtStatus::FtErrorType,
                format!("{what}: {t} is not an FtTag"),
            ))
        }
    })
}

thread_local! {
    /// Lists and strings returned by the last call (Note [Boxed values in C]).
    static RETURNED: RefCell<Vec<Returned>> = const { RefCell::new(Vec::new()) };
}

enum Returned {
    Ints(Vec<i64>),
    Floats(Vec<f64>),
    Bools(Vec<u8>),
    Str(CString),
}

/// A result flattened to the values the caller receives.
fn flatten(v: IValue, into: &mut Vec<IValue>) {
    match v {
        IValue::Tuple(items) => items.into_iter().for_each(|i| flatten(i, into)),
        IValue::TensorList(ts) => into.extend(ts.into_iter().map(IValue::Tensor)),
        other => into.push(other),
    }
}

/// Write an op's result into `results[0..capacity]`, the count into `n`.
/// Nothing is allocated unless everything fits.
pub(crate) fn write_results(
    what: &str,
    v: IValue,
    results: *mut FtValue,
    capacity: usize,
    n: *mut usize,
) -> Res<()> {
    let mut flat = Vec::new();
    flatten(v, &mut flat);
    if flat.len() > capacity || (!flat.is_empty() && results.is_null()) {
        return Err(Fail::new(
            FtStatus::FtErrorValue,
            format!(
                "{what}: the op returned {} values; the results array holds {capacity}",
                flat.len()
            ),
        ));
    }
    if n.is_null() {
        return Err(Fail::new(
            FtStatus::FtErrorNullHandle,
            format!("{what}: the result-count pointer is null"),
        ));
    }
    if let Some(bad) = flat.iter().find(|v| {
        !matches!(
            v,
            IValue::None
                | IValue::Tensor(_)
                | IValue::SymInt(_)
                | IValue::SymScalar(_)
                | IValue::Int(_)
                | IValue::Float(_)
                | IValue::Bool(_)
                | IValue::DType(_)
                | IValue::IntList(_)
                | IValue::FloatList(_)
                | IValue::BoolList(_)
                | IValue::Str(_)
        )
    }) {
        return Err(Fail::new(
            FtStatus::FtErrorNotImplemented,
            format!(
                "{what}: a result of type {} cannot cross the C ABI",
                bad.type_name()
            ),
        ));
    }
    RETURNED.with(|r| r.borrow_mut().clear());
    let count = flat.len();
    for (i, v) in flat.into_iter().enumerate() {
        let mut out = FtValue::empty();
        let keep = |r: Returned, out: &mut FtValue| {
            RETURNED.with(|buf| {
                let mut buf = buf.borrow_mut();
                buf.push(r);
                let (p, len) = match buf.last().expect("pushed") {
                    Returned::Ints(v) => (v.as_ptr() as *const c_void, v.len()),
                    Returned::Floats(v) => (v.as_ptr() as *const c_void, v.len()),
                    Returned::Bools(v) => (v.as_ptr() as *const c_void, v.len()),
                    Returned::Str(s) => (s.as_ptr() as *const c_void, s.as_bytes().len()),
                };
                out.list = p;
                out.len = len;
            });
        };
        match v {
            IValue::None => {}
            IValue::Tensor(t) | IValue::SymInt(t) | IValue::SymScalar(t) => {
                out.tag = FtTag::FtTagTensor as i32;
                out.len = t.numel() * t.dtype().size();
                out_tensor(what, &mut out.tensor, t)?;
            }
            IValue::Int(x) => {
                out.tag = FtTag::FtTagInt as i32;
                out.i = x;
            }
            IValue::Float(x) => {
                out.tag = FtTag::FtTagFloat as i32;
                out.f = x;
            }
            IValue::Bool(x) => {
                out.tag = FtTag::FtTagBool as i32;
                out.i = i64::from(x);
            }
            IValue::DType(d) => {
                out.tag = FtTag::FtTagDtype as i32;
                out.i = i64::from(code_of(d));
            }
            IValue::IntList(l) => {
                out.tag = FtTag::FtTagIntList as i32;
                keep(Returned::Ints(l), &mut out);
            }
            IValue::FloatList(l) => {
                out.tag = FtTag::FtTagFloatList as i32;
                keep(Returned::Floats(l), &mut out);
            }
            IValue::BoolList(l) => {
                out.tag = FtTag::FtTagBoolList as i32;
                keep(
                    Returned::Bools(l.into_iter().map(u8::from).collect()),
                    &mut out,
                );
            }
            IValue::Str(s) => {
                out.tag = FtTag::FtTagStr as i32;
                keep(Returned::Str(CString::new(s).unwrap_or_default()), &mut out);
                out.str = out.list as *const c_char;
                out.list = std::ptr::null();
            }
            _ => unreachable!("checked above"),
        }
        // SAFETY: i < count <= capacity slots, checked above.
        unsafe { results.add(i).write(out) };
    }
    // SAFETY: checked non-null above.
    unsafe { n.write(count) };
    Ok(())
}

//! Thin, checked wrappers over the raw N-API calls the hot paths use
//! (argument conversion, results, typed arrays): napi-rs's typed values
//! cost an allocation or a class lookup per value, these one call each.

use napi::bindgen_prelude::{FromNapiValue, ToNapiValue, TypeName};
use napi::{check_status, sys, ValueType};
use std::ptr;

/// A JavaScript value handed back to napi-rs as is.
pub struct Raw(pub sys::napi_value);

impl ToNapiValue for Raw {
    unsafe fn to_napi_value(_env: sys::napi_env, val: Raw) -> napi::Result<sys::napi_value> {
        Ok(val.0)
    }
}

impl FromNapiValue for Raw {
    unsafe fn from_napi_value(_env: sys::napi_env, v: sys::napi_value) -> napi::Result<Raw> {
        Ok(Raw(v))
    }
}

impl TypeName for Raw {
    fn type_name() -> &'static str {
        "unknown"
    }
    fn value_type() -> ValueType {
        ValueType::Unknown
    }
}

/// The environment of the current call.
#[derive(Clone, Copy)]
pub struct Js(pub sys::napi_env);

macro_rules! out {
    ($env:expr, $f:ident($($a:expr),*) -> $t:ty, $init:expr) => {{
        let mut r: $t = $init;
        // SAFETY: env is live for the call and the out-pointer is valid.
        check_status!(unsafe { sys::$f($env, $($a,)* &mut r) }, stringify!($f))?;
        Ok(r)
    }};
}

impl Js {
    /// The `typeof` of a value (`napi_valuetype`).
    pub fn type_of(self, v: sys::napi_value) -> napi::Result<i32> {
        out!(self.0, napi_typeof(v) -> i32, 0)
    }
    /// Whether a value is an Array.
    pub fn is_array(self, v: sys::napi_value) -> napi::Result<bool> {
        out!(self.0, napi_is_array(v) -> bool, false)
    }
    /// Whether a value is a TypedArray.
    pub fn is_typedarray(self, v: sys::napi_value) -> napi::Result<bool> {
        out!(self.0, napi_is_typedarray(v) -> bool, false)
    }
    /// An array's length.
    pub fn array_len(self, v: sys::napi_value) -> napi::Result<u32> {
        out!(self.0, napi_get_array_length(v) -> u32, 0)
    }
    /// An array's element `i`.
    pub fn element(self, v: sys::napi_value, i: u32) -> napi::Result<sys::napi_value> {
        out!(self.0, napi_get_element(v, i) -> sys::napi_value, ptr::null_mut())
    }
    /// A boolean's value.
    pub fn bool_of(self, v: sys::napi_value) -> napi::Result<bool> {
        out!(self.0, napi_get_value_bool(v) -> bool, false)
    }
    /// A number's value.
    pub fn f64_of(self, v: sys::napi_value) -> napi::Result<f64> {
        out!(self.0, napi_get_value_double(v) -> f64, 0.0)
    }
    /// A BigInt's value and whether it fit in an i64.
    pub fn bigint_of(self, v: sys::napi_value) -> napi::Result<(i64, bool)> {
        let mut r = 0i64;
        let mut lossless = false;
        // SAFETY: as in `out!`.
        check_status!(unsafe {
            sys::napi_get_value_bigint_int64(self.0, v, &mut r, &mut lossless)
        })?;
        Ok((r, lossless))
    }
    /// A string's value, as UTF-8.
    pub fn string_of(self, v: sys::napi_value) -> napi::Result<String> {
        let mut len = 0usize;
        // SAFETY: a null buffer asks for the length only.
        check_status!(unsafe {
            sys::napi_get_value_string_utf8(self.0, v, ptr::null_mut(), 0, &mut len)
        })?;
        let mut buf = vec![0u8; len + 1];
        // SAFETY: buf holds len + 1 bytes.
        check_status!(unsafe {
            sys::napi_get_value_string_utf8(self.0, v, buf.as_mut_ptr().cast(), len + 1, &mut len)
        })?;
        buf.truncate(len);
        String::from_utf8(buf).map_err(|e| napi::Error::from_reason(e.to_string()))
    }
    /// An object's enumerable own property names, as an array.
    pub fn property_names(self, v: sys::napi_value) -> napi::Result<sys::napi_value> {
        out!(self.0, napi_get_property_names(v) -> sys::napi_value, ptr::null_mut())
    }
    /// An object's property `key`.
    pub fn property(
        self,
        obj: sys::napi_value,
        key: sys::napi_value,
    ) -> napi::Result<sys::napi_value> {
        out!(self.0, napi_get_property(obj, key) -> sys::napi_value, ptr::null_mut())
    }
    /// `undefined`.
    pub fn undefined(self) -> napi::Result<sys::napi_value> {
        out!(self.0, napi_get_undefined() -> sys::napi_value, ptr::null_mut())
    }
    /// `null`.
    pub fn null(self) -> napi::Result<sys::napi_value> {
        out!(self.0, napi_get_null() -> sys::napi_value, ptr::null_mut())
    }
    /// A boolean.
    pub fn boolean(self, b: bool) -> napi::Result<sys::napi_value> {
        out!(self.0, napi_get_boolean(b) -> sys::napi_value, ptr::null_mut())
    }
    /// A number.
    pub fn number(self, x: f64) -> napi::Result<sys::napi_value> {
        out!(self.0, napi_create_double(x) -> sys::napi_value, ptr::null_mut())
    }
    /// A string.
    pub fn string(self, s: &str) -> napi::Result<sys::napi_value> {
        out!(self.0, napi_create_string_utf8(s.as_ptr().cast(), s.len() as isize) -> sys::napi_value, ptr::null_mut())
    }
    /// An empty array of length `len`.
    pub fn array(self, len: usize) -> napi::Result<sys::napi_value> {
        out!(self.0, napi_create_array_with_length(len) -> sys::napi_value, ptr::null_mut())
    }
    /// Set an array's element `i`.
    pub fn set_element(self, arr: sys::napi_value, i: u32, v: sys::napi_value) -> napi::Result<()> {
        // SAFETY: env and values are live for the call.
        check_status!(unsafe { sys::napi_set_element(self.0, arr, i, v) })
    }
    /// An array of the given values.
    pub fn array_of(self, items: &[sys::napi_value]) -> napi::Result<sys::napi_value> {
        let arr = self.array(items.len())?;
        for (i, v) in items.iter().enumerate() {
            self.set_element(arr, i as u32, *v)?;
        }
        Ok(arr)
    }
    /// A typed array's element type, length, data pointer and byte length
    /// of its buffer from its offset on.
    pub fn typedarray_info(self, v: sys::napi_value) -> napi::Result<(i32, usize, *mut u8)> {
        let mut ty = 0;
        let mut len = 0usize;
        let mut data: *mut std::ffi::c_void = ptr::null_mut();
        let mut buf: sys::napi_value = ptr::null_mut();
        let mut off = 0usize;
        // SAFETY: all out-pointers are valid.
        check_status!(unsafe {
            sys::napi_get_typedarray_info(
                self.0, v, &mut ty, &mut len, &mut data, &mut buf, &mut off,
            )
        })?;
        Ok((ty, len, data.cast()))
    }
}

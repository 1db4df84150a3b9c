//! Rust errors and panics become the JavaScript exceptions a Node user
//! expects.
//!
//! # Note [Errors in Node]
//! Every entry point that runs core code returns `napi::Result`; a core
//! [`Error`] becomes a thrown `TypeError` (wrong argument types), a
//! `RangeError` (out-of-range dimensions and indices) or an `Error`
//! (everything else), with the core's message, which names the op, the
//! shapes and the dtypes, and a `code` of `FERROTORCH_<KIND>`. Kernels run
//! under the shared panic guard (Note [One binding layer]), so a panic is an
//! `Error` naming the op and never unwinds into Node.

use ferrotorch_core::{Error, ErrorKind};
use napi::{sys, Status};
use std::ffi::CString;

/// The thrown exception's class for an error kind.
fn class(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::Type => "TypeError",
        ErrorKind::Index => "RangeError",
        _ => "Error",
    }
}

fn code(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::Runtime => "FERROTORCH_RUNTIME",
        ErrorKind::Index => "FERROTORCH_INDEX",
        ErrorKind::Value => "FERROTORCH_VALUE",
        ErrorKind::Type => "FERROTORCH_TYPE",
        ErrorKind::NotImplemented => "FERROTORCH_NOT_IMPLEMENTED",
        ErrorKind::Io => "FERROTORCH_IO",
        ErrorKind::Key => "FERROTORCH_KEY",
        ErrorKind::Assertion => "FERROTORCH_ASSERTION",
        ErrorKind::LinAlg => "FERROTORCH_LINALG",
    }
}

fn cstring(s: &str) -> CString {
    CString::new(s.replace('\0', "\\0")).expect("no interior NUL left")
}

/// Throw `e` as its JavaScript class and return the error napi-rs passes
/// up (an exception is then pending, so napi-rs throws nothing more).
pub(crate) fn throw(env: sys::napi_env, e: Error) -> napi::Error {
    let msg = cstring(e.message());
    let c = cstring(code(e.kind()));
    // SAFETY: env is the live environment of the current call; the strings
    // are NUL-terminated and outlive the calls.
    unsafe {
        match class(e.kind()) {
            "TypeError" => sys::napi_throw_type_error(env, c.as_ptr(), msg.as_ptr()),
            "RangeError" => sys::napi_throw_range_error(env, c.as_ptr(), msg.as_ptr()),
            _ => sys::napi_throw_error(env, c.as_ptr(), msg.as_ptr()),
        };
    }
    napi::Error::new(Status::PendingException, e.message().to_string())
}

/// A TypeError about a JavaScript argument.
pub(crate) fn type_error(env: sys::napi_env, msg: impl Into<String>) -> napi::Error {
    throw(env, Error::new(ErrorKind::Type, msg))
}

/// `Result<T, core Error>` to `napi::Result<T>`, throwing on the way.
pub(crate) trait OrThrow<T> {
    /// Throw the error (Note [Errors in Node]).
    fn or_throw(self, env: sys::napi_env) -> napi::Result<T>;
}

impl<T> OrThrow<T> for ferrotorch_core::Result<T> {
    fn or_throw(self, env: sys::napi_env) -> napi::Result<T> {
        self.map_err(|e| throw(env, e))
    }
}

/// Run core code under the shared panic guard and throw its error.
pub(crate) fn guarded<T>(
    env: sys::napi_env,
    what: &str,
    f: impl FnOnce() -> ferrotorch_core::Result<T>,
) -> napi::Result<T> {
    ferrotorch_core::dispatch::binding::guarded(what, f).or_throw(env)
}

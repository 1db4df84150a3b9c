//! Status codes, the per-thread error message, and the guard every entry
//! point runs in.
//!
//! # Note [The C boundary]
//! Every `ft_*` function that can fail returns an [`FtStatus`] (`FT_OK`,
//! 0, on success) and writes its results through out-pointers, which it
//! leaves untouched on failure. The failure's message (naming the op, the
//! shapes and the dtypes, as ferrotorch's errors do) is kept per thread and
//! read with `ft_last_error()`, as GoTorch's C layer returns an error
//! string. The body of every entry point runs inside [`entry`], which
//! catches panics (`FT_ERROR_INTERNAL`): no unwinding crosses into C, Go or
//! any other caller.

use ferrotorch_core::{Error, ErrorKind};
use std::cell::RefCell;
use std::ffi::{c_char, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// What an `ft_*` call returned: `FT_OK` or the class of its failure.
#[repr(i32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FtStatus {
    /// Success.
    FtOk = 0,
    /// torch's `RuntimeError`: shape mismatches, unsupported dtypes, state.
    FtErrorRuntime = 1,
    /// torch's `IndexError`: dimensions or indices out of range.
    FtErrorIndex = 2,
    /// torch's `ValueError`: an argument with an invalid value.
    FtErrorValue = 3,
    /// torch's `TypeError`: an argument of the wrong type.
    FtErrorType = 4,
    /// A valid request this build does not support.
    FtErrorNotImplemented = 5,
    /// A file could not be read or written.
    FtErrorIo = 6,
    /// A name that is not there (state dict keys, ops).
    FtErrorKey = 7,
    /// What torch raises as `AssertionError`.
    FtErrorAssertion = 8,
    /// A required handle or pointer argument was null.
    FtErrorNullHandle = 9,
    /// A handle that was already freed, or of another kind.
    FtErrorInvalidHandle = 10,
    /// A bug in ferrotorch (a caught panic); the message says where.
    FtErrorInternal = 11,
}

/// A failure on its way to the caller: the status and the message.
#[derive(Debug)]
pub struct Fail {
    pub(crate) status: FtStatus,
    pub(crate) msg: String,
}

impl Fail {
    /// A failure of `status` with `msg`.
    pub(crate) fn new(status: FtStatus, msg: impl Into<String>) -> Fail {
        Fail {
            status,
            msg: msg.into(),
        }
    }
}

impl From<Error> for Fail {
    fn from(e: Error) -> Fail {
        let status = match e.kind() {
            ErrorKind::Runtime => FtStatus::FtErrorRuntime,
            ErrorKind::Index => FtStatus::FtErrorIndex,
            ErrorKind::Value => FtStatus::FtErrorValue,
            ErrorKind::Type => FtStatus::FtErrorType,
            ErrorKind::NotImplemented => FtStatus::FtErrorNotImplemented,
            ErrorKind::Io => FtStatus::FtErrorIo,
            ErrorKind::Key => FtStatus::FtErrorKey,
            ErrorKind::Assertion => FtStatus::FtErrorAssertion,
            // torch.linalg.LinAlgError is a RuntimeError
            ErrorKind::LinAlg => FtStatus::FtErrorRuntime,
        };
        Fail::new(status, e.message())
    }
}

/// `Result` of an entry point's body.
pub type Res<T> = std::result::Result<T, Fail>;

thread_local! {
    static LAST: RefCell<CString> = RefCell::new(CString::default());
}

pub(crate) fn set_last(msg: &str) {
    let c = CString::new(msg.replace('\0', "\\0")).unwrap_or_default();
    LAST.with(|l| *l.borrow_mut() = c);
}

/// This thread's last error message.
pub(crate) fn last_message() -> String {
    LAST.with(|l| l.borrow().to_string_lossy().into_owned())
}

/// Run an entry point's body (Note [The C boundary]): its failure's
/// message becomes this thread's last error, and a panic becomes
/// `FT_ERROR_INTERNAL` naming `what`.
pub(crate) fn entry(what: &str, f: impl FnOnce() -> Res<()>) -> FtStatus {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => FtStatus::FtOk,
        Ok(Err(fail)) => {
            set_last(&fail.msg);
            fail.status
        }
        Err(payload) => {
            let detail = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            set_last(&format!(
                "internal error in {what}: {detail} (please report this bug)"
            ));
            FtStatus::FtErrorInternal
        }
    }
}

/// The message of the last failed `ft_*` call on this thread (empty if
/// none). The string stays valid until the next failing call on this
/// thread; copy it to keep it. Never null.
#[no_mangle]
pub extern "C" fn ft_last_error() -> *const c_char {
    LAST.with(|l| l.borrow().as_ptr())
}

/// Write `value` through the out-pointer `out` (checked for null).
pub(crate) fn put<T>(what: &str, out: *mut T, value: T) -> Res<()> {
    if out.is_null() {
        return Err(Fail::new(
            FtStatus::FtErrorNullHandle,
            format!("{what}: the output pointer is null"),
        ));
    }
    // SAFETY: non-null; the caller promises it points to writable memory
    // for a T (the header's contract for every out-pointer).
    unsafe { out.write(value) };
    Ok(())
}

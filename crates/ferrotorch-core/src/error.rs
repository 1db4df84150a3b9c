//! Errors returned by every fallible op.
//!
//! Like PyTorch's `TORCH_CHECK`, a user mistake becomes an [`Error`] whose
//! message names the op, the shapes and the dtypes. The [`ErrorKind`] says
//! which Python exception the bindings raise for it (RuntimeError,
//! IndexError, ...). Internal invariants use `debug_assert!`/`expect` instead.

use std::fmt;

/// Which exception PyTorch raises for this class of mistake.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// `RuntimeError`: shape mismatches, unsupported dtypes, invalid state.
    Runtime,
    /// `IndexError`: out-of-range dimensions and indices.
    Index,
    /// `ValueError`: an argument with an invalid value.
    Value,
    /// `TypeError`: an argument of the wrong type (boxed calls).
    Type,
    /// `NotImplementedError`: a valid request this build does not support.
    NotImplemented,
    /// I/O failure (files).
    Io,
    /// `KeyError`: a name that is not there (module and state dict keys).
    Key,
}

/// A user-facing error: the kind and a message naming op, shapes and dtypes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    msg: String,
}

impl Error {
    /// A new error of `kind` with `msg`.
    pub fn new(kind: ErrorKind, msg: impl Into<String>) -> Error {
        Error {
            kind,
            msg: msg.into(),
        }
    }

    /// The exception class this maps to.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The message, as PyTorch would print it.
    pub fn message(&self) -> &str {
        &self.msg
    }

    /// Prefix the message with context (e.g. the op that called a helper).
    pub fn context(mut self, ctx: impl fmt::Display) -> Error {
        self.msg = format!("{ctx}: {}", self.msg);
        self
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.msg)
    }
}

impl std::error::Error for Error {}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Error {
        Error::new(ErrorKind::Io, e.to_string())
    }
}

/// `Result<T, ferrotorch::Error>`.
pub type Result<T> = std::result::Result<T, Error>;

/// Return early with an [`Error`]: `bail!(Index, "select: index {i} out of range")`.
#[macro_export]
macro_rules! bail {
    ($kind:ident, $($arg:tt)*) => {
        return Err($crate::Error::new($crate::ErrorKind::$kind, format!($($arg)*)))
    };
}

/// Check a condition, failing with an [`Error`] like `TORCH_CHECK`.
#[macro_export]
macro_rules! ensure {
    ($cond:expr, $kind:ident, $($arg:tt)*) => {
        if !$cond {
            $crate::bail!($kind, $($arg)*);
        }
    };
}

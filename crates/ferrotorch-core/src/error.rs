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
    /// `AssertionError`: what PyTorch built without a feature raises when it
    /// is used ("Torch not compiled with CUDA enabled").
    Assertion,
    /// `torch.linalg.LinAlgError` (a `RuntimeError`): a matrix a
    /// factorization or solve cannot take (singular, not positive-definite).
    LinAlg,
}

/// A user-facing error: the kind and a message naming op, shapes and dtypes.
///
/// # Note [Foreign errors]
/// A binding's callback that runs inside the core (a Python hook, a custom
/// `autograd.Function.backward`, a dataset's `__getitem__`) may fail with an
/// error of its host language. The binding wraps it with
/// [`Error::with_payload`]; the core passes it up like any error, and the
/// binding takes the original back out at its boundary ([`Error::payload`]),
/// so a `KeyError` raised in a hook reaches the caller as that `KeyError`.
#[derive(Clone)]
pub struct Error {
    kind: ErrorKind,
    msg: String,
    payload: Option<std::sync::Arc<dyn std::any::Any + Send + Sync>>,
}

impl PartialEq for Error {
    fn eq(&self, other: &Error) -> bool {
        self.kind == other.kind && self.msg == other.msg
    }
}

impl Eq for Error {}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Error")
            .field("kind", &self.kind)
            .field("msg", &self.msg)
            .finish()
    }
}

impl Error {
    /// A new error of `kind` with `msg`.
    pub fn new(kind: ErrorKind, msg: impl Into<String>) -> Error {
        Error {
            kind,
            msg: msg.into(),
            payload: None,
        }
    }

    /// An error carrying a binding's own error value (Note [Foreign errors]).
    pub fn with_payload(
        kind: ErrorKind,
        msg: impl Into<String>,
        payload: impl std::any::Any + Send + Sync,
    ) -> Error {
        Error {
            kind,
            msg: msg.into(),
            payload: Some(std::sync::Arc::new(payload)),
        }
    }

    /// The binding's error value this error carries, if it is a `T`.
    pub fn payload<T: std::any::Any>(&self) -> Option<&T> {
        self.payload.as_ref()?.downcast_ref::<T>()
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

//! Op handles: an op looked up once, then called without a name lookup
//! or registry lock (`static ADD: OpHandle = OpHandle::new("add")`).

use super::{call_entries, resolve, IValue, OpEntry};
use crate::error::Result;
use std::sync::{Arc, OnceLock};

/// A static handle to an op (or, for a base name, its overloads),
/// resolved on first use.
pub struct OpHandle {
    name: &'static str,
    entries: OnceLock<Vec<Arc<OpEntry>>>,
}

impl OpHandle {
    /// A handle to `name`: a full name (`add.Tensor`) or a base name
    /// (`add`, every overload).
    pub const fn new(name: &'static str) -> OpHandle {
        OpHandle {
            name,
            entries: OnceLock::new(),
        }
    }

    /// The name it was made with.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The op's entries (looked up on the first call only).
    pub fn entries(&self) -> Result<&[Arc<OpEntry>]> {
        if let Some(e) = self.entries.get() {
            return Ok(e);
        }
        let found = resolve(self.name)?;
        Ok(self.entries.get_or_init(|| found))
    }

    /// Call the op with boxed arguments through the dispatch key stack.
    pub fn call(&self, args: &[IValue], kwargs: &[(&str, IValue)]) -> Result<IValue> {
        call_entries(self.name, self.entries()?, args, kwargs)
    }
}

/// The entry point of a typed method while a mode is on (Note [Dispatch
/// keys]): `None` on the fast path (one thread-local read); otherwise the
/// op called boxed through `handle` with the arguments `args()` builds.
/// The mode's layer excludes itself before the kernels below it run, so the
/// typed method called again from the boxed kernel takes the fast path.
#[inline]
pub fn intercept(handle: &OpHandle, args: impl FnOnce() -> Vec<IValue>) -> Option<Result<IValue>> {
    if !super::keys::interposed() {
        return None;
    }
    Some(handle.call(&args(), &[]))
}

/// [`intercept`] for a method returning one tensor.
#[inline]
pub fn intercept_tensor(
    handle: &OpHandle,
    args: impl FnOnce() -> Vec<IValue>,
) -> Option<Result<crate::tensor::Tensor>> {
    intercept(handle, args).map(|r| r.and_then(IValue::into_tensor))
}

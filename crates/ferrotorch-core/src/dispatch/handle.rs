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
        call_entries(self.name, self.entries()?, args, kwargs, false)
    }

    /// Call with every argument in schema order, keyword-only ones
    /// included, by position (how typed methods box their arguments); an
    /// overload whose argument count differs binds as [`OpHandle::call`].
    pub fn call_full(&self, args: &[IValue]) -> Result<IValue> {
        call_entries(self.name, self.entries()?, args, &[], true)
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
    // routed only by a live conjugated view: still ferrotorch's own call
    let _internal = (!super::keys::mode_active()).then(super::keys::InternalGuard::new);
    Some(handle.call_full(&args()))
}

/// [`intercept`] for a method returning one tensor.
#[inline]
pub fn intercept_tensor(
    handle: &OpHandle,
    args: impl FnOnce() -> Vec<IValue>,
) -> Option<Result<crate::tensor::Tensor>> {
    intercept(handle, args).map(|r| r.and_then(IValue::into_tensor))
}

/// [`intercept`] with keyword arguments, for a method returning one
/// tensor: positional `args` plus `kwargs` by name (a creation op's
/// resolved `dtype=`, so a trace records `aten::zeros` rather than a
/// constant).
#[inline]
pub fn intercept_tensor_kw(
    handle: &OpHandle,
    args: impl FnOnce() -> (Vec<IValue>, Vec<(&'static str, IValue)>),
) -> Option<Result<crate::tensor::Tensor>> {
    if !super::keys::interposed() {
        return None;
    }
    let _internal = (!super::keys::mode_active()).then(super::keys::InternalGuard::new);
    let (pos, kw) = args();
    Some(handle.call(&pos, &kw).and_then(IValue::into_tensor))
}

/// [`intercept`] for a method returning a list of tensors.
#[inline]
pub fn intercept_tensors(
    handle: &OpHandle,
    args: impl FnOnce() -> Vec<IValue>,
) -> Option<Result<Vec<crate::tensor::Tensor>>> {
    intercept(handle, args).map(|r| r.and_then(IValue::into_tensor_list))
}

/// The first line of a typed method that returns one tensor: while a mode
/// is on, box the arguments (in the schema's order) and call op `$name`
/// through its static handle, returning its result; otherwise fall through
/// to the method's body (Note [Dispatch keys]).
#[macro_export]
macro_rules! enter_op {
    ($name:literal $(, $arg:expr)* $(,)?) => {{
        static OP: $crate::dispatch::OpHandle = $crate::dispatch::OpHandle::new($name);
        if let Some(r) = $crate::dispatch::handle::intercept_tensor(&OP, || {
            vec![$($crate::dispatch::IValue::from($arg)),*]
        }) {
            return r;
        }
    }};
}

/// [`enter_op!`] for a typed method that returns a list of tensors.
#[macro_export]
macro_rules! enter_op_list {
    ($name:literal $(, $arg:expr)* $(,)?) => {{
        static OP: $crate::dispatch::OpHandle = $crate::dispatch::OpHandle::new($name);
        if let Some(r) = $crate::dispatch::handle::intercept_tensors(&OP, || {
            vec![$($crate::dispatch::IValue::from($arg)),*]
        }) {
            return r;
        }
    }};
}

/// [`enter_op!`] for a typed in-place method (`-> Result<()>`): while a
/// mode is on, the call enters through the op's handle and the method
/// returns what the boxed call did.
#[macro_export]
macro_rules! enter_op_inplace {
    ($name:literal $(, $arg:expr)* $(,)?) => {{
        static OP: $crate::dispatch::OpHandle = $crate::dispatch::OpHandle::new($name);
        if let Some(r) = $crate::dispatch::handle::intercept(&OP, || {
            vec![$($crate::dispatch::IValue::from($arg)),*]
        }) {
            return r.map(|_| ());
        }
    }};
}

//! Custom ops (`TORCH_LIBRARY`): ops defined by users from a schema string,
//! with a kernel per backend, an autograd formula and a shape ("fake")
//! function — registered in the one dispatcher, so they are called, traced,
//! saved and loaded like the built-in ones.
//!
//! ```
//! use ferrotorch_core::dispatch::{call, DispatchKey, IValue};
//! use ferrotorch_core::library::{Kind, Library};
//! use ferrotorch_core::Tensor;
//!
//! # fn main() -> ferrotorch_core::Result<()> {
//! // TORCH_LIBRARY(mylib_doc, m) { m.def("scale(Tensor x, float s) -> Tensor"); }
//! let mut m = Library::new("mylib_doc", Kind::Def)?;
//! m.def("scale(Tensor x, float s) -> Tensor")?;
//! // TORCH_LIBRARY_IMPL(mylib_doc, CPU, m) { m.impl("scale", scale_cpu); }
//! m.impl_("scale", DispatchKey::Cpu, |a| {
//!     Ok(a.tensor(0)?.mul(a.float(1)?)?.into())
//! })?;
//! // its derivative: d(s*x)/dx = s
//! m.impl_autograd("scale", |ctx, grads| {
//!     Ok(vec![Some(grads[0].mul(ctx.args().float(1)?)?)])
//! })?;
//! let x = Tensor::from_slice(&[1.0f32, 2.0]).requires_grad_(true)?;
//! let y = call("mylib_doc::scale", &[x.clone().into(), IValue::Float(3.0)], &[])?;
//! y.into_tensor()?.sum()?.backward()?;
//! assert_eq!(x.grad().unwrap().to_vec::<f32>()?, vec![3.0, 3.0]);
//! # Ok(())
//! # }
//! ```
//!
//! # Note [Custom ops]
//! `Library::def` declares an op `ns::name` with no kernel; `impl_` gives
//! it a kernel under a dispatch key (CPU, or a user backend's
//! `PrivateUse1`); every op a `Library` defines also gets an Autograd
//! kernel (Note [Custom op autograd]) that consults the formula table, so
//! `impl_autograd` may come later (or never: then the op is not
//! differentiable and backward says so, naming it). `impl_fake` records a
//! function computing the outputs' shapes and dtypes from the inputs' (on
//! tensors whose values do not matter), which shape inference uses
//! ([`call_fake`]). A namespace is defined by one `Kind::Def` library;
//! `Kind::Fragment` adds ops to it and `Kind::Impl` only adds kernels, as
//! `TORCH_LIBRARY`, `TORCH_LIBRARY_FRAGMENT` and `TORCH_LIBRARY_IMPL` do.
//! Ops are never removed: a `Library` is a registration, not an owner.

mod autograd;
mod class;
mod foreign_class;
pub mod tensor_queue;
mod values;

pub use autograd::AutogradCtx;
pub use class::{
    class_names, construct, find_class, from_state, ClassBuilder, ClassType, ScriptObject,
};
pub use values::{ArgValue, Init, Method, ReturnValue};

use crate::dispatch::{self, Args, DispatchKey, IValue};
use crate::error::Result;
use parking_lot::RwLock;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, OnceLock};

/// What a [`Library`] may do, as PyTorch's three macros.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `TORCH_LIBRARY(ns, m)`: define the namespace and its ops (once per
    /// namespace).
    Def,
    /// `TORCH_LIBRARY_FRAGMENT(ns, m)`: add ops to a namespace.
    Fragment,
    /// `TORCH_LIBRARY_IMPL(ns, key, m)`: only kernels for existing ops.
    Impl,
}

/// A boxed kernel (bound arguments in, the op's result out).
pub type KernelFn = Arc<dyn Fn(&Args) -> Result<IValue> + Send + Sync>;

/// An autograd formula: the gradients of the op's tensor inputs (one per
/// tensor input, in schema order; `None` for no gradient) from the
/// gradients of its tensor outputs.
pub type BackwardFn =
    Arc<dyn Fn(&AutogradCtx, &[crate::Tensor]) -> Result<Vec<Option<crate::Tensor>>> + Send + Sync>;

#[derive(Default)]
struct Tables {
    defined: HashSet<String>,
    formulas: HashMap<String, BackwardFn>,
    fakes: HashMap<String, KernelFn>,
}

fn tables() -> &'static RwLock<Tables> {
    static T: OnceLock<RwLock<Tables>> = OnceLock::new();
    T.get_or_init(Default::default)
}

/// A set of registrations in one namespace (`torch::Library`).
pub struct Library {
    ns: String,
    kind: Kind,
}

fn check_ns(ns: &str) -> Result<()> {
    crate::ensure!(
        !ns.is_empty()
            && ns.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !ns.starts_with(|c: char| c.is_ascii_digit()),
        Value,
        "library namespace {ns:?} must be an identifier"
    );
    crate::ensure!(
        !matches!(ns, "aten" | "prim"),
        Runtime,
        "the namespace {ns:?} is reserved for built-in ops"
    );
    Ok(())
}

impl Library {
    /// A library of `kind` in namespace `ns`. A second `Kind::Def` of one
    /// namespace is an error, as in PyTorch.
    pub fn new(ns: &str, kind: Kind) -> Result<Library> {
        check_ns(ns)?;
        if kind == Kind::Def {
            let mut t = tables().write();
            crate::ensure!(
                t.defined.insert(ns.to_string()),
                Runtime,
                "Only a single TORCH_LIBRARY can be used to register the namespace {ns}; please put all of your definitions in a single TORCH_LIBRARY block. If you were trying to specify implementations, consider using TORCH_LIBRARY_IMPL (or Kind::Impl)."
            );
        }
        Ok(Library {
            ns: ns.to_string(),
            kind,
        })
    }

    /// The namespace.
    pub fn namespace(&self) -> &str {
        &self.ns
    }

    /// `ns::name` for a name given with or without its namespace.
    fn qualify(&self, name: &str) -> Result<String> {
        match name.split_once("::") {
            Some((ns, _)) => {
                crate::ensure!(
                    ns == self.ns,
                    Runtime,
                    "the library of namespace {} cannot register {name}",
                    self.ns
                );
                Ok(name.to_string())
            }
            None => Ok(format!("{}::{name}", self.ns)),
        }
    }

    /// Declare an op from its schema (`m.def("mul3(Tensor x) -> Tensor")`;
    /// the namespace may be left out). Returns its full name.
    pub fn def(&mut self, schema: &str) -> Result<String> {
        crate::ensure!(
            self.kind != Kind::Impl,
            Runtime,
            "a TORCH_LIBRARY_IMPL library cannot define ops ({schema}); use Kind::Def or Kind::Fragment"
        );
        let qualified = match schema.split_once('(') {
            Some((head, rest)) => format!("{}({rest}", self.qualify(head.trim())?),
            None => crate::bail!(Runtime, "malformed schema {schema:?}: no argument list"),
        };
        let parsed = dispatch::Schema::parse(&qualified)?;
        for a in &parsed.args {
            if let Some(c) = a.ty.class_name() {
                crate::ensure!(
                    find_class(c).is_some(),
                    Runtime,
                    "Unknown builtin op: {}. Could not find any similar ops to {c}. This op may not exist or may not be currently supported (the class {c} is not registered)",
                    parsed.full_name()
                );
            }
        }
        let full = dispatch::declare_op(&qualified)?;
        let entry = dispatch::find_op(&full).expect("just declared");
        dispatch::register_kernel(&full, DispatchKey::Autograd, autograd::kernel(entry))?;
        Ok(full)
    }

    /// Declare an op and give it a CPU kernel (`m.def(schema, fn)`).
    pub fn def_impl(
        &mut self,
        schema: &str,
        kernel: impl Fn(&Args) -> Result<IValue> + Send + Sync + 'static,
    ) -> Result<String> {
        let full = self.def(schema)?;
        dispatch::register_kernel(&full, DispatchKey::Cpu, kernel)?;
        Ok(full)
    }

    /// Give op `name` a kernel under `key` (`m.impl(name, fn)` in a
    /// `TORCH_LIBRARY_IMPL(ns, CPU, m)` block). `key` is a backend; the
    /// autograd formula has [`Library::impl_autograd`].
    pub fn impl_(
        &mut self,
        name: &str,
        key: DispatchKey,
        kernel: impl Fn(&Args) -> Result<IValue> + Send + Sync + 'static,
    ) -> Result<&mut Self> {
        crate::ensure!(
            key.is_backend(),
            Runtime,
            "impl_: {key:?} is not a backend key (use impl_autograd for the derivative)"
        );
        let full = self.resolve(name)?;
        dispatch::register_kernel(&full, key, kernel)?;
        Ok(self)
    }

    /// Give op `name` its derivative (`register_autograd`): `backward`
    /// gets the call's inputs and outputs and the outputs' gradients
    /// (Note [Custom op autograd]).
    pub fn impl_autograd(
        &mut self,
        name: &str,
        backward: impl Fn(&AutogradCtx, &[crate::Tensor]) -> Result<Vec<Option<crate::Tensor>>>
            + Send
            + Sync
            + 'static,
    ) -> Result<&mut Self> {
        let full = self.resolve(name)?;
        insert_once(
            &mut tables().write().formulas,
            full,
            Arc::new(backward),
            "an autograd formula",
        )?;
        Ok(self)
    }

    /// Give op `name` its shape function (`register_fake` / a Meta
    /// kernel): outputs of the right shapes and dtypes from inputs whose
    /// values do not matter.
    pub fn impl_fake(
        &mut self,
        name: &str,
        fake: impl Fn(&Args) -> Result<IValue> + Send + Sync + 'static,
    ) -> Result<&mut Self> {
        let full = self.resolve(name)?;
        insert_once(
            &mut tables().write().fakes,
            full,
            Arc::new(fake),
            "a fake (shape) function",
        )?;
        Ok(self)
    }

    /// The full name of an existing op of this namespace.
    fn resolve(&self, name: &str) -> Result<String> {
        let full = self.qualify(name)?;
        crate::ensure!(
            dispatch::find_op(&full).is_some(),
            Runtime,
            "{full} is not defined (define it with Library::def first)"
        );
        Ok(full)
    }
}

/// Register `value` for op `full` unless it has `what` already.
fn insert_once<V>(map: &mut HashMap<String, V>, full: String, value: V, what: &str) -> Result<()> {
    crate::ensure!(
        !map.contains_key(&full),
        Runtime,
        "{full} already has {what}"
    );
    map.insert(full, value);
    Ok(())
}

/// The autograd formula registered for op `full`, if any.
pub(crate) fn formula(full: &str) -> Option<BackwardFn> {
    tables().read().formulas.get(full).cloned()
}

/// Whether op `full` has a fake (shape) function.
pub fn has_fake(full: &str) -> bool {
    tables().read().fakes.contains_key(full)
}

/// Run op `name`'s fake function on bound arguments: its outputs' shapes
/// and dtypes without running its kernel.
pub fn call_fake(name: &str, args: &[IValue]) -> Result<IValue> {
    let entry = dispatch::find_op(name).ok_or_else(|| {
        crate::Error::new(
            crate::ErrorKind::Runtime,
            format!("unknown operator '{name}'"),
        )
    })?;
    let f = tables().read().fakes.get(name).cloned().ok_or_else(|| {
        crate::Error::new(
            crate::ErrorKind::NotImplemented,
            format!(
                "{name} has no fake (shape) function; register one with impl_fake / register_fake"
            ),
        )
    })?;
    f(&dispatch::bind_values(&entry, args.to_vec())?)
}

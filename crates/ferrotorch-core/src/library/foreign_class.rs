//! Classes whose constructor and methods are declared as schema text, not
//! derived from Rust signatures: what the C plugin ABI registers
//! (`ft_class_def`, Note [Plugin classes] in `ferrotorch-capi`). The
//! objects are ordinary [`super::class::ScriptObject`]s and the methods
//! ordinary ops (Note [Custom classes]).

use super::class::{err, method_kernel, ClassBuilder, ScriptObject};
use crate::dispatch::{self, Args, IValue};
use crate::error::{ErrorKind, Result};
use std::any::Any;
use std::sync::Arc;

impl<T: Any + Send + Sync> ClassBuilder<'_, T> {
    /// A constructor declared as schema text, for classes defined outside
    /// Rust (the C plugin ABI): `args` is the argument list (`"Tensor x,
    /// int n=1"`), and `init` builds the value from the bound arguments.
    pub fn def_init_raw(
        mut self,
        args: &str,
        init: impl Fn(&[IValue]) -> Result<T> + Send + Sync + 'static,
    ) -> Result<Self> {
        let class = self.class.clone();
        let schema = format!(
            "{}({args}) -> {}",
            class.op_name("__init__"),
            class.qualname
        );
        let kernel: dispatch::Kernel = Arc::new(move |a: &Args| {
            let value = init(a.values())?;
            Ok(IValue::Object(ScriptObject::new(&class, value)?))
        });
        self.add("__init__", schema, kernel)?;
        Ok(self)
    }

    /// A method declared as schema text (`"push(Tensor x) -> ()"`, without
    /// the object argument), for classes defined outside Rust: `f` gets the
    /// object's value and the other bound arguments.
    pub fn def_raw(
        mut self,
        decl: &str,
        f: impl Fn(&T, &[IValue]) -> Result<IValue> + Send + Sync + 'static,
    ) -> Result<Self> {
        let (name, rest) = decl.split_once('(').ok_or_else(|| {
            err(
                ErrorKind::Value,
                format!("method declaration {decl:?} must be name(args) -> return"),
            )
        })?;
        let name = name.trim();
        crate::ensure!(
            !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
            Value,
            "method name {name:?} must be an identifier"
        );
        crate::ensure!(
            !name.starts_with("__") || name == "__getstate__",
            Value,
            "method names starting with '__' are reserved ({name})"
        );
        let (args, ret) = rest.rsplit_once("->").ok_or_else(|| {
            err(
                ErrorKind::Value,
                format!("method declaration {decl:?} must say its return type (-> ...)"),
            )
        })?;
        let args = args.trim().strip_suffix(')').ok_or_else(|| {
            err(
                ErrorKind::Value,
                format!("method declaration {decl:?}: unbalanced parentheses"),
            )
        })?;
        let class = self.class.clone();
        let this = format!("{} _0", class.qualname);
        let all = if args.trim().is_empty() {
            this
        } else {
            format!("{this}, {args}")
        };
        let schema = format!("{}({all}) -> {}", class.op_name(name), ret.trim());
        let kernel = method_kernel::<T>(class.op_name(name), f);
        self.add(name, schema, kernel)?;
        Ok(self)
    }

    /// Saving and copying for classes defined outside Rust: `getstate`
    /// gives the state (of schema type `state_type`), `setstate` builds a
    /// value from it.
    pub fn def_pickle_raw(
        self,
        state_type: &str,
        getstate: impl Fn(&T) -> Result<IValue> + Send + Sync + 'static,
        setstate: impl Fn(IValue) -> Result<T> + Send + Sync + 'static,
    ) -> Result<Self> {
        let mut me = self.def_raw(&format!("__getstate__() -> {state_type}"), move |t, _| {
            getstate(t)
        })?;
        let class = me.class.clone();
        let schema = format!(
            "{}(Any _0) -> {}",
            class.op_name("__setstate__"),
            class.qualname
        );
        let kernel: dispatch::Kernel = Arc::new(move |a: &Args| {
            let value = setstate(a.get(0).clone())?;
            Ok(IValue::Object(ScriptObject::new(&class, value)?))
        });
        me.add("__setstate__", schema, kernel)?;
        Ok(me)
    }
}

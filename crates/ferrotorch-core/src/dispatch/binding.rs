//! What every language binding needs from the dispatcher, in one place
//! (Note [One binding layer]).
//!
//! # Note [One binding layer]
//! The Python, Node and C bindings do not declare ops by hand: each asks
//! [`binding_ops`] for every op name, with the facts a generated function
//! needs (its overloads' schemas, whether it is a `Tensor` method, whether
//! it writes and returns `self`, which argument takes varargs sizes), calls
//! ops through [`OpHandle`]s, and runs every call under [`guarded`], so a
//! panic in a kernel becomes an error naming the op instead of unwinding
//! into a foreign runtime. The rules below are torch's Python argument
//! parser's, written once.

use super::{find_schema, is_int_tensor, op_names, IValue, OpHandle, Schema, Type};
use crate::error::{Error, ErrorKind, Result};
use crate::tensor::Tensor;
use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

/// One op name as a binding exposes it: `add` with its overloads
/// `add.Tensor`, `add.Scalar`.
pub struct BindingOp {
    /// The base name (`add`, `add_`, `log_softmax`).
    pub name: String,
    /// Its overloads' schemas, in registration order.
    pub overloads: Vec<Arc<Schema>>,
    /// Some overload's first argument is `Tensor self`: also a method.
    pub is_method: bool,
    /// Every overload writes its `self` in place and returns it (`add_`,
    /// `zero_`), as the alias annotations say: a binding returns the very
    /// object it was given.
    pub writes_self: bool,
    /// The position of a trailing `int[]` argument that may also be given
    /// as varargs (`zeros(2, 3)`, `t.view(2, 3)`), counting `self`.
    pub vararg_sizes: Option<usize>,
    /// A creation op (`ones`, `randn`, ...): takes `requires_grad`.
    pub creation: bool,
}

impl BindingOp {
    /// A static handle for calling it (resolved once; leaked, as a
    /// binding keeps it for the process's life).
    pub fn handle(&self) -> &'static OpHandle {
        let name: &'static str = Box::leak(self.name.clone().into_boxed_str());
        Box::leak(Box::new(OpHandle::new(name)))
    }
}

/// The ops whose results are new tensors built from sizes or values, which
/// take torch's `requires_grad=` keyword in every binding.
pub const CREATION_OPS: [&str; 16] = [
    "zeros",
    "ones",
    "empty",
    "full",
    "rand",
    "randn",
    "randint",
    "arange",
    "linspace",
    "logspace",
    "eye",
    "randperm",
    "zeros_like",
    "ones_like",
    "empty_like",
    "full_like",
];

fn is_size_list(t: &Type) -> bool {
    matches!(t, Type::List(e, _) if **e == Type::Int)
}

/// Every public op (names starting with `_` are internal), grouped by base
/// name, sorted.
pub fn binding_ops() -> Vec<BindingOp> {
    let mut by_name: BTreeMap<String, Vec<Arc<Schema>>> = BTreeMap::new();
    for full in op_names() {
        if let Some(s) = find_schema(&full) {
            if !s.name.starts_with('_') && !s.name.contains("::") {
                by_name.entry(s.name.clone()).or_default().push(s);
            }
        }
    }
    by_name
        .into_iter()
        .map(|(name, overloads)| {
            let has_self = |s: &Schema| s.args.first().is_some_and(|a| a.name == "self");
            let is_method = overloads.iter().any(|s| has_self(s));
            let writes_self = overloads.iter().all(|s| {
                has_self(s)
                    && s.is_inplace()
                    && s.returns.len() == 1
                    && s.aliased_input(0) == Some(0)
            });
            let vararg_sizes = overloads.iter().find_map(|s| {
                let pos: Vec<_> = s.args.iter().filter(|a| !a.kwarg_only).collect();
                let offset = usize::from(has_self(s));
                (pos.len() == offset + 1 && is_size_list(&pos[offset].ty)).then_some(offset)
            });
            let creation = CREATION_OPS.contains(&name.as_str());
            BindingOp {
                name,
                overloads,
                is_method,
                writes_self,
                vararg_sizes,
                creation,
            }
        })
        .collect()
}

/// One list argument from its converted elements, by torch's Python
/// argument parser's rules (every binding's lists): all ints (or empty) an
/// `int[]`, all bools a `bool[]`, numbers a `float[]`, ints mixed with
/// 0-dim integer tensors (traced sizes, Note [Traced sizes]) a symbolic
/// `int[]`, tensors a `Tensor[]`, tensors and `None` a `Tensor?[]`;
/// `None` for any other mix.
pub fn list_value(items: Vec<IValue>) -> Option<IValue> {
    let all = |f: fn(&IValue) -> bool| items.iter().all(f);
    if all(|v| matches!(v, IValue::Int(_))) {
        let ints = items.iter().filter_map(|v| match v {
            IValue::Int(i) => Some(*i),
            _ => None,
        });
        return Some(IValue::IntList(ints.collect()));
    }
    if all(|v| matches!(v, IValue::Bool(_))) {
        let bools = items.iter().map(|v| matches!(v, IValue::Bool(true)));
        return Some(IValue::BoolList(bools.collect()));
    }
    if all(|v| matches!(v, IValue::Int(_) | IValue::Float(_))) {
        let floats = items.iter().map(|v| match v {
            IValue::Int(i) => *i as f64,
            IValue::Float(f) => *f,
            _ => 0.0,
        });
        return Some(IValue::FloatList(floats.collect()));
    }
    let int_like = |v: &IValue| match v {
        IValue::Int(_) => true,
        IValue::Tensor(t) => is_int_tensor(t),
        _ => false,
    };
    if all(int_like) && items.iter().any(|v| matches!(v, IValue::Int(_))) {
        return Some(IValue::SymIntList(items));
    }
    if all(|v| matches!(v, IValue::Tensor(_) | IValue::None)) {
        let opt: Vec<Option<Tensor>> = items
            .into_iter()
            .map(|v| match v {
                IValue::Tensor(t) => Some(t),
                _ => None,
            })
            .collect();
        return Some(if opt.iter().all(Option::is_some) {
            IValue::TensorList(opt.into_iter().flatten().collect())
        } else {
            IValue::OptTensorList(opt)
        });
    }
    None
}

/// Run `f`, turning a panic into a Runtime error that names `what` (Note
/// [One binding layer]): no unwinding crosses into a foreign runtime.
pub fn guarded<T>(what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => {
            let detail = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            Err(Error::new(
                ErrorKind::Runtime,
                format!("internal error in {what}: {detail} (please report this bug)"),
            ))
        }
    }
}

/// Register `_test_panic(Tensor self, str message) -> Tensor`, an op that
/// panics, when the environment asks (`FERROTORCH_TEST_OPS=1`): each
/// binding's suite drives it to check that a panic in a kernel reaches its
/// language as an error and never unwinds into it. Registering twice (a
/// second binding in one process) keeps the first. Also the custom op
/// `ft_test_ops::first_of_14` (fourteen tensors in, the first out, a Rust
/// kernel): `bench/custom_ops.py` times the custom-op call path with it.
pub fn register_test_ops_if_asked() {
    if std::env::var("FERROTORCH_TEST_OPS").as_deref() != Ok("1") {
        return;
    }
    if let Ok(mut m) = crate::library::Library::new("ft_test_ops", crate::library::Kind::Def) {
        let args: Vec<String> = (0..14).map(|i| format!("Tensor a{i}")).collect();
        let _ = m.def_impl(
            &format!("first_of_14({}) -> Tensor", args.join(", ")),
            |a| Ok(a.tensor(0)?.into()),
        );
    }
    let _ = super::register_op(
        "_test_panic(Tensor self, str message) -> Tensor",
        |a: &super::Args| -> Result<IValue> {
            let msg = a.opt_str(1)?.unwrap_or_default();
            panic!("{msg}")
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binding_facts_follow_the_schemas() {
        let ops = binding_ops();
        let get = |n: &str| ops.iter().find(|o| o.name == n).unwrap();
        assert!(get("add_").writes_self && get("add_").is_method);
        assert!(!get("add").writes_self && get("add").is_method);
        assert!(!get("ones").is_method && get("ones").creation);
        assert_eq!(get("ones").vararg_sizes, Some(0));
        assert_eq!(get("view").vararg_sizes, Some(1));
        assert_eq!(get("transpose").vararg_sizes, None);
        assert!(ops.iter().all(|o| !o.name.starts_with('_')));
    }

    #[test]
    fn lists_are_typed_by_their_elements() {
        let t = Tensor::scalar_tensor(1.0);
        assert!(matches!(list_value(vec![]), Some(IValue::IntList(v)) if v.is_empty()));
        assert!(
            matches!(list_value(vec![IValue::Int(2), IValue::Int(3)]), Some(IValue::IntList(v)) if v == [2, 3])
        );
        assert!(
            matches!(list_value(vec![IValue::Bool(true)]), Some(IValue::BoolList(v)) if v == [true])
        );
        assert!(
            matches!(list_value(vec![IValue::Int(1), IValue::Float(0.5)]), Some(IValue::FloatList(v)) if v == [1.0, 0.5])
        );
        assert!(
            matches!(list_value(vec![t.clone().into()]), Some(IValue::TensorList(v)) if v.len() == 1)
        );
        assert!(
            matches!(list_value(vec![t.clone().into(), IValue::None]), Some(IValue::OptTensorList(v)) if v[1].is_none())
        );
        assert!(list_value(vec![IValue::Str("a".into()), IValue::Int(1)]).is_none());
    }

    #[test]
    fn guarded_turns_a_panic_into_an_error_naming_the_op() {
        let e = guarded("my_op", || -> Result<()> { panic!("boom") }).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Runtime);
        assert!(e.message().contains("my_op") && e.message().contains("boom"));
        assert_eq!(guarded("x", || Ok(3)).unwrap(), 3);
    }
}

//! Custom classes (TorchBind): Rust types registered with
//! `m.class_::<T>("Name")`, whose objects travel through the dispatcher
//! as [`IValue::Object`] and whose methods are ops.
//!
//! # Note [Custom classes]
//! A class `ns::Name` has the schema type `__torch__.torch.classes.ns.Name`
//! (PyTorch's spelling), usable in any op's schema. Each of its methods is
//! registered as an op named `ns::Name::method` whose first argument is
//! the object (`_0`, as TorchBind names it) and whose other argument and
//! return types come from the Rust function's signature
//! ([`super::values`]); the constructor is `ns::Name::__init__` (returning
//! the object) and `def_pickle` adds `__getstate__` / `__setstate__`. So a
//! method call is an op call: it passes the dispatch keys (the tracer
//! records it as a node, Note [Objects in graphs] in `ferrotorch-jit`),
//! a saved program names it and loading finds it only where the class is
//! registered, and every binding calls it the way it calls any op. Method
//! bodies get `&T`: a class with state that methods change keeps it
//! behind its own lock, as TorchBind classes do (the seed's `TensorQueue`
//! holds a mutex). Objects are shared, never copied, by `clone`; `deepcopy`
//! and saving go through the pickle methods.

use super::values::{Init, Method, ReturnValue};
use super::Library;
use crate::dispatch::{self, Args, IValue, OpEntry};
use crate::error::{Error, ErrorKind, Result};
use parking_lot::RwLock;
use std::any::{Any, TypeId};
use std::collections::{BTreeMap, HashMap};
use std::marker::PhantomData;
use std::sync::{Arc, OnceLock};

/// A registered custom class.
pub struct ClassType {
    ns: String,
    name: String,
    pub(super) qualname: String,
    type_id: TypeId,
    type_name: &'static str,
    /// method name → its op (`__init__`, `__getstate__`, `__setstate__`
    /// included)
    methods: RwLock<BTreeMap<String, Arc<OpEntry>>>,
}

impl std::fmt::Debug for ClassType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.qualname)
    }
}

impl ClassType {
    /// `__torch__.torch.classes.ns.Name`, the type's name in schemas.
    pub fn qualified_name(&self) -> &str {
        &self.qualname
    }

    /// `ns::Name`.
    pub fn name(&self) -> String {
        format!("{}::{}", self.ns, self.name)
    }

    /// The namespace.
    pub fn namespace(&self) -> &str {
        &self.ns
    }

    /// The class's own name (`TensorQueue`).
    pub fn class_name(&self) -> &str {
        &self.name
    }

    /// The op of method `name`, if the class has it.
    pub fn method(&self, name: &str) -> Option<Arc<OpEntry>> {
        self.methods.read().get(name).cloned()
    }

    /// The names of its methods, sorted (the constructor and pickle
    /// methods included).
    pub fn method_names(&self) -> Vec<String> {
        self.methods.read().keys().cloned().collect()
    }

    /// Whether objects can be saved and copied (`def_pickle` was given).
    pub fn has_pickle(&self) -> bool {
        let m = self.methods.read();
        m.contains_key("__getstate__") && m.contains_key("__setstate__")
    }

    pub(super) fn op_name(&self, method: &str) -> String {
        format!("{}::{}::{method}", self.ns, self.name)
    }
}

/// An object of a custom class (`torch.ScriptObject`): shared by clones,
/// compared by identity.
#[derive(Clone)]
pub struct ScriptObject(Arc<ObjectInner>);

struct ObjectInner {
    class: Arc<ClassType>,
    value: Box<dyn Any + Send + Sync>,
}

impl std::fmt::Debug for ScriptObject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ScriptObject({})", self.0.class.qualname)
    }
}

pub(super) fn err(kind: ErrorKind, msg: String) -> Error {
    Error::new(kind, msg)
}

impl ScriptObject {
    /// Wrap `value` as an object of `class` (whose Rust type it must be).
    pub fn new<T: Any + Send + Sync>(class: &Arc<ClassType>, value: T) -> Result<ScriptObject> {
        crate::ensure!(
            class.type_id == TypeId::of::<T>(),
            Type,
            "{} holds a {}, not a {}",
            class.qualname,
            class.type_name,
            std::any::type_name::<T>()
        );
        Ok(ScriptObject(Arc::new(ObjectInner {
            class: class.clone(),
            value: Box::new(value),
        })))
    }

    /// Its class.
    pub fn class(&self) -> &Arc<ClassType> {
        &self.0.class
    }

    /// The Rust value inside, if it is a `T`.
    pub fn downcast_ref<T: Any>(&self) -> Option<&T> {
        self.0.value.downcast_ref::<T>()
    }

    /// Whether two handles are the same object (Python's `is`).
    pub fn is_same(&self, other: &ScriptObject) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// An identity, unique among live objects (Python's `id`).
    pub fn object_id(&self) -> usize {
        Arc::as_ptr(&self.0) as *const u8 as usize
    }

    /// Call method `name` through the dispatcher (so a trace records it):
    /// `tq.call_method("push", &[x.into()], &[])`.
    pub fn call_method(
        &self,
        name: &str,
        args: &[IValue],
        kwargs: &[(&str, IValue)],
    ) -> Result<IValue> {
        let op = self.0.class.method(name).ok_or_else(|| {
            err(
                ErrorKind::Runtime,
                format!(
                    "{} has no method '{name}' (it has: {})",
                    self.0.class.name(),
                    self.0.class.method_names().join(", ")
                ),
            )
        })?;
        let mut all = Vec::with_capacity(args.len() + 1);
        all.push(IValue::Object(self.clone()));
        all.extend_from_slice(args);
        dispatch::call_entries(
            &op.schema.full_name(),
            std::slice::from_ref(&op),
            &all,
            kwargs,
            false,
        )
    }

    /// The object's state (`__getstate__`, given by `def_pickle`).
    pub fn getstate(&self) -> Result<IValue> {
        self.require_pickle("saved or copied")?;
        self.call_method("__getstate__", &[], &[])
    }

    /// A new object with a copy of this one's state (`copy.deepcopy`):
    /// `__getstate__`, every tensor in the state copied, `__setstate__`.
    pub fn deep_copy(&self) -> Result<ScriptObject> {
        let state = deep_clone(self.getstate()?)?;
        from_state(&self.0.class.name(), state)
    }

    fn require_pickle(&self, what: &str) -> Result<()> {
        crate::ensure!(
            self.0.class.has_pickle(),
            Runtime,
            "{} cannot be {what}: the class has no def_pickle",
            self.0.class.name()
        );
        Ok(())
    }
}

/// `v` with every tensor in it copied (objects deep-copied too).
fn deep_clone(v: IValue) -> Result<IValue> {
    Ok(match v {
        IValue::Tensor(t) => IValue::Tensor(t.deep_clone()?),
        IValue::TensorList(l) => IValue::TensorList(
            l.iter()
                .map(crate::Tensor::deep_clone)
                .collect::<Result<_>>()?,
        ),
        IValue::OptTensorList(l) => IValue::OptTensorList(
            l.iter()
                .map(|t| t.as_ref().map(crate::Tensor::deep_clone).transpose())
                .collect::<Result<_>>()?,
        ),
        IValue::Tuple(items) => {
            IValue::Tuple(items.into_iter().map(deep_clone).collect::<Result<_>>()?)
        }
        IValue::Object(o) => IValue::Object(o.deep_copy()?),
        other => other,
    })
}

fn classes() -> &'static RwLock<HashMap<String, Arc<ClassType>>> {
    static C: OnceLock<RwLock<HashMap<String, Arc<ClassType>>>> = OnceLock::new();
    C.get_or_init(Default::default)
}

/// The key a class is filed under, from `ns::Name`, `ns.Name` or
/// `__torch__.torch.classes.ns.Name`.
fn class_key(name: &str) -> String {
    let name = name
        .strip_prefix("__torch__.torch.classes.")
        .unwrap_or(name);
    name.replacen("::", ".", 1)
}

/// The registered class called `name` (`ns::Name` or its qualified name).
pub fn find_class(name: &str) -> Option<Arc<ClassType>> {
    classes().read().get(&class_key(name)).cloned()
}

/// Every registered class, as `ns::Name`, sorted.
pub fn class_names() -> Vec<String> {
    let mut v: Vec<String> = classes().read().values().map(|c| c.name()).collect();
    v.sort();
    v
}

fn require_class(name: &str) -> Result<Arc<ClassType>> {
    find_class(name).ok_or_else(|| {
        err(
            ErrorKind::Runtime,
            format!("Tried to instantiate class '{name}', but it does not exist! Ensure that it is registered via torch::class_ (Rust: Library::class_)"),
        )
    })
}

/// Construct an object of class `name` (`torch.classes.ns.Name(...)`):
/// its `__init__` op, through the dispatcher.
pub fn construct(name: &str, args: &[IValue], kwargs: &[(&str, IValue)]) -> Result<ScriptObject> {
    let class = require_class(name)?;
    let init = class.method("__init__").ok_or_else(|| {
        err(
            ErrorKind::Runtime,
            format!("{} has no constructor (def_init)", class.name()),
        )
    })?;
    match dispatch::call_entries(
        &init.schema.full_name(),
        std::slice::from_ref(&init),
        args,
        kwargs,
        false,
    )? {
        IValue::Object(o) => Ok(o),
        other => crate::bail!(
            Runtime,
            "{}::__init__ returned {}",
            class.name(),
            other.type_name()
        ),
    }
}

/// An object of class `name` rebuilt from a state its `__getstate__`
/// gave (unpickling, loading a saved program).
pub fn from_state(name: &str, state: IValue) -> Result<ScriptObject> {
    let class = require_class(name)?;
    let op = class.method("__setstate__").ok_or_else(|| {
        err(
            ErrorKind::Runtime,
            format!(
                "{} cannot be loaded: the class has no def_pickle",
                class.name()
            ),
        )
    })?;
    match dispatch::call_bound(&op, vec![state])? {
        IValue::Object(o) => Ok(o),
        other => crate::bail!(
            Runtime,
            "{}::__setstate__ returned {}",
            class.name(),
            other.type_name()
        ),
    }
}

/// Registers a class's constructor and methods (`torch::class_<T>`),
/// from [`Library::class_`].
pub struct ClassBuilder<'l, T> {
    lib: &'l mut Library,
    pub(super) class: Arc<ClassType>,
    _t: PhantomData<fn() -> T>,
}

impl Library {
    /// Register Rust type `T` as class `ns::name` (`m.class_<T>("name")`),
    /// or, in a fragment, add to the class registered before.
    pub fn class_<T: Any + Send + Sync>(&mut self, name: &str) -> Result<ClassBuilder<'_, T>> {
        crate::ensure!(
            self.kind != super::Kind::Impl,
            Runtime,
            "a TORCH_LIBRARY_IMPL library cannot register classes ({name})"
        );
        crate::ensure!(
            !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
            Value,
            "class name {name:?} must be an identifier"
        );
        let key = format!("{}.{name}", self.ns);
        let mut table = classes().write();
        let class = match table.get(&key) {
            Some(c) => {
                crate::ensure!(
                    c.type_id == TypeId::of::<T>() && self.kind == super::Kind::Fragment,
                    Runtime,
                    "class {}::{name} is already registered (as {}); a TORCH_LIBRARY_FRAGMENT may add methods to it with the same Rust type",
                    self.ns,
                    c.type_name
                );
                c.clone()
            }
            None => {
                let c = Arc::new(ClassType {
                    ns: self.ns.clone(),
                    name: name.to_string(),
                    qualname: format!("__torch__.torch.classes.{key}"),
                    type_id: TypeId::of::<T>(),
                    type_name: std::any::type_name::<T>(),
                    methods: RwLock::new(BTreeMap::new()),
                });
                table.insert(key, c.clone());
                c
            }
        };
        Ok(ClassBuilder {
            lib: self,
            class,
            _t: PhantomData,
        })
    }
}

fn schema_args(types: &[String], first: usize) -> Vec<String> {
    types
        .iter()
        .enumerate()
        .map(|(i, t)| format!("{t} _{}", i + first))
        .collect()
}

impl<T: Any + Send + Sync> ClassBuilder<'_, T> {
    /// The class being registered.
    pub fn class(&self) -> &Arc<ClassType> {
        &self.class
    }

    pub(super) fn add(
        &mut self,
        method: &str,
        schema: String,
        kernel: dispatch::Kernel,
    ) -> Result<()> {
        crate::ensure!(
            !self.class.methods.read().contains_key(method),
            Runtime,
            "{} already has a method '{method}'",
            self.class.name()
        );
        let _ = &self.lib;
        let full = dispatch::declare_op(&schema)?;
        dispatch::register_kernel(&full, dispatch::DispatchKey::Cpu, move |a: &Args| kernel(a))?;
        let op = dispatch::find_op(&full).expect("just declared");
        self.class.methods.write().insert(method.to_string(), op);
        Ok(())
    }

    /// The constructor (`.def(torch::init<Tensor>())`): a function from
    /// the arguments to the value, whose types give the schema.
    pub fn def_init<M>(mut self, init: impl Init<T, M>) -> Result<Self> {
        let class = self.class.clone();
        let schema = format!(
            "{}({}) -> {}",
            class.op_name("__init__"),
            schema_args(&<_ as InitTypes<T, M>>::types(&init), 1).join(", "),
            class.qualname
        );
        let kernel: dispatch::Kernel = Arc::new(move |a: &Args| {
            let value = init.construct(a.values().to_vec())?;
            Ok(IValue::Object(ScriptObject::new(&class, value)?))
        });
        self.add("__init__", schema, kernel)?;
        Ok(self)
    }

    /// A method (`.def("push", &TensorQueue::push)`): any
    /// `Fn(&T, A1, ..) -> R` whose argument and result types have schema
    /// types ([`super::values`]).
    pub fn def<M>(mut self, name: &str, f: impl Method<T, M>) -> Result<Self> {
        crate::ensure!(
            !name.starts_with("__") || name == "__obj_flatten__",
            Value,
            "method names starting with '__' are reserved ({name})"
        );
        self.def_method(name, f)?;
        Ok(self)
    }

    fn def_method<M, F: Method<T, M>>(&mut self, name: &str, f: F) -> Result<()> {
        let class = self.class.clone();
        let mut args = vec![format!("{} _0", class.qualname)];
        args.extend(schema_args(&F::arg_types(), 1));
        let schema = format!(
            "{}({}) -> {}",
            class.op_name(name),
            args.join(", "),
            F::ret()
        );
        let kernel = method_kernel::<T>(class.op_name(name), move |value, rest| {
            f.invoke(value, rest.to_vec())
        });
        self.add(name, schema, kernel)
    }

    /// Saving and copying (`.def_pickle(getstate, setstate)`): the state
    /// `getstate` gives is what a saved program or a pickle holds, and
    /// `setstate` makes an object from it again.
    pub fn def_pickle<S, M>(
        mut self,
        getstate: impl Fn(&T) -> S + Send + Sync + 'static,
        setstate: impl Init<T, M>,
    ) -> Result<Self>
    where
        S: ReturnValue + 'static,
    {
        self.def_method("__getstate__", getstate)?;
        let class = self.class.clone();
        let types = <_ as InitTypes<T, M>>::types(&setstate);
        crate::ensure!(
            types.len() == 1,
            Value,
            "def_pickle: setstate takes the state as its one argument"
        );
        let schema = format!(
            "{}(Any _0) -> {}",
            class.op_name("__setstate__"),
            class.qualname
        );
        let kernel: dispatch::Kernel = Arc::new(move |a: &Args| {
            let value = setstate.construct(a.values().to_vec())?;
            Ok(IValue::Object(ScriptObject::new(&class, value)?))
        });
        self.add("__setstate__", schema, kernel)?;
        Ok(self)
    }
}

/// The kernel of method `op_name` of a class holding `T`: the object (the
/// first argument) downcast, then `f` with it and the other arguments.
pub(super) fn method_kernel<T: Any + Send + Sync>(
    op_name: String,
    f: impl Fn(&T, &[IValue]) -> Result<IValue> + Send + Sync + 'static,
) -> dispatch::Kernel {
    Arc::new(move |a: &Args| {
        let this = match a.get(0) {
            IValue::Object(o) => o.clone(),
            v => return Err(a.wrong(0, v)),
        };
        let value = this.downcast_ref::<T>().ok_or_else(|| {
            err(
                ErrorKind::Type,
                format!(
                    "{op_name}: the object is not a {}",
                    std::any::type_name::<T>()
                ),
            )
        })?;
        f(value, &a.values()[1..])
    })
}

/// An [`Init`]'s argument types, from a value (type inference helper).
trait InitTypes<T, M> {
    fn types(&self) -> Vec<String>;
}

impl<T, M, F: Init<T, M>> InitTypes<T, M> for F {
    fn types(&self) -> Vec<String> {
        F::arg_types()
    }
}

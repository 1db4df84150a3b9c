//! The dispatcher: every op registered once, by name, with its schema.
//!
//! Typed Rust methods (`a.add(&b)`) are the fast unboxed path. The same op
//! can be called *boxed* — with a list of [`IValue`]s — through its
//! [`OpHandle`] (resolved once, then no lookup) or by name through [`call`];
//! the Python and Node bindings, the JIT interpreter and custom ops take
//! that road. Each call passes the dispatch key stack of Note [Dispatch
//! keys]; while a mode such as the tracer is on, typed methods enter
//! through their handle too ([`handle::intercept`]). Each op module
//! contributes its entries in a `register` function next to the op's
//! definition, so an op is declared in one place (its schema string sits
//! beside its kernel).

mod alias;
pub mod binding;
mod conj;
pub mod declare;
pub mod handle;
mod ivalue;
pub mod keys;
pub mod schema;
pub mod typed;

pub use alias::AliasInfo;
pub use handle::OpHandle;
pub use ivalue::{is_int_tensor, IValue};
pub use keys::{DispatchKey, DispatchKeySet, ExcludeGuard, IncludeGuard};
pub use schema::{Argument, Schema, Type};

use crate::dtype::DType;
use crate::error::{Error, ErrorKind, Result};
use crate::scalar::Scalar;
use crate::tensor::Tensor;
use parking_lot::RwLock;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

/// A boxed kernel: bound arguments in, one value (or a tuple) out.
pub type Kernel = Arc<dyn Fn(&Args) -> Result<IValue> + Send + Sync>;

/// A registered op: its schema and a kernel per dispatch key (the
/// built-in kernel sits under `Cpu`).
pub struct OpEntry {
    /// Its parsed schema.
    pub schema: Arc<Schema>,
    kernels: [OnceLock<Kernel>; keys::NUM_KEYS],
    /// Whether its backend kernel takes complex tensors (Note [Complex
    /// support is opt-in]).
    complex: std::sync::atomic::AtomicBool,
}

impl OpEntry {
    /// The kernel registered for `key`, if any.
    pub fn kernel(&self, key: DispatchKey) -> Option<&Kernel> {
        self.kernels[key as usize].get()
    }
}

/// Bound arguments, in schema order, with typed accessors.
#[derive(Clone)]
pub struct Args {
    schema: Arc<Schema>,
    vals: Vec<IValue>,
}

macro_rules! accessor {
    ($name:ident, $t:ty, $pat:pat => $e:expr) => {
        #[doc = concat!("Argument `i` as `", stringify!($t), "`.")]
        pub fn $name(&self, i: usize) -> Result<$t> {
            match &self.vals[i] {
                $pat => Ok($e),
                v => Err(self.wrong(i, v)),
            }
        }
    };
}

impl Args {
    pub(crate) fn wrong(&self, i: usize, v: &IValue) -> Error {
        let a = &self.schema.args[i];
        Error::new(
            ErrorKind::Type,
            format!(
                "{}(): argument '{}' must be {}, not {}",
                self.schema.name,
                a.name,
                a.ty,
                v.type_name()
            ),
        )
    }

    /// Every bound value, in schema order (defaults filled in).
    pub fn values(&self) -> &[IValue] {
        &self.vals
    }

    /// The schema the values were bound against.
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// These arguments with traced ints replaced by their values, as the
    /// kernels below the tracer take them (Note [Traced sizes] in
    /// `ferrotorch-jit`); `None` when there are none.
    pub fn concrete(&self) -> Result<Option<Args>> {
        if !self.vals.iter().any(IValue::is_sym) {
            return Ok(None);
        }
        let vals = self
            .vals
            .iter()
            .cloned()
            .map(IValue::concrete)
            .collect::<Result<_>>()?;
        Ok(Some(Args {
            schema: self.schema.clone(),
            vals,
        }))
    }

    /// The same schema with other values (a mode that rewrites
    /// arguments, such as autocast's casts, passes these down).
    pub fn with_values(&self, vals: Vec<IValue>) -> Args {
        Args {
            schema: self.schema.clone(),
            vals,
        }
    }

    /// The raw value of argument `i`.
    pub fn get(&self, i: usize) -> &IValue {
        &self.vals[i]
    }

    accessor!(tensor, Tensor, IValue::Tensor(t) => t.clone());
    accessor!(int, i64, IValue::Int(v) => *v);
    accessor!(float, f64, IValue::Float(v) => *v);
    accessor!(bool, bool, IValue::Bool(v) => *v);
    accessor!(str, String, IValue::Str(v) => v.clone());
    accessor!(int_list, Vec<i64>, IValue::IntList(v) => v.clone());
    accessor!(tensor_list, Vec<Tensor>, IValue::TensorList(v) => v.clone());

    /// Argument `i` as a non-negative size (a negative one is an error).
    pub fn usize(&self, i: usize) -> Result<usize> {
        let v = self.int(i)?;
        usize::try_from(v).map_err(|_| self.negative(i, v))
    }

    /// Argument `i` as a list of non-negative sizes.
    pub fn usize_list(&self, i: usize) -> Result<Vec<usize>> {
        self.int_list(i)?
            .into_iter()
            .map(|v| usize::try_from(v).map_err(|_| self.negative(i, v)))
            .collect()
    }

    fn negative(&self, i: usize, v: i64) -> Error {
        Error::new(
            ErrorKind::Runtime,
            format!(
                "{}(): argument '{}' must not be negative, got {v}",
                self.schema.name, self.schema.args[i].name
            ),
        )
    }

    /// Argument `i` as a Scalar.
    pub fn scalar(&self, i: usize) -> Result<Scalar> {
        self.vals[i]
            .to_scalar()
            .ok_or_else(|| self.wrong(i, &self.vals[i]))
    }

    /// Argument `i` as a custom class's object.
    pub fn object(&self, i: usize) -> Result<crate::library::ScriptObject> {
        match &self.vals[i] {
            IValue::Object(o) => Ok(o.clone()),
            v => Err(self.wrong(i, v)),
        }
    }

    /// Optional tensor.
    pub fn opt_tensor(&self, i: usize) -> Result<Option<Tensor>> {
        match &self.vals[i] {
            IValue::None => Ok(None),
            _ => self.tensor(i).map(Some),
        }
    }

    /// Optional int.
    pub fn opt_int(&self, i: usize) -> Result<Option<i64>> {
        match &self.vals[i] {
            IValue::None => Ok(None),
            _ => self.int(i).map(Some),
        }
    }

    /// Optional float.
    pub fn opt_float(&self, i: usize) -> Result<Option<f64>> {
        match &self.vals[i] {
            IValue::None => Ok(None),
            _ => self.float(i).map(Some),
        }
    }

    /// Optional scalar.
    pub fn opt_scalar(&self, i: usize) -> Result<Option<Scalar>> {
        match &self.vals[i] {
            IValue::None => Ok(None),
            _ => self.scalar(i).map(Some),
        }
    }

    /// Optional string.
    pub fn opt_str(&self, i: usize) -> Result<Option<String>> {
        match &self.vals[i] {
            IValue::None => Ok(None),
            _ => self.str(i).map(Some),
        }
    }

    /// Optional int list.
    pub fn opt_int_list(&self, i: usize) -> Result<Option<Vec<i64>>> {
        match &self.vals[i] {
            IValue::None => Ok(None),
            _ => self.int_list(i).map(Some),
        }
    }

    /// Optional generator (`Generator? generator=None`).
    pub fn opt_generator(&self, i: usize) -> Result<Option<crate::native::random::Generator>> {
        match &self.vals[i] {
            IValue::None => Ok(None),
            IValue::Generator(g) => Ok(Some(g.clone())),
            v => Err(self.wrong(i, v)),
        }
    }

    /// Optional dtype.
    pub fn opt_dtype(&self, i: usize) -> Result<Option<DType>> {
        match &self.vals[i] {
            IValue::None => Ok(None),
            IValue::DType(d) => Ok(Some(*d)),
            v => Err(self.wrong(i, v)),
        }
    }
}

/// The table of ops.
#[derive(Default)]
pub struct Registry {
    ops: HashMap<String, Arc<OpEntry>>,
    overloads: HashMap<String, Vec<String>>,
}

impl Registry {
    /// Declare an op with no kernel yet (a custom op's `def`); returns its
    /// full name.
    pub fn declare(&mut self, schema: &str) -> Result<String> {
        let s = Schema::parse(schema)?;
        let full = s.full_name();
        crate::ensure!(
            !self.ops.contains_key(&full),
            Runtime,
            "op '{full}' is already registered"
        );
        self.overloads
            .entry(s.name.clone())
            .or_default()
            .push(full.clone());
        let entry = OpEntry {
            schema: Arc::new(s),
            kernels: Default::default(),
            complex: Default::default(),
        };
        self.ops.insert(full.clone(), Arc::new(entry));
        Ok(full)
    }

    /// Register `kernel` under `schema`. Fails on a malformed schema or a
    /// name already taken.
    pub fn add(
        &mut self,
        schema: &str,
        kernel: impl Fn(&Args) -> Result<IValue> + Send + Sync + 'static,
    ) -> Result<()> {
        let full = self.declare(schema)?;
        let set = self.ops[&full].kernels[DispatchKey::Cpu as usize].set(Arc::new(kernel));
        debug_assert!(set.is_ok(), "a freshly declared op has no kernel");
        Ok(())
    }
}

impl Registry {
    /// Let every overload of these ops take complex tensors (Note
    /// [Complex support is opt-in]).
    pub(crate) fn allow_complex(&mut self, names: &[&str]) {
        for n in names {
            for full in self.overloads.get(*n).into_iter().flatten() {
                self.ops[full]
                    .complex
                    .store(true, std::sync::atomic::Ordering::Relaxed);
            }
        }
    }
}

/// Refuse a complex tensor argument to an op that has not opted in
/// (Note [Complex support is opt-in]).
fn check_complex(e: &OpEntry, a: &Args) -> Result<()> {
    if e.complex.load(std::sync::atomic::Ordering::Relaxed) || keys::internal_call() {
        return Ok(());
    }
    let complex = |t: &Tensor| t.dtype().is_complex();
    for v in &a.vals {
        let hit = match v {
            IValue::Tensor(t) => complex(t).then(|| t.dtype()),
            IValue::TensorList(l) => l.iter().find(|t| complex(t)).map(|t| t.dtype()),
            IValue::OptTensorList(l) => l.iter().flatten().find(|t| complex(t)).map(|t| t.dtype()),
            IValue::Complex(..) => Some(crate::dtype::default_complex_dtype()),
            _ => None,
        };
        if let Some(d) = hit {
            return Err(crate::native::complex::not_implemented(&e.schema.name, d));
        }
    }
    Ok(())
}

fn registry() -> &'static RwLock<Registry> {
    static REG: OnceLock<RwLock<Registry>> = OnceLock::new();
    REG.get_or_init(|| {
        let mut r = Registry::default();
        crate::native::register_all(&mut r);
        RwLock::new(r)
    })
}

/// Register a user op (custom ops) at run time.
pub fn register_op(
    schema: &str,
    kernel: impl Fn(&Args) -> Result<IValue> + Send + Sync + 'static,
) -> Result<()> {
    let mut r = registry().write();
    r.add(schema, kernel)?;
    // a user's kernel decides for itself what it takes
    let name = Schema::parse(schema)?.full_name();
    r.ops[&name]
        .complex
        .store(true, std::sync::atomic::Ordering::Relaxed);
    Ok(())
}

/// Declare a user op with no kernel yet (Note [Custom ops]); its full name.
pub fn declare_op(schema: &str) -> Result<String> {
    let mut r = registry().write();
    let name = r.declare(schema)?;
    r.ops[&name]
        .complex
        .store(true, std::sync::atomic::Ordering::Relaxed);
    Ok(name)
}

/// `values` (one per schema argument, in order) bound to `e`'s schema.
pub fn bind_values(e: &Arc<OpEntry>, values: Vec<IValue>) -> Result<Args> {
    Ok(Args {
        schema: e.schema.clone(),
        vals: e.schema.bind_all(values)?,
    })
}

/// The schema of an op by full name (`add.Tensor`).
pub fn find_schema(name: &str) -> Option<Arc<Schema>> {
    registry().read().ops.get(name).map(|e| e.schema.clone())
}

/// Every registered full op name, sorted.
pub fn op_names() -> Vec<String> {
    let mut v: Vec<String> = registry().read().ops.keys().cloned().collect();
    v.sort();
    v
}

/// Register `kernel` for op `name` (full name) under dispatch `key`, for
/// instance a user backend's kernel under `PrivateUse1`. Each key takes
/// one kernel per op.
pub fn register_kernel(
    name: &str,
    key: DispatchKey,
    kernel: impl Fn(&Args) -> Result<IValue> + Send + Sync + 'static,
) -> Result<()> {
    let e = registry()
        .read()
        .ops
        .get(name)
        .cloned()
        .ok_or_else(|| Error::new(ErrorKind::Runtime, format!("unknown operator '{name}'")))?;
    e.kernels[key as usize].set(Arc::new(kernel)).map_err(|_| {
        Error::new(
            ErrorKind::Runtime,
            format!("op '{name}' already has a {key:?} kernel"),
        )
    })
}

/// The ops a name stands for, in the order overload resolution tries
/// them: a full name (`add.Tensor`) its one entry, a base name (`add`)
/// every overload in registration order; empty when there is none.
pub fn find_overloads(name: &str) -> Vec<Arc<OpEntry>> {
    resolve(name).unwrap_or_default()
}

/// The op registered under a full name (`add.Tensor`).
pub fn find_op(name: &str) -> Option<Arc<OpEntry>> {
    registry().read().ops.get(name).cloned()
}

/// Call `e` with a complete argument list (one value per schema argument,
/// in order, as [`Args::values`] gives them), checked against the schema,
/// through the dispatch key stack: how the JIT interpreter runs a node.
pub fn call_bound(e: &Arc<OpEntry>, values: Vec<IValue>) -> Result<IValue> {
    call_prebound(e, e.schema.bind_all(values)?)
}

/// [`call_bound`] without the coercion pass, for values already bound to
/// this schema once (a traced graph's, whose values came from bound
/// arguments, or a checked saved program's): the count is checked, and a
/// value of the wrong kind is still a type error from the kernel's
/// accessors, never a misread.
pub fn call_prebound(e: &Arc<OpEntry>, values: Vec<IValue>) -> Result<IValue> {
    crate::ensure!(
        values.len() == e.schema.args.len(),
        Type,
        "{}() takes {} arguments but {} were given",
        e.schema.name,
        e.schema.args.len(),
        values.len()
    );
    let a = Args {
        schema: e.schema.clone(),
        vals: values,
    };
    redispatch(e, &a, keys::call_keys())
}

/// The entries a name stands for: a full name (`add.Tensor`) one, a base
/// name (`add`) every overload in registration order.
pub(crate) fn resolve(name: &str) -> Result<Vec<Arc<OpEntry>>> {
    let reg = registry().read();
    // a base name tries every overload, the unnamed one (`mean`) included
    let overloads = if name.contains('.') {
        None
    } else {
        reg.overloads.get(name)
    };
    if let Some(list) = overloads {
        Ok(list
            .iter()
            .filter_map(|n| reg.ops.get(n).cloned())
            .collect())
    } else if let Some(e) = reg.ops.get(name) {
        Ok(vec![e.clone()])
    } else {
        crate::bail!(Runtime, "unknown operator '{name}'");
    }
}

/// Bind against each candidate in turn and dispatch the first that binds
/// (PyTorch's Python argument parser's rule for overloads).
pub(crate) fn call_entries(
    name: &str,
    candidates: &[Arc<OpEntry>],
    args: &[IValue],
    kwargs: &[(&str, IValue)],
    full: bool,
) -> Result<IValue> {
    // a typed method's boxed call names its overload by giving every one
    // of its arguments: the overload of that many arguments binds first,
    // whatever the registration order (`sum(self, dtype)` before
    // `sum.dim_IntList`, whose other arguments have defaults)
    if full && candidates.len() > 1 {
        for e in candidates {
            if args.len() == e.schema.args.len() && !e.schema.cannot_bind(args) {
                if let Ok(vals) = e.schema.bind_all(args.to_vec()) {
                    let a = Args {
                        schema: e.schema.clone(),
                        vals,
                    };
                    return redispatch(e, &a, keys::call_keys());
                }
            }
        }
    }
    let mut first_err = None;
    let mut skipped_first = false;
    for (i, e) in candidates.iter().enumerate() {
        // an overload that cannot bind is passed over without building
        // its error (a tensor for `add.Scalar`'s `other`); the first
        // candidate's error is rebuilt below if none binds
        if candidates.len() > 1 && e.schema.cannot_bind(args) {
            skipped_first |= i == 0;
            continue;
        }
        // `full`: a typed method's boxed call gives every argument in
        // schema order, keyword-only ones included
        let bound = if full && args.len() == e.schema.args.len() {
            e.schema.bind_all(args.to_vec())
        } else {
            e.schema.bind(args, kwargs)
        };
        match bound {
            Ok(vals) => {
                let a = Args {
                    schema: e.schema.clone(),
                    vals,
                };
                return redispatch(e, &a, keys::call_keys());
            }
            Err(err) => {
                if !skipped_first {
                    first_err.get_or_insert(err);
                }
            }
        }
    }
    if skipped_first {
        // the error torch reports is the first overload's
        candidates[0].schema.bind(args, kwargs)?;
    }
    Err(first_err
        .unwrap_or_else(|| Error::new(ErrorKind::Runtime, format!("no overload of '{name}'"))))
}

/// Run bound arguments through the highest key of `ks` that has a kernel
/// for the op or a fallback (Note [Dispatch keys]); fallbacks call this
/// with the keys below their own.
pub fn redispatch(e: &Arc<OpEntry>, a: &Args, ks: DispatchKeySet) -> Result<IValue> {
    for key in ks.iter() {
        if let Some(k) = e.kernel(key) {
            if key.is_backend() {
                check_complex(e, a)?;
                // conjugated views resolved first (Note [The conjugate bit])
                return conj::call(e, a, &|a: &Args| {
                    let _below_modes = keys::ExcludeGuard::modes();
                    k(a)
                });
            }
            return k(a);
        }
        if let Some(f) = keys::fallback(key) {
            return f(e, a, ks.below(key));
        }
    }
    crate::bail!(
        NotImplemented,
        "{}: no kernel for dispatch keys {ks:?}",
        e.schema.full_name()
    )
}

/// Call an op by name with boxed arguments.
///
/// `name` is either a full name (`add.Tensor`) or a base name (`add`); a
/// base name tries each overload in registration order and takes the first
/// whose schema binds the arguments, like PyTorch's Python argument parser.
/// Callers that call one op repeatedly hold an [`OpHandle`] instead.
///
/// ```
/// use ferrotorch_core::{dispatch::{call, IValue}, tensor};
/// let a = tensor([1.0, 2.0]).unwrap();
/// let out = call("add", &[a.clone().into(), a.into()], &[("alpha", IValue::Int(2))]).unwrap();
/// assert_eq!(out.into_tensor().unwrap().to_vec::<f32>().unwrap(), vec![3.0, 6.0]);
/// ```
pub fn call(name: &str, args: &[IValue], kwargs: &[(&str, IValue)]) -> Result<IValue> {
    call_entries(name, &resolve(name)?, args, kwargs, false)
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_builtin_schema_parses_and_names_are_unique() {
        let names = super::op_names();
        assert!(names.len() > 50, "{}", names.len());
        assert!(names.contains(&"add.Tensor".to_string()));
    }
}

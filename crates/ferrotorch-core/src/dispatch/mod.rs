//! The dispatcher: every op registered once, by name, with its schema.
//!
//! Typed Rust methods (`a.add(&b)`) are the fast unboxed path. The same op
//! can be called *boxed* — by name with a list of [`IValue`]s — through
//! [`call`]; the Python and Node bindings, the JIT interpreter and custom
//! ops take that road. Each op module contributes its entries in a
//! `register` function next to the op's definition, so an op is declared in
//! one place (its schema string sits beside its kernel).

mod alias;
mod ivalue;
pub mod schema;

pub use alias::AliasInfo;
pub use ivalue::IValue;
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

/// A registered op.
#[derive(Clone)]
pub struct OpEntry {
    /// Its parsed schema.
    pub schema: Arc<Schema>,
    kernel: Kernel,
}

/// Bound arguments, in schema order, with typed accessors.
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
    fn wrong(&self, i: usize, v: &IValue) -> Error {
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
    ops: HashMap<String, OpEntry>,
    overloads: HashMap<String, Vec<String>>,
}

impl Registry {
    /// Register `kernel` under `schema`. Fails on a malformed schema or a
    /// name already taken.
    pub fn add(
        &mut self,
        schema: &str,
        kernel: impl Fn(&Args) -> Result<IValue> + Send + Sync + 'static,
    ) -> Result<()> {
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
        self.ops.insert(
            full,
            OpEntry {
                schema: Arc::new(s),
                kernel: Arc::new(kernel),
            },
        );
        Ok(())
    }

    /// Register a built-in op; its schema is program text, so a malformed one
    /// is a bug caught by the registry test.
    pub(crate) fn def(
        &mut self,
        schema: &str,
        kernel: impl Fn(&Args) -> Result<IValue> + Send + Sync + 'static,
    ) {
        if let Err(e) = self.add(schema, kernel) {
            panic!("built-in op registration failed: {e}");
        }
    }
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
    registry().write().add(schema, kernel)
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

/// Call an op by name with boxed arguments.
///
/// `name` is either a full name (`add.Tensor`) or a base name (`add`); a
/// base name tries each overload in registration order and takes the first
/// whose schema binds the arguments, like PyTorch's Python argument parser.
///
/// ```
/// use ferrotorch_core::{dispatch::{call, IValue}, tensor};
/// let a = tensor([1.0, 2.0]).unwrap();
/// let out = call("add", &[a.clone().into(), a.into()], &[("alpha", IValue::Int(2))]).unwrap();
/// assert_eq!(out.into_tensor().unwrap().to_vec::<f32>().unwrap(), vec![3.0, 6.0]);
/// ```
pub fn call(name: &str, args: &[IValue], kwargs: &[(&str, IValue)]) -> Result<IValue> {
    let candidates: Vec<OpEntry> = {
        let reg = registry().read();
        // a base name tries every overload, the unnamed one (`mean`) included
        let overloads = if name.contains('.') {
            None
        } else {
            reg.overloads.get(name)
        };
        if let Some(list) = overloads {
            list.iter()
                .filter_map(|n| reg.ops.get(n).cloned())
                .collect()
        } else if let Some(e) = reg.ops.get(name) {
            vec![e.clone()]
        } else {
            crate::bail!(Runtime, "unknown operator '{name}'");
        }
    };
    let mut first_err = None;
    for e in &candidates {
        match e.schema.bind(args, kwargs) {
            Ok(vals) => {
                let a = Args {
                    schema: e.schema.clone(),
                    vals,
                };
                return (e.kernel)(&a);
            }
            Err(err) => {
                first_err.get_or_insert(err);
            }
        }
    }
    Err(first_err
        .unwrap_or_else(|| Error::new(ErrorKind::Runtime, format!("no overload of '{name}'"))))
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

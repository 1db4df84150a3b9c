//! PyTorch function schemas: `add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor`.
//!
//! [`Schema::parse`] reads the same syntax as `native_functions.yaml`
//! (alias annotations such as `Tensor(a!)` are accepted and recorded), and
//! [`Schema::bind`] matches positional and keyword arguments against it,
//! fills defaults, and checks types, with Python's TypeError wording.

use super::alias::{split_annotation, AliasInfo};
use super::ivalue::{is_int_tensor, IValue};
use crate::dtype::DType;
use crate::error::{Error, ErrorKind, Result};
use std::fmt;

/// An argument or return type.
#[derive(Clone, Debug, PartialEq)]
pub enum Type {
    /// `Tensor`
    Tensor,
    /// `Scalar` (bool, int or float)
    Scalar,
    /// `int` / `SymInt`
    Int,
    /// `float`
    Float,
    /// `bool`
    Bool,
    /// `str`
    Str,
    /// `ScalarType` (a dtype)
    ScalarType,
    /// `Generator`
    Generator,
    /// `Layout`, `Device`, `MemoryFormat`: accepted, passed through.
    Opaque(String),
    /// `T[]` or `T[N]`
    List(Box<Type>, Option<usize>),
    /// `T?`
    Optional(Box<Type>),
    /// A custom class, by its qualified name
    /// (`__torch__.torch.classes.ns.Name`; Note [Custom classes]).
    Class(String),
    /// `Any`: every value (a custom class's pickled state).
    Any,
}

impl Type {
    /// The custom class this type names, if it is one (or an optional
    /// one).
    pub fn class_name(&self) -> Option<&str> {
        match self {
            Type::Class(q) => Some(q),
            Type::Optional(t) => t.class_name(),
            _ => None,
        }
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Tensor => write!(f, "Tensor"),
            Type::Scalar => write!(f, "Scalar"),
            Type::Int => write!(f, "int"),
            Type::Float => write!(f, "float"),
            Type::Bool => write!(f, "bool"),
            Type::Str => write!(f, "str"),
            Type::ScalarType => write!(f, "ScalarType"),
            Type::Generator => write!(f, "Generator"),
            Type::Opaque(s) => write!(f, "{s}"),
            Type::List(t, None) => write!(f, "{t}[]"),
            Type::List(t, Some(n)) => write!(f, "{t}[{n}]"),
            Type::Optional(t) => write!(f, "{t}?"),
            Type::Class(q) => write!(f, "{q}"),
            Type::Any => write!(f, "Any"),
        }
    }
}

/// One declared argument.
#[derive(Clone, Debug)]
pub struct Argument {
    /// Name (`self`, `other`, `alpha`).
    pub name: String,
    /// Declared type.
    pub ty: Type,
    /// Default value, if any.
    pub default: Option<IValue>,
    /// Declared after `*`.
    pub kwarg_only: bool,
    /// Written to in place (`Tensor(a!)`).
    pub mutable: bool,
    /// Its alias annotation (`Tensor(a)`, `Tensor(a!)`), if any.
    pub alias: Option<AliasInfo>,
}

/// A parsed schema.
#[derive(Clone, Debug)]
pub struct Schema {
    /// Base name (`add`).
    pub name: String,
    /// Overload name (`Tensor`), possibly empty.
    pub overload: String,
    /// Arguments in order.
    pub args: Vec<Argument>,
    /// Return types.
    pub returns: Vec<Type>,
    /// Return names (`values`, `indices`), where the schema gives them:
    /// torch's Python layer returns a named tuple then.
    pub return_names: Vec<Option<String>>,
    /// Each return's alias annotation (`-> Tensor(a)` of a view, `->
    /// Tensor(a!)` of an in-place op).
    pub return_alias: Vec<Option<AliasInfo>>,
    text: String,
}

impl fmt::Display for Schema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

fn err(msg: String) -> Error {
    Error::new(ErrorKind::Runtime, msg)
}

/// Split on commas at bracket depth 0.
fn split_top(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, c) in s.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(s[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    let last = s[start..].trim();
    if !last.is_empty() {
        out.push(last);
    }
    out
}

fn parse_type(s: &str) -> Result<(Type, Option<AliasInfo>)> {
    let s = s.trim();
    if let Some(inner) = s.strip_suffix('?') {
        let (t, m) = parse_type(inner)?;
        return Ok((Type::Optional(Box::new(t)), m));
    }
    if let Some(open) = s.rfind('[') {
        if s.ends_with(']') {
            let n = &s[open + 1..s.len() - 1];
            let (t, m) = parse_type(&s[..open])?;
            let n = if n.is_empty() {
                None
            } else {
                Some(
                    n.parse::<usize>()
                        .map_err(|_| err(format!("bad list size in type '{s}'")))?,
                )
            };
            return Ok((Type::List(Box::new(t), n), m));
        }
    }
    let (base, alias) = split_annotation(s)?;
    let t = match base {
        "Tensor" => Type::Tensor,
        "Scalar" => Type::Scalar,
        "int" | "SymInt" => Type::Int,
        "float" => Type::Float,
        "bool" => Type::Bool,
        "str" => Type::Str,
        "ScalarType" => Type::ScalarType,
        "Generator" => Type::Generator,
        "Layout" | "Device" | "MemoryFormat" => Type::Opaque(base.to_string()),
        "Any" => Type::Any,
        q if q.starts_with("__torch__.torch.classes.")
            && q.split('.').count() == 5
            && q.split('.').all(|p| !p.is_empty()) =>
        {
            Type::Class(q.to_string())
        }
        other => return Err(err(format!("unknown type '{other}' in schema"))),
    };
    Ok((t, alias))
}

fn parse_default(s: &str, ty: &Type) -> Result<IValue> {
    let s = s.trim();
    let inner = match ty {
        Type::Optional(t) => t.as_ref(),
        t => t,
    };
    Ok(match s {
        "None" => IValue::None,
        "True" => IValue::Bool(true),
        "False" => IValue::Bool(false),
        _ if s.starts_with('[') => {
            let items: Vec<&str> = s[1..s.len() - 1]
                .split(',')
                .map(str::trim)
                .filter(|x| !x.is_empty())
                .collect();
            match inner {
                Type::List(e, _) if **e == Type::Float => IValue::FloatList(
                    items
                        .iter()
                        .map(|x| {
                            x.parse::<f64>()
                                .map_err(|_| err(format!("bad default {s}")))
                        })
                        .collect::<Result<_>>()?,
                ),
                _ => IValue::IntList(
                    items
                        .iter()
                        .map(|x| {
                            x.parse::<i64>()
                                .map_err(|_| err(format!("bad default {s}")))
                        })
                        .collect::<Result<_>>()?,
                ),
            }
        }
        _ if s.starts_with('"') || s.starts_with('\'') => {
            IValue::Str(s[1..s.len() - 1].to_string())
        }
        _ => {
            if let Ok(i) = s.parse::<i64>() {
                match inner {
                    Type::Float => IValue::Float(i as f64),
                    Type::List(_, Some(n)) => IValue::IntList(vec![i; *n]),
                    _ => IValue::Int(i),
                }
            } else if let Ok(f) = s.parse::<f64>() {
                IValue::Float(f)
            } else if let Some(d) = DType::from_name(s) {
                IValue::DType(d)
            } else {
                IValue::Str(s.to_string())
            }
        }
    })
}

impl Schema {
    /// Parse a schema string.
    pub fn parse(text: &str) -> Result<Schema> {
        let open = text
            .find('(')
            .ok_or_else(|| err(format!("schema '{text}' has no '('")))?;
        let arrow = text
            .rfind("->")
            .ok_or_else(|| err(format!("schema '{text}' has no '->'")))?;
        let close = text[..arrow]
            .rfind(')')
            .ok_or_else(|| err(format!("schema '{text}' has no ')'")))?;
        let full = text[..open].trim();
        let (name, overload) = match full.split_once('.') {
            Some((n, o)) => (n.to_string(), o.to_string()),
            None => (full.to_string(), String::new()),
        };
        crate::ensure!(!name.is_empty(), Runtime, "schema '{text}' has no name");
        let mut args = Vec::new();
        let mut kwarg_only = false;
        for a in split_top(&text[open + 1..close]) {
            if a == "*" {
                kwarg_only = true;
                continue;
            }
            let (decl, default) = match a.split_once('=') {
                Some((d, v)) => (d.trim(), Some(v.trim())),
                None => (a, None),
            };
            let sp = decl
                .rfind(' ')
                .ok_or_else(|| err(format!("argument '{a}' in '{text}' has no name")))?;
            let (ty, alias) = parse_type(&decl[..sp])?;
            let default = default.map(|d| parse_default(d, &ty)).transpose()?;
            args.push(Argument {
                name: decl[sp + 1..].to_string(),
                ty,
                default,
                kwarg_only,
                mutable: alias.as_ref().is_some_and(|a| a.write),
                alias,
            });
        }
        let ret = text[arrow + 2..].trim();
        let ret_inner = if ret.starts_with('(') && ret.ends_with(')') {
            &ret[1..ret.len() - 1]
        } else {
            ret
        };
        let mut returns = Vec::new();
        let mut return_names = Vec::new();
        let mut return_alias = Vec::new();
        for r in split_top(ret_inner) {
            let (ty_text, ret_name) = match r.rfind(' ') {
                Some(p) if !r[p..].contains(']') && !r[p..].contains(')') => {
                    (&r[..p], Some(r[p + 1..].to_string()))
                }
                _ => (r, None),
            };
            let (ty, alias) = parse_type(ty_text)?;
            returns.push(ty);
            return_names.push(ret_name);
            return_alias.push(alias);
        }
        Ok(Schema {
            name,
            overload,
            args,
            returns,
            return_names,
            return_alias,
            text: text.to_string(),
        })
    }

    /// The argument whose alias set return `i` shares: the input a view
    /// aliases (`transpose`, `split`) or the one an in-place op returns
    /// (`add_`).
    pub fn aliased_input(&self, i: usize) -> Option<usize> {
        let r = self.return_alias.get(i)?.as_ref()?;
        self.args
            .iter()
            .position(|a| a.alias.as_ref().is_some_and(|x| x.set == r.set))
    }

    /// Arguments written in place (`Tensor(a!)`).
    pub fn mutated_args(&self) -> impl Iterator<Item = usize> + '_ {
        self.args
            .iter()
            .enumerate()
            .filter(|(_, a)| a.mutable)
            .map(|(i, _)| i)
    }

    /// Whether the op writes an argument in place and returns it (`add_`).
    pub fn is_inplace(&self) -> bool {
        (0..self.returns.len()).any(|i| self.aliased_input(i).is_some_and(|a| self.args[a].mutable))
    }

    /// Whether return `i` is a view of an input (aliased, not written).
    pub fn is_view(&self, i: usize) -> bool {
        self.aliased_input(i).is_some_and(|a| !self.args[a].mutable)
    }

    /// `name.overload`, or `name` when there is no overload.
    pub fn full_name(&self) -> String {
        if self.overload.is_empty() {
            self.name.clone()
        } else {
            format!("{}.{}", self.name, self.overload)
        }
    }

    /// Match arguments to this schema: the bound values in declaration order.
    pub fn bind(&self, positional: &[IValue], kwargs: &[(&str, IValue)]) -> Result<Vec<IValue>> {
        let n_pos = self.args.iter().filter(|a| !a.kwarg_only).count();
        if positional.len() > n_pos {
            crate::bail!(
                Type,
                "{}() takes {} positional argument{} but {} were given",
                self.name,
                n_pos,
                if n_pos == 1 { "" } else { "s" },
                positional.len()
            );
        }
        if kwargs.is_empty() {
            // the common call, all by position: no slot table (positional
            // arguments precede keyword-only ones, so value i is argument i)
            let mut bound = Vec::with_capacity(self.args.len());
            for (i, a) in self.args.iter().enumerate() {
                match positional.get(i) {
                    // the common case: the value is of the declared type
                    Some(v) if fits_as_is(&a.ty, v) => bound.push(v.clone()),
                    Some(v) => bound.push(coerce(&self.name, a, v.clone())?),
                    None => bound.push(coerce(&self.name, a, self.default_of(a)?)?),
                }
            }
            return Ok(bound);
        }
        let mut out: Vec<Option<IValue>> = vec![None; self.args.len()];
        for (i, v) in positional.iter().enumerate() {
            out[i] = Some(v.clone());
        }
        for (k, v) in kwargs {
            let Some(i) = self.args.iter().position(|a| a.name == *k) else {
                crate::bail!(
                    Type,
                    "{}() got an unexpected keyword argument '{k}'",
                    self.name
                );
            };
            crate::ensure!(
                out[i].is_none(),
                Type,
                "{}() got multiple values for argument '{k}'",
                self.name
            );
            out[i] = Some(v.clone());
        }
        let mut bound = Vec::with_capacity(out.len());
        for (a, v) in self.args.iter().zip(out) {
            let v = match v {
                Some(v) => v,
                None => self.default_of(a)?,
            };
            bound.push(coerce(&self.name, a, v)?);
        }
        Ok(bound)
    }

    /// The default of an argument left out, or the missing-argument error.
    fn default_of(&self, a: &Argument) -> Result<IValue> {
        match &a.default {
            Some(d) => Ok(d.clone()),
            None => crate::bail!(
                Type,
                "{}() missing required argument '{}'",
                self.name,
                a.name
            ),
        }
    }

    /// Whether these positional values certainly do not bind: a tensor of
    /// one or more dimensions where the declared type takes only numbers,
    /// strings or dtypes (`coerce` accepts a tensor there only when it is
    /// 0-dim). A cheap test that lets overload resolution skip a
    /// candidate without building its error.
    pub fn cannot_bind(&self, positional: &[IValue]) -> bool {
        positional.iter().zip(&self.args).any(|(v, a)| match v {
            IValue::Tensor(t) if t.dim() > 0 => matches!(
                a.ty,
                Type::Scalar | Type::Int | Type::Float | Type::Bool | Type::Str | Type::ScalarType
            ),
            _ => false,
        })
    }

    /// Check a complete argument list, one value per declared argument in
    /// order (keyword-only ones included), as a saved program or the
    /// tracer holds them: the coerced values, or a type error naming the
    /// argument.
    pub fn bind_all(&self, values: Vec<IValue>) -> Result<Vec<IValue>> {
        crate::ensure!(
            values.len() == self.args.len(),
            Type,
            "{}() takes {} arguments but {} were given",
            self.name,
            self.args.len(),
            values.len()
        );
        self.args
            .iter()
            .zip(values)
            .map(|(a, v)| {
                if fits_as_is(&a.ty, &v) {
                    Ok(v)
                } else {
                    coerce(&self.name, a, v)
                }
            })
            .collect()
    }
}

/// Whether `v` is already exactly of type `ty` (what [`coerce`] would
/// return unchanged): the common call skips coercion. A 0-dim tensor for
/// a number, a traced int or any conversion is left to `coerce`.
#[inline]
fn fits_as_is(ty: &Type, v: &IValue) -> bool {
    match (ty, v) {
        (Type::Tensor, IValue::Tensor(_))
        | (Type::Int, IValue::Int(_))
        | (Type::Float, IValue::Float(_))
        | (Type::Bool, IValue::Bool(_))
        | (Type::Str, IValue::Str(_))
        | (Type::ScalarType, IValue::DType(_))
        | (
            Type::Scalar,
            IValue::Int(_) | IValue::Float(_) | IValue::Bool(_) | IValue::Complex(..),
        )
        | (Type::Optional(_), IValue::None)
        | (Type::Any, _) => true,
        (Type::Optional(t), IValue::Tensor(_)) => **t == Type::Tensor,
        (Type::List(e, _), IValue::IntList(_)) => **e == Type::Int,
        (Type::List(e, _), IValue::TensorList(_)) => **e == Type::Tensor,
        _ => false,
    }
}

fn type_error(op: &str, a: &Argument, got: &str) -> Error {
    Error::new(
        ErrorKind::Type,
        format!("{op}(): argument '{}' must be {}, not {got}", a.name, a.ty),
    )
}

/// Whether the tracer will see this call.
fn tracing() -> bool {
    super::keys::call_keys().has(super::DispatchKey::Tracer)
}

/// A traced int as itself while the tracer will see the call, else as its
/// value (Note [Traced sizes]).
fn sym_or_value(v: IValue) -> Option<IValue> {
    if tracing() {
        Some(v)
    } else {
        v.concrete().ok()
    }
}

fn coerce(op: &str, a: &Argument, v: IValue) -> Result<IValue> {
    fn go(ty: &Type, v: IValue) -> Option<IValue> {
        Some(match (ty, v) {
            (Type::Optional(_), IValue::None) => IValue::None,
            (Type::Optional(t), v) => go(t, v)?,
            (Type::Tensor, v @ IValue::Tensor(_)) => v,
            (
                Type::Scalar,
                v @ (IValue::Int(_) | IValue::Float(_) | IValue::Bool(_) | IValue::Complex(..)),
            ) => v,
            // a 0-dim tensor stands for a number, as in torch: while
            // tracing, an integer one is a traced int (`arange(x.size(0))`)
            // and any other a traced scalar; outside, its value. One that
            // requires grad is not a number (torch's rule too): it binds
            // only to a Tensor overload, so its gradient is kept
            (Type::Scalar, IValue::Tensor(t) | IValue::SymInt(t)) if is_int_tensor(&t) => {
                sym_or_value(IValue::SymInt(t))?
            }
            (Type::Scalar, IValue::Tensor(t) | IValue::SymScalar(t))
                if t.dim() == 0 && !t.requires_grad() =>
            {
                if tracing() {
                    IValue::SymScalar(t)
                } else {
                    IValue::from(t.item().ok()?)
                }
            }
            (Type::Int, v @ IValue::Int(_)) => v,
            (Type::Int, IValue::Tensor(t) | IValue::SymInt(t)) if is_int_tensor(&t) => {
                sym_or_value(IValue::SymInt(t))?
            }
            (Type::List(e, _), v @ IValue::SymIntList(_)) if **e == Type::Int => sym_or_value(v)?,
            (Type::List(e, _), IValue::TensorList(l))
                if **e == Type::Int && !l.is_empty() && l.iter().all(is_int_tensor) =>
            {
                sym_or_value(IValue::SymIntList(
                    l.into_iter().map(IValue::Tensor).collect(),
                ))?
            }
            (Type::Float, IValue::Int(i)) => IValue::Float(i as f64),
            (Type::Float, v @ IValue::Float(_)) => v,
            (Type::Bool, v @ IValue::Bool(_)) => v,
            (Type::Str, v @ IValue::Str(_)) => v,
            (Type::ScalarType, v @ IValue::DType(_)) => v,
            // a dtype by name, as the Node, C and Go bindings pass it
            // (`{dtype: 'float64'}`)
            (Type::ScalarType, IValue::Str(s)) => IValue::DType(DType::from_name(&s)?),
            (Type::Generator, v @ IValue::Generator(_)) => v,
            (Type::Opaque(_), v) => v,
            (Type::Any, v) => v,
            (Type::Class(q), IValue::Object(o)) if o.class().qualified_name() == q => {
                IValue::Object(o)
            }
            (Type::List(e, n), IValue::Int(i)) if **e == Type::Int => {
                IValue::IntList(vec![i; n.unwrap_or(1)])
            }
            (Type::List(e, _), v @ IValue::IntList(_)) if **e == Type::Int => v,
            (Type::List(e, _), IValue::IntList(l)) if **e == Type::Float => {
                IValue::FloatList(l.into_iter().map(|i| i as f64).collect())
            }
            (Type::List(e, _), v @ IValue::FloatList(_)) if **e == Type::Float => v,
            (Type::List(e, _), v @ IValue::BoolList(_)) if **e == Type::Bool => v,
            (Type::List(e, _), v @ IValue::TensorList(_)) if **e == Type::Tensor => v,
            (Type::List(e, _), IValue::TensorList(l)) if matches!(**e, Type::Optional(_)) => {
                IValue::OptTensorList(l.into_iter().map(Some).collect())
            }
            (Type::List(e, _), v @ IValue::OptTensorList(_))
                if matches!(**e, Type::Optional(_)) =>
            {
                v
            }
            (Type::List(_, _), IValue::IntList(l)) if l.is_empty() => IValue::TensorList(vec![]),
            // an empty list has no element type: it fits any list argument
            (Type::List(e, _), IValue::TensorList(l)) if l.is_empty() && **e == Type::Int => {
                IValue::IntList(vec![])
            }
            (Type::List(e, _), IValue::TensorList(l)) if l.is_empty() && **e == Type::Float => {
                IValue::FloatList(vec![])
            }
            _ => return None,
        })
    }
    // only the type's name is needed for the error: no copy of the value
    let got = v.type_name();
    go(&a.ty, v).ok_or_else(|| type_error(op, a, got))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_native_function_syntax() {
        let s = Schema::parse("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor")
            .unwrap();
        assert_eq!((s.name.as_str(), s.overload.as_str()), ("add", "Tensor"));
        assert_eq!(s.args.len(), 3);
        assert!(s.args[2].kwarg_only);
        assert!(matches!(s.args[2].default, Some(IValue::Int(1))));
        let s = Schema::parse(
            "max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
        )
        .unwrap();
        assert_eq!(s.returns, vec![Type::Tensor, Type::Tensor]);
        assert_eq!(
            s.return_names,
            vec![Some("values".to_string()), Some("indices".to_string())]
        );
        let s = Schema::parse(
            "add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)",
        )
        .unwrap();
        assert!(s.args[0].mutable);
        let s = Schema::parse(
            "sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
        )
        .unwrap();
        assert_eq!(
            s.args[1].ty,
            Type::Optional(Box::new(Type::List(Box::new(Type::Int), Some(1))))
        );
        let s = Schema::parse("conv2d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=1, SymInt[2] padding=0) -> Tensor").unwrap();
        assert!(matches!(&s.args[3].default, Some(IValue::IntList(v)) if v == &vec![1, 1]));
        assert!(Schema::parse("nonsense").is_err());
        assert!(Schema::parse("f(Blob x) -> Tensor").is_err());
    }

    #[test]
    fn binds_like_python() {
        let s = Schema::parse("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor")
            .unwrap();
        let t = crate::Tensor::scalar_tensor(1.0);
        let b = s.bind(&[t.clone().into(), t.clone().into()], &[]).unwrap();
        assert!(matches!(b[2], IValue::Int(1)));
        let e = s.bind(&[t.clone().into()], &[]).err().unwrap();
        assert_eq!(e.message(), "add() missing required argument 'other'");
        let e = s
            .bind(&[t.clone().into(), t.clone().into(), IValue::Int(2)], &[])
            .err()
            .unwrap();
        assert_eq!(
            e.message(),
            "add() takes 2 positional arguments but 3 were given"
        );
        let e = s
            .bind(
                &[t.clone().into(), t.clone().into()],
                &[("beta", IValue::Int(1))],
            )
            .err()
            .unwrap();
        assert_eq!(
            e.message(),
            "add() got an unexpected keyword argument 'beta'"
        );
        let e = s
            .bind(&[t.clone().into(), IValue::Str("x".into())], &[])
            .err()
            .unwrap();
        assert_eq!(
            e.message(),
            "add(): argument 'other' must be Tensor, not str"
        );
        assert_eq!(e.kind(), ErrorKind::Type);
    }

    #[test]
    fn a_dtype_binds_by_name() {
        let s = Schema::parse("ones(SymInt[] size, *, ScalarType? dtype=None) -> Tensor").unwrap();
        let b = s
            .bind(
                &[IValue::IntList(vec![2])],
                &[("dtype", IValue::Str("float64".into()))],
            )
            .unwrap();
        assert!(matches!(b[1], IValue::DType(DType::F64)));
        let e = s
            .bind(
                &[IValue::IntList(vec![2])],
                &[("dtype", IValue::Str("floaty".into()))],
            )
            .err()
            .unwrap();
        assert_eq!(e.kind(), ErrorKind::Type);
    }

    /// The fast path skips `coerce` only where coerce keeps the value.
    #[test]
    fn values_that_fit_as_is_are_what_coerce_keeps() {
        let t = crate::Tensor::from_slice(&[1.0f32, 2.0]);
        let types = [
            "Tensor",
            "int",
            "float",
            "bool",
            "str",
            "ScalarType",
            "Scalar",
            "Tensor?",
            "int?",
            "int[]",
            "int[2]",
            "Tensor[]",
            "float[]",
            "Any",
        ];
        let values = [
            IValue::Tensor(t.clone()),
            IValue::Tensor(crate::Tensor::scalar_tensor(3i64)),
            IValue::Int(2),
            IValue::Float(0.5),
            IValue::Bool(true),
            IValue::Str("a".into()),
            IValue::DType(DType::F64),
            IValue::None,
            IValue::IntList(vec![1, 2]),
            IValue::TensorList(vec![t.clone()]),
            IValue::FloatList(vec![1.0]),
        ];
        let mut fast = 0;
        for ty in types {
            let s = Schema::parse(&format!("f({ty} x) -> Tensor")).unwrap();
            let a = &s.args[0];
            for v in &values {
                if fits_as_is(&a.ty, v) {
                    fast += 1;
                    let c = coerce("f", a, v.clone()).unwrap();
                    assert_eq!(c.type_name(), v.type_name(), "{ty} {}", v.type_name());
                }
            }
        }
        assert!(fast > 15, "{fast}");
    }

    #[test]
    fn cannot_bind_only_rejects_what_coerce_rejects() {
        let s = Schema::parse("add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor")
            .unwrap();
        let v = crate::Tensor::from_slice(&[1.0f32, 2.0]);
        let z = crate::Tensor::scalar_tensor(2.0);
        assert!(s.cannot_bind(&[v.clone().into(), v.clone().into()]));
        assert!(s.bind(&[v.clone().into(), v.clone().into()], &[]).is_err());
        // a 0-dim tensor may stand for a number: left to the binder
        assert!(!s.cannot_bind(&[v.clone().into(), z.clone().into()]));
        assert!(s.bind(&[v.clone().into(), z.into()], &[]).is_ok());
        assert!(!s.cannot_bind(&[v.clone().into(), IValue::Int(2)]));
    }
}

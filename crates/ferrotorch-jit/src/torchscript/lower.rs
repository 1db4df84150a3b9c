//! Traced TorchScript methods lowered into one flat graph of dispatcher
//! ops (Note [Loading TorchScript archives]): submodule `forward` calls
//! are inlined, attribute reads become `prim::GetAttr` of their qualified
//! names, constants stay known until an op takes them, and each call is
//! bound to the first overload of its name whose schema takes the
//! arguments' kinds (PyTorch's rule), the bound (coerced) constants and
//! defaults becoming `prim::Constant` nodes.

use super::parse::{Expr, Method, Stmt};
use super::upgraders;
use crate::ir::{Graph, NodeKind, ValueId, ValueType};
use ferrotorch_core::dispatch::{find_overloads, IValue, OpEntry, Type};
use ferrotorch_core::{bail, ensure, DType, Error, ErrorKind, Result, Tensor};
use std::collections::HashMap;
use std::sync::Arc;

/// How deep submodule calls may nest.
const MAX_CALL_DEPTH: usize = 64;

/// A module object of the archive's `data.pkl`.
pub(crate) struct ModObj {
    /// Its class's qualified name (`__torch__.torch.nn.modules.conv.Conv2d`).
    pub class: String,
    /// Its attributes by name.
    pub attrs: HashMap<String, AttrVal>,
}

/// One attribute of a module object.
pub(crate) enum AttrVal {
    /// A tensor (a parameter or buffer), read by qualified name; its
    /// number of dimensions.
    Tensor(usize),
    /// A submodule.
    Module(ModObj),
    /// A number, bool, string or None.
    Const(IValue),
}

/// What an expression stands for while lowering.
#[derive(Clone)]
pub(super) enum Sym<'a> {
    /// A graph value.
    V(ValueId),
    /// A value known now.
    C(IValue),
    /// A list or tuple of these.
    List(Vec<Sym<'a>>),
    Tuple(Vec<Sym<'a>>),
    /// A module object and its attribute path (`layer1.0.`).
    Module(&'a ModObj, String),
    /// A namespace or function name (`torch`, `ops.prim`, `torch.add`).
    Name(String),
    /// A module's method (`(conv).forward`), its module at its path.
    Method(&'a ModObj, String, String),
}

/// The methods of the archive's classes, by qualified class name.
pub(crate) type Classes = HashMap<String, HashMap<String, Method>>;

pub(crate) struct Lower<'a> {
    pub g: Graph,
    self_id: ValueId,
    classes: &'a Classes,
    constants: &'a [Tensor],
    version: u64,
    attrs: HashMap<String, ValueId>,
    /// The rank of each attribute value's tensor.
    ranks: HashMap<ValueId, usize>,
}

fn bad(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::Runtime, format!("jit.load: {}", msg.into()))
}

fn tensor_type() -> ValueType {
    // a loaded program's tensors have no traced sizes
    ValueType::Tensor {
        dtype: DType::F32,
        sizes: Vec::new(),
        strides: Vec::new(),
        requires_grad: false,
    }
}

/// TorchScript's `ScalarType` numbering (c10's enum), as code writes
/// `dtype=6`.
fn scalar_type(n: i64) -> Result<DType> {
    Ok(match n {
        0 => DType::U8,
        1 => DType::I8,
        2 => DType::I16,
        3 => DType::I32,
        4 => DType::I64,
        5 => DType::F16,
        6 => DType::F32,
        7 => DType::F64,
        8 => DType::C32,
        9 => DType::C64,
        10 => DType::C128,
        11 => DType::Bool,
        15 => DType::BF16,
        other => bail!(
            Runtime,
            "jit.load: the program uses ScalarType {other}, a dtype ferrotorch does not have"
        ),
    })
}

fn is_dtype_arg(ty: &Type) -> bool {
    match ty {
        Type::ScalarType => true,
        Type::Optional(t) => is_dtype_arg(t),
        _ => false,
    }
}

/// The value type of a schema's return type.
fn return_type(t: &Type) -> ValueType {
    match t {
        Type::Tensor => tensor_type(),
        Type::Int => ValueType::Int,
        Type::Float | Type::Scalar => ValueType::Float,
        Type::Bool => ValueType::Bool,
        Type::Str => ValueType::Str,
        Type::ScalarType => ValueType::ScalarType,
        Type::List(e, _) => ValueType::List(Box::new(return_type(e))),
        Type::Optional(e) => return_type(e),
        _ => ValueType::None,
    }
}

impl<'a> Lower<'a> {
    pub(crate) fn new(classes: &'a Classes, constants: &'a [Tensor], version: u64) -> Self {
        let mut g = Graph::default();
        let self_id = g.add_input(ValueType::Module("__torch__".into()), Some("self".into()));
        Lower {
            g,
            self_id,
            classes,
            constants,
            version,
            attrs: HashMap::new(),
            ranks: HashMap::new(),
        }
    }

    /// Lower `root`'s `forward` into the graph: its inputs and outputs.
    pub(crate) fn forward(&mut self, root: &'a ModObj) -> Result<()> {
        let m = self.method(root, "forward")?;
        let mut args = Vec::with_capacity(m.args.len());
        for a in &m.args {
            let v = self.g.add_input(tensor_type(), Some(a.clone()));
            args.push(Sym::V(v));
        }
        let out = self.call(root, String::new(), m, args, 0)?;
        let outs = match out {
            Sym::Tuple(items) => items,
            other => vec![other],
        };
        for o in outs {
            let v = self.value(o)?;
            ensure!(
                matches!(self.g.values[v].ty, ValueType::Tensor { .. }),
                Runtime,
                "jit.load: forward returns a {}, not a tensor",
                self.g.values[v].ty
            );
            self.g.outputs.push(v);
        }
        Ok(())
    }

    fn method(&self, m: &ModObj, name: &str) -> Result<&'a Method> {
        self.classes
            .get(&m.class)
            .and_then(|ms| ms.get(name))
            .ok_or_else(|| {
                bad(format!(
                    "the archive's code defines no method {name} of {}",
                    m.class
                ))
            })
    }

    /// Run `m`'s body on `args` symbolically: its return value.
    fn call(
        &mut self,
        obj: &'a ModObj,
        path: String,
        m: &'a Method,
        args: Vec<Sym<'a>>,
        depth: usize,
    ) -> Result<Sym<'a>> {
        ensure!(
            depth < MAX_CALL_DEPTH,
            Runtime,
            "jit.load: submodule calls nest more than {MAX_CALL_DEPTH} deep"
        );
        ensure!(
            args.len() == m.args.len(),
            Runtime,
            "jit.load: {}.{} takes {} arguments, the code gives {}",
            obj.class,
            m.name,
            m.args.len(),
            args.len()
        );
        let mut env: HashMap<&str, Sym<'a>> = HashMap::new();
        env.insert("self", Sym::Module(obj, path));
        for (n, a) in m.args.iter().zip(args) {
            env.insert(n.as_str(), a);
        }
        for s in &m.body {
            match s {
                Stmt::Assign {
                    targets,
                    tuple,
                    value,
                    line,
                } => {
                    let v = self
                        .expr(value, &env, depth)
                        .map_err(|e| at(e, &obj.class, *line))?;
                    if !tuple {
                        env.insert(targets[0].as_str(), v);
                        continue;
                    }
                    let items = self
                        .unpack(v, targets.len())
                        .map_err(|e| at(e, &obj.class, *line))?;
                    for (t, v) in targets.iter().zip(items) {
                        env.insert(t.as_str(), v);
                    }
                }
                Stmt::Return(e, line) => {
                    return self
                        .expr(e, &env, depth)
                        .map_err(|e| at(e, &obj.class, *line));
                }
            }
        }
        Err(bad(format!("{}.{} has no return", obj.class, m.name)))
    }

    /// `a, b, = v`: a tuple's items, or a list value's elements
    /// (`prim::ListUnpack`).
    fn unpack(&mut self, v: Sym<'a>, n: usize) -> Result<Vec<Sym<'a>>> {
        match v {
            Sym::Tuple(items) | Sym::List(items) if items.len() == n => Ok(items),
            Sym::V(id) if matches!(&self.g.values[id].ty, ValueType::List(e) if matches!(**e, ValueType::Tensor { .. })) =>
            {
                let outs = self
                    .g
                    .add_node(NodeKind::ListUnpack, vec![id], vec![tensor_type(); n]);
                Ok(outs.into_iter().map(Sym::V).collect())
            }
            _ => Err(bad(format!("cannot unpack the value into {n} names"))),
        }
    }

    fn expr(&mut self, e: &Expr, env: &HashMap<&str, Sym<'a>>, depth: usize) -> Result<Sym<'a>> {
        Ok(match e {
            Expr::Int(i) => Sym::C(IValue::Int(*i)),
            Expr::Float(f) => Sym::C(IValue::Float(*f)),
            Expr::Bool(b) => Sym::C(IValue::Bool(*b)),
            Expr::Str(s) => Sym::C(IValue::Str(s.clone())),
            Expr::None => Sym::C(IValue::None),
            Expr::List(items) => Sym::List(
                items
                    .iter()
                    .map(|x| self.expr(x, env, depth))
                    .collect::<Result<_>>()?,
            ),
            Expr::Tuple(items) => Sym::Tuple(
                items
                    .iter()
                    .map(|x| self.expr(x, env, depth))
                    .collect::<Result<_>>()?,
            ),
            Expr::Name(n) => match env.get(n.as_str()) {
                Some(s) => s.clone(),
                None => Sym::Name(n.clone()),
            },
            Expr::Attr(base, name) => {
                if let Expr::Name(c) = &**base {
                    if c == "CONSTANTS" && !env.contains_key("CONSTANTS") {
                        let k: usize = name
                            .strip_prefix('c')
                            .and_then(|k| k.parse().ok())
                            .ok_or_else(|| bad(format!("no constant CONSTANTS.{name}")))?;
                        let t = self.constants.get(k).ok_or_else(|| {
                            bad(format!(
                                "CONSTANTS.{name}: the archive has {} constants",
                                self.constants.len()
                            ))
                        })?;
                        return Ok(Sym::C(IValue::Tensor(t.clone())));
                    }
                }
                match self.expr(base, env, depth)? {
                    Sym::Module(m, path) => self.attr(m, &path, name)?,
                    Sym::Name(ns) => Sym::Name(format!("{ns}.{name}")),
                    _ => bail!(Runtime, "jit.load: .{name} of a value that is not a module"),
                }
            }
            Expr::Subscript(..) => {
                bail!(Runtime, "jit.load: subscripts are not part of traced code")
            }
            Expr::Call { func, args, kwargs } => {
                if matches!(&**func, Expr::Name(n) if n == "annotate") && args.len() == 2 {
                    // annotate(T, v): v, the type only said; a tensor
                    // annotated `number` is the scalar it holds
                    let v = self.expr(&args[1], env, depth)?;
                    if matches!(&args[0], Expr::Name(t) if t == "number" || t == "float" || t == "int")
                    {
                        if let Sym::V(id) = v {
                            if matches!(self.g.values[id].ty, ValueType::Tensor { .. }) {
                                return self.op("ScalarImplicit", "annotate", vec![v], vec![]);
                            }
                        }
                    }
                    return Ok(v);
                }
                let f = self.expr(func, env, depth)?;
                let args: Vec<Sym<'a>> = args
                    .iter()
                    .map(|x| self.expr(x, env, depth))
                    .collect::<Result<_>>()?;
                let kwargs: Vec<(&str, Sym<'a>)> = kwargs
                    .iter()
                    .map(|(k, x)| Ok((k.as_str(), self.expr(x, env, depth)?)))
                    .collect::<Result<_>>()?;
                self.apply(f, args, kwargs, depth)?
            }
        })
    }

    /// `m.name` on the module at `path`.
    fn attr(&mut self, m: &'a ModObj, path: &str, name: &str) -> Result<Sym<'a>> {
        let full = format!("{path}{name}");
        Ok(match m.attrs.get(name) {
            Some(AttrVal::Module(sub)) => Sym::Module(sub, format!("{full}.")),
            Some(AttrVal::Const(c)) => Sym::C(c.clone()),
            Some(AttrVal::Tensor(rank)) => {
                if let Some(&v) = self.attrs.get(&full) {
                    return Ok(Sym::V(v));
                }
                let v = self.g.add_node(
                    NodeKind::GetAttr(full.clone()),
                    vec![self.self_id],
                    vec![tensor_type()],
                )[0];
                self.g.values[v].name = Some(name.to_string());
                self.attrs.insert(full, v);
                self.ranks.insert(v, *rank);
                Sym::V(v)
            }
            // `(conv).forward`: the method, applied by the call
            None if self
                .classes
                .get(&m.class)
                .is_some_and(|c| c.contains_key(name)) =>
            {
                Sym::Method(m, path.to_string(), name.to_string())
            }
            None => bail!(Runtime, "jit.load: {} has no attribute {name}", m.class),
        })
    }

    fn apply(
        &mut self,
        f: Sym<'a>,
        args: Vec<Sym<'a>>,
        kwargs: Vec<(&str, Sym<'a>)>,
        depth: usize,
    ) -> Result<Sym<'a>> {
        let name = match f {
            Sym::Name(n) => n,
            // a method of a submodule: its body inlined
            Sym::Method(obj, path, method) => {
                ensure!(
                    kwargs.is_empty(),
                    Runtime,
                    "jit.load: {method}() called with keyword arguments"
                );
                let m = self.method(obj, &method)?;
                return self.call(obj, path, m, args, depth + 1);
            }
            _ => bail!(
                Runtime,
                "jit.load: a call of a value that is not a function"
            ),
        };
        match name.as_str() {
            // `getattr(self, "0")`: a submodule whose name is not an identifier
            "getattr" => {
                return match (args.first(), args.get(1)) {
                    (Some(Sym::Module(m, path)), Some(Sym::C(IValue::Str(a)))) => {
                        let (m, path, a) = (*m, path.clone(), a.clone());
                        self.attr(m, &path, &a)
                    }
                    _ => Err(bad("getattr() takes a module and an attribute name")),
                }
            }
            "torch.device" => {
                return match args.first() {
                    Some(Sym::C(IValue::Str(d))) => Ok(Sym::C(IValue::Str(d.clone()))),
                    _ => Err(bad("torch.device() takes a device name")),
                }
            }
            "int" | "float" | "bool" if args.len() == 1 => {
                return match &args[0] {
                    Sym::C(IValue::Int(i)) if name == "int" => Ok(Sym::C(IValue::Int(*i))),
                    Sym::C(IValue::Float(x)) if name == "float" => Ok(Sym::C(IValue::Float(*x))),
                    Sym::C(IValue::Int(i)) if name == "float" => {
                        Ok(Sym::C(IValue::Float(*i as f64)))
                    }
                    _ if name == "int" => self.op("Int.Tensor", "int", args, kwargs),
                    _ => self.op("ScalarImplicit", &name, args, kwargs),
                };
            }
            _ => {}
        }
        let op = if let Some(f) = name.strip_prefix("torch.") {
            f.to_string()
        } else if let Some(f) = name.strip_prefix("ops.aten.") {
            f.to_string()
        } else if let Some(rest) = name.strip_prefix("ops.") {
            match rest.split_once('.') {
                Some((ns, f)) => format!("{ns}::{f}"),
                None => bail!(Runtime, "jit.load: unknown function {name}"),
            }
        } else {
            bail!(
                Runtime,
                "jit.load: the program calls {name}, which is not a TorchScript builtin"
            )
        };
        let op = upgraders::name_for(&op, self.version, &kwargs);
        self.op(&op, &name, args, kwargs)
    }

    /// A value known now, as the kind of value an op's binder checks.
    fn dummy(&self, s: &Sym<'a>) -> Result<IValue> {
        Ok(match s {
            Sym::C(v) => v.clone(),
            Sym::V(id) => match &self.g.values[*id].ty {
                ValueType::Tensor { .. } => IValue::Tensor(Tensor::zeros(&[1], DType::F32)?),
                ValueType::Int => IValue::Int(1),
                ValueType::Float => IValue::Float(1.0),
                ValueType::Bool => IValue::Bool(false),
                ValueType::List(e) if matches!(**e, ValueType::Tensor { .. }) => {
                    IValue::TensorList(vec![Tensor::zeros(&[1], DType::F32)?])
                }
                ValueType::List(e) if **e == ValueType::Int => IValue::IntList(vec![1]),
                t => bail!(Runtime, "jit.load: a value of type {t} passed to an op"),
            },
            Sym::List(items) | Sym::Tuple(items) => {
                let vals: Vec<IValue> =
                    items.iter().map(|x| self.dummy(x)).collect::<Result<_>>()?;
                if vals.iter().all(|v| matches!(v, IValue::Int(_))) {
                    IValue::IntList(
                        vals.iter()
                            .map(|v| if let IValue::Int(i) = v { *i } else { 0 })
                            .collect(),
                    )
                } else if vals
                    .iter()
                    .all(|v| matches!(v, IValue::Float(_) | IValue::Int(_)))
                {
                    IValue::FloatList(
                        vals.iter()
                            .map(|v| match v {
                                IValue::Int(i) => *i as f64,
                                IValue::Float(f) => *f,
                                _ => 0.0,
                            })
                            .collect(),
                    )
                } else if vals.iter().all(|v| matches!(v, IValue::Bool(_))) {
                    IValue::BoolList(
                        vals.iter()
                            .map(|v| matches!(v, IValue::Bool(true)))
                            .collect(),
                    )
                } else if vals.iter().all(|v| matches!(v, IValue::Tensor(_))) {
                    IValue::TensorList(
                        vals.into_iter()
                            .map(IValue::into_tensor)
                            .collect::<Result<_>>()?,
                    )
                } else if vals
                    .iter()
                    .all(|v| matches!(v, IValue::Tensor(_) | IValue::None))
                {
                    IValue::OptTensorList(
                        vals.into_iter()
                            .map(|v| match v {
                                IValue::None => Ok(None),
                                v => v.into_tensor().map(Some),
                            })
                            .collect::<Result<_>>()?,
                    )
                } else {
                    bail!(Runtime, "jit.load: a list of mixed kinds passed to an op")
                }
            }
            Sym::Module(m, _) => bail!(Runtime, "jit.load: the module {} passed to an op", m.class),
            Sym::Name(n) | Sym::Method(_, _, n) => {
                bail!(Runtime, "jit.load: the function {n} passed to an op")
            }
        })
    }

    /// Whether `s` holds graph values (it cannot be a constant).
    fn is_dynamic(s: &Sym<'a>) -> bool {
        match s {
            Sym::V(_) => true,
            Sym::List(items) | Sym::Tuple(items) => items.iter().any(Self::is_dynamic),
            _ => false,
        }
    }

    /// `s` as one graph value: constants become `prim::Constant`, lists
    /// of values `prim::ListConstruct` of `ty` (or of their kind).
    fn value_as(&mut self, s: Sym<'a>, ty: Option<ValueType>) -> Result<ValueId> {
        Ok(match s {
            Sym::V(id) => id,
            Sym::C(v) => {
                let t = ValueType::of(&v);
                self.g.add_node(NodeKind::Constant(v), vec![], vec![t])[0]
            }
            Sym::List(items) | Sym::Tuple(items) => {
                let ids: Vec<ValueId> = items
                    .into_iter()
                    .map(|x| self.value_as(x, None))
                    .collect::<Result<_>>()?;
                let ty = match ty {
                    Some(t) => t,
                    None => match ids.first().map(|&i| &self.g.values[i].ty) {
                        Some(ValueType::Tensor { .. }) => ValueType::List(Box::new(tensor_type())),
                        _ => ValueType::List(Box::new(ValueType::Int)),
                    },
                };
                self.g.add_node(NodeKind::ListConstruct, ids, vec![ty])[0]
            }
            Sym::Module(m, _) => bail!(Runtime, "jit.load: the module {} used as a value", m.class),
            Sym::Name(n) | Sym::Method(_, _, n) => {
                bail!(Runtime, "jit.load: the function {n} used as a value")
            }
        })
    }

    fn value(&mut self, s: Sym<'a>) -> Result<ValueId> {
        self.value_as(s, None)
    }

    /// A call of op `op` (`name` as the code wrote it): bound to its first
    /// overload that takes the arguments, recorded as a node.
    fn op(
        &mut self,
        op: &str,
        name: &str,
        args: Vec<Sym<'a>>,
        kwargs: Vec<(&str, Sym<'a>)>,
    ) -> Result<Sym<'a>> {
        if let Some((conv, args)) = self.direct_convolution(op, &args, &kwargs) {
            return self.op(conv, name, args, vec![]);
        }
        let candidates = find_overloads(op);
        ensure!(
            !candidates.is_empty(),
            Runtime,
            "jit.load: the program calls {name} (aten::{op}), an operator ferrotorch does not have"
        );
        let mut first_err = None;
        for e in &candidates {
            match self.bind(e, &args, &kwargs) {
                Ok(bound) => return self.emit(e, &args, &kwargs, bound),
                Err(err) => {
                    first_err.get_or_insert(err);
                }
            }
        }
        let why = first_err.map(|e| e.to_string()).unwrap_or_default();
        Err(bad(format!(
            "{name}: no overload of {op} takes these arguments ({why})"
        )))
    }

    /// `_convolution(x, w, b, stride, padding, dilation, False, _, groups,
    /// ...)` of a module's 4-D (3-D) weight as `conv2d` (`conv1d`), the op
    /// the graph passes fold and prepack (the weight's rank is known from
    /// the archive, so this is the op ATen's dispatch would pick).
    fn direct_convolution(
        &self,
        op: &str,
        args: &[Sym<'a>],
        kwargs: &[(&str, Sym<'a>)],
    ) -> Option<(&'static str, Vec<Sym<'a>>)> {
        if !matches!(op, "_convolution" | "convolution") || !kwargs.is_empty() || args.len() < 9 {
            return None;
        }
        let Sym::V(w) = &args[1] else { return None };
        if !matches!(args[6], Sym::C(IValue::Bool(false))) {
            return None;
        }
        let conv = match self.ranks.get(w) {
            Some(4) => "conv2d",
            Some(3) => "conv1d",
            _ => return None,
        };
        let pick = |i: usize| args[i].clone();
        Some((
            conv,
            vec![
                pick(0),
                pick(1),
                pick(2),
                pick(3),
                pick(4),
                pick(5),
                pick(8),
            ],
        ))
    }

    /// The values `e` binds the arguments to, with TorchScript's numbered
    /// dtypes made dtypes.
    fn bind(
        &self,
        e: &Arc<OpEntry>,
        args: &[Sym<'a>],
        kwargs: &[(&str, Sym<'a>)],
    ) -> Result<Vec<IValue>> {
        let s = &e.schema;
        let fix = |ty: Option<&Type>, v: IValue| -> Result<IValue> {
            match (ty, v) {
                (Some(t), IValue::Int(n)) if is_dtype_arg(t) => Ok(IValue::DType(scalar_type(n)?)),
                (_, v) => Ok(v),
            }
        };
        let pos: Vec<IValue> = args
            .iter()
            .enumerate()
            .map(|(i, a)| fix(s.args.get(i).map(|x| &x.ty), self.dummy(a)?))
            .collect::<Result<_>>()?;
        ensure!(
            !s.cannot_bind(&pos),
            Type,
            "{}: tensors where numbers go",
            s.full_name()
        );
        let kw: Vec<(&str, IValue)> = kwargs
            .iter()
            .map(|(k, a)| {
                let ty = s.args.iter().find(|x| x.name == *k).map(|x| &x.ty);
                Ok((*k, fix(ty, self.dummy(a)?)?))
            })
            .collect::<Result<_>>()?;
        s.bind(&pos, &kw)
    }

    fn emit(
        &mut self,
        e: &Arc<OpEntry>,
        args: &[Sym<'a>],
        kwargs: &[(&str, Sym<'a>)],
        bound: Vec<IValue>,
    ) -> Result<Sym<'a>> {
        let s = e.schema.clone();
        let mut ins = Vec::with_capacity(bound.len());
        for (i, (a, b)) in s.args.iter().zip(bound).enumerate() {
            let given = if i < args.len() {
                Some(args[i].clone())
            } else {
                kwargs
                    .iter()
                    .find(|(k, _)| *k == a.name)
                    .map(|(_, v)| v.clone())
            };
            let v = match given {
                Some(g) if Self::is_dynamic(&g) => {
                    let ty = match &b {
                        IValue::TensorList(_) => Some(ValueType::List(Box::new(tensor_type()))),
                        IValue::OptTensorList(_) => Some(ValueType::OptTensorList),
                        IValue::IntList(_) => Some(ValueType::List(Box::new(ValueType::Int))),
                        _ => None,
                    };
                    self.value_as(g, ty)?
                }
                // constants and defaults as the binder made them
                _ => self.value_as(Sym::C(b), None)?,
            };
            ins.push(v);
        }
        let rets: Vec<ValueType> = s.returns.iter().map(return_type).collect();
        let n = rets.len();
        let outs = self.g.add_node(
            NodeKind::Op(e.clone()),
            ins,
            if n == 0 { vec![ValueType::None] } else { rets },
        );
        Ok(if n > 1 {
            Sym::Tuple(outs.into_iter().map(Sym::V).collect())
        } else {
            Sym::V(outs[0])
        })
    }
}

/// An error with where in the code it arose.
fn at(e: Error, class: &str, line: usize) -> Error {
    let msg = e.to_string();
    if msg.contains(", line ") {
        return e;
    }
    let rest = msg.strip_prefix("jit.load: ").unwrap_or(&msg);
    bad(format!("{class}, line {line}: {rest}"))
}

//! Traced TorchScript methods lowered into one flat graph of dispatcher
//! ops (Note [Loading TorchScript archives]): submodule `forward` calls
//! are inlined, attribute reads become `prim::GetAttr` of their qualified
//! names, constants stay known until an op takes them, and each call is
//! bound to an op's schema (`bind.rs`).

use super::parse::{Expr, Method, Stmt};
use super::upgraders;
use crate::ir::{Graph, NodeKind, ValueId, ValueType};
use ferrotorch_core::dispatch::IValue;
use ferrotorch_core::{bail, ensure, DType, Error, ErrorKind, Result, Tensor};
use std::collections::HashMap;

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
    pub(super) self_id: ValueId,
    pub(super) classes: &'a Classes,
    pub(super) constants: &'a [Tensor],
    pub(super) version: u64,
    pub(super) attrs: HashMap<String, ValueId>,
    /// The rank of each attribute value's tensor.
    pub(super) ranks: HashMap<ValueId, usize>,
}

pub(super) fn bad(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::Runtime, format!("jit.load: {}", msg.into()))
}

pub(super) fn tensor_type() -> ValueType {
    // a loaded program's tensors have no traced sizes
    ValueType::Tensor {
        dtype: DType::F32,
        sizes: Vec::new(),
        strides: Vec::new(),
        requires_grad: false,
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

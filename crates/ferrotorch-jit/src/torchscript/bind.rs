//! Calls bound to ops (Note [Loading TorchScript archives]): each
//! `torch.*` call of the traced code bound to the first overload of its
//! name whose schema takes the arguments' kinds, checked with stand-in
//! values of those kinds; the bound (coerced) constants and defaults
//! become `prim::Constant` nodes, lists of graph values
//! `prim::ListConstruct`.

use super::lower::{bad, tensor_type, Lower, Sym};
use crate::ir::{NodeKind, ValueId, ValueType};
use ferrotorch_core::dispatch::{find_overloads, IValue, OpEntry, Type};
use ferrotorch_core::{bail, ensure, DType, Result, Tensor};
use std::sync::Arc;

/// A dtype as TorchScript code numbers it (`dtype=6`: c10's
/// `ScalarType`).
fn scalar_type(n: i64) -> Result<DType> {
    DType::from_scalar_type(n).ok_or_else(|| {
        ferrotorch_core::Error::new(
            ferrotorch_core::ErrorKind::Runtime,
            format!("jit.load: the program uses ScalarType {n}, a dtype ferrotorch does not have"),
        )
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
    pub(super) fn value_as(&mut self, s: Sym<'a>, ty: Option<ValueType>) -> Result<ValueId> {
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

    pub(super) fn value(&mut self, s: Sym<'a>) -> Result<ValueId> {
        self.value_as(s, None)
    }

    /// A call of op `op` (`name` as the code wrote it): bound to its first
    /// overload that takes the arguments, recorded as a node.
    pub(super) fn op(
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

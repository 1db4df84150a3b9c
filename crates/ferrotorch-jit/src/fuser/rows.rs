//! Which trailing reductions a fusion group may end with (Note [Row
//! kernels] in ferrotorch-codegen): softmax, log-softmax, sum, mean, amax
//! and layer norm, over the last dimension only, with no dtype change.
//! The fusion pass and the lowering both ask here.

use ferrotorch_core::dispatch::IValue;

/// One argument of a candidate row op.
#[derive(Clone, Debug)]
pub(crate) enum Arg {
    /// A constant (or the schema's default).
    Const(IValue),
    /// A tensor computed by the graph.
    Tensor,
}

/// The row op kinds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum RowKind {
    Sum,
    Mean,
    Max,
    Softmax,
    LogSoftmax,
    LayerNorm { eps: f64 },
}

/// A recognised row op.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct RowDesc {
    pub kind: RowKind,
    /// Reductions: whether the reduced dimension stays (size 1).
    pub keepdim: bool,
    /// Layer norm: the argument positions of a tensor weight and bias.
    pub weight: Option<usize>,
    pub bias: Option<usize>,
}

fn int(a: &Arg) -> Option<i64> {
    match a {
        Arg::Const(IValue::Int(i)) => Some(*i),
        _ => None,
    }
}

/// A one-element int list naming the last of `rank` dimensions.
fn last_dim_list(a: &Arg, rank: usize) -> bool {
    match a {
        Arg::Const(IValue::IntList(l)) if l.len() == 1 => is_last(l[0], rank),
        _ => false,
    }
}

fn is_last(d: i64, rank: usize) -> bool {
    rank > 0 && (d == rank as i64 - 1 || d == -1)
}

fn none(a: &Arg) -> bool {
    matches!(a, Arg::Const(IValue::None))
}

fn flag(a: &Arg) -> Option<bool> {
    match a {
        Arg::Const(IValue::Bool(b)) => Some(*b),
        _ => None,
    }
}

/// `name` with arguments `args` (every schema argument, defaults filled)
/// on an input of `rank` dimensions whose last has `last` elements, as a
/// row op, if it is one.
pub(crate) fn row_op(name: &str, args: &[Arg], rank: usize, last: usize) -> Option<RowDesc> {
    let desc = |kind, keepdim| RowDesc {
        kind,
        keepdim,
        weight: None,
        bias: None,
    };
    match name {
        "softmax" | "log_softmax" if args.len() == 3 => {
            let ok = is_last(int(&args[1])?, rank) && none(&args[2]);
            let kind = if name == "softmax" {
                RowKind::Softmax
            } else {
                RowKind::LogSoftmax
            };
            ok.then(|| desc(kind, false))
        }
        "sum" | "mean" if args.len() == 4 => {
            let ok = last_dim_list(&args[1], rank) && none(&args[3]);
            let kind = if name == "sum" {
                RowKind::Sum
            } else {
                RowKind::Mean
            };
            ok.then(|| desc(kind, flag(&args[2]).unwrap_or(false)))
        }
        "amax" if args.len() == 3 => last_dim_list(&args[1], rank)
            .then(|| desc(RowKind::Max, flag(&args[2]).unwrap_or(false))),
        "layer_norm" if args.len() == 6 => {
            let shape_ok = matches!(&args[1], Arg::Const(IValue::IntList(l))
                if l.len() == 1 && l[0] == last as i64);
            let eps = match &args[4] {
                Arg::Const(IValue::Float(e)) => *e,
                _ => return None,
            };
            let tensor_or_none = |a: &Arg| matches!(a, Arg::Tensor) || none(a);
            let ok = shape_ok && rank > 0 && tensor_or_none(&args[2]) && tensor_or_none(&args[3]);
            ok.then(|| RowDesc {
                kind: RowKind::LayerNorm { eps },
                keepdim: false,
                weight: matches!(args[2], Arg::Tensor).then_some(2),
                bias: matches!(args[3], Arg::Tensor).then_some(3),
            })
        }
        _ => None,
    }
}

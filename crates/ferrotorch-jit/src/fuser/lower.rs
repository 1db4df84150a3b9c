//! A fusion group's body as a pointwise [`Expr`] for the code generator,
//! or the reason it cannot be one (the group then runs in the
//! interpreter).

use super::rows::{row_op, Arg, RowDesc};
use crate::ir::{Graph, Node, NodeKind, ValueId, ValueType};
use ferrotorch_codegen::expr::{Binary, Cmp, Op, Reg, Unary};
use ferrotorch_codegen::Expr;
use ferrotorch_core::dispatch::IValue;
use ferrotorch_core::rows as pw;
use ferrotorch_core::DType;
use std::collections::HashMap;

/// A group body lowered to one expression.
#[derive(Debug)]
pub(crate) struct Lowered {
    /// The expression: input `k` is the group's `k`-th input.
    pub expr: Expr,
    /// The dtype every tensor in the body has.
    pub dtype: DType,
    /// Per output, which inputs it reads (its shape is theirs
    /// broadcast; kernels write every output in the shape of all inputs
    /// broadcast, so the two must agree).
    pub reads: Vec<Vec<bool>>,
    /// The reduction the group ends with, if any.
    pub row: Option<Row>,
}

/// A group's trailing reduction over the last dimension.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Row {
    /// What it is.
    pub desc: RowDesc,
    /// The rank it was traced at (its dimension argument means the last
    /// one only at that rank).
    pub rank: usize,
    /// Layer norm: the size of the normalised dimension.
    pub last: usize,
    /// Layer norm: the group inputs holding the weight and bias.
    pub weight: Option<usize>,
    pub bias: Option<usize>,
    /// Whether the group also returns the row op's input (its first
    /// output; the row op's result is the second).
    pub keeps_input: bool,
}

/// What a body value is while lowering.
#[derive(Clone)]
enum Val {
    Reg(Reg),
    Const(IValue),
    /// A bool tensor from a comparison, for `where` to select with.
    Cond(Cmp, Reg, Reg),
}

/// Lower `g` (a `prim::FusionGroup` body), or say why not.
pub(crate) fn lower(g: &Graph) -> Result<Lowered, String> {
    let mut dtype = None;
    for v in &g.values {
        // bool tensors are comparisons, consumed by `where`
        if let ValueType::Tensor { dtype: d, .. } = &v.ty {
            if *d == DType::Bool {
                continue;
            }
            match dtype {
                None => dtype = Some(*d),
                Some(e) if e != *d => return Err(format!("mixes {e} and {d} tensors")),
                _ => {}
            }
        }
    }
    let dtype = dtype.ok_or("has no tensors")?;
    if !(dtype.is_floating_point() || matches!(dtype, DType::I32 | DType::I64)) {
        return Err(format!(
            "computes in {dtype} (floating dtypes, int32 and int64 only)"
        ));
    }
    let mut expr = Expr::new(g.inputs.len());
    let mut vals: HashMap<ValueId, Val> = HashMap::new();
    for (k, &i) in g.inputs.iter().enumerate() {
        match &g.values[i].ty {
            ValueType::Tensor { dtype: d, .. } if *d != DType::Bool => {}
            t => return Err(format!("input {k} is a {t}, not a numeric tensor")),
        }
        vals.insert(i, Val::Reg(expr.input(k)));
    }
    let mut row = None;
    for (ix, n) in g.nodes.iter().enumerate() {
        let out = match &n.kind {
            NodeKind::Constant(c) => Val::Const(c.clone()),
            NodeKind::Op(e) => {
                let schema = &e.schema;
                let args: Vec<Val> = (0..schema.args.len())
                    .map(|i| match n.inputs.get(i) {
                        Some(v) => vals.get(v).cloned().ok_or("reads an unknown value"),
                        None => schema.args[i]
                            .default
                            .clone()
                            .map(Val::Const)
                            .ok_or("misses an argument"),
                    })
                    .collect::<Result<_, _>>()?;
                match row_of(g, n, &schema.name, &args, ix + 1 == g.nodes.len())? {
                    Some(r) => {
                        row = Some(r);
                        // the expression ends at the row op's input
                        args[0].clone()
                    }
                    None => op(&mut expr, &schema.name, &args, dtype.is_floating_point())?,
                }
            }
            _ => return Err(format!("holds a {}", n.kind_name())),
        };
        let [o] = n.outputs[..] else {
            return Err(format!("{} has several outputs", n.kind_name()));
        };
        vals.insert(o, out);
    }
    match (&mut row, &g.outputs[..]) {
        // a row group: the row op's result, after its input if kept
        (Some(r), outs) => {
            let last = g.nodes.last().ok_or("is empty")?;
            let (input, result) = (last.inputs[0], last.outputs[0]);
            match outs {
                [o] if *o == result => {}
                [i, o] if *i == input && *o == result => r.keeps_input = true,
                _ => return Err("returns values of a row group other than its ends".into()),
            }
            match vals.get(&input) {
                Some(Val::Reg(reg)) => expr.outputs.push(*reg),
                _ => return Err("reduces a value that is not a tensor".into()),
            }
        }
        (None, outs) => {
            for o in outs {
                match vals.get(o) {
                    Some(Val::Reg(r)) => expr.outputs.push(*r),
                    _ => return Err("returns a value that is not a tensor".into()),
                }
            }
        }
    }
    // which inputs each output reads: its shape is theirs broadcast
    let n_in = expr.n_inputs;
    let mut reads: Vec<Vec<bool>> = Vec::with_capacity(expr.ops.len());
    for op in &expr.ops {
        let mut r = vec![false; n_in];
        let from = |x: Reg, r: &mut Vec<bool>| {
            for (a, b) in r.iter_mut().zip(&reads[x]) {
                *a |= *b;
            }
        };
        match *op {
            Op::Input(k) => r[k] = true,
            Op::Const(_) => {}
            Op::Unary(_, a) => from(a, &mut r),
            Op::Binary(_, a, b) => {
                from(a, &mut r);
                from(b, &mut r);
            }
            Op::Select {
                a, b, then, other, ..
            } => {
                for x in [a, b, then, other] {
                    from(x, &mut r);
                }
            }
        }
        reads.push(r);
    }
    let reads = expr.outputs.iter().map(|&o| reads[o].clone()).collect();
    if row.is_some() && !dtype.is_floating_point() {
        return Err(format!(
            "reduces {dtype} values (row kernels compute in floats)"
        ));
    }
    Ok(Lowered {
        expr,
        dtype,
        reads,
        row,
    })
}

/// `n` as the group's trailing row op, if it is one (only the last
/// node may be).
fn row_of(
    g: &Graph,
    n: &Node,
    name: &str,
    args: &[Val],
    last_node: bool,
) -> Result<Option<Row>, String> {
    if !last_node {
        return Ok(None);
    }
    let ValueType::Tensor { sizes, .. } = &g.values[n.inputs[0]].ty else {
        return Ok(None);
    };
    let info: Vec<Arg> = args
        .iter()
        .map(|a| match a {
            Val::Const(c) => Arg::Const(c.clone()),
            _ => Arg::Tensor,
        })
        .collect();
    let last = sizes.last().copied().unwrap_or(0);
    let Some(desc) = row_op(name, &info, sizes.len(), last) else {
        return Ok(None);
    };
    let input_of = |arg: Option<usize>| -> Result<Option<usize>, String> {
        match arg {
            None => Ok(None),
            Some(a) => g
                .inputs
                .iter()
                .position(|&i| i == n.inputs[a])
                .map(Some)
                .ok_or_else(|| format!("{name}: its weight or bias is computed in the group")),
        }
    };
    Ok(Some(Row {
        desc,
        rank: sizes.len(),
        last,
        weight: input_of(desc.weight)?,
        bias: input_of(desc.bias)?,
        keeps_input: false,
    }))
}

/// A number from a constant argument.
fn number(v: &IValue) -> Option<f64> {
    match v {
        IValue::Float(f) => Some(*f),
        IValue::Int(i) => Some(*i as f64),
        IValue::Bool(b) => Some(f64::from(u8::from(*b))),
        _ => None,
    }
}

/// An argument as a register (constants become constant ops).
fn reg(e: &mut Expr, v: &Val) -> Result<Reg, String> {
    match v {
        Val::Reg(r) => Ok(*r),
        Val::Const(c) => number(c)
            .map(|x| e.constant(x))
            .ok_or_else(|| format!("takes a {} as a number", c.type_name())),
        Val::Cond(..) => Err("uses a bool tensor as a number".into()),
    }
}

/// An argument that must be a constant number.
fn constant(v: &Val) -> Option<f64> {
    match v {
        Val::Const(c) => number(c),
        _ => None,
    }
}

/// `x ** p` for a constant exponent: products and square roots for the
/// common ones (as exact as eager's `powf` for these), the `pow` call
/// for the rest.
fn pow_const(e: &mut Expr, x: Reg, p: f64) -> Reg {
    match p {
        1.0 => x,
        2.0 => e.binary(Binary::Mul, x, x),
        3.0 => {
            let x2 = e.binary(Binary::Mul, x, x);
            e.binary(Binary::Mul, x2, x)
        }
        0.5 => e.unary(Unary::Sqrt, x),
        -0.5 => e.unary(Unary::Rsqrt, x),
        -1.0 => e.unary(Unary::Reciprocal, x),
        _ => {
            let c = e.constant(p);
            e.binary(Binary::Pow, x, c)
        }
    }
}

/// `clamp(x, lo, hi)` for number bounds, as selects whose only path from
/// `x` to the result is strictly inside the bounds: the backward of the
/// expression is then PyTorch's (the gradient passes where `lo < x < hi`,
/// 0 at a bound and at NaN), and a NaN `x` gives `x - x` (NaN, with a zero
/// gradient for a finite one; integer kernels never select it). With
/// `lo > hi` every number clamps to `hi`, as `min(max(x, lo), hi)`.
fn number_clamp(e: &mut Expr, x: Reg, lo: Option<f64>, hi: Option<f64>) -> Reg {
    let nan = e.binary(Binary::Sub, x, x);
    if let (Some(l), Some(h)) = (lo, hi) {
        if l > h {
            let hc = e.constant(h);
            return e.select(Cmp::Eq, x, x, hc, nan);
        }
    }
    // the value where x is not above lo: lo, or NaN for NaN
    let (above_lo, low) = match lo {
        Some(l) => {
            let lc = e.constant(l);
            (Some(lc), e.select(Cmp::Le, x, lc, lc, nan))
        }
        None => (None, nan),
    };
    let inside = match hi {
        Some(h) => {
            let hc = e.constant(h);
            // x < hi: x; x >= hi: hi; NaN: NaN (only reached without lo)
            let high = e.select(Cmp::Ge, x, hc, hc, nan);
            e.select(Cmp::Lt, x, hc, x, high)
        }
        None => x,
    };
    match above_lo {
        Some(lc) => e.select(Cmp::Gt, x, lc, inside, low),
        None => inside,
    }
}

/// # Note [Compiled clamp with tensor bounds]
/// `clamp(x, lo, hi)` with a tensor bound, as selects whose automatic
/// backward is eager's (Note [Clamp gradients] in ferrotorch-core, PyTorch
/// 2.15's rules): each leaf is an expression with the right value that
/// sends the gradient where those rules do. Ties take `maximum`/`minimum`
/// (exact value, the gradient halved between the two); a NaN result that
/// passes the gradient to `x` alone is `x + NaN` (a NaN constant carries
/// no gradient); `x + hi` is a NaN `x` with `hi < lo`, where PyTorch
/// passes it to both. Float kernels only: integers have no NaN and no
/// gradients, so they take [`clamp`].
fn tensor_clamp(e: &mut Expr, x: Reg, lo: Reg, hi: Reg) -> Reg {
    use Binary::{Add, Max, Min};
    let nan = e.constant(f64::NAN);
    let x_nan = e.binary(Add, x, nan);
    // strictly inside, or a NaN anywhere (then only `x` takes it)
    let plain = e.select(Cmp::Le, lo, hi, x, x_nan);
    let tie_lo = e.binary(Max, x, lo);
    let tie_lo = e.select(Cmp::Lt, x, hi, tie_lo, plain);
    let tie_hi = e.binary(Min, x, hi);
    let tie_hi = e.select(Cmp::Gt, x, lo, tie_hi, plain);
    let at_hi = e.select(Cmp::Eq, x, hi, tie_hi, plain);
    let inside = e.select(Cmp::Eq, x, lo, tie_lo, at_hi);
    // below lo or above hi: that bound, or NaN (no gradient) if the other is
    let below = e.select(Cmp::Le, lo, hi, lo, nan);
    let above = e.select(Cmp::Le, lo, hi, hi, nan);
    let above = e.select(Cmp::Gt, x, hi, above, inside);
    let ordered = e.select(Cmp::Lt, x, lo, below, above);
    // hi < lo: hi, or a NaN x passing to both
    let both = e.binary(Add, x, hi);
    let crossed = e.select(Cmp::Eq, x, x, hi, both);
    e.select(Cmp::Lt, hi, lo, crossed, ordered)
}

/// `min(max(x, lo), hi)` for optional bounds (NaN kept, as `clamp`).
fn clamp(e: &mut Expr, x: Reg, lo: Option<Reg>, hi: Option<Reg>) -> Reg {
    let y = match lo {
        Some(l) => e.binary(Binary::Max, x, l),
        None => x,
    };
    match hi {
        Some(h) => e.binary(Binary::Min, y, h),
        None => y,
    }
}

/// One op of the body; `float` says the body computes in a float dtype.
fn op(e: &mut Expr, name: &str, a: &[Val], float: bool) -> Result<Val, String> {
    let cmp = match name {
        "gt" => Some(Cmp::Gt),
        "lt" => Some(Cmp::Lt),
        "ge" => Some(Cmp::Ge),
        "le" => Some(Cmp::Le),
        "eq" => Some(Cmp::Eq),
        "ne" => Some(Cmp::Ne),
        _ => None,
    };
    if let Some(c) = cmp {
        let x = reg(e, &a[0])?;
        let y = reg(e, &a[1])?;
        return Ok(Val::Cond(c, x, y));
    }
    if name == "where" {
        let Val::Cond(c, p, q) = a[0] else {
            return Err("where: the condition is not a comparison in the group".into());
        };
        let x = reg(e, &a[1])?;
        let y = reg(e, &a[2])?;
        return Ok(Val::Reg(e.select(c, p, q, x, y)));
    }
    value_op(e, name, a, float).map(Val::Reg)
}

/// One op of the body computing a number.
fn value_op(e: &mut Expr, name: &str, a: &[Val], float: bool) -> Result<Reg, String> {
    // ops with a pointwise row: its value, spliced in (Note [Pointwise
    // rows]); `round.decimals` has two arguments, `pow` by a number and
    // add/sub with an alpha take the forms below
    if a.len() == 1 {
        if let Some(v) = pw::unary(name).and_then(|r| r.value()) {
            let x = reg(e, &a[0])?;
            return one_output(v.splice(&[x], |op| e.push(op)), name);
        }
    }
    if let Some(row) = pw::act(name) {
        let p = act_params(row, &a[1..])?;
        let x = reg(e, &a[0])?;
        return one_output(row.value(&p).splice(&[x], |op| e.push(op)), name);
    }
    if a.len() == 2 && name != "pow" {
        if let Some(f) = pw::binary(name).and_then(|r| r.prim) {
            let x = reg(e, &a[0])?;
            let y = reg(e, &a[1])?;
            return Ok(e.binary(f, x, y));
        }
    }
    let x = reg(e, &a[0])?;
    Ok(match name {
        "add" | "sub" => {
            let y = reg(e, &a[1])?;
            let alpha = match a.get(2) {
                None => 1.0,
                Some(v) => constant(v).ok_or_else(|| format!("{name}: alpha is not a constant"))?,
            };
            let y = if alpha == 1.0 {
                y
            } else {
                let c = e.constant(alpha);
                e.binary(Binary::Mul, y, c)
            };
            let f = if name == "add" {
                Binary::Add
            } else {
                Binary::Sub
            };
            e.binary(f, x, y)
        }
        "div" => {
            if matches!(a.get(2), Some(Val::Const(c)) if !matches!(c, IValue::None)) {
                return Err("div with a rounding mode".into());
            }
            let y = reg(e, &a[1])?;
            e.binary(Binary::Div, x, y)
        }
        "square" => e.binary(Binary::Mul, x, x),
        "pow" => match constant(&a[1]) {
            Some(p) => pow_const(e, x, p),
            None => {
                let y = reg(e, &a[1])?;
                e.binary(Binary::Pow, x, y)
            }
        },
        "clamp_min" => match constant(&a[1]) {
            Some(l) => number_clamp(e, x, Some(l), None),
            None => {
                let lo = reg(e, &a[1])?;
                e.binary(Binary::Max, x, lo)
            }
        },
        "clamp_max" => match constant(&a[1]) {
            Some(h) => number_clamp(e, x, None, Some(h)),
            None => {
                let hi = reg(e, &a[1])?;
                e.binary(Binary::Min, x, hi)
            }
        },
        "clamp" => {
            // number bounds (absent or constant): torch's strict gradient
            let number = |v: Option<&Val>| match v {
                None | Some(Val::Const(IValue::None)) => Some(None),
                Some(v) => constant(v).map(Some),
            };
            if let (Some(lo), Some(hi)) = (number(a.get(1)), number(a.get(2))) {
                return Ok(number_clamp(e, x, lo, hi));
            }
            let bound = |e: &mut Expr, v: Option<&Val>| -> Result<Option<Reg>, String> {
                match v {
                    None | Some(Val::Const(IValue::None)) => Ok(None),
                    Some(v) => reg(e, v).map(Some),
                }
            };
            let lo = bound(e, a.get(1))?;
            let hi = bound(e, a.get(2))?;
            match (lo, hi) {
                (Some(l), Some(h)) if float => tensor_clamp(e, x, l, h),
                _ => clamp(e, x, lo, hi),
            }
        }
        other => return Err(format!("aten::{other} has no native code")),
    })
}

/// An activation row's parameters from the op's arguments after its
/// input: numbers (or absent: the default), a string choice as its index.
fn act_params(row: &pw::ActRow, args: &[Val]) -> Result<Vec<f64>, String> {
    let mut p = Vec::with_capacity(row.params.len());
    for (i, param) in row.params.iter().enumerate() {
        let name = param.name();
        p.push(match (param, args.get(i)) {
            (_, None | Some(Val::Const(IValue::None))) => param.default(),
            (pw::Param::Choice(_, options), Some(Val::Const(IValue::Str(s)))) => {
                match options.iter().position(|o| o == s) {
                    Some(k) => k as f64,
                    None => return Err(format!("{}: unknown {name} '{s}'", row.name)),
                }
            }
            (pw::Param::Num(..), Some(v)) => {
                constant(v).ok_or_else(|| format!("{}: {name} is not a constant", row.name))?
            }
            _ => return Err(format!("{}: {name} is not a constant", row.name)),
        });
    }
    Ok(p)
}

/// The one register a row's recorded value gives.
fn one_output(out: Vec<Option<Reg>>, name: &str) -> Result<Reg, String> {
    out.first()
        .copied()
        .flatten()
        .ok_or_else(|| format!("aten::{name}: its row's value has no output"))
}

//! The rows of the two-argument pointwise ops (Note [Pointwise rows]).

use super::algebra::{Pw, PwExt};
use super::prim::{Binary, Cmp};
use super::sym::{record, Recorded, SymV};
use super::tensor::TVal;

/// When a binary derivative reads an operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum When {
    /// Never: nothing is saved for it.
    Never,
    /// Always.
    Always,
    /// Only for the other operand's gradient (`a · b` reads `b` for `a`'s
    /// gradient alone): saved only when that gradient is wanted, as
    /// PyTorch's generated code does, so `y * 2.0` saves nothing.
    ForOther,
}

/// What a binary derivative sees: the output gradient, the operands, the
/// result, add/sub's `alpha` (the scale of `b`) and which gradients are
/// wanted. An operand or result the row does not read (by its `reads_*`
/// and the wanted gradients) may hold a placeholder (eager autograd hands
/// NaN, not a clone of a tensor).
pub struct BinaryIn<V> {
    /// The output gradient.
    pub g: V,
    /// The first operand.
    pub a: V,
    /// The second operand (a number for `x * 2.0`).
    pub b: V,
    /// The result.
    pub y: V,
    /// add/sub's scale of `b`.
    pub alpha: f64,
    /// Whether each operand's gradient is wanted.
    pub need: [bool; 2],
}

type Grads<V> = [Option<V>; 2];

/// One binary op's row: its primitive and its derivative, written once.
pub struct BinaryRow {
    /// The op's name (`mul`).
    pub name: &'static str,
    /// The primitive it is, where the code generator has one.
    pub prim: Option<Binary>,
    /// When the derivative reads `a`.
    pub reads_a: When,
    /// When it reads `b`.
    pub reads_b: When,
    /// Whether it reads the result.
    pub reads_result: bool,
    sym: fn(BinaryIn<SymV>) -> Grads<SymV>,
    tensor: fn(BinaryIn<TVal>) -> Grads<TVal>,
}

impl BinaryRow {
    /// The derivative recorded over four inputs (`g`, `a`, `b`, `y`):
    /// one output per operand, `None` where not wanted.
    pub fn grad(&self, alpha: f64, need: [bool; 2]) -> Recorded {
        let d = self.sym;
        record(4, |i| {
            d(BinaryIn {
                g: i[0],
                a: i[1],
                b: i[2],
                y: i[3],
                alpha,
                need,
            })
            .to_vec()
        })
    }

    /// The derivative with tensor ops (recorded under `create_graph`).
    pub fn grad_tensor(&self, i: BinaryIn<TVal>) -> Grads<TVal> {
        (self.tensor)(i)
    }
}

fn add_d<V: Pw>(i: BinaryIn<V>) -> Grads<V> {
    let gb = i.need[1].then(|| {
        if i.alpha == 1.0 {
            i.g.clone()
        } else {
            i.g.clone() * i.g.k(i.alpha)
        }
    });
    [Some(i.g), gb]
}

fn sub_d<V: Pw>(i: BinaryIn<V>) -> Grads<V> {
    let gb = i.need[1].then(|| {
        if i.alpha == 1.0 {
            -i.g.clone()
        } else {
            i.g.clone() * i.g.k(-i.alpha)
        }
    });
    [Some(i.g), gb]
}

fn mul_d<V: Pw>(i: BinaryIn<V>) -> Grads<V> {
    [
        i.need[0].then(|| i.g.clone() * i.b),
        i.need[1].then(|| i.g * i.a),
    ]
}

fn div_d<V: Pw>(i: BinaryIn<V>) -> Grads<V> {
    [
        i.need[0].then(|| i.g.clone() / i.b.clone()),
        // -g (a / b) / b, as torch: b² first underflows (0/0 at b = 1e-30
        // in f32) or overflows
        i.need[1].then(|| -(i.g * (i.a / i.b.clone() / i.b))),
    ]
}

/// maximum/minimum: the larger (smaller) operand takes the gradient,
/// ties split it; only the operand that lost is masked out (torch's
/// `masked_fill_(self < other, 0)`), so where either is NaN both take it.
fn extremum<V: Pw>(i: BinaryIn<V>, loses: Cmp) -> Grads<V> {
    let zero = i.g.k(0.0);
    let half = i.g.clone() * i.g.k(0.5);
    let share = V::select(Cmp::Eq, i.a.clone(), i.b.clone(), half, i.g);
    [
        i.need[0].then(|| V::select(loses, i.a.clone(), i.b.clone(), zero.clone(), share.clone())),
        i.need[1].then(|| V::select(loses, i.b, i.a, zero, share)),
    ]
}

fn maximum_d<V: Pw>(i: BinaryIn<V>) -> Grads<V> {
    extremum(i, Cmp::Lt)
}

fn minimum_d<V: Pw>(i: BinaryIn<V>) -> Grads<V> {
    extremum(i, Cmp::Gt)
}

fn pow_d<V: Pw>(i: BinaryIn<V>) -> Grads<V> {
    let zero = i.g.k(0.0);
    let ga = i.need[0].then(|| {
        // g · b · a^(b-1), selected to 0 where b == 0 (so 0^0 and an
        // infinite g have gradient 0); a number b keeps pow's number form
        // for a^(b-1) (b = 1.5 takes sqrt)
        let one = i.b.k(1.0);
        let d = i.b.clone() * i.a.clone().pow(i.b.clone() - one);
        V::select(
            Cmp::Eq,
            i.b.clone(),
            zero.clone(),
            zero.clone(),
            i.g.clone() * d,
        )
    });
    let gb = i.need[1].then(|| {
        // g · y · ln a, selected to 0 where a == 0 and b >= 0
        let t = i.g * (i.y * i.a.clone().log());
        let keep = V::select(Cmp::Ge, i.b, zero.clone(), zero.clone(), t.clone());
        V::select(Cmp::Eq, i.a, zero, keep, t)
    });
    [ga, gb]
}

macro_rules! rows {
    ($($name:literal: $prim:ident, $a:ident, $b:ident, $y:literal, $d:ident;)*) => {
        static ROWS: &[BinaryRow] = &[$(BinaryRow {
            name: $name,
            prim: Some(Binary::$prim),
            reads_a: When::$a,
            reads_b: When::$b,
            reads_result: $y,
            sym: $d::<SymV>,
            tensor: $d::<TVal>,
        }),*];
    };
}

rows! {
    "add": Add, Never, Never, false, add_d;
    "mul": Mul, ForOther, ForOther, false, mul_d;
    "sub": Sub, Never, Never, false, sub_d;
    "div": Div, ForOther, Always, false, div_d;
    "pow": Pow, Always, Always, true, pow_d;
    "maximum": Max, Always, Always, false, maximum_d;
    "minimum": Min, Always, Always, false, minimum_d;
}

/// The row of binary op `name`, if it has one.
pub fn binary(name: &str) -> Option<&'static BinaryRow> {
    ROWS.iter().find(|r| r.name == name)
}

/// Every binary row.
pub fn binary_rows() -> &'static [BinaryRow] {
    ROWS
}

/// The row of primitive `f`.
pub fn binary_prim(f: Binary) -> &'static BinaryRow {
    ROWS.iter()
        .find(|r| r.prim == Some(f))
        .expect("every binary primitive has a row")
}

//! Recorded values: a formula run over [`SymV`]s writes its ops down
//! (in the primitives of [`super::prim`]) instead of computing, which is
//! how the code generator reads a row.

use super::algebra::{pw_operators, Pw};
use super::prim::{Binary, Cmp, Op, Reg, Unary};
use std::cell::RefCell;

thread_local! {
    static TAPE: RefCell<Vec<Op>> = const { RefCell::new(Vec::new()) };
}

/// A value being recorded: the register of the op that makes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SymV(Reg);

fn push(op: Op) -> SymV {
    TAPE.with(|t| {
        let mut t = t.borrow_mut();
        t.push(op);
        SymV(t.len() - 1)
    })
}

/// A recorded formula: its ops, in order (`Op::Input(k)` for its `k`-th
/// input), and the register of each output (`None` where the formula
/// gave none, such as a gradient nobody needs).
#[derive(Clone, Debug, PartialEq)]
pub struct Recorded {
    /// The ops, each reading earlier ones.
    pub ops: Vec<Op>,
    /// Each output's register.
    pub outputs: Vec<Option<Reg>>,
}

impl Recorded {
    /// Append the ops to another expression through `push` (which returns
    /// the register it put an op in), with `Op::Input(k)` read from
    /// `inputs[k]`; returns the outputs' registers there.
    pub fn splice(&self, inputs: &[Reg], mut push: impl FnMut(Op) -> Reg) -> Vec<Option<Reg>> {
        let mut at = Vec::with_capacity(self.ops.len());
        for op in &self.ops {
            let r = match *op {
                Op::Input(k) => inputs[k],
                op => push(op.map_regs(|r| at[r])),
            };
            at.push(r);
        }
        self.outputs.iter().map(|o| o.map(|r| at[r])).collect()
    }
}

/// Record `f` over `n` inputs.
pub fn record(n: usize, f: impl FnOnce(&[SymV]) -> Vec<Option<SymV>>) -> Recorded {
    // a recording inside another (none today) keeps the outer tape
    let outer = TAPE.with(|t| std::mem::take(&mut *t.borrow_mut()));
    let inputs: Vec<SymV> = (0..n).map(|k| push(Op::Input(k))).collect();
    let outs = f(&inputs);
    let ops = TAPE.with(|t| std::mem::replace(&mut *t.borrow_mut(), outer));
    Recorded {
        ops,
        outputs: outs.into_iter().map(|o| o.map(|v| v.0)).collect(),
    }
}

impl Pw for SymV {
    fn k(&self, v: f64) -> SymV {
        push(Op::Const(v.to_bits()))
    }
    fn un(self, f: Unary) -> SymV {
        push(Op::Unary(f, self.0))
    }
    fn bin(self, f: Binary, o: SymV) -> SymV {
        push(Op::Binary(f, self.0, o.0))
    }
    fn select(cmp: Cmp, a: SymV, b: SymV, then: SymV, other: SymV) -> SymV {
        push(Op::Select {
            cmp,
            a: a.0,
            b: b.0,
            then: then.0,
            other: other.0,
        })
    }
}

pw_operators!(SymV);

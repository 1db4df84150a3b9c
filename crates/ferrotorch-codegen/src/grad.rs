//! Reverse-mode derivatives of an [`Expr`], as another expression: the
//! backward of a fused pointwise chain is itself a pointwise kernel.
//!
//! # Note [Fused backward]
//! [`backward`] takes an expression of `n` inputs and `m` outputs to one
//! of `n + m` inputs (the forward inputs, then a gradient per output) and
//! `n` outputs (a gradient per input, over the broadcast shape; the
//! caller sums broadcast dimensions away). Forward values the derivatives
//! need are recomputed in the backward kernel instead of saved, as
//! PyTorch's fusers do: the backward reads each input and each output
//! gradient once and writes each input gradient once. Each op's formula
//! is its pointwise row's (Note [Pointwise rows] in ferrotorch-core), the
//! one eager autograd evaluates, spliced in; a select sends the gradient
//! to the branch taken.

use crate::expr::{Binary, Expr, Op, Reg, Unary};
use ferrotorch_core::rows::{self, Reads};

/// Adds gradient contributions, creating each sum once.
struct Adj {
    adj: Vec<Option<Reg>>,
    needs: Vec<bool>,
}

impl Adj {
    fn add(&mut self, e: &mut Expr, r: Reg, g: Reg) {
        if !self.needs[r] {
            return;
        }
        self.adj[r] = Some(match self.adj[r] {
            None => g,
            Some(a) => e.binary(Binary::Add, a, g),
        });
    }
}

/// The backward expression of `e` (Note [Fused backward]).
pub fn backward(e: &Expr) -> Expr {
    let n = e.n_inputs;
    let mut b = Expr::new(n + e.outputs.len());
    // the forward ops, recomputed under the same registers
    b.ops = e.ops.clone();
    // which ops depend on an input (only those carry gradients)
    let mut needs = Vec::with_capacity(e.ops.len());
    for op in &e.ops {
        let d = match *op {
            Op::Input(_) => true,
            Op::Const(_) => false,
            Op::Unary(_, a) => needs[a],
            Op::Binary(_, a, c) => needs[a] || needs[c],
            Op::Select { then, other, .. } => needs[then] || needs[other],
        };
        needs.push(d);
    }
    let mut adj = Adj {
        adj: vec![None; e.ops.len()],
        needs,
    };
    for (j, &o) in e.outputs.iter().enumerate() {
        let g = b.input(n + j);
        adj.add(&mut b, o, g);
    }
    for i in (0..e.ops.len()).rev() {
        let Some(g) = adj.adj[i] else { continue };
        match e.ops[i] {
            Op::Input(_) | Op::Const(_) => {}
            Op::Unary(f, a) => {
                if let Some(d) = unary_grad(&mut b, f, a, i, g) {
                    adj.add(&mut b, a, d);
                }
            }
            Op::Binary(f, a, c) => {
                let (ga, gc) = binary_grad(&mut b, f, a, c, i, g, &adj.needs);
                if let Some(ga) = ga {
                    adj.add(&mut b, a, ga);
                }
                if let Some(gc) = gc {
                    adj.add(&mut b, c, gc);
                }
            }
            Op::Select {
                cmp,
                a,
                b: bb,
                then,
                other,
            } => {
                let zero = b.constant(0.0);
                if adj.needs[then] {
                    let gt = b.select(cmp, a, bb, g, zero);
                    adj.add(&mut b, then, gt);
                }
                if adj.needs[other] {
                    let go = b.select(cmp, a, bb, zero, g);
                    adj.add(&mut b, other, go);
                }
            }
        }
    }
    for k in 0..n {
        let mut total: Option<Reg> = None;
        for (i, op) in e.ops.iter().enumerate() {
            if let (Op::Input(j), Some(g)) = (op, adj.adj[i]) {
                if *j == k {
                    total = Some(match total {
                        None => g,
                        Some(t) => b.binary(Binary::Add, t, g),
                    });
                }
            }
        }
        let out = match total {
            Some(t) => t,
            None => b.constant(0.0),
        };
        b.outputs.push(out);
    }
    b.prune();
    b
}

/// `g · f'(x)` for `y = f(x)` (`x` in register `a`, `y` in `y`): the op's
/// pointwise row (the GELUs' activation row), spliced in (Note [Pointwise
/// rows]); `None` where the derivative is zero (rounding).
fn unary_grad(e: &mut Expr, f: Unary, a: Reg, y: Reg, g: Reg) -> Option<Reg> {
    let Some(row) = rows::unary(f.name()) else {
        // the GELUs: primitives whose rows are activation rows
        let (row, p) = rows::act_of_prim(f)?;
        return row.grad(&p).splice(&[g, a], |op| e.push(op))[0];
    };
    let saved = match row.reads {
        Reads::Input => a,
        Reads::Result => y,
        Reads::Nothing => g,
    };
    let d = row.grad()?;
    d.splice(&[g, saved], |op| e.push(op))[0]
}

/// The gradients of `y = f(a, c)` for both operands (skipped where an
/// operand carries none): the op's pointwise row, spliced in.
fn binary_grad(
    e: &mut Expr,
    f: Binary,
    a: Reg,
    c: Reg,
    y: Reg,
    g: Reg,
    needs: &[bool],
) -> (Option<Reg>, Option<Reg>) {
    let d = rows::binary_prim(f).grad(1.0, [needs[a], needs[c]]);
    let out = d.splice(&[g, a, c, y], |op| e.push(op));
    (out[0], out[1])
}

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
/// pointwise row, spliced in (Note [Pointwise rows]); `None` where the
/// derivative is zero (rounding).
fn unary_grad(e: &mut Expr, f: Unary, a: Reg, y: Reg, g: Reg) -> Option<Reg> {
    let Some(row) = rows::unary(f.name()) else {
        return gelu_grad(e, f, a, g);
    };
    let saved = match row.reads {
        Reads::Input => a,
        Reads::Result => y,
        Reads::Nothing => g,
    };
    let d = row.grad()?;
    d.splice(&[g, saved], |op| e.push(op))[0]
}

/// The GELUs' derivatives, written here until they are rows with the
/// other activations (their values are primitives of the generator,
/// not compositions of others).
fn gelu_grad(e: &mut Expr, f: Unary, a: Reg, g: Reg) -> Option<Reg> {
    use Binary::{Add, Mul, Sub};
    let k = |e: &mut Expr, v: f64| e.constant(v);
    Some(match f {
        Unary::Gelu => {
            // Φ(x) + x·φ(x)
            let r2 = k(e, std::f64::consts::FRAC_1_SQRT_2);
            let xs = e.binary(Mul, a, r2);
            let erf = e.unary(Unary::Erf, xs);
            let one = k(e, 1.0);
            let half = k(e, 0.5);
            let ep = e.binary(Add, erf, one);
            let cdf = e.binary(Mul, half, ep);
            let x2 = e.binary(Mul, a, a);
            let mh = k(e, -0.5);
            let ex = e.binary(Mul, x2, mh);
            let ex = e.unary(Unary::Exp, ex);
            let c = k(e, 1.0 / (2.0 * std::f64::consts::PI).sqrt());
            let pdf = e.binary(Mul, ex, c);
            let xp = e.binary(Mul, a, pdf);
            let d = e.binary(Add, cdf, xp);
            e.binary(Mul, g, d)
        }
        Unary::GeluTanh => {
            let kk = k(e, (2.0 / std::f64::consts::PI).sqrt());
            let c = k(e, 0.044715);
            let c3 = k(e, 3.0 * 0.044715);
            let one = k(e, 1.0);
            let half = k(e, 0.5);
            let x2 = e.binary(Mul, a, a);
            let x3 = e.binary(Mul, x2, a);
            let cx3 = e.binary(Mul, c, x3);
            let inner = e.binary(Add, a, cx3);
            let inner = e.binary(Mul, kk, inner);
            let t = e.unary(Unary::Tanh, inner);
            let left = e.binary(Mul, half, a);
            let right = e.binary(Add, one, t);
            let left_d = e.binary(Mul, half, right);
            let tt = e.binary(Mul, t, t);
            let tanh_d = e.binary(Sub, one, tt);
            let c3x2 = e.binary(Mul, c3, x2);
            let id = e.binary(Add, one, c3x2);
            let inner_d = e.binary(Mul, kk, id);
            let rd = e.binary(Mul, left, tanh_d);
            let right_d = e.binary(Mul, rd, inner_d);
            let d = e.binary(Add, left_d, right_d);
            e.binary(Mul, g, d)
        }
        _ => unreachable!("every primitive but the GELUs has a row"),
    })
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

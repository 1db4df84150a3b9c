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
//! gradient once and writes each input gradient once. Each formula is
//! PyTorch's (`derivatives.yaml`): `relu` is zero where `y <= 0` (a NaN
//! result passes its gradient), `maximum` splits ties in half, `pow` is
//! zero where the exponent is zero, a select sends the gradient to the
//! branch taken.

use crate::expr::{Binary, Cmp, Expr, Op, Reg, Unary};

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

/// `g · f'(x)` for `y = f(x)` (`x` in register `a`, `y` in `y`); `None`
/// where the derivative is zero (rounding).
fn unary_grad(e: &mut Expr, f: Unary, a: Reg, y: Reg, g: Reg) -> Option<Reg> {
    use Binary::{Add, Div, Mul, Sub};
    let k = |e: &mut Expr, v: f64| e.constant(v);
    Some(match f {
        Unary::Neg => e.unary(Unary::Neg, g),
        Unary::Abs => {
            // g · sgn(x)
            let zero = k(e, 0.0);
            let one = k(e, 1.0);
            let minus = k(e, -1.0);
            let neg = e.select(Cmp::Lt, a, zero, minus, zero);
            let s = e.select(Cmp::Gt, a, zero, one, neg);
            e.binary(Mul, g, s)
        }
        Unary::Relu => {
            let zero = k(e, 0.0);
            // threshold_backward: 0 where y <= 0, so a NaN result passes g
            e.select(Cmp::Le, y, zero, zero, g)
        }
        Unary::Sigmoid => {
            let one = k(e, 1.0);
            let om = e.binary(Sub, one, y);
            let d = e.binary(Mul, y, om);
            e.binary(Mul, g, d)
        }
        Unary::Tanh => {
            let one = k(e, 1.0);
            let yy = e.binary(Mul, y, y);
            let d = e.binary(Sub, one, yy);
            e.binary(Mul, g, d)
        }
        Unary::Exp => e.binary(Mul, g, y),
        Unary::Expm1 => {
            let one = k(e, 1.0);
            let d = e.binary(Add, y, one);
            e.binary(Mul, g, d)
        }
        Unary::Log => e.binary(Div, g, a),
        Unary::Log1p => {
            let one = k(e, 1.0);
            let d = e.binary(Add, a, one);
            e.binary(Div, g, d)
        }
        Unary::Sqrt => {
            let two = k(e, 2.0);
            let d = e.binary(Mul, two, y);
            e.binary(Div, g, d)
        }
        Unary::Rsqrt => {
            let h = k(e, -0.5);
            let y2 = e.binary(Mul, y, y);
            let y3 = e.binary(Mul, y2, y);
            let d = e.binary(Mul, h, y3);
            e.binary(Mul, g, d)
        }
        Unary::Reciprocal => {
            let y2 = e.binary(Mul, y, y);
            let d = e.unary(Unary::Neg, y2);
            e.binary(Mul, g, d)
        }
        Unary::Erf => {
            let c = k(e, std::f64::consts::FRAC_2_SQRT_PI);
            let x2 = e.binary(Mul, a, a);
            let nx2 = e.unary(Unary::Neg, x2);
            let ex = e.unary(Unary::Exp, nx2);
            let d = e.binary(Mul, c, ex);
            e.binary(Mul, g, d)
        }
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
        Unary::Sin => {
            let c = e.unary(Unary::Cos, a);
            e.binary(Mul, g, c)
        }
        Unary::Cos => {
            let s = e.unary(Unary::Sin, a);
            let ns = e.unary(Unary::Neg, s);
            e.binary(Mul, g, ns)
        }
        Unary::Floor | Unary::Ceil | Unary::Trunc | Unary::Round => return None,
    })
}

/// The gradients of `y = f(a, c)` for both operands (skipped where an
/// operand carries none).
fn binary_grad(
    e: &mut Expr,
    f: Binary,
    a: Reg,
    c: Reg,
    y: Reg,
    g: Reg,
    needs: &[bool],
) -> (Option<Reg>, Option<Reg>) {
    use Binary::{Div, Mul, Sub};
    let (na, nc) = (needs[a], needs[c]);
    match f {
        Binary::Add => (Some(g), Some(g)),
        Binary::Sub => (Some(g), nc.then(|| e.unary(Unary::Neg, g))),
        Binary::Mul => (
            na.then(|| e.binary(Mul, g, c)),
            nc.then(|| e.binary(Mul, g, a)),
        ),
        Binary::Div => {
            let ga = na.then(|| e.binary(Div, g, c));
            let gc = nc.then(|| {
                // -g (a / c) / c, as eager and torch: c² first underflows
                // (0/0 at c = 1e-30 in f32) or overflows
                let q = e.binary(Div, a, c);
                let q = e.binary(Div, q, c);
                let t = e.binary(Mul, g, q);
                e.unary(Unary::Neg, t)
            });
            (ga, gc)
        }
        Binary::Max | Binary::Min => {
            // the larger (smaller) side takes g, ties half each
            let zero = e.constant(0.0);
            let half = e.constant(0.5);
            let hg = e.binary(Mul, g, half);
            let loses = if f == Binary::Max { Cmp::Lt } else { Cmp::Gt };
            let side = |e: &mut Expr, p: Reg, q: Reg| {
                let tie = e.select(Cmp::Eq, p, q, hg, g);
                e.select(loses, p, q, zero, tie)
            };
            (na.then(|| side(e, a, c)), nc.then(|| side(e, c, a)))
        }
        Binary::Pow => {
            let zero = e.constant(0.0);
            let ga = na.then(|| {
                // g·c·a^(c-1), zero where c == 0
                let one = e.constant(1.0);
                let cm = e.binary(Sub, c, one);
                let p = e.binary(Binary::Pow, a, cm);
                let d = e.binary(Mul, c, p);
                let t = e.binary(Mul, g, d);
                e.select(Cmp::Eq, c, zero, zero, t)
            });
            let gc = nc.then(|| {
                // g·a^c·ln a, zero where a == 0 and c >= 0
                let l = e.unary(Unary::Log, a);
                let d = e.binary(Mul, y, l);
                let t = e.binary(Mul, g, d);
                let keep = e.select(Cmp::Ge, c, zero, zero, t);
                e.select(Cmp::Eq, a, zero, keep, t)
            });
            (ga, gc)
        }
    }
}

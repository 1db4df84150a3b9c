//! The code generator's input: a pointwise expression DAG over numbered
//! inputs, in evaluation order (each op reads earlier ops only). A fusion
//! group's body and an fx graph of Python floats both lower to it; the
//! kernel compiler ([`crate::kernel`]) evaluates it once per element, the
//! scalar compiler ([`crate::scalar`]) once per call, [`Expr::eval`] is the
//! reference the tests compare both against.

use std::fmt;

// The primitives live with the pointwise rows they make up (Note
// [Pointwise rows] in ferrotorch-core), so eager autograd and this crate
// read one set.
pub use ferrotorch_core::rows::prim::{binary_ref, unary_ref, Binary, Cmp, Op, Unary};

/// The most inputs (and outputs) an expression may have.
pub const MAX_INPUTS: usize = 1 << 12;
/// The most ops an expression may have.
pub const MAX_OPS: usize = 1 << 16;

/// An op's index in [`Expr::ops`].
pub use ferrotorch_core::rows::prim::Reg;

/// A pointwise expression: `ops` in evaluation order, `outputs` naming
/// the ops returned.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Expr {
    /// How many inputs it reads.
    pub n_inputs: usize,
    /// The ops, each reading earlier ones.
    pub ops: Vec<Op>,
    /// What it returns.
    pub outputs: Vec<Reg>,
}

impl Expr {
    /// An empty expression of `n_inputs` inputs.
    pub fn new(n_inputs: usize) -> Expr {
        Expr {
            n_inputs,
            ..Default::default()
        }
    }

    /// `(sigmoid, tanh)` op pairs of one operand, each op in one pair at
    /// most: f32 kernels compute each pair from one exponential (Note
    /// [Paired transcendentals] in `blocked.rs`).
    pub(crate) fn sigmoid_tanh_pairs(&self) -> Vec<(Reg, Reg)> {
        let mut taken = vec![false; self.ops.len()];
        let mut pairs = Vec::new();
        for (s, op) in self.ops.iter().enumerate() {
            let Op::Unary(Unary::Sigmoid, a) = *op else {
                continue;
            };
            let tanh = (0..self.ops.len())
                .find(|&t| !taken[t] && self.ops[t] == Op::Unary(Unary::Tanh, a));
            if let Some(t) = tanh {
                taken[t] = true;
                pairs.push((s, t));
            }
        }
        pairs
    }

    /// Append `op`; returns its register.
    pub fn push(&mut self, op: Op) -> Reg {
        self.ops.push(op);
        self.ops.len() - 1
    }

    /// Input `k`.
    pub fn input(&mut self, k: usize) -> Reg {
        self.push(Op::Input(k))
    }

    /// A constant.
    pub fn constant(&mut self, v: f64) -> Reg {
        self.push(Op::Const(v.to_bits()))
    }

    /// `f(a)`
    pub fn unary(&mut self, f: Unary, a: Reg) -> Reg {
        self.push(Op::Unary(f, a))
    }

    /// `f(a, b)`
    pub fn binary(&mut self, f: Binary, a: Reg, b: Reg) -> Reg {
        self.push(Op::Binary(f, a, b))
    }

    /// `if a cmp b { then } else { other }`
    pub fn select(&mut self, cmp: Cmp, a: Reg, b: Reg, then: Reg, other: Reg) -> Reg {
        self.push(Op::Select {
            cmp,
            a,
            b,
            then,
            other,
        })
    }

    /// Check the structure: inputs in range, each op reading earlier ops,
    /// at least one output. Compilers call it first, so a malformed
    /// expression is an error, never bad code.
    pub fn validate(&self) -> Result<(), String> {
        if self.outputs.is_empty() {
            return Err("an expression needs at least one output".into());
        }
        // bounds on what one function may hold, so that a hostile
        // expression (from Python, say) cannot ask for unbounded code
        if self.n_inputs > MAX_INPUTS || self.outputs.len() > MAX_INPUTS || self.ops.len() > MAX_OPS
        {
            return Err(format!(
                "an expression may have at most {MAX_INPUTS} inputs and outputs and {MAX_OPS} ops \
                 (this one: {} inputs, {} outputs, {} ops)",
                self.n_inputs,
                self.outputs.len(),
                self.ops.len()
            ));
        }
        for (i, op) in self.ops.iter().enumerate() {
            if let Op::Input(k) = op {
                if *k >= self.n_inputs {
                    return Err(format!(
                        "op {i} reads input {k} of {} inputs",
                        self.n_inputs
                    ));
                }
            }
            if let Some(r) = op.operands().into_iter().find(|&r| r >= i) {
                return Err(format!("op {i} reads op {r}, which does not precede it"));
            }
        }
        match self.outputs.iter().find(|&&o| o >= self.ops.len()) {
            Some(o) => Err(format!("output {o} is not an op")),
            None => Ok(()),
        }
    }

    /// Drop the ops no output depends on, renumbering the rest.
    pub fn prune(&mut self) {
        let mut live = vec![false; self.ops.len()];
        for &o in &self.outputs {
            live[o] = true;
        }
        for i in (0..self.ops.len()).rev() {
            if !live[i] {
                continue;
            }
            for r in self.ops[i].operands() {
                live[r] = true;
            }
        }
        let mut new_ix = vec![usize::MAX; self.ops.len()];
        let mut ops = Vec::new();
        for (i, op) in self.ops.iter().enumerate() {
            if !live[i] {
                continue;
            }
            let op = op.map_regs(|r| new_ix[r]);
            new_ix[i] = ops.len();
            ops.push(op);
        }
        self.ops = ops;
        for o in &mut self.outputs {
            *o = new_ix[*o];
        }
    }

    /// Evaluate in f64 with Rust's `std` functions: the reference.
    pub fn eval(&self, inputs: &[f64]) -> Vec<f64> {
        let mut v: Vec<f64> = Vec::with_capacity(self.ops.len());
        for op in &self.ops {
            let r = match *op {
                Op::Input(k) => inputs[k],
                Op::Const(bits) => f64::from_bits(bits),
                Op::Unary(f, a) => unary_ref(f, v[a]),
                Op::Binary(f, a, b) => binary_ref(f, v[a], v[b]),
                Op::Select {
                    cmp,
                    a,
                    b,
                    then,
                    other,
                } => {
                    if cmp.holds(v[a], v[b]) {
                        v[then]
                    } else {
                        v[other]
                    }
                }
            };
            v.push(r);
        }
        self.outputs.iter().map(|&o| v[o]).collect()
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, op) in self.ops.iter().enumerate() {
            match op {
                Op::Input(k) => writeln!(f, "  r{i} = in{k}")?,
                Op::Const(b) => writeln!(f, "  r{i} = {}", f64::from_bits(*b))?,
                Op::Unary(u, a) => writeln!(f, "  r{i} = {u:?}(r{a})")?,
                Op::Binary(o, a, b) => writeln!(f, "  r{i} = {o:?}(r{a}, r{b})")?,
                Op::Select {
                    cmp,
                    a,
                    b,
                    then,
                    other,
                } => writeln!(f, "  r{i} = r{a} {cmp:?} r{b} ? r{then} : r{other}")?,
            }
        }
        let outs: Vec<String> = self.outputs.iter().map(|o| format!("r{o}")).collect();
        write!(f, "  return {}", outs.join(", "))
    }
}

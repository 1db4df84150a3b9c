//! The primitives pointwise formulas are made of: the one- and
//! two-argument functions, comparisons and the op of an expression DAG
//! that the code generator compiles (`ferrotorch-codegen` re-exports
//! them), with their f64 reference values.

/// One-argument ops.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Unary {
    /// `-x`
    Neg,
    /// `|x|`
    Abs,
    /// `max(x, 0)`, NaN kept.
    Relu,
    /// `1 / (1 + e^-x)`
    Sigmoid,
    /// `tanh x`
    Tanh,
    /// `e^x`
    Exp,
    /// `e^x - 1`
    Expm1,
    /// `ln x`
    Log,
    /// `ln(1 + x)`
    Log1p,
    /// `√x`
    Sqrt,
    /// `1 / √x`
    Rsqrt,
    /// `1 / x`
    Reciprocal,
    /// `erf x`
    Erf,
    /// Exact GELU, `x·Φ(x)`.
    Gelu,
    /// GELU, `approximate='tanh'`.
    GeluTanh,
    /// `sin x`
    Sin,
    /// `cos x`
    Cos,
    /// `⌊x⌋`
    Floor,
    /// `⌈x⌉`
    Ceil,
    /// Toward zero.
    Trunc,
    /// To nearest, ties to even (`torch.round`).
    Round,
}

/// Every [`Unary`], with its torch name.
const UNARY_NAMES: [(Unary, &str); 21] = [
    (Unary::Neg, "neg"),
    (Unary::Abs, "abs"),
    (Unary::Relu, "relu"),
    (Unary::Sigmoid, "sigmoid"),
    (Unary::Tanh, "tanh"),
    (Unary::Exp, "exp"),
    (Unary::Expm1, "expm1"),
    (Unary::Log, "log"),
    (Unary::Log1p, "log1p"),
    (Unary::Sqrt, "sqrt"),
    (Unary::Rsqrt, "rsqrt"),
    (Unary::Reciprocal, "reciprocal"),
    (Unary::Erf, "erf"),
    (Unary::Gelu, "gelu"),
    (Unary::GeluTanh, "gelu_tanh"),
    (Unary::Sin, "sin"),
    (Unary::Cos, "cos"),
    (Unary::Floor, "floor"),
    (Unary::Ceil, "ceil"),
    (Unary::Trunc, "trunc"),
    (Unary::Round, "round"),
];

impl Unary {
    /// The torch op of one tensor argument with this name (`"tanh"`);
    /// the GELUs take an `approximate` argument, so they are not found
    /// by name.
    pub fn from_name(name: &str) -> Option<Unary> {
        UNARY_NAMES
            .iter()
            .find(|(f, n)| *n == name && !matches!(f, Unary::Gelu | Unary::GeluTanh))
            .map(|(f, _)| *f)
    }

    /// The names [`Unary::from_name`] finds.
    pub fn names() -> impl Iterator<Item = &'static str> {
        UNARY_NAMES
            .iter()
            .filter(|(f, _)| !matches!(f, Unary::Gelu | Unary::GeluTanh))
            .map(|(_, n)| *n)
    }

    /// Its name (torch's; `gelu_tanh` for the tanh approximation), also
    /// the name of its host function where it has one.
    pub fn name(self) -> &'static str {
        UNARY_NAMES
            .iter()
            .find(|(f, _)| *f == self)
            .map(|(_, n)| *n)
            .expect("every unary op is named")
    }
}

/// Two-argument ops.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Binary {
    /// `a + b`
    Add,
    /// `a - b`
    Sub,
    /// `a * b`
    Mul,
    /// `a / b`
    Div,
    /// `torch.maximum` (NaN if either is).
    Max,
    /// `torch.minimum` (NaN if either is).
    Min,
    /// `a ** b`
    Pow,
}

/// Comparisons for [`Op::Select`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Cmp {
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `==`
    Eq,
    /// `!=`
    Ne,
}

impl Cmp {
    /// The comparison on two numbers (false when either is NaN, except `Ne`).
    pub fn holds(self, a: f64, b: f64) -> bool {
        match self {
            Cmp::Lt => a < b,
            Cmp::Le => a <= b,
            Cmp::Gt => a > b,
            Cmp::Ge => a >= b,
            Cmp::Eq => a == b,
            Cmp::Ne => a != b,
        }
    }
}

/// An op's index in an expression's list of ops.
pub type Reg = usize;

/// One op of an expression (`ferrotorch_codegen::Expr`, a recorded
/// formula).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// The expression's `k`-th input.
    Input(usize),
    /// A constant, as the bits of an `f64` (so the op hashes).
    Const(u64),
    /// `f(a)`
    Unary(Unary, Reg),
    /// `f(a, b)`
    Binary(Binary, Reg, Reg),
    /// `if a cmp b { then } else { other }`
    Select {
        /// The comparison.
        cmp: Cmp,
        /// Its left side.
        a: Reg,
        /// Its right side.
        b: Reg,
        /// The value where it holds.
        then: Reg,
        /// The value elsewhere.
        other: Reg,
    },
}

impl Op {
    /// The op with each register it reads passed through `f`.
    pub fn map_regs(self, mut f: impl FnMut(Reg) -> Reg) -> Op {
        match self {
            Op::Input(_) | Op::Const(_) => self,
            Op::Unary(u, a) => Op::Unary(u, f(a)),
            Op::Binary(b, x, y) => Op::Binary(b, f(x), f(y)),
            Op::Select {
                cmp,
                a,
                b,
                then,
                other,
            } => Op::Select {
                cmp,
                a: f(a),
                b: f(b),
                then: f(then),
                other: f(other),
            },
        }
    }

    /// The ops it reads, in order (with repeats).
    pub fn operands(&self) -> Vec<Reg> {
        match *self {
            Op::Input(_) | Op::Const(_) => vec![],
            Op::Unary(_, a) => vec![a],
            Op::Binary(_, a, b) => vec![a, b],
            Op::Select {
                a, b, then, other, ..
            } => vec![a, b, then, other],
        }
    }

    /// Whether it is exact arithmetic: IEEE operations, roundings,
    /// compares and selects, with no transcendental polynomial and no
    /// host function (what cross-compiled code and wide stage loops
    /// cover).
    pub fn is_arithmetic(&self) -> bool {
        match self {
            Op::Unary(f, _) => matches!(
                f,
                Unary::Neg
                    | Unary::Abs
                    | Unary::Relu
                    | Unary::Sqrt
                    | Unary::Rsqrt
                    | Unary::Reciprocal
                    | Unary::Floor
                    | Unary::Ceil
                    | Unary::Trunc
                    | Unary::Round
            ),
            Op::Binary(f, _, _) => !matches!(f, Binary::Pow),
            Op::Input(_) | Op::Const(_) | Op::Select { .. } => true,
        }
    }
}

/// `f(x)` in f64.
pub fn unary_ref(f: Unary, x: f64) -> f64 {
    match f {
        Unary::Neg => -x,
        Unary::Abs => x.abs(),
        Unary::Relu => {
            if x.is_nan() {
                x
            } else {
                x.max(0.0)
            }
        }
        Unary::Sigmoid => 1.0 / (1.0 + (-x).exp()),
        Unary::Tanh => x.tanh(),
        Unary::Exp => x.exp(),
        Unary::Expm1 => x.exp_m1(),
        Unary::Log => x.ln(),
        Unary::Log1p => x.ln_1p(),
        Unary::Sqrt => x.sqrt(),
        Unary::Rsqrt => 1.0 / x.sqrt(),
        Unary::Reciprocal => 1.0 / x,
        Unary::Erf => crate::native::special::erf(x),
        Unary::Gelu => 0.5 * x * crate::native::special::erfc(-x / std::f64::consts::SQRT_2),
        Unary::GeluTanh => {
            let k = (2.0 / std::f64::consts::PI).sqrt();
            0.5 * x * (1.0 + (k * (x + 0.044715 * x * x * x)).tanh())
        }
        Unary::Sin => x.sin(),
        Unary::Cos => x.cos(),
        Unary::Floor => x.floor(),
        Unary::Ceil => x.ceil(),
        Unary::Trunc => x.trunc(),
        Unary::Round => x.round_ties_even(),
    }
}

/// `f(a, b)` in f64; max and min give NaN when either side is NaN, as
/// `torch.maximum` does.
pub fn binary_ref(f: Binary, a: f64, b: f64) -> f64 {
    match f {
        Binary::Add => a + b,
        Binary::Sub => a - b,
        Binary::Mul => a * b,
        Binary::Div => a / b,
        Binary::Max | Binary::Min if a.is_nan() || b.is_nan() => f64::NAN,
        Binary::Max => a.max(b),
        Binary::Min => a.min(b),
        Binary::Pow => a.powf(b),
    }
}

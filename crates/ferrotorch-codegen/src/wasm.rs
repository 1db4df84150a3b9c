//! WebAssembly for scalar expressions (seeds/000's wasm target): a module
//! exporting `forward(f64, …) -> (f64, …)`, written directly in the
//! binary format (no toolchain). Arithmetic, comparisons and rounding are
//! wasm instructions; transcendentals are imported from the host as
//! `env.<name>` (JavaScript passes `Math.exp` and friends).

use crate::expr::{Binary, Cmp, Expr, Op, Unary};

/// The host functions a module may import, with their arity.
pub const IMPORTS: &[(&str, usize)] = &[
    ("exp", 1),
    ("expm1", 1),
    ("log", 1),
    ("log1p", 1),
    ("tanh", 1),
    ("sin", 1),
    ("cos", 1),
    ("pow", 2),
];

fn leb_u32(out: &mut Vec<u8>, mut v: u32) {
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

fn name(out: &mut Vec<u8>, s: &str) {
    leb_u32(out, s.len() as u32);
    out.extend_from_slice(s.as_bytes());
}

fn section(out: &mut Vec<u8>, id: u8, body: Vec<u8>) {
    out.push(id);
    leb_u32(out, body.len() as u32);
    out.extend(body);
}

const F64: u8 = 0x7c;

/// The function type `f64^params -> f64^results`.
fn func_type(out: &mut Vec<u8>, params: usize, results: usize) {
    out.push(0x60);
    leb_u32(out, params as u32);
    out.extend(std::iter::repeat_n(F64, params));
    leb_u32(out, results as u32);
    out.extend(std::iter::repeat_n(F64, results));
}

/// Instructions computing one op into the value stack.
struct Body<'a> {
    code: Vec<u8>,
    n_params: u32,
    import_index: &'a dyn Fn(&str) -> Result<u32, String>,
}

impl Body<'_> {
    fn get(&mut self, r: usize) {
        self.code.push(0x20);
        leb_u32(&mut self.code, self.n_params + r as u32);
    }
    fn f64_const(&mut self, v: f64) {
        self.code.push(0x44);
        self.code.extend_from_slice(&v.to_le_bytes());
    }
    fn call(&mut self, f: &str) -> Result<(), String> {
        let ix = (self.import_index)(f)?;
        self.code.push(0x10);
        leb_u32(&mut self.code, ix);
        Ok(())
    }

    fn unary(&mut self, f: Unary, a: usize) -> Result<(), String> {
        let op = match f {
            Unary::Neg => Some(0x9a),
            Unary::Abs => Some(0x99),
            Unary::Sqrt => Some(0x9f),
            Unary::Floor => Some(0x9c),
            Unary::Ceil => Some(0x9b),
            Unary::Trunc => Some(0x9d),
            Unary::Round => Some(0x9e),
            _ => None,
        };
        if let Some(op) = op {
            self.get(a);
            self.code.push(op);
            return Ok(());
        }
        match f {
            Unary::Relu => {
                // x < 0 ? 0 : x (NaN kept)
                self.f64_const(0.0);
                self.get(a);
                self.get(a);
                self.f64_const(0.0);
                self.code.push(0x63); // f64.lt
                self.code.push(0x1b); // select
            }
            Unary::Reciprocal | Unary::Rsqrt => {
                self.f64_const(1.0);
                self.get(a);
                if f == Unary::Rsqrt {
                    self.code.push(0x9f);
                }
                self.code.push(0xa3);
            }
            Unary::Sigmoid => {
                self.f64_const(1.0);
                self.f64_const(1.0);
                self.get(a);
                self.code.push(0x9a);
                self.call("exp")?;
                self.code.push(0xa0);
                self.code.push(0xa3);
            }
            Unary::Erf | Unary::Gelu | Unary::GeluTanh => {
                return Err(format!(
                    "{f:?} has no WebAssembly form (no erf in the host)"
                ));
            }
            other => {
                self.get(a);
                self.call(other.name())?;
            }
        }
        Ok(())
    }
}

/// `expr` as a WebAssembly module exporting `forward`.
pub fn to_wasm(expr: &Expr) -> Result<Vec<u8>, String> {
    expr.validate()?;
    let n = expr.n_inputs;
    // imports: only those used, in IMPORTS order
    let needed = |f: &str| -> bool {
        expr.ops.iter().any(|op| match op {
            Op::Unary(Unary::Sigmoid, _) => f == "exp",
            Op::Unary(u, _) => u.name() == f,
            Op::Binary(Binary::Pow, _, _) => f == "pow",
            _ => false,
        })
    };
    let imports: Vec<(&str, usize)> = IMPORTS.iter().copied().filter(|(f, _)| needed(f)).collect();
    let import_index = |f: &str| -> Result<u32, String> {
        imports
            .iter()
            .position(|(g, _)| *g == f)
            .map(|i| i as u32)
            .ok_or_else(|| format!("{f} is not a host import"))
    };
    let mut body = Body {
        code: Vec::new(),
        n_params: n as u32,
        import_index: &import_index,
    };
    for (i, op) in expr.ops.iter().enumerate() {
        match *op {
            Op::Input(k) => {
                body.code.push(0x20);
                leb_u32(&mut body.code, k as u32);
            }
            Op::Const(bits) => body.f64_const(f64::from_bits(bits)),
            Op::Unary(f, a) => body.unary(f, a)?,
            Op::Binary(f, a, b) => {
                body.get(a);
                body.get(b);
                match f {
                    Binary::Add => body.code.push(0xa0),
                    Binary::Sub => body.code.push(0xa1),
                    Binary::Mul => body.code.push(0xa2),
                    Binary::Div => body.code.push(0xa3),
                    Binary::Min => body.code.push(0xa4),
                    Binary::Max => body.code.push(0xa5),
                    Binary::Pow => body.call("pow")?,
                }
            }
            Op::Select {
                cmp,
                a,
                b,
                then,
                other,
            } => {
                body.get(then);
                body.get(other);
                body.get(a);
                body.get(b);
                body.code.push(match cmp {
                    Cmp::Eq => 0x61,
                    Cmp::Ne => 0x62,
                    Cmp::Lt => 0x63,
                    Cmp::Gt => 0x64,
                    Cmp::Le => 0x65,
                    Cmp::Ge => 0x66,
                });
                body.code.push(0x1b);
            }
        }
        body.code.push(0x21); // local.set
        leb_u32(&mut body.code, (n + i) as u32);
    }
    for &o in &expr.outputs {
        body.get(o);
    }
    body.code.push(0x0b);

    let mut out = b"\0asm\x01\0\0\0".to_vec();
    // types: 0 = forward, 1 = unary import, 2 = binary import
    let mut types = Vec::new();
    leb_u32(&mut types, 3);
    func_type(&mut types, n, expr.outputs.len());
    func_type(&mut types, 1, 1);
    func_type(&mut types, 2, 1);
    section(&mut out, 1, types);
    let mut imp = Vec::new();
    leb_u32(&mut imp, imports.len() as u32);
    for (f, arity) in &imports {
        name(&mut imp, "env");
        name(&mut imp, f);
        imp.push(0x00);
        leb_u32(&mut imp, *arity as u32);
    }
    section(&mut out, 2, imp);
    section(&mut out, 3, vec![1, 0]);
    let mut exp = Vec::new();
    leb_u32(&mut exp, 1);
    name(&mut exp, "forward");
    exp.push(0x00);
    leb_u32(&mut exp, imports.len() as u32);
    section(&mut out, 7, exp);
    let mut func = Vec::new();
    leb_u32(&mut func, 1); // one group of locals
    leb_u32(&mut func, expr.ops.len() as u32);
    func.push(F64);
    func.extend(body.code);
    let mut code = Vec::new();
    leb_u32(&mut code, 1);
    leb_u32(&mut code, func.len() as u32);
    code.extend(func);
    section(&mut out, 10, code);
    Ok(out)
}

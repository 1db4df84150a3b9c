//! Emitting arithmetic of one float type, scalar (`f32`, `f64`) or vector
//! (`f32x4`, `f64x2`), through one interface, so the math in
//! [`crate::math`] and the expression walk in [`eval`] are written once
//! for a kernel's vector body, its scalar tail and a scalar function.

use crate::expr::{Binary, Cmp, Expr, Op, Reg, Unary};
use crate::libm::Libcall;
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{
    types, AbiParam, Endianness, InstBuilder, MemFlagsData, Signature, Type, Value,
};
use cranelift_codegen::isa::CallConv;
use cranelift_frontend::FunctionBuilder;
use std::collections::HashMap;

/// What the target offers the emitted code.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Target {
    /// Fused multiply-add in hardware (else `a*b + c`, two roundings).
    pub fma: bool,
    /// The pointer type.
    pub ptr: Type,
    /// The calling convention of `extern "C"` functions.
    pub call_conv: CallConv,
}

/// Vector constants read from memory at each use.
///
/// # Note [Constant pool]
/// Cranelift's optimiser hoists loop-invariant vector constants out of a
/// loop and keeps them in registers; a kernel with a few transcendentals
/// has more constants than x86 has vector registers, and the spills cost
/// more than the math (W9 ran at half speed). Without the optimiser (Note
/// [Interleaved copies]) a splatted constant is rebuilt at each use, two
/// instructions. A constant read by a load at each use instead becomes a
/// memory operand of the instruction using it (`vfmadd213ps xmm, xmm,
/// [base + 16k]`): no register, no extra instruction. The table is the kernel's own, 16-byte aligned. Its loads
/// are pure (so Cranelift places each next to its one use), and their
/// base address is loaded afresh in each loop iteration, from a pointer
/// the kernel gets as an argument, so that they are not loop-invariant
/// either (hoisted, they would be spilled again).
#[derive(Default)]
pub(crate) struct Pool {
    /// The table's address in the function being built.
    pub base: Option<Value>,
    /// The entries, 16 bytes each.
    pub entries: Vec<u128>,
}

impl Pool {
    /// A new entry for one use: entries are not shared, so that no two
    /// loads read one address (Cranelift would merge them into one value
    /// with two uses, which no instruction can take as a memory operand).
    fn offset(&mut self, bits: u128) -> i32 {
        self.entries.push(bits);
        ((self.entries.len() - 1) * 16) as i32
    }
}

/// Emits arithmetic of one float type `ty` into `b`.
pub(crate) struct Em<'a, 'b> {
    pub b: &'a mut FunctionBuilder<'b>,
    pub ty: Type,
    pub target: Target,
    /// Where vector constants come from, if not from registers.
    pub pool: Option<&'a mut Pool>,
}

/// A comparison result: an `i8` for scalars, a lane mask for vectors.
#[derive(Clone, Copy)]
pub(crate) struct Mask(Value);

impl Em<'_, '_> {
    fn is_f32(&self) -> bool {
        self.ty.lane_type() == types::F32
    }

    /// Whether the values are integers (`i32`/`i64` lanes).
    fn is_int(&self) -> bool {
        self.ty.lane_type().is_int()
    }

    /// Flags for bit casts (vectors need a byte order).
    fn cast_flags(&self) -> MemFlagsData {
        if self.ty.is_vector() {
            MemFlagsData::new().with_endianness(Endianness::Little)
        } else {
            MemFlagsData::new()
        }
    }

    /// A 128-bit constant from the pool, when there is one.
    fn pooled(&mut self, ty: Type, lane_bits: u64) -> Option<Value> {
        let pool = self.pool.as_mut()?;
        let base = pool.base?;
        let width = ty.lane_bits();
        let mut bits: u128 = 0;
        for l in 0..ty.lane_count() {
            let lane = u128::from(lane_bits) & ((1u128 << width) - 1);
            bits |= lane << (l * width);
        }
        let off = pool.offset(bits);
        let flags = MemFlagsData::trusted().with_readonly().with_can_move();
        Some(self.b.ins().load(ty, flags, base, off))
    }

    /// A float constant in every lane (for integer lanes: `v` as an
    /// integer).
    pub fn c(&mut self, v: f64) -> Value {
        if self.is_int() {
            return self.ci(v as i64);
        }
        if self.ty.is_vector() {
            let lane = if self.is_f32() {
                u64::from((v as f32).to_bits())
            } else {
                v.to_bits()
            };
            if let Some(x) = self.pooled(self.ty, lane) {
                return x;
            }
        }
        let s = if self.is_f32() {
            self.b.ins().f32const(v as f32)
        } else {
            self.b.ins().f64const(v)
        };
        self.spread(s)
    }

    /// A scalar of the lane type in every lane.
    pub fn spread(&mut self, s: Value) -> Value {
        if self.ty.is_vector() {
            self.b.ins().splat(self.ty, s)
        } else {
            s
        }
    }

    /// An integer constant of the lane width in every lane.
    pub fn ci(&mut self, v: i64) -> Value {
        let lane = self.ty.lane_type().as_int();
        let masked = if lane == types::I32 {
            v as i32 as u32 as i64
        } else {
            v
        };
        if self.ty.is_vector() {
            if let Some(x) = self.pooled(self.ty.as_int(), masked as u64) {
                return x;
            }
        }
        let s = self.b.ins().iconst(lane, masked);
        if self.ty.is_vector() {
            self.b.ins().splat(self.ty.as_int(), s)
        } else {
            s
        }
    }

    /// The bits of a float value as integers.
    pub fn bits(&mut self, x: Value) -> Value {
        let f = self.cast_flags();
        self.b.ins().bitcast(self.ty.as_int(), f, x)
    }

    /// The float value of integer bits.
    pub fn float_of_bits(&mut self, i: Value) -> Value {
        let f = self.cast_flags();
        self.b.ins().bitcast(self.ty, f, i)
    }

    pub fn add(&mut self, a: Value, b: Value) -> Value {
        if self.is_int() {
            return self.b.ins().iadd(a, b);
        }
        self.b.ins().fadd(a, b)
    }
    pub fn sub(&mut self, a: Value, b: Value) -> Value {
        if self.is_int() {
            return self.b.ins().isub(a, b);
        }
        self.b.ins().fsub(a, b)
    }
    pub fn mul(&mut self, a: Value, b: Value) -> Value {
        if self.is_int() {
            return self.b.ins().imul(a, b);
        }
        self.b.ins().fmul(a, b)
    }
    pub fn div(&mut self, a: Value, b: Value) -> Value {
        self.b.ins().fdiv(a, b)
    }
    pub fn abs(&mut self, a: Value) -> Value {
        if self.is_int() {
            return self.b.ins().iabs(a);
        }
        self.b.ins().fabs(a)
    }
    pub fn neg(&mut self, a: Value) -> Value {
        if self.is_int() {
            return self.b.ins().ineg(a);
        }
        self.b.ins().fneg(a)
    }

    /// `a*b + c`, one rounding where the target has FMA.
    pub fn fma(&mut self, a: Value, b: Value, c: Value) -> Value {
        if self.target.fma {
            self.b.ins().fma(a, b, c)
        } else {
            let p = self.b.ins().fmul(a, b);
            self.b.ins().fadd(p, c)
        }
    }

    /// `a*k + c` for a constant `k`.
    pub fn fmak(&mut self, a: Value, k: f64, c: Value) -> Value {
        let k = self.c(k);
        self.fma(a, k, c)
    }

    /// `a*k1 + k2` for constants: one Horner or Estrin step.
    pub fn fmakk(&mut self, a: Value, k1: f64, k2: f64) -> Value {
        let k2 = self.c(k2);
        self.fmak(a, k1, k2)
    }

    /// `a * k`
    pub fn mulk(&mut self, a: Value, k: f64) -> Value {
        let k = self.c(k);
        self.mul(a, k)
    }

    /// `a + k`
    pub fn addk(&mut self, a: Value, k: f64) -> Value {
        let k = self.c(k);
        self.add(a, k)
    }

    /// `a cc b` (signed for integers).
    pub fn cmp(&mut self, cc: FloatCC, a: Value, b: Value) -> Mask {
        if self.is_int() {
            let icc = match cc {
                FloatCC::LessThan => IntCC::SignedLessThan,
                FloatCC::LessThanOrEqual => IntCC::SignedLessThanOrEqual,
                FloatCC::GreaterThan => IntCC::SignedGreaterThan,
                FloatCC::GreaterThanOrEqual => IntCC::SignedGreaterThanOrEqual,
                FloatCC::NotEqual => IntCC::NotEqual,
                // integers are never unordered
                _ => IntCC::Equal,
            };
            return Mask(self.b.ins().icmp(icc, a, b));
        }
        Mask(self.b.ins().fcmp(cc, a, b))
    }

    /// `a cc k`
    pub fn cmpk(&mut self, cc: FloatCC, a: Value, k: f64) -> Mask {
        let k = self.c(k);
        self.cmp(cc, a, k)
    }

    /// `m ? t : e`
    pub fn sel(&mut self, m: Mask, t: Value, e: Value) -> Value {
        if self.ty.is_vector() {
            let f = self.cast_flags();
            let ty = self.b.func.dfg.value_type(t);
            let mask = if self.b.func.dfg.value_type(m.0) == ty {
                m.0
            } else {
                self.b.ins().bitcast(ty, f, m.0)
            };
            self.b.ins().bitselect(mask, t, e)
        } else {
            self.b.ins().select(m.0, t, e)
        }
    }

    /// `m ? k : e` for a constant `k`.
    pub fn selk(&mut self, m: Mask, k: f64, e: Value) -> Value {
        let k = self.c(k);
        self.sel(m, k, e)
    }

    /// `x` clamped to `[lo, hi]` with NaN kept (as `f32::clamp`): two
    /// compares and selects, cheaper than IEEE `fmax`/`fmin`, which also
    /// order ±0.
    pub fn clampk(&mut self, x: Value, lo: f64, hi: f64) -> Value {
        // one constant value for the compare and the select: x86 then
        // matches the pair as a single maxps / minps
        let l = self.c(lo);
        let m = self.cmp(FloatCC::LessThan, x, l);
        let y = self.sel(m, l, x);
        let h = self.c(hi);
        let m = self.cmp(FloatCC::LessThan, h, y);
        self.sel(m, h, y)
    }

    /// `|mag|` with the sign of `sign`.
    pub fn copysign(&mut self, mag: Value, sign: Value) -> Value {
        let top = if self.is_f32() {
            i64::from(i32::MIN)
        } else {
            i64::MIN
        };
        let m = self.ci(top);
        let sb = self.bits(sign);
        let s = self.b.ins().band(sb, m);
        let mb = self.bits(mag);
        let nm = self.b.ins().bnot(m);
        let a = self.b.ins().band(mb, nm);
        let r = self.b.ins().bor(a, s);
        self.float_of_bits(r)
    }

    /// Call a function of the lane type: directly on a scalar, lane by
    /// lane on a vector.
    pub fn call(&mut self, f: Libcall, args: &[Value]) -> Value {
        let lane = self.ty.lane_type();
        let mut sig = Signature::new(self.target.call_conv);
        for _ in 0..f.arity {
            sig.params.push(AbiParam::new(lane));
        }
        sig.returns.push(AbiParam::new(lane));
        let sig = self.b.import_signature(sig);
        let callee = self.b.ins().iconst(self.target.ptr, f.addr as i64);
        let one = |b: &mut FunctionBuilder, xs: &[Value]| {
            let call = b.ins().call_indirect(sig, callee, xs);
            b.inst_results(call)[0]
        };
        if !self.ty.is_vector() {
            return one(self.b, args);
        }
        let mut out = None;
        for lane_ix in 0..self.ty.lane_count() as u8 {
            let xs: Vec<Value> = args
                .iter()
                .map(|&a| self.b.ins().extractlane(a, lane_ix))
                .collect();
            let r = one(self.b, &xs);
            out = Some(match out {
                None => self.b.ins().splat(self.ty, r),
                Some(v) => self.b.ins().insertlane(v, r, lane_ix),
            });
        }
        out.expect("vectors have lanes")
    }

    /// `f(x)` for a one-argument op.
    pub fn unary(&mut self, f: Unary, x: Value) -> Value {
        use crate::math;
        if self.is_int() {
            // what `int_ops` admits: the rest of the ops are not reached
            return match f {
                Unary::Neg => self.neg(x),
                Unary::Abs => self.abs(x),
                Unary::Relu => {
                    let z = self.c(0.0);
                    self.b.ins().smax(x, z)
                }
                _ => x,
            };
        }
        // exact arithmetic, the same for every type
        match f {
            Unary::Neg => return self.neg(x),
            Unary::Abs => return self.abs(x),
            Unary::Relu => {
                // x < 0 ? 0 : x (NaN kept): one maxps on x86
                let z = self.c(0.0);
                let m = self.cmp(FloatCC::LessThan, x, z);
                return self.sel(m, z, x);
            }
            Unary::Sqrt => return self.b.ins().sqrt(x),
            Unary::Rsqrt => {
                let s = self.b.ins().sqrt(x);
                let one = self.c(1.0);
                return self.div(one, s);
            }
            Unary::Reciprocal => {
                let one = self.c(1.0);
                return self.div(one, x);
            }
            Unary::Floor => return self.b.ins().floor(x),
            Unary::Ceil => return self.b.ins().ceil(x),
            Unary::Trunc => return self.b.ins().trunc(x),
            Unary::Round => return self.b.ins().nearest(x),
            _ => {}
        }
        if !self.is_f32() {
            return self.unary_f64(f, x);
        }
        match f {
            Unary::Sigmoid => math::sigmoid(self, x),
            Unary::Tanh => math::tanh(self, x),
            Unary::Exp => math::exp(self, x),
            Unary::Expm1 => math::expm1(self, x),
            Unary::Log => math::ln(self, x),
            Unary::Erf => math::erf(self, x),
            Unary::Gelu => math::gelu(self, x),
            Unary::GeluTanh => math::gelu_tanh(self, x),
            _ => {
                let call = crate::libm::f32_fn(f.name()).expect("an f32 libcall for the rest");
                self.call(call, &[x])
            }
        }
    }

    /// f64 transcendentals through `std` (the eager f64 kernels' own
    /// functions).
    fn unary_f64(&mut self, f: Unary, x: Value) -> Value {
        match f {
            Unary::Sigmoid => {
                let n = self.neg(x);
                let e = self.call(f64_lib("exp"), &[n]);
                let d = self.addk(e, 1.0);
                let one = self.c(1.0);
                self.div(one, d)
            }
            Unary::GeluTanh => {
                let k = (2.0 / std::f64::consts::PI).sqrt();
                let x2 = self.mul(x, x);
                let x3 = self.mul(x2, x);
                let inner = self.fmak(x3, 0.044715, x);
                let inner = self.mulk(inner, k);
                let t = self.call(f64_lib("tanh"), &[inner]);
                let t1 = self.addk(t, 1.0);
                let hx = self.mulk(x, 0.5);
                self.mul(hx, t1)
            }
            _ => self.call(f64_lib(f.name()), &[x]),
        }
    }

    /// `f(a, b)` for a two-argument op.
    pub fn binary(&mut self, f: Binary, a: Value, b: Value) -> Value {
        if self.is_int() {
            // what `int_ops` admits
            return match f {
                Binary::Sub => self.sub(a, b),
                Binary::Mul => self.mul(a, b),
                Binary::Max => self.b.ins().smax(a, b),
                Binary::Min => self.b.ins().smin(a, b),
                _ => self.add(a, b),
            };
        }
        match f {
            Binary::Add => self.add(a, b),
            Binary::Sub => self.sub(a, b),
            Binary::Mul => self.mul(a, b),
            Binary::Div => self.div(a, b),
            Binary::Max => self.b.ins().fmax(a, b),
            Binary::Min => self.b.ins().fmin(a, b),
            Binary::Pow => {
                let call = if self.is_f32() {
                    crate::libm::f32_fn("pow")
                } else {
                    crate::libm::f64_fn("pow")
                };
                self.call(call.expect("pow libcall"), &[a, b])
            }
        }
    }
}

/// The f64 function `name`; every transcendental [`Unary`] has one.
fn f64_lib(name: &str) -> Libcall {
    crate::libm::f64_fn(name).expect("an f64 libcall for every transcendental")
}

/// Whether an expression on integers uses only integer ops: wrapping
/// `+ - *`, neg, abs, relu, max, min, the roundings (identities),
/// comparisons and selects (integer division and the transcendentals
/// give floats in torch, so they never reach an integer kernel).
pub(crate) fn int_ops(expr: &Expr) -> Result<(), String> {
    for op in &expr.ops {
        let ok = match op {
            Op::Unary(f, _) => matches!(
                f,
                Unary::Neg
                    | Unary::Abs
                    | Unary::Relu
                    | Unary::Floor
                    | Unary::Ceil
                    | Unary::Trunc
                    | Unary::Round
            ),
            Op::Binary(f, _, _) => matches!(
                f,
                Binary::Add | Binary::Sub | Binary::Mul | Binary::Max | Binary::Min
            ),
            Op::Const(bits) => {
                let v = f64::from_bits(*bits);
                v.fract() == 0.0 && v.abs() < 9.0e15
            }
            _ => true,
        };
        if !ok {
            return Err(format!("{op:?} is not an integer op"));
        }
    }
    Ok(())
}

/// The float condition code for a comparison.
pub(crate) fn float_cc(c: Cmp) -> FloatCC {
    match c {
        Cmp::Lt => FloatCC::LessThan,
        Cmp::Le => FloatCC::LessThanOrEqual,
        Cmp::Gt => FloatCC::GreaterThan,
        Cmp::Ge => FloatCC::GreaterThanOrEqual,
        Cmp::Eq => FloatCC::Equal,
        Cmp::Ne => FloatCC::NotEqual,
    }
}

/// Emit `expr` (values of `em`'s type): its outputs. Input `k` is read
/// by `input(b, k)` where the expression first uses it, once.
pub(crate) fn eval(
    em: &mut Em,
    expr: &Expr,
    input: &mut dyn FnMut(&mut FunctionBuilder, usize) -> Value,
) -> Vec<Value> {
    eval_copies(em, expr, 1, &mut |b, k, _| input(b, k)).remove(0)
}

/// Emit `copies` independent evaluations of `expr` interleaved op by op
/// (Note [Interleaved copies]): `[copy][output]`. Input `k` of copy `u`
/// is read by `input(b, k, u)` where first used.
pub(crate) fn eval_copies(
    em: &mut Em,
    expr: &Expr,
    copies: usize,
    input: &mut dyn FnMut(&mut FunctionBuilder, usize, usize) -> Value,
) -> Vec<Vec<Value>> {
    let mut v: Vec<Vec<Value>> = vec![Vec::with_capacity(expr.ops.len()); copies];
    let mut read: Vec<Vec<Option<Value>>> = vec![vec![None; expr.n_inputs]; copies];
    // the tanh paired with a sigmoid (Note [Paired transcendentals]),
    // emitted with its sigmoid and kept here until its turn
    let mut partner: HashMap<Reg, Reg> = HashMap::new();
    if em.is_f32() {
        for (s, t) in expr.sigmoid_tanh_pairs() {
            partner.insert(s, t);
            partner.insert(t, s);
        }
    }
    let mut early: Vec<HashMap<Reg, Value>> = vec![HashMap::new(); copies];
    for (reg, op) in expr.ops.iter().enumerate() {
        for u in 0..copies {
            if let Some(r) = early[u].remove(&reg) {
                v[u].push(r);
                continue;
            }
            let r = match *op {
                Op::Input(k) => *read[u][k].get_or_insert_with(|| input(em.b, k, u)),
                Op::Unary(f @ (Unary::Sigmoid | Unary::Tanh), a) if partner.contains_key(&reg) => {
                    let (sg, th) = crate::math::sigmoid_tanh(em, v[u][a]);
                    let (mine, other) = if f == Unary::Sigmoid {
                        (sg, th)
                    } else {
                        (th, sg)
                    };
                    early[u].insert(partner[&reg], other);
                    mine
                }
                Op::Const(bits) => em.c(f64::from_bits(bits)),
                Op::Unary(f, a) => em.unary(f, v[u][a]),
                Op::Binary(f, a, b) => em.binary(f, v[u][a], v[u][b]),
                Op::Select {
                    cmp,
                    a,
                    b,
                    then,
                    other,
                } => {
                    let m = em.cmp(float_cc(cmp), v[u][a], v[u][b]);
                    em.sel(m, v[u][then], v[u][other])
                }
            };
            v[u].push(r);
        }
    }
    v.iter()
        .map(|vu| expr.outputs.iter().map(|&o| vu[o]).collect())
        .collect()
}

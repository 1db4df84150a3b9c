//! Row kernels: a pointwise expression followed by one reduction or
//! normalisation over the last dimension, one row per call — softmax,
//! log-softmax, layer norm, sum, mean, max.
//!
//! # Note [Row kernels]
//! The expression is evaluated once per element, in the first pass over
//! the row. Normalisations store its values in the output row (it stays
//! in L1: a 1024-float row is 4 KB) and reduce them, then later passes
//! read the output back: softmax is max, then `exp(v - max)` stored and
//! summed, then a scale by `1/sum`; log-softmax subtracts
//! `max + log(sum)`; layer norm takes the mean, then the variance of the
//! stored values (two passes, as exact as eager's), then
//! `(v - mean)·rstd·w + b`. Reductions keep vector accumulators and add
//! their lanes at the end of the row. No intermediate reaches memory
//! beyond the output itself.

use crate::emit::{eval, Em, Pool, Target};
use crate::expr::{Expr, Unary};
use crate::frame::Frame;
use crate::host::{compile, Code};
use crate::kernel::{Access, Float};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{types, AbiParam, BlockArg, InstBuilder, MemFlagsData, Value};
use cranelift_frontend::FunctionBuilder;
use std::time::Duration;

/// The reduction or normalisation over each row.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RowOp {
    /// One value per row: the sum.
    Sum,
    /// One value per row: the mean.
    Mean,
    /// One value per row: the maximum (NaN if any is).
    Max,
    /// `softmax(v)` over the row.
    Softmax,
    /// `log_softmax(v)` over the row.
    LogSoftmax,
    /// `layer_norm(v)`: `(v - mean) / sqrt(var + eps) · w + b`, `w` and
    /// `b` optional kernel inputs (their indices), read along the row.
    LayerNorm {
        /// Added to the variance.
        eps: f64,
        /// The input holding the weight, if any.
        weight: Option<usize>,
        /// The input holding the bias, if any.
        bias: Option<usize>,
    },
}

impl RowOp {
    /// Whether the output is one value per row (else a full row).
    pub fn reduces(self) -> bool {
        matches!(self, RowOp::Sum | RowOp::Mean | RowOp::Max)
    }
}

type RawRow = unsafe extern "C" fn(*const *const u8, *const i64, *mut u8, i64, *const *const u128);

/// A compiled row kernel.
pub struct RowKernel {
    code: Code,
    pool: Vec<u128>,
    n_inputs: usize,
    op: RowOp,
    float: Float,
}

impl std::fmt::Debug for RowKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RowKernel({:?}, {:?})", self.op, self.float)
    }
}

impl RowKernel {
    /// Compile `op` over `expr`'s (single) output, inputs read as
    /// `access` says, computing in `float`.
    pub fn compile(
        expr: &Expr,
        float: Float,
        access: &[Access],
        op: RowOp,
    ) -> Result<RowKernel, String> {
        expr.validate()?;
        if expr.outputs.len() != 1 || access.len() != expr.n_inputs {
            return Err("a row kernel takes one output and an access per input".into());
        }
        if let RowOp::LayerNorm { weight, bias, .. } = op {
            if weight.into_iter().chain(bias).any(|k| k >= expr.n_inputs) {
                return Err("layer norm weight or bias is not an input".into());
            }
        }
        let mut pool = Pool::default();
        let code = compile(
            "rowwise",
            |sig, t| {
                for _ in 0..3 {
                    sig.params.push(AbiParam::new(t.ptr));
                }
                sig.params.push(AbiParam::new(types::I64));
                sig.params.push(AbiParam::new(t.ptr));
            },
            |b, t| body(b, t, expr, float, access, op, &mut pool),
        )?;
        Ok(RowKernel {
            code,
            pool: pool.entries,
            n_inputs: expr.n_inputs,
            op,
            float,
        })
    }

    /// How long compiling took.
    pub fn compile_time(&self) -> Duration {
        self.code.compile_time
    }

    /// The float type it computes in.
    pub fn float(&self) -> Float {
        self.float
    }

    /// The row operation.
    pub fn op(&self) -> RowOp {
        self.op
    }

    /// Run over one row of `n` elements.
    ///
    /// # Safety
    /// As [`crate::Kernel::run`] for the inputs; `out` must be valid to
    /// write `n` elements (one for a reduction) not overlapping an input.
    pub unsafe fn run(&self, ins: &[*const u8], strides: &[i64], out: *mut u8, n: usize) {
        assert!(ins.len() == self.n_inputs && strides.len() == self.n_inputs);
        // SAFETY: compiled for this signature.
        let f: RawRow = std::mem::transmute(self.code.ptr);
        f(
            ins.as_ptr(),
            strides.as_ptr(),
            out,
            n as i64,
            &self.pool.as_ptr(),
        );
    }
}

/// One loop step: `(emitter, index, accumulators) -> new accumulators`.
type Step<'s> = dyn FnMut(&mut Em, Value, &[Value]) -> Vec<Value> + 's;

/// How accumulators combine.
#[derive(Clone, Copy)]
enum Acc {
    Add,
    Max,
}

/// A loop over `0..n`: vectors while whole ones fit, then scalars, with
/// accumulators (one per `accs`, `init` their start). `step(b, i,
/// vector, accs)` emits one step and returns the new accumulators.
/// Returns the scalar accumulators at the end.
#[allow(clippy::too_many_arguments)]
fn row_loop(
    b: &mut FunctionBuilder,
    f: &Frame,
    t: &Target,
    n: Value,
    accs: &[Acc],
    init: f64,
    pool: &mut Pool,
    consts: Value,
    step: &mut Step,
) -> Vec<Value> {
    let vh = b.create_block();
    let vb = b.create_block();
    let sh = b.create_block();
    let sb = b.create_block();
    let done = b.create_block();
    for blk in [vh, vb, sh, sb, done] {
        if blk != done {
            b.append_block_param(blk, types::I64);
        }
        let ty = if blk == vh || blk == vb {
            f.vty
        } else {
            f.lane
        };
        for _ in accs {
            b.append_block_param(blk, ty);
        }
    }
    let zero = b.ins().iconst(types::I64, 0);
    let mut em = Em {
        b,
        ty: f.vty,
        target: *t,
        pool: None,
    };
    let start = em.c(init);
    let mut args: Vec<BlockArg> = vec![zero.into()];
    args.extend(accs.iter().map(|_| BlockArg::from(start)));
    b.ins().jump(vh, &args);

    // vector part
    b.switch_to_block(vh);
    let p = b.block_params(vh).to_vec();
    let end = b.ins().iadd_imm_s(p[0], f.lanes);
    let fits = b.ins().icmp(IntCC::SignedLessThanOrEqual, end, n);
    let pass: Vec<BlockArg> = p.iter().map(|&v| v.into()).collect();
    // leaving the vector part: fold each accumulator's lanes
    let fold = b.create_block();
    for &v in &p {
        let ty = b.func.dfg.value_type(v);
        b.append_block_param(fold, ty);
    }
    b.ins().brif(fits, vb, &pass, fold, &pass);

    b.switch_to_block(vb);
    let p = b.block_params(vb).to_vec();
    pool.base = Some(b.ins().load(t.ptr, MemFlagsData::trusted(), consts, 0));
    let mut em = Em {
        b,
        ty: f.vty,
        target: *t,
        pool: Some(&mut *pool),
    };
    let next_accs = step(&mut em, p[0], &p[1..]);
    let next = b.ins().iadd_imm_s(p[0], f.lanes);
    let mut args: Vec<BlockArg> = vec![next.into()];
    args.extend(next_accs.iter().map(|&v| BlockArg::from(v)));
    b.ins().jump(vh, &args);

    b.switch_to_block(fold);
    let p = b.block_params(fold).to_vec();
    let mut args: Vec<BlockArg> = vec![p[0].into()];
    for (k, a) in accs.iter().enumerate() {
        let v = p[1 + k];
        let mut s = b.ins().extractlane(v, 0);
        for l in 1..f.lanes {
            let x = b.ins().extractlane(v, l as u8);
            s = match a {
                Acc::Add => b.ins().fadd(s, x),
                Acc::Max => b.ins().fmax(s, x),
            };
        }
        args.push(s.into());
    }
    b.ins().jump(sh, &args);

    // scalar tail
    b.switch_to_block(sh);
    let p = b.block_params(sh).to_vec();
    let more = b.ins().icmp(IntCC::SignedLessThan, p[0], n);
    let pass: Vec<BlockArg> = p.iter().map(|&v| v.into()).collect();
    let out: Vec<BlockArg> = p[1..].iter().map(|&v| v.into()).collect();
    b.ins().brif(more, sb, &pass, done, &out);

    b.switch_to_block(sb);
    let p = b.block_params(sb).to_vec();
    let mut em = Em {
        b,
        ty: f.lane,
        target: *t,
        pool: None,
    };
    let next_accs = step(&mut em, p[0], &p[1..]);
    let next = b.ins().iadd_imm_s(p[0], 1);
    let mut args: Vec<BlockArg> = vec![next.into()];
    args.extend(next_accs.iter().map(|&v| BlockArg::from(v)));
    b.ins().jump(sh, &args);

    b.switch_to_block(done);
    b.block_params(done).to_vec()
}

/// An emitter of scalars of the frame's type (work done once per row).
fn scalar_em<'a, 'b>(b: &'a mut FunctionBuilder<'b>, f: &Frame, t: &Target) -> Em<'a, 'b> {
    Em {
        b,
        ty: f.lane,
        target: *t,
        pool: None,
    }
}

fn body(
    b: &mut FunctionBuilder,
    t: &Target,
    expr: &Expr,
    float: Float,
    access: &[Access],
    op: RowOp,
    pool: &mut Pool,
) {
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    let [ins, strides, out, n, consts] = b.block_params(entry) else {
        unreachable!("five parameters")
    };
    let (ins, strides, out, n, consts) = (*ins, *strides, *out, *n, *consts);
    let f = Frame::new(b, *t, float, access, ins, strides);
    let value = |em: &mut Em, i: Value| -> Value {
        let vector = em.ty.is_vector();
        eval(em, expr, &mut |b, k| f.load_input(b, k, i, vector))[0]
    };
    let nf = b.ins().fcvt_from_sint(f.lane, n);
    match op {
        RowOp::Sum | RowOp::Mean | RowOp::Max => {
            let (acc, init) = match op {
                RowOp::Max => (Acc::Max, f64::NEG_INFINITY),
                _ => (Acc::Add, 0.0),
            };
            let r = row_loop(b, &f, t, n, &[acc], init, pool, consts, &mut |em, i, a| {
                let v = value(em, i);
                vec![match acc {
                    Acc::Add => em.add(a[0], v),
                    Acc::Max => em.b.ins().fmax(a[0], v),
                }]
            });
            let res = if op == RowOp::Mean {
                b.ins().fdiv(r[0], nf)
            } else {
                r[0]
            };
            b.ins().store(f.mem, res, out, 0);
        }
        RowOp::Softmax | RowOp::LogSoftmax => {
            let m = row_loop(
                b,
                &f,
                t,
                n,
                &[Acc::Max],
                f64::NEG_INFINITY,
                pool,
                consts,
                &mut |em, i, a| {
                    let v = value(em, i);
                    f.store_dense(em.b, out, i, v);
                    vec![em.b.ins().fmax(a[0], v)]
                },
            )[0];
            let log = op == RowOp::LogSoftmax;
            let s = row_loop(
                b,
                &f,
                t,
                n,
                &[Acc::Add],
                0.0,
                pool,
                consts,
                &mut |em, i, a| {
                    let v = f.load_dense(em.b, out, i, em.ty.is_vector());
                    let mv = em.spread(m);
                    let d = em.sub(v, mv);
                    let e = em.unary(Unary::Exp, d);
                    if !log {
                        f.store_dense(em.b, out, i, e);
                    }
                    vec![em.add(a[0], e)]
                },
            )[0];
            let k = if log {
                let mut em = scalar_em(b, &f, t);
                let l = em.unary(Unary::Log, s);
                em.add(l, m)
            } else {
                let mut em = scalar_em(b, &f, t);
                let one = em.c(1.0);
                em.div(one, s)
            };
            row_loop(b, &f, t, n, &[], 0.0, pool, consts, &mut |em, i, _| {
                let v = f.load_dense(em.b, out, i, em.ty.is_vector());
                let kv = em.spread(k);
                let r = if log { em.sub(v, kv) } else { em.mul(v, kv) };
                f.store_dense(em.b, out, i, r);
                vec![]
            });
        }
        RowOp::LayerNorm { eps, weight, bias } => {
            let s = row_loop(
                b,
                &f,
                t,
                n,
                &[Acc::Add],
                0.0,
                pool,
                consts,
                &mut |em, i, a| {
                    let v = value(em, i);
                    f.store_dense(em.b, out, i, v);
                    vec![em.add(a[0], v)]
                },
            )[0];
            let mean = b.ins().fdiv(s, nf);
            let ss = row_loop(
                b,
                &f,
                t,
                n,
                &[Acc::Add],
                0.0,
                pool,
                consts,
                &mut |em, i, a| {
                    let v = f.load_dense(em.b, out, i, em.ty.is_vector());
                    let mv = em.spread(mean);
                    let d = em.sub(v, mv);
                    vec![em.fma(d, d, a[0])]
                },
            )[0];
            let rstd = {
                let mut em = scalar_em(b, &f, t);
                let var = em.div(ss, nf);
                let ve = em.addk(var, eps);
                em.unary(Unary::Rsqrt, ve)
            };
            row_loop(b, &f, t, n, &[], 0.0, pool, consts, &mut |em, i, _| {
                let vector = em.ty.is_vector();
                let v = f.load_dense(em.b, out, i, vector);
                let mv = em.spread(mean);
                let rv = em.spread(rstd);
                let d = em.sub(v, mv);
                let mut r = em.mul(d, rv);
                if let Some(w) = weight {
                    let wv = f.load_input(em.b, w, i, vector);
                    r = em.mul(r, wv);
                }
                if let Some(bi) = bias {
                    let bv = f.load_input(em.b, bi, i, vector);
                    r = em.add(r, bv);
                }
                f.store_dense(em.b, out, i, r);
                vec![]
            });
        }
    }
    b.ins().return_(&[]);
}

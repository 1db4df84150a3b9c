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
//!
//! f32 softmax and log-softmax on CPUs with wide vectors (where blocked
//! kernels run, Note [Blocked kernels]) are not generated as one
//! function: a pointwise [`Kernel`] writes the values into the output
//! row (a wide stage loop on AVX-512, Note [Wide stage loops]), then the
//! eager kernel's row function finishes it in place
//! (`softmax_row_in_place_f32`): its maximum, `exp`, sum and scaling
//! passes are AVX-512 loops where Cranelift's are 128-bit, and the
//! results are eager softmax's of the same values, bit for bit. One
//! thread, a 1024-float row in L1, `softmax(2x + 1)`: 0.69 ns an element
//! with the passes generated here (the `exp` already the eager loop over
//! blocks), 0.46 with the eager row function after a generated first
//! pass, 0.38 with the first pass a pointwise `Kernel` too (session 32).
//! Where Cranelift's 128-bit passes remain (layer norm, the reductions,
//! f64, CPUs without AVX2) the generated function does it all.

use crate::emit::{eval, Em, Pool, Target};
use crate::expr::{Expr, Unary};
use crate::frame::{block_fn_signature, kernel_signature, row_loop, Acc, Frame, Params};
use crate::host::{compile, Code};
use crate::kernel::{Access, Elem, Kernel};
use cranelift_codegen::ir::{types, InstBuilder, Value};
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

type RawRow =
    unsafe extern "C" fn(*const *const u8, *const i64, *const *mut u8, i64, *const *const u128);

/// How a row kernel runs.
enum Body {
    /// One generated function for the whole row.
    Generated { code: Code, pool: Vec<u128> },
    /// f32 softmax (`log`: log-softmax) where blocked kernels run: a
    /// pointwise kernel writes the values into the output row, then the
    /// eager row function finishes it in place (Note [Row kernels]).
    Softmax { prologue: Kernel, log: bool },
}

/// A compiled row kernel.
pub struct RowKernel {
    body: Body,
    n_inputs: usize,
    op: RowOp,
    float: Elem,
    keep_input: bool,
}

impl std::fmt::Debug for RowKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RowKernel({:?}, {:?})", self.op, self.float)
    }
}

impl RowKernel {
    /// Compile `op` over `expr`'s (single) output, inputs read as
    /// `access` says, computing in `float`. With `keep_input`, the
    /// expression's values (the op's input) are a second output, written
    /// in the first pass (a residual stream before its layer norm).
    pub fn compile(
        expr: &Expr,
        float: Elem,
        access: &[Access],
        op: RowOp,
        keep_input: bool,
    ) -> Result<RowKernel, String> {
        expr.validate()?;
        if float.is_int() {
            return Err("row kernels compute in floats".into());
        }
        if expr.outputs.len() != 1 || access.len() != expr.n_inputs {
            return Err("a row kernel takes one output and an access per input".into());
        }
        if let RowOp::LayerNorm { weight, bias, .. } = op {
            if weight.into_iter().chain(bias).any(|k| k >= expr.n_inputs) {
                return Err("layer norm weight or bias is not an input".into());
            }
        }
        let softmax = matches!(op, RowOp::Softmax | RowOp::LogSoftmax)
            && float == Elem::F32
            && crate::blocked::wide_fn(Unary::Exp, float).is_some();
        let body = if softmax {
            let mut values = expr.clone();
            if keep_input {
                values.outputs.push(values.outputs[0]);
            }
            Body::Softmax {
                prologue: Kernel::compile(&values, float, access)?,
                log: op == RowOp::LogSoftmax,
            }
        } else {
            let mut pool = Pool::default();
            let code = compile("rowwise", kernel_signature, |b, t| {
                body(b, t, expr, float, access, op, keep_input, &mut pool)
            })?;
            Body::Generated {
                code,
                pool: pool.entries,
            }
        };
        Ok(RowKernel {
            body,
            n_inputs: expr.n_inputs,
            op,
            float,
            keep_input,
        })
    }

    /// How long compiling took.
    pub fn compile_time(&self) -> Duration {
        match &self.body {
            Body::Generated { code, .. } => code.compile_time,
            Body::Softmax { prologue, .. } => prologue.compile_time(),
        }
    }

    /// The float type it computes in.
    pub fn float(&self) -> Elem {
        self.float
    }

    /// The row operation.
    pub fn op(&self) -> RowOp {
        self.op
    }

    /// Whether the op's input is a second output.
    pub fn keeps_input(&self) -> bool {
        self.keep_input
    }

    /// Run over one row of `n` elements.
    ///
    /// # Safety
    /// As [`crate::Kernel::run`] for the inputs; `outs[0]` must be valid
    /// to write `n` elements (one for a reduction), and `outs[1]` (with
    /// `keep_input`) `n`, none overlapping an input or each other.
    pub unsafe fn run(&self, ins: &[*const u8], strides: &[i64], outs: &[*mut u8], n: usize) {
        assert!(ins.len() == self.n_inputs && strides.len() == self.n_inputs);
        assert_eq!(
            outs.len(),
            1 + usize::from(self.keep_input),
            "row kernel outputs"
        );
        match &self.body {
            Body::Generated { code, pool } => {
                // SAFETY: compiled for this signature.
                let f: RawRow = std::mem::transmute(code.ptr);
                f(
                    ins.as_ptr(),
                    strides.as_ptr(),
                    outs.as_ptr(),
                    n as i64,
                    &pool.as_ptr(),
                );
            }
            Body::Softmax { prologue, log } => {
                prologue.run(ins, strides, outs, n);
                // SAFETY: `outs[0]` holds the row's `n` f32 values.
                ferrotorch_kernels::softmax::softmax_row_in_place_f32(outs[0].cast(), n, *log);
            }
        }
    }
}

/// `sum(exp(out - m))` over the row, in blocks of
/// [`crate::blocked::BLOCK`]: `out - m` into a block buffer, the block
/// function of exp over it (Note [Blocked kernels]), summed and, with
/// `store`, written back to `out`. Only f64 rows take it now: f32 rows
/// where block functions exist finish in the eager row function instead
/// (`Body::Softmax`).
#[allow(clippy::too_many_arguments)]
fn blocked_exp_sum(
    b: &mut FunctionBuilder,
    f: &Frame,
    t: &Target,
    n: Value,
    m: Value,
    out: Value,
    store: bool,
    expf: usize,
    pool: &mut Pool,
    consts: Value,
) -> Value {
    use crate::blocked::BLOCK;
    use cranelift_codegen::ir::condcodes::IntCC;
    use cranelift_codegen::ir::{StackSlotData, StackSlotKind};
    // two buffers: the wide loop's vectorised path needs distinct source
    // and destination (in place, LLVM's overlap check picks the scalar
    // loop: 8x slower)
    let bytes = BLOCK as usize * f.lane.bytes() as usize;
    let slot = b.create_sized_stack_slot(StackSlotData::new(
        StackSlotKind::ExplicitSlot,
        2 * bytes as u32,
        4,
    ));
    let buf = b.ins().stack_addr(t.ptr, slot, 0);
    let ebuf = b.ins().stack_addr(t.ptr, slot, bytes as i32);
    let sig = block_fn_signature(b, t, 1);
    let head = b.create_block();
    let body = b.create_block();
    let done = b.create_block();
    b.append_block_param(head, types::I64);
    b.append_block_param(head, f.lane);
    b.append_block_param(body, types::I64);
    b.append_block_param(body, f.lane);
    b.append_block_param(done, f.lane);
    let zero = b.ins().iconst(types::I64, 0);
    let zf = scalar_em(b, f, t).c(0.0);
    b.ins().jump(head, &[zero.into(), zf.into()]);
    b.switch_to_block(head);
    let (c, total) = (b.block_params(head)[0], b.block_params(head)[1]);
    let more = b.ins().icmp(IntCC::SignedLessThan, c, n);
    b.ins()
        .brif(more, body, &[c.into(), total.into()], done, &[total.into()]);
    b.switch_to_block(body);
    let (c, total) = (b.block_params(body)[0], b.block_params(body)[1]);
    let rem = b.ins().isub(n, c);
    let full = b.ins().iconst(types::I64, BLOCK);
    let short = b.ins().icmp(IntCC::SignedLessThan, rem, full);
    let len = b.ins().select(short, rem, full);
    row_loop(b, f, t, len, &[], 0.0, pool, consts, &mut |em, j, _| {
        let vector = em.ty.is_vector();
        let cj = em.b.ins().iadd(c, j);
        let v = f.load_dense(em.b, out, cj, vector);
        let mv = em.spread(m);
        let d = em.sub(v, mv);
        f.store_dense(em.b, buf, j, d);
        vec![]
    });
    // softmax: the exps go straight into the output row (distinct from
    // the block buffer), log-softmax keeps its values there: a buffer
    let dst = if store { f.addr(b, out, c) } else { ebuf };
    let callee = b.ins().iconst(t.ptr, expf as i64);
    b.ins().call_indirect(sig, callee, &[buf, dst, len]);
    let part = row_loop(
        b,
        f,
        t,
        len,
        &[Acc::Add],
        0.0,
        pool,
        consts,
        &mut |em, j, a| {
            let e = f.load_dense(em.b, dst, j, em.ty.is_vector());
            vec![em.add(a[0], e)]
        },
    )[0];
    let total = b.ins().fadd(total, part);
    let next = b.ins().iadd_imm_s(c, BLOCK);
    b.ins().jump(head, &[next.into(), total.into()]);
    b.switch_to_block(done);
    b.block_params(done)[0]
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

#[allow(clippy::too_many_arguments)]
fn body(
    b: &mut FunctionBuilder,
    t: &Target,
    expr: &Expr,
    float: Elem,
    access: &[Access],
    op: RowOp,
    keep_input: bool,
    pool: &mut Pool,
) {
    let (f, Params { outs, n, consts }) = Frame::enter(b, *t, float, access);
    let ptrs = f.out_ptrs(b, t.ptr, outs, 1 + usize::from(keep_input));
    let (out, pre) = (ptrs[0], ptrs.get(1).copied());
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
                if let Some(p) = pre {
                    f.store_dense(em.b, p, i, v);
                }
                vec![acc.combine(em, a[0], v)]
            });
            let res = if op == RowOp::Mean {
                b.ins().fdiv(r[0], nf)
            } else {
                r[0]
            };
            b.ins().store(f.mem, res, out, 0);
        }
        RowOp::Softmax | RowOp::LogSoftmax => {
            // a NaN need not reach the maximum: exp(NaN - m) makes the
            // sum, and so every output, NaN anyway
            let m = row_loop(
                b,
                &f,
                t,
                n,
                &[Acc::MaxFast],
                f64::NEG_INFINITY,
                pool,
                consts,
                &mut |em, i, a| {
                    let v = value(em, i);
                    f.store_dense(em.b, out, i, v);
                    if let Some(p) = pre {
                        f.store_dense(em.b, p, i, v);
                    }
                    vec![Acc::MaxFast.combine(em, a[0], v)]
                },
            )[0];
            let log = op == RowOp::LogSoftmax;
            let s = match crate::blocked::wide_fn(Unary::Exp, float) {
                Some(expf) => blocked_exp_sum(b, &f, t, n, m, out, !log, expf, pool, consts),
                None => row_loop(
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
                )[0],
            };
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
                    if let Some(p) = pre {
                        f.store_dense(em.b, p, i, v);
                    }
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

//! Blocked kernels: pointwise expressions whose transcendentals run as
//! the eager kernels' wide loops.
//!
//! # Note [Blocked kernels]
//! Cranelift's x86 back end has 128-bit vectors only, so an inlined
//! transcendental costs four times the instructions per element of the
//! eager kernels' AVX-512 loops: W9 (`x·sigmoid(x)·0.5 + tanh(x)`) was
//! compute-bound at ~100 instructions per four elements. A blocked kernel
//! walks its row in blocks of [`BLOCK`] elements, which stay in L1. The
//! expression is cut at each transcendental into stages: a stage's cheap
//! ops (arithmetic, compares, selects) run as one generated 128-bit loop
//! over the block, keeping values in registers and storing only what
//! later stages read into per-value block buffers on the stack; the
//! transcendental then runs over its block buffer in place as the
//! multiversioned loop of `ferrotorch-kernels` (the same polynomials,
//! so the same results as eager). A cheap op runs in the last stage its
//! users allow, so work no transcendental waits for shares the final
//! loop; a stage with nothing to write has no loop (a transcendental of
//! a contiguous input reads the input in place). Inputs are read from
//! memory once per stage that uses them (from L1 after the first),
//! outputs written once,
//! no intermediate reaches memory beyond L1. On AVX-512 machines a
//! stage's cheap ops run as a wide loop of our own machine code on full
//! blocks instead of the 128-bit loop (Note [Wide stage loops] in
//! `wide/mod.rs`). [`Strategy::Inline`] keeps
//! everything in registers and is used where no op has a block function,
//! or on CPUs without AVX2 (where the wide loops do not exist).
//!
//! Tried and measured (session 29, Zen 4): running a stage's cheap ops
//! as one call per op of the eager AVX-512 loops over block buffers
//! instead of the generated 128-bit loop. W9 was unchanged (13.1–14.1
//! against 13.7–14.0 ms on one thread) and the 16-op chain slower (43.6–45.0
//! against 47.2–48.8 ms): each op's pass loads and stores the block again,
//! and Zen 4's L1 takes one 256-bit store per cycle, so three ops in
//! separate passes cost what the 128-bit loop, which loads each value once
//! and keeps the rest in registers, costs for four lanes.

// # Note [Paired transcendentals]
// Sigmoid and tanh of one value (W9's `x·sigmoid(x)·0.5 + tanh(x)`, SiLU
// beside tanh) are one block call, `math::sigmoid_tanh`: both come from
// one `e^{-|x|}`, so the pair costs the sigmoid plus three multiplies and
// a division (W9's two loops 0.61 → 0.46 ns an element, AVX-512, L1; the
// block call is `math::sigmoid_tanh_slice`, written out in AVX-512
// intrinsics where the CPU has them, Note [The paired sigmoid/tanh in
// intrinsics] in ferrotorch-kernels). The
// first op of the pair ends its stage and its call writes both block
// buffers; the second is only read from its buffer by later stages.
// Inline kernels pair them too (`emit::eval_copies`, with the
// Cranelift form in `math.rs`), so a kernel's results do not depend on
// its strategy. The sigmoid is eager's to the bit; the tanh is within
// 3.3 ulp of f64 (eager's rational tanh is within 5.4), so such a
// kernel's tanh may differ from eager's by a few ulp.

use crate::emit::{eval, Pool, Target};
use crate::expr::{Expr, Op, Reg};
use crate::frame::{block_fn_signature, row_loop, Frame, Params, Source};
use crate::kernel::{Access, Elem};
use crate::libm::{sigmoid_tanh_fn, slice_fn};
use crate::wide::{self, Exec};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{
    types, AbiParam, InstBuilder, MemFlagsData, Signature, StackSlotData, StackSlotKind, Value,
};
use cranelift_frontend::FunctionBuilder;
use std::collections::HashMap;

/// Elements per block.
pub const BLOCK: i64 = 256;

/// How a pointwise kernel is generated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Strategy {
    /// Everything in registers, transcendentals inline (128-bit).
    Inline,
    /// Blocks, transcendentals as wide loops (Note [Blocked kernels]).
    Blocked,
}

/// The op's block function, if it is a transcendental that has one.
fn heavy(op: &Op, single: bool) -> Option<usize> {
    match op {
        Op::Unary(f, _) => slice_fn(*f, single),
        _ => None,
    }
}

/// The strategy for `expr`: blocked where it has a transcendental with a
/// block function and the CPU has wide vectors (`FERROTORCH_FUSER_BLOCKED`
/// = 0 or 1 overrides).
pub fn choose(expr: &Expr, float: Elem) -> Strategy {
    let has = expr
        .ops
        .iter()
        .any(|o| heavy(o, float == Elem::F32).is_some());
    let wide = !matches!(
        ferrotorch_kernels::cpu::level(),
        ferrotorch_kernels::cpu::Level::Baseline
    );
    match forced() {
        Some(false) => Strategy::Inline,
        Some(true) if has => Strategy::Blocked,
        _ if has && wide => Strategy::Blocked,
        _ => Strategy::Inline,
    }
}

/// `FERROTORCH_FUSER_BLOCKED`: `Some(false)` for 0, `Some(true)` for 1.
fn forced() -> Option<bool> {
    match std::env::var("FERROTORCH_FUSER_BLOCKED").as_deref() {
        Ok("0") => Some(false),
        Ok("1") => Some(true),
        _ => None,
    }
}

/// [`choose`] for a kernel whose inputs are read as `access`: an
/// expression of arithmetic only over f32, contiguous and broadcast
/// inputs is blocked too where wide stage loops run (Note [Wide stage
/// loops]): its one stage is then a 512-bit loop instead of Cranelift's
/// 128-bit one.
pub fn choose_for(expr: &Expr, float: Elem, access: &[Access]) -> Strategy {
    let s = choose(expr, float);
    let arithmetic = float == Elem::F32
        && expr.ops.iter().all(Op::is_arithmetic)
        && !access.contains(&Access::Strided);
    if s == Strategy::Inline && arithmetic && wide::available() && forced() != Some(false) {
        Strategy::Blocked
    } else {
        s
    }
}

/// The wide block function of `f` where blocked kernels would use it
/// (the same conditions as [`choose`]).
pub(crate) fn wide_fn(f: crate::expr::Unary, float: Elem) -> Option<usize> {
    let mut e = Expr::new(1);
    let x = e.input(0);
    let y = e.unary(f, x);
    e.outputs.push(y);
    (choose(&e, float) == Strategy::Blocked)
        .then(|| slice_fn(f, float == Elem::F32))
        .flatten()
}

/// One stage: a sub-expression over the kernel inputs and earlier
/// stages' buffers, and the transcendental that ends it.
struct Stage {
    expr: Expr,
    /// Sub-expression input `n_inputs + k` reads the buffer of this op.
    reads: Vec<Reg>,
    /// Where each sub-expression output goes.
    writes: Vec<Write>,
    /// The transcendental ending the stage: (its op, or the two ops of a
    /// pair in the block function's order; where their argument is; the
    /// block function).
    heavy: Option<(Vec<Reg>, Arg, usize)>,
}

/// Where a transcendental's argument block is.
#[derive(Clone, Copy)]
enum Arg {
    /// In the buffer of this op.
    Buffer(Reg),
    /// Read straight from contiguous kernel input `k`.
    Input(usize),
}

enum Write {
    Buffer(Reg),
    Output(usize),
}

/// A block function and the ops whose results it writes, in its order.
type Call = (usize, Vec<Reg>);

/// Each op's block call: `heavy_at[r]` is the block function a
/// transcendental `r` ends its stage with and the ops it computes (itself,
/// or a pair in the function's order); `paired[r]` names the op whose
/// call computes `r` along with its own result (Note [Paired
/// transcendentals]).
fn pairs(e: &Expr, single: bool) -> (Vec<Option<Call>>, Vec<Option<Reg>>) {
    let mut heavy_at: Vec<Option<Call>> = e
        .ops
        .iter()
        .enumerate()
        .map(|(r, op)| heavy(op, single).map(|f| (f, vec![r])))
        .collect();
    let mut paired = vec![None; e.ops.len()];
    let Some(call) = sigmoid_tanh_fn(single) else {
        return (heavy_at, paired);
    };
    for (s, t) in e.sigmoid_tanh_pairs() {
        let (first, second) = (s.min(t), s.max(t));
        heavy_at[first] = Some((call, vec![s, t]));
        heavy_at[second] = None;
        paired[second] = Some(first);
    }
    (heavy_at, paired)
}

/// Cut `e` into stages (Note [Blocked kernels]). A transcendental of a
/// contiguous input reads the input itself, with no copy.
fn stages(e: &Expr, single: bool, access: &[Access]) -> Vec<Stage> {
    let direct = |a: Reg| match e.ops[a] {
        Op::Input(k) if access[k] == Access::Contiguous => Some(k),
        _ => None,
    };
    let n_ops = e.ops.len();
    let (heavy_at, paired) = pairs(e, single);
    // the stage each op is computed in (a transcendental: the stage it
    // ends; the second of a pair: its first's)
    let mut stage_of = vec![0usize; n_ops];
    let mut s = 0;
    for r in 0..n_ops {
        stage_of[r] = match paired[r] {
            Some(first) => stage_of[first],
            None => s,
        };
        if heavy_at[r].is_some() {
            s += 1;
        }
    }
    let fixed = |r: Reg| heavy_at[r].is_some() || paired[r].is_some();
    let last = s;
    let cheap_leaf = |r: Reg| matches!(e.ops[r], Op::Input(_) | Op::Const(_));
    // cheap ops go as late as their users allow (a transcendental's stage
    // for its argument, the last for an output): work no later
    // transcendental needs then shares the last stage's loop instead of
    // passing through a buffer (W9's x·sigmoid(x)·0.5 waits for tanh)
    let mut need = vec![usize::MAX; n_ops];
    for &o in &e.outputs {
        need[o] = last;
    }
    for r in (0..n_ops).rev() {
        let op = &e.ops[r];
        if cheap_leaf(r) {
            continue;
        }
        let at = if fixed(r) {
            stage_of[r]
        } else {
            stage_of[r] = need[r].min(last).max(stage_of[r]);
            stage_of[r]
        };
        for a in op.operands() {
            need[a] = need[a].min(at);
        }
    }
    // values read by a later stage live in buffers; so do transcendental
    // arguments and results
    let mut buffered = vec![false; n_ops];
    for (r, op) in e.ops.iter().enumerate() {
        if fixed(r) {
            buffered[r] = true;
            let a = op.operands()[0];
            if direct(a).is_none() {
                buffered[a] = true;
            }
            continue;
        }
        for a in op.operands() {
            if stage_of[a] < stage_of[r] && !cheap_leaf(a) {
                buffered[a] = true;
            }
        }
    }
    for &o in &e.outputs {
        if stage_of[o] < last && !cheap_leaf(o) {
            buffered[o] = true;
        }
    }
    let mut out = Vec::with_capacity(last + 1);
    for s in 0..=last {
        let mut x = Expr::new(e.n_inputs);
        let mut local: HashMap<Reg, Reg> = HashMap::new();
        let mut reads: Vec<Reg> = Vec::new();
        let mut writes = Vec::new();
        // an operand from elsewhere: an input or constant again, or a buffer
        let get = |x: &mut Expr, local: &mut HashMap<Reg, Reg>, reads: &mut Vec<Reg>, r: Reg| {
            if let Some(&l) = local.get(&r) {
                return l;
            }
            let l = match e.ops[r] {
                Op::Input(k) => x.input(k),
                Op::Const(c) => x.push(Op::Const(c)),
                _ => {
                    reads.push(r);
                    x.input(e.n_inputs + reads.len() - 1)
                }
            };
            local.insert(r, l);
            l
        };
        let mut heavy_op = None;
        for (r, op) in e.ops.iter().enumerate() {
            if stage_of[r] != s || paired[r].is_some() {
                continue;
            }
            if let Some((f, results)) = &heavy_at[r] {
                let (f, results) = (*f, results.clone());
                let a = op.operands()[0];
                if let Some(k) = direct(a) {
                    heavy_op = Some((results, Arg::Input(k), f));
                    continue;
                }
                // the argument must be in its buffer: write it here if this
                // stage has it (a cheap value or an input)
                if stage_of[a] == s || cheap_leaf(a) {
                    let l = get(&mut x, &mut local, &mut reads, a);
                    if !writes
                        .iter()
                        .any(|w| matches!(w, Write::Buffer(b) if *b == a))
                    {
                        x.outputs.push(l);
                        writes.push(Write::Buffer(a));
                    }
                }
                heavy_op = Some((results, Arg::Buffer(a), f));
                continue;
            }
            let mapped = match *op {
                Op::Input(k) => Op::Input(k),
                Op::Const(c) => Op::Const(c),
                Op::Unary(f, a) => Op::Unary(f, get(&mut x, &mut local, &mut reads, a)),
                Op::Binary(f, a, b) => {
                    let a = get(&mut x, &mut local, &mut reads, a);
                    Op::Binary(f, a, get(&mut x, &mut local, &mut reads, b))
                }
                Op::Select {
                    cmp,
                    a,
                    b,
                    then,
                    other,
                } => Op::Select {
                    cmp,
                    a: get(&mut x, &mut local, &mut reads, a),
                    b: get(&mut x, &mut local, &mut reads, b),
                    then: get(&mut x, &mut local, &mut reads, then),
                    other: get(&mut x, &mut local, &mut reads, other),
                },
            };
            let l = x.push(mapped);
            local.insert(r, l);
            if buffered[r] && !cheap_leaf(r) {
                x.outputs.push(l);
                writes.push(Write::Buffer(r));
            }
        }
        if s == last {
            for (j, &o) in e.outputs.iter().enumerate() {
                let l = get(&mut x, &mut local, &mut reads, o);
                x.outputs.push(l);
                writes.push(Write::Output(j));
            }
        }
        x.n_inputs = e.n_inputs + reads.len();
        out.push(Stage {
            expr: x,
            reads,
            writes,
            heavy: heavy_op,
        });
    }
    out
}

/// A pointer a wide stage function takes, as the block loop makes it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Slot {
    /// Contiguous kernel input `k` at the block.
    Input(usize),
    /// Broadcast kernel input `k` (its one element).
    Scalar(usize),
    /// The block buffer of this op.
    Buffer(Reg),
    /// Kernel output `o` at the block.
    Output(usize),
}

/// The pointer slots of stage `st` as a wide loop (Note [Wide stage
/// loops]), with its inputs and outputs as the assembler takes them;
/// `None` where an input is strided.
fn wide_slots(
    st: &Stage,
    n_in: usize,
    access: &[Access],
) -> Option<(Vec<Slot>, Vec<wide::Operand>, Vec<usize>)> {
    let mut slots: Vec<Slot> = Vec::new();
    let mut at = |s: Slot| match slots.iter().position(|&t| t == s) {
        Some(j) => j,
        None => {
            slots.push(s);
            slots.len() - 1
        }
    };
    let mut inputs = Vec::with_capacity(st.expr.n_inputs);
    for k in 0..st.expr.n_inputs {
        inputs.push(if let Some(a) = access.get(k).filter(|_| k < n_in) {
            match a {
                Access::Contiguous => wide::Operand::Dense(at(Slot::Input(k))),
                Access::Broadcast => wide::Operand::Scalar(at(Slot::Scalar(k))),
                Access::Strided => return None,
            }
        } else {
            wide::Operand::Dense(at(Slot::Buffer(st.reads[k - n_in])))
        });
    }
    let outputs = st
        .writes
        .iter()
        .map(|w| match *w {
            Write::Buffer(r) => at(Slot::Buffer(r)),
            Write::Output(o) => at(Slot::Output(o)),
        })
        .collect();
    Some((slots, inputs, outputs))
}

/// The body of a blocked kernel (same signature as the inline one).
pub(crate) fn body(
    b: &mut FunctionBuilder,
    t: &Target,
    expr: &Expr,
    float: Elem,
    access: &[Access],
    pool: &mut Pool,
    wides: &mut Vec<Exec>,
) {
    let single = float == Elem::F32;
    let plan = stages(expr, single, access);
    let (f, Params { outs, n, consts }) = Frame::enter(b, *t, float, access);
    let out_ptrs = f.out_ptrs(b, t.ptr, outs, expr.outputs.len());
    // one block buffer per buffered value
    let mut buffers: HashMap<Reg, Value> = HashMap::new();
    let bytes = (BLOCK as u32) * float.size() as u32;
    for st in &plan {
        let regs = st
            .writes
            .iter()
            .filter_map(|w| match w {
                Write::Buffer(r) => Some(*r),
                Write::Output(_) => None,
            })
            .chain(st.heavy.iter().flat_map(|(h, _, _)| h.iter().copied()));
        for r in regs {
            buffers.entry(r).or_insert_with(|| {
                let slot = b.create_sized_stack_slot(StackSlotData::new(
                    StackSlotKind::ExplicitSlot,
                    bytes,
                    4,
                ));
                b.ins().stack_addr(t.ptr, slot, 0)
            });
        }
    }
    let sig = block_fn_signature(b, t, 1);
    let pair_sig = plan
        .iter()
        .any(|st| matches!(&st.heavy, Some((h, _, _)) if h.len() == 2))
        .then(|| block_fn_signature(b, t, 2));
    // the stages that run as wide loops on full blocks, with the pointers
    // each one's function takes (Note [Wide stage loops])
    // each with its own pointer array, where the pointers that do not
    // move with the block (buffers, broadcast scalars) are stored once,
    // here in the entry block
    let wide_stages: Vec<Option<(usize, Vec<Slot>, Value)>> = plan
        .iter()
        .map(|st| {
            if !single || st.writes.is_empty() || !wide::available() {
                return None;
            }
            let (slots, inputs, outputs) = wide_slots(st, expr.n_inputs, access)?;
            let code = wide::assemble(&st.expr, &inputs, &outputs)?;
            let exec = Exec::new(&code)?;
            let addr = exec.addr();
            wides.push(exec);
            let array = b.create_sized_stack_slot(StackSlotData::new(
                StackSlotKind::ExplicitSlot,
                8 * slots.len() as u32,
                3,
            ));
            let args = b.ins().stack_addr(t.ptr, array, 0);
            for (j, s) in slots.iter().enumerate() {
                let p = match *s {
                    Slot::Scalar(k) => match f.sources[k] {
                        Source::Broadcast { ptr, .. } => ptr,
                        _ => unreachable!("scalar slots are broadcast inputs"),
                    },
                    Slot::Buffer(r) => buffers[&r],
                    Slot::Input(_) | Slot::Output(_) => continue,
                };
                b.ins()
                    .store(MemFlagsData::trusted(), p, args, 8 * j as i32);
            }
            Some((addr, slots, args))
        })
        .collect();
    let wide_sig = wide_stages.iter().any(Option::is_some).then(|| {
        let mut sg = Signature::new(t.call_conv);
        sg.params.push(AbiParam::new(t.ptr));
        b.import_signature(sg)
    });

    let head = b.create_block();
    let block = b.create_block();
    let exit = b.create_block();
    b.append_block_param(head, types::I64);
    b.append_block_param(block, types::I64);
    let zero = b.ins().iconst(types::I64, 0);
    b.ins().jump(head, &[zero.into()]);
    b.switch_to_block(head);
    let i = b.block_params(head)[0];
    let more = b.ins().icmp(IntCC::SignedLessThan, i, n);
    b.ins().brif(more, block, &[i.into()], exit, &[]);

    b.switch_to_block(block);
    let i = b.block_params(block)[0];
    let rem = b.ins().isub(n, i);
    let full = b.ins().iconst(types::I64, BLOCK);
    let short = b.ins().icmp(IntCC::SignedLessThan, rem, full);
    let len = b.ins().select(short, rem, full);
    for (st, wide_stage) in plan.iter().zip(&wide_stages) {
        let n_in = expr.n_inputs;
        // the rest of the stage: after the wide call or the 128-bit loop
        let after = b.create_block();
        if let (Some((addr, slots, args)), Some(wide_sig)) = (wide_stage, wide_sig) {
            let narrow = b.create_block();
            let call = b.create_block();
            let is_full = b.ins().icmp_imm_s(IntCC::Equal, len, BLOCK);
            b.ins().brif(is_full, call, &[], narrow, &[]);
            b.switch_to_block(call);
            // the pointers at this block
            for (j, s) in slots.iter().enumerate() {
                let p = match *s {
                    Slot::Input(k) => match f.sources[k] {
                        Source::Contiguous(p) => f.addr(b, p, i),
                        _ => unreachable!("dense slots are contiguous inputs"),
                    },
                    Slot::Output(o) => f.addr(b, out_ptrs[o], i),
                    Slot::Scalar(_) | Slot::Buffer(_) => continue,
                };
                b.ins()
                    .store(MemFlagsData::trusted(), p, *args, 8 * j as i32);
            }
            let callee = b.ins().iconst(t.ptr, *addr as i64);
            b.ins().call_indirect(wide_sig, callee, &[*args]);
            b.ins().jump(after, &[]);
            b.switch_to_block(narrow);
        }
        // a stage with nothing to write (a transcendental of an input
        // read in place) needs no loop
        if !st.writes.is_empty() {
            row_loop(b, &f, t, len, &[], 0.0, pool, consts, &mut |em, j, _| {
                let vector = em.ty.is_vector();
                let ij = em.b.ins().iadd(i, j);
                let ys = eval(em, &st.expr, &mut |b, k| {
                    if k < n_in {
                        f.load_input(b, k, ij, vector)
                    } else {
                        f.load_dense(b, buffers[&st.reads[k - n_in]], j, vector)
                    }
                });
                for (y, w) in ys.into_iter().zip(&st.writes) {
                    match *w {
                        Write::Buffer(r) => f.store_dense(em.b, buffers[&r], j, y),
                        Write::Output(o) => f.store_dense(em.b, out_ptrs[o], ij, y),
                    }
                }
                vec![]
            });
        }
        b.ins().jump(after, &[]);
        b.switch_to_block(after);
        if let Some((h, a, func)) = &st.heavy {
            let src = match *a {
                Arg::Buffer(r) => buffers[&r],
                Arg::Input(k) => match f.sources[k] {
                    Source::Contiguous(p) => f.addr(b, p, i),
                    _ => unreachable!("direct arguments are contiguous"),
                },
            };
            let callee = b.ins().iconst(t.ptr, *func as i64);
            let mut args = vec![src];
            args.extend(h.iter().map(|r| buffers[r]));
            args.push(len);
            let sig = match pair_sig {
                Some(p) if h.len() == 2 => p,
                _ => sig,
            };
            b.ins().call_indirect(sig, callee, &args);
        }
    }
    let next = b.ins().iadd_imm_s(i, BLOCK);
    b.ins().jump(head, &[next.into()]);

    b.switch_to_block(exit);
    b.ins().return_(&[]);
}

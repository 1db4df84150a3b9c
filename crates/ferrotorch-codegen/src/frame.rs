//! What a kernel body needs to read and write rows: each input's source
//! (set up once in the entry block) and loads and stores of the compute
//! type, as vectors or scalars. Shared by pointwise and row kernels.

use crate::emit::{Em, Pool, Target};
use crate::kernel::{Access, Elem};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{
    types, AbiParam, BlockArg, InstBuilder, MemFlagsData, SigRef, Signature, Type, Value,
};
use cranelift_frontend::FunctionBuilder;

/// Where one input comes from.
#[derive(Clone, Copy)]
pub(crate) enum Source {
    Contiguous(Value),
    /// One element at `ptr`, loaded once, as a scalar and splatted.
    Broadcast {
        ptr: Value,
        scalar: Value,
        vector: Value,
    },
    Strided {
        ptr: Value,
        step: Value,
    },
}

/// The types, flags and sources of a kernel body.
pub(crate) struct Frame {
    pub lane: Type,
    pub vty: Type,
    pub lanes: i64,
    shift: i64,
    pub mem: MemFlagsData,
    pub sources: Vec<Source>,
}

/// The signature of every kernel: `fn(ins, strides, outs, n: i64,
/// consts)`, the rest pointers.
pub(crate) fn kernel_signature(sig: &mut Signature, t: &Target) {
    for _ in 0..3 {
        sig.params.push(AbiParam::new(t.ptr));
    }
    sig.params.push(AbiParam::new(types::I64));
    sig.params.push(AbiParam::new(t.ptr));
}

/// The signature of a block function with `outs` results (`fn(src, dst,
/// n: i64)`, or `fn(src, dst0, dst1, n)` for a pair: `libm`'s wide
/// loops), imported into the function being built.
pub(crate) fn block_fn_signature(b: &mut FunctionBuilder, t: &Target, outs: usize) -> SigRef {
    let mut sig = Signature::new(t.call_conv);
    for _ in 0..=outs {
        sig.params.push(AbiParam::new(t.ptr));
    }
    sig.params.push(AbiParam::new(types::I64));
    b.import_signature(sig)
}

/// A kernel's parameters: `(ins, strides, outs, n, consts)`.
pub(crate) struct Params {
    pub outs: Value,
    pub n: Value,
    pub consts: Value,
}

impl Frame {
    /// Start a kernel body `fn(ins, strides, outs, n, consts)`: the entry
    /// block, its parameters and the frame of its inputs.
    pub fn enter(
        b: &mut FunctionBuilder,
        target: Target,
        float: Elem,
        access: &[Access],
    ) -> (Frame, Params) {
        let entry = b.create_block();
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        let [ins, strides, outs, n, consts] = b.block_params(entry) else {
            unreachable!("five parameters")
        };
        let (ins, strides, outs, n, consts) = (*ins, *strides, *outs, *n, *consts);
        let f = Frame::new(b, target, float, access, ins, strides);
        (f, Params { outs, n, consts })
    }

    /// The output pointers `outs[0..count]`.
    pub fn out_ptrs(
        &self,
        b: &mut FunctionBuilder,
        ptr: Type,
        outs: Value,
        count: usize,
    ) -> Vec<Value> {
        let psize = ptr.bytes() as i32;
        (0..count)
            .map(|j| b.ins().load(ptr, self.mem, outs, j as i32 * psize))
            .collect()
    }

    /// Set up the inputs `ins[k]` (read as `access[k]`, with element
    /// strides from `strides`) in the current block.
    pub fn new(
        b: &mut FunctionBuilder,
        target: Target,
        float: Elem,
        access: &[Access],
        ins: Value,
        strides: Value,
    ) -> Frame {
        let lane = match float {
            Elem::F32 => types::F32,
            Elem::F64 => types::F64,
            Elem::I32 => types::I32,
            Elem::I64 => types::I64,
        };
        let lanes = (16 / float.size()) as i64;
        let vty = lane.by(lanes as u32).expect("128-bit vector type");
        let esize = float.size() as i64;
        let mem = MemFlagsData::new().with_notrap();
        let psize = target.ptr.bytes() as i32;
        let sources = access
            .iter()
            .enumerate()
            .map(|(k, a)| {
                let p = b.ins().load(target.ptr, mem, ins, k as i32 * psize);
                match a {
                    Access::Contiguous => Source::Contiguous(p),
                    Access::Broadcast => {
                        let scalar = b.ins().load(lane, mem, p, 0);
                        let vector = b.ins().splat(vty, scalar);
                        Source::Broadcast {
                            ptr: p,
                            scalar,
                            vector,
                        }
                    }
                    Access::Strided => {
                        let s = b.ins().load(types::I64, mem, strides, k as i32 * 8);
                        let step = b.ins().imul_imm_s(s, esize);
                        Source::Strided { ptr: p, step }
                    }
                }
            })
            .collect();
        Frame {
            lane,
            vty,
            lanes,
            shift: esize.trailing_zeros() as i64,
            mem,
            sources,
        }
    }

    /// The value type: a vector or a scalar.
    pub fn ty(&self, vector: bool) -> Type {
        if vector {
            self.vty
        } else {
            self.lane
        }
    }

    /// `base + i` elements, as an address.
    pub fn addr(&self, b: &mut FunctionBuilder, base: Value, i: Value) -> Value {
        let byte = b.ins().ishl_imm_u(i, self.shift);
        b.ins().iadd(base, byte)
    }

    /// Element(s) `i..` of a dense row at `base`.
    pub fn load_dense(
        &self,
        b: &mut FunctionBuilder,
        base: Value,
        i: Value,
        vector: bool,
    ) -> Value {
        let a = self.addr(b, base, i);
        b.ins().load(self.ty(vector), self.mem, a, 0)
    }

    /// Store at element `i` of a dense row at `base`.
    pub fn store_dense(&self, b: &mut FunctionBuilder, base: Value, i: Value, v: Value) {
        let a = self.addr(b, base, i);
        b.ins().store(self.mem, v, a, 0);
    }

    /// Input `k` at element(s) `i..`.
    pub fn load_input(&self, b: &mut FunctionBuilder, k: usize, i: Value, vector: bool) -> Value {
        match self.sources[k] {
            Source::Contiguous(p) => self.load_dense(b, p, i, vector),
            Source::Broadcast {
                scalar, vector: v, ..
            } => {
                if vector {
                    v
                } else {
                    scalar
                }
            }
            Source::Strided { ptr, step } => {
                let one = |b: &mut FunctionBuilder, ix: Value| {
                    let byte = b.ins().imul(ix, step);
                    let a = b.ins().iadd(ptr, byte);
                    b.ins().load(self.lane, self.mem, a, 0)
                };
                if !vector {
                    return one(b, i);
                }
                let mut v = None;
                for l in 0..self.lanes {
                    let ix = b.ins().iadd_imm_s(i, l);
                    let x = one(b, ix);
                    v = Some(match v {
                        None => b.ins().splat(self.vty, x),
                        Some(v) => b.ins().insertlane(v, x, l as u8),
                    });
                }
                v.expect("lanes")
            }
        }
    }
}

/// One loop step: `(emitter, index, accumulators) -> new accumulators`.
pub(crate) type Step<'s> = dyn FnMut(&mut Em, Value, &[Value]) -> Vec<Value> + 's;

/// How accumulators combine.
#[derive(Clone, Copy)]
pub(crate) enum Acc {
    Add,
    /// IEEE maximum: NaN if either is.
    Max,
    /// `a < b ? b : a`, one `maxps` on x86: NaN need not propagate.
    MaxFast,
}

impl Acc {
    pub(crate) fn combine(self, em: &mut Em, a: Value, b: Value) -> Value {
        match self {
            Acc::Add => em.add(a, b),
            Acc::Max => em.b.ins().fmax(a, b),
            Acc::MaxFast => {
                let m = em.cmp(cranelift_codegen::ir::condcodes::FloatCC::LessThan, a, b);
                em.sel(m, b, a)
            }
        }
    }
}

/// Vectors per iteration of a row loop, each with its own accumulators
/// (independent chains: a reduction is otherwise bound by the latency of
/// one add or max per vector).
const ROW_UNROLL: usize = 4;

/// A loop over `0..n`: [`ROW_UNROLL`] vectors while they fit, then
/// scalars, with accumulators (one per `accs`, `init` their start).
/// `step(em, i, accs)` emits one step at element `i` and returns the new
/// accumulators. Returns the scalar accumulators at the end.
#[allow(clippy::too_many_arguments)]
pub(crate) fn row_loop(
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
    let na = accs.len();
    let vh = b.create_block();
    let vb = b.create_block();
    let fold = b.create_block();
    let sh = b.create_block();
    let sb = b.create_block();
    let done = b.create_block();
    for blk in [vh, vb, fold] {
        b.append_block_param(blk, types::I64);
        for _ in 0..na * ROW_UNROLL {
            b.append_block_param(blk, f.vty);
        }
    }
    for blk in [sh, sb, done] {
        if blk != done {
            b.append_block_param(blk, types::I64);
        }
        for _ in 0..na {
            b.append_block_param(blk, f.lane);
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
    args.extend((0..na * ROW_UNROLL).map(|_| BlockArg::from(start)));
    b.ins().jump(vh, &args);

    // vector part
    b.switch_to_block(vh);
    let p = b.block_params(vh).to_vec();
    let end = b.ins().iadd_imm_s(p[0], f.lanes * ROW_UNROLL as i64);
    let fits = b.ins().icmp(IntCC::SignedLessThanOrEqual, end, n);
    let pass: Vec<BlockArg> = p.iter().map(|&v| v.into()).collect();
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
    let mut next_accs = Vec::with_capacity(na * ROW_UNROLL);
    for u in 0..ROW_UNROLL {
        let off = em.b.ins().iadd_imm_s(p[0], u as i64 * f.lanes);
        let mine = &p[1 + u * na..1 + (u + 1) * na];
        next_accs.extend(step(&mut em, off, mine));
    }
    let next = b.ins().iadd_imm_s(p[0], f.lanes * ROW_UNROLL as i64);
    let mut args: Vec<BlockArg> = vec![next.into()];
    args.extend(next_accs.iter().map(|&v| BlockArg::from(v)));
    b.ins().jump(vh, &args);

    // leaving the vector part: fold the copies, then each one's lanes
    b.switch_to_block(fold);
    let p = b.block_params(fold).to_vec();
    let mut args: Vec<BlockArg> = vec![p[0].into()];
    for (k, a) in accs.iter().enumerate() {
        let mut em = Em {
            b,
            ty: f.vty,
            target: *t,
            pool: None,
        };
        let mut v = p[1 + k];
        for u in 1..ROW_UNROLL {
            v = a.combine(&mut em, v, p[1 + u * na + k]);
        }
        let mut s = b.ins().extractlane(v, 0);
        let mut em = Em {
            b,
            ty: f.lane,
            target: *t,
            pool: None,
        };
        for l in 1..f.lanes {
            let x = em.b.ins().extractlane(v, l as u8);
            s = a.combine(&mut em, s, x);
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

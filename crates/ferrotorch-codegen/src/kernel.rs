//! Pointwise kernels: an [`Expr`] evaluated over one row of elements.
//!
//! # Note [Generated kernels]
//! A kernel is `fn(ins, strides, outs, n)`: `n` elements, input `k` read
//! from `ins[k]` every `strides[k]` elements, output `j` written densely
//! to `outs[j]`. How each input is read is fixed when the kernel is
//! compiled ([`Access`]): contiguous inputs are loaded as vectors, a
//! broadcast input once before the loop, strided inputs lane by lane. The
//! loop body evaluates the expression on [`UNROLL`] vectors of the widest
//! SIMD type Cranelift offers the target (128 bits: `f32x4`, `f64x2`;
//! Cranelift has no auto-vectoriser and no wider x86 vectors), then a
//! scalar loop finishes the row. Every intermediate stays in registers:
//! one read of each input, one write of each output. The caller (the JIT's
//! fusion runtime) walks outer dimensions and splits rows over the
//! intra-op pool; kernels hold no state, so one kernel runs on many
//! threads at once.

use crate::blocked::Strategy;
use crate::emit::{eval, eval_copies, Em, Pool, Target};
use crate::expr::Expr;
use crate::frame::{kernel_signature, Frame, Params};
use crate::host::{compile, Code};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{types, Block, InstBuilder, MemFlagsData, Value};
use cranelift_frontend::FunctionBuilder;
use std::time::Duration;

/// Vectors per loop iteration.
pub const UNROLL: usize = 4;

/// How a kernel reads one input along its row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Access {
    /// Consecutive elements.
    Contiguous,
    /// One element for the whole row (stride 0).
    Broadcast,
    /// Elements `strides[k]` apart.
    Strided,
}

/// The element type a kernel computes and stores in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Elem {
    /// `f32`
    F32,
    /// `f64`
    F64,
    /// `i32`: wrapping arithmetic, comparisons and selects only.
    I32,
    /// `i64`, as `I32`.
    I64,
}

impl Elem {
    /// Whether it is an integer type.
    pub fn is_int(self) -> bool {
        matches!(self, Elem::I32 | Elem::I64)
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            Elem::F32 | Elem::I32 => 4,
            Elem::F64 | Elem::I64 => 8,
        }
    }
}

type RawKernel =
    unsafe extern "C" fn(*const *const u8, *const i64, *const *mut u8, i64, *const *const u128);

/// A compiled pointwise kernel.
pub struct Kernel {
    code: Code,
    /// Wide stage loops the code calls (Note [Wide stage loops]).
    wides: Vec<crate::wide::Exec>,
    strategy: Strategy,
    /// Its constant table (Note [Constant pool]).
    pool: Vec<u128>,
    n_inputs: usize,
    n_outputs: usize,
    float: Elem,
}

impl std::fmt::Debug for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kernel")
            .field("inputs", &self.n_inputs)
            .field("outputs", &self.n_outputs)
            .field("float", &self.float)
            .finish()
    }
}

impl Kernel {
    /// Compile `expr` for inputs read as `access` says, computing in
    /// `float`, with the strategy [`crate::blocked::choose_for`] picks.
    pub fn compile(expr: &Expr, float: Elem, access: &[Access]) -> Result<Kernel, String> {
        let strategy = crate::blocked::choose_for(expr, float, access);
        Kernel::compile_with(expr, float, access, strategy)
    }

    /// [`Kernel::compile`] with a given strategy (Note [Blocked kernels]).
    pub fn compile_with(
        expr: &Expr,
        float: Elem,
        access: &[Access],
        strategy: Strategy,
    ) -> Result<Kernel, String> {
        expr.validate()?;
        if float.is_int() {
            crate::emit::int_ops(expr)?;
        }
        if access.len() != expr.n_inputs {
            return Err(format!(
                "the kernel has {} inputs but {} access kinds",
                expr.n_inputs,
                access.len()
            ));
        }
        let mut pool = Pool::default();
        let mut wides = Vec::new();
        let code = compile("pointwise", kernel_signature, |b, t| match strategy {
            Strategy::Inline => body(b, t, expr, float, access, &mut pool),
            Strategy::Blocked => {
                crate::blocked::body(b, t, expr, float, access, &mut pool, &mut wides)
            }
        })?;
        Ok(Kernel {
            code,
            wides,
            strategy,
            pool: pool.entries,
            n_inputs: expr.n_inputs,
            n_outputs: expr.outputs.len(),
            float,
        })
    }

    /// How long compiling took.
    pub fn compile_time(&self) -> Duration {
        self.code.compile_time
    }

    /// How many outputs it writes.
    pub fn n_outputs(&self) -> usize {
        self.n_outputs
    }

    /// How it was generated.
    pub fn strategy(&self) -> Strategy {
        self.strategy
    }

    /// How many of its stages run as wide AVX-512 loops on full blocks
    /// (Note [Wide stage loops]; 0 for inline kernels and where the CPU
    /// has no AVX-512).
    pub fn wide_stages(&self) -> usize {
        self.wides.len()
    }

    /// The float type it computes in.
    pub fn float(&self) -> Elem {
        self.float
    }

    /// Run over `n` elements.
    ///
    /// # Safety
    /// `ins[k]` must be valid to read at `i * strides[k]` elements for
    /// every `i < n` (only element 0 for a [`Access::Broadcast`] input,
    /// consecutive ones for [`Access::Contiguous`]), and `outs[j]` valid to
    /// write `n` consecutive elements, not overlapping any input.
    pub unsafe fn run(&self, ins: &[*const u8], strides: &[i64], outs: &[*mut u8], n: usize) {
        assert!(
            ins.len() == self.n_inputs && strides.len() == self.n_inputs,
            "kernel inputs"
        );
        assert_eq!(outs.len(), self.n_outputs, "kernel outputs");
        if n == 0 {
            return;
        }
        // SAFETY: the code was compiled for this signature (`compile`).
        let f: RawKernel = std::mem::transmute(self.code.ptr);
        f(
            ins.as_ptr(),
            strides.as_ptr(),
            outs.as_ptr(),
            n as i64,
            &self.pool.as_ptr(),
        );
    }
}

fn body(
    b: &mut FunctionBuilder,
    t: &Target,
    expr: &Expr,
    float: Elem,
    access: &[Access],
    pool: &mut Pool,
) {
    let (f, Params { outs, n, consts }) = Frame::enter(b, *t, float, access);
    let out_ptrs = f.out_ptrs(b, t.ptr, outs, expr.outputs.len());
    let block_i = |b: &mut FunctionBuilder| -> Block {
        let blk = b.create_block();
        b.append_block_param(blk, types::I64);
        blk
    };
    let (vec_head, vec_body, tail_head, tail_body) =
        (block_i(b), block_i(b), block_i(b), block_i(b));
    let exit = b.create_block();
    let zero = b.ins().iconst(types::I64, 0);
    b.ins().jump(vec_head, &[zero.into()]);

    let lanes = f.lanes;
    let step = lanes * UNROLL as i64;
    b.switch_to_block(vec_head);
    let i = b.block_params(vec_head)[0];
    let end = b.ins().iadd_imm_s(i, step);
    let fits = b.ins().icmp(IntCC::SignedLessThanOrEqual, end, n);
    b.ins()
        .brif(fits, vec_body, &[i.into()], tail_head, &[i.into()]);

    b.switch_to_block(vec_body);
    let i = b.block_params(vec_body)[0];
    // Note [Constant pool]: the table's address, read in every iteration
    pool.base = Some(b.ins().load(t.ptr, MemFlagsData::trusted(), consts, 0));
    let offs: Vec<Value> = (0..UNROLL as i64)
        .map(|u| b.ins().iadd_imm_s(i, u * lanes))
        .collect();
    let mut em = Em {
        b,
        ty: f.vty,
        target: *t,
        pool: Some(&mut *pool),
    };
    let ys = eval_copies(&mut em, expr, UNROLL, &mut |b, k, u| {
        f.load_input(b, k, offs[u], true)
    });
    for (u, yu) in ys.into_iter().enumerate() {
        for (y, &o) in yu.into_iter().zip(&out_ptrs) {
            f.store_dense(b, o, offs[u], y);
        }
    }
    let next = b.ins().iadd_imm_s(i, step);
    b.ins().jump(vec_head, &[next.into()]);

    b.switch_to_block(tail_head);
    let j = b.block_params(tail_head)[0];
    let more = b.ins().icmp(IntCC::SignedLessThan, j, n);
    b.ins().brif(more, tail_body, &[j.into()], exit, &[]);

    b.switch_to_block(tail_body);
    let j = b.block_params(tail_body)[0];
    let mut em = Em {
        b,
        ty: f.lane,
        target: *t,
        pool: None,
    };
    let ys = eval(&mut em, expr, &mut |b, k| f.load_input(b, k, j, false));
    for (y, &o) in ys.into_iter().zip(&out_ptrs) {
        f.store_dense(b, o, j, y);
    }
    let next = b.ins().iadd_imm_s(j, 1);
    b.ins().jump(tail_head, &[next.into()]);

    b.switch_to_block(exit);
    b.ins().return_(&[]);
}

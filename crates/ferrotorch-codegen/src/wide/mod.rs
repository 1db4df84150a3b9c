//! Wide stage loops: a blocked kernel's cheap stages as AVX-512 machine
//! code of our own.
//!
//! # Note [Wide stage loops]
//! Cranelift's x86 back end has 128-bit vectors only, so the cheap stages
//! of a blocked kernel (Note [Blocked kernels]) ran at four lanes an
//! instruction while its transcendentals ran at sixteen: profiled on one
//! thread, the generated 128-bit loops were 17 % of W9's time and 36 % of
//! the 16-op chain's. Where the CPU has AVX-512, a stage whose ops are
//! all exact arithmetic (`+ - * /`, min/max, neg/abs/relu, sqrt, rsqrt,
//! reciprocal, the roundings, compares and selects) over f32 block
//! buffers, contiguous inputs and broadcast scalars is assembled here
//! instead, by [`asm`], into a loop over one full block ([`BLOCK`]
//! elements, 64 a turn): constants and scalars are loaded into registers
//! once, each value gets a register for as long as it is live, and the
//! ops are the same IEEE operations Cranelift emits, so results agree bit
//! for bit (`tests/wide.rs` compares the two on every op and the special
//! values; NaN payloads may differ, NaN-ness does not). The blocked
//! kernel calls it for full blocks and keeps the 128-bit loop for the
//! last, short block of a row, for strided inputs, `pow`, and stages that
//! need more registers than there are. A kernel of arithmetic alone over
//! contiguous and broadcast f32 inputs is blocked for this reason too
//! (`blocked::choose_for`): its one stage runs wide. The code lives in its own
//! read-only executable mapping, made once at compile time; no input
//! ever becomes code (the stage's ops come from the verified expression).
//!
//! Tried and dropped (session 31, Zen 4): the transcendentals inline in
//! the wide loop too (`math.rs` made generic over a lane trait, a
//! builder on virtual registers with a linear-scan allocator, constants
//! as EVEX embedded broadcasts, copies interleaved instruction by
//! instruction), so that W9 or the 16-op chain is one loop with no block
//! buffers. Bit for bit with eager, but not faster: W9 0.66–0.72 ns an
//! element in L1 against 0.64–0.67 staged, the chain 2.3–2.5 against
//! 1.9–2.4. A fused element is one long dependent chain (the chain's is
//! ~250 instructions), and 32 registers hold only two to four interleaved
//! copies of it, while a stage's loop over a block has 256 independent
//! elements; the eager AVX-512 loops LLVM compiles also take fewer
//! instructions per clamp and select than the `math.rs` forms. Also
//! dropped: streaming stores for kernel outputs (W9 on two threads 6.15
//! against 6.21 ms: W9 is compute-bound) and software prefetch of the
//! inputs 2–8 KB ahead (slower or noise).

pub(crate) mod asm;

use crate::blocked::BLOCK;
use crate::expr::{Binary, Cmp, Expr, Op, Unary};
use asm::{Arith, Asm, Gpr, Zmm, RAX, RBP, RBX, RCX, RDX, RSI};

/// Where a stage input comes from: a pointer slot of the argument array.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Operand {
    /// `BLOCK` consecutive f32 at the slot's pointer.
    Dense(usize),
    /// One f32 at the slot's pointer, the same for every element.
    Scalar(usize),
}

/// Registers for the argument pointers: caller-saved first, then the
/// callee-saved ones the function saves.
const PTR_REGS: [Gpr; 13] = [RDX, RCX, 8, 9, 10, 11, RSI, RBX, RBP, 12, 13, 14, 15];
const CALLEE_SAVED: [Gpr; 6] = [RBX, RBP, 12, 13, 14, 15];

/// Copies of the stage per loop turn (16 lanes each).
const UNROLL: usize = 4;

/// Whether wide stage loops can run here: an x86-64 Unix host with
/// AVX-512 (`FERROTORCH_FUSER_WIDE=0` turns them off).
pub(crate) fn available() -> bool {
    cfg!(all(target_arch = "x86_64", unix))
        && ferrotorch_kernels::cpu::level() == ferrotorch_kernels::cpu::Level::Avx512
        && std::env::var("FERROTORCH_FUSER_WIDE").as_deref() != Ok("0")
}

/// `vcmpps` predicates with Cranelift's `FloatCC` meanings (ordered,
/// quiet; `Ne` is unordered-or-not-equal).
fn predicate(c: Cmp) -> u8 {
    match c {
        Cmp::Eq => 0x00,
        Cmp::Lt => 0x11,
        Cmp::Le => 0x12,
        Cmp::Ne => 0x04,
        Cmp::Ge => 0x1d,
        Cmp::Gt => 0x1e,
    }
}
const UNORD: u8 = 0x03;

/// The constant bits an op needs in a register besides its operands.
fn helper(op: &Op) -> Option<u32> {
    match op {
        Op::Unary(Unary::Neg, _) => Some(0x8000_0000),
        Op::Unary(Unary::Abs, _) => Some(0x7fff_ffff),
        Op::Unary(Unary::Relu, _) => Some(0),
        Op::Unary(Unary::Rsqrt | Unary::Reciprocal, _) => Some(1.0f32.to_bits()),
        _ => None,
    }
}

/// Assemble `expr` (f32, its inputs as `inputs` says, output `j` stored
/// densely at slot `outputs[j]`) as a function `extern "sysv64"
/// fn(slots: *const *mut f32)` over one block of [`BLOCK`] elements.
/// `None` where an op, an input or the register count is beyond it.
pub(crate) fn assemble(expr: &Expr, inputs: &[Operand], outputs: &[usize]) -> Option<Vec<u8>> {
    if inputs.len() != expr.n_inputs || !expr.ops.iter().all(Op::is_arithmetic) {
        return None;
    }
    let n_ops = expr.ops.len();
    // the last op reading each value (outputs: past the end)
    let mut last: Vec<Option<usize>> = vec![None; n_ops];
    for (r, op) in expr.ops.iter().enumerate() {
        for a in op.operands() {
            last[a] = Some(r);
        }
    }
    for &o in &expr.outputs {
        last[o] = Some(n_ops);
    }
    // pointer registers for the dense slots
    let mut slot_reg: Vec<(usize, Gpr)> = Vec::new();
    let dense = inputs
        .iter()
        .filter_map(|i| match i {
            Operand::Dense(s) => Some(*s),
            Operand::Scalar(_) => None,
        })
        .chain(outputs.iter().copied());
    for s in dense {
        if !slot_reg.iter().any(|&(t, _)| t == s) {
            let r = *PTR_REGS.get(slot_reg.len())?;
            slot_reg.push((s, r));
        }
    }
    let reg_of = |s: usize| slot_reg.iter().find(|&&(t, _)| t == s).map(|&(_, r)| r);
    let saved: Vec<Gpr> = CALLEE_SAVED
        .iter()
        .copied()
        .filter(|r| slot_reg.iter().any(|&(_, g)| g == *r))
        .collect();

    let mut a = Asm::default();
    for &r in &saved {
        a.push(r);
    }
    for &(s, r) in &slot_reg {
        a.load_arg(r, s);
    }
    // loop invariants: constants, helper constants, broadcast scalars
    // registers not holding a value
    let mut regs: Vec<Zmm> = (0..32).rev().collect();
    let mut consts: Vec<(u32, Zmm)> = Vec::new();
    let mut hoist = |a: &mut Asm, regs: &mut Vec<Zmm>, bits: u32| -> Option<Zmm> {
        if let Some(&(_, z)) = consts.iter().find(|&&(b, _)| b == bits) {
            return Some(z);
        }
        let z = regs.pop()?;
        a.broadcast_const(z, bits);
        consts.push((bits, z));
        Some(z)
    };
    let mut fixed: Vec<Option<Zmm>> = vec![None; n_ops];
    let mut helpers: Vec<Option<Zmm>> = vec![None; n_ops];
    let mut scalars: Vec<(usize, Zmm)> = Vec::new();
    for (r, op) in expr.ops.iter().enumerate() {
        match *op {
            Op::Const(bits) => {
                let v = f64::from_bits(bits) as f32;
                fixed[r] = Some(hoist(&mut a, &mut regs, v.to_bits())?);
            }
            Op::Input(k) => {
                if let Operand::Scalar(s) = inputs[k] {
                    let z = match scalars.iter().find(|&&(t, _)| t == s) {
                        Some(&(_, z)) => z,
                        None => {
                            let z = regs.pop()?;
                            a.load_arg(RAX, s);
                            a.broadcast(z, RAX);
                            scalars.push((s, z));
                            z
                        }
                    };
                    fixed[r] = Some(z);
                }
            }
            _ => {}
        }
        if let Some(bits) = helper(op) {
            helpers[r] = Some(hoist(&mut a, &mut regs, bits)?);
        }
    }

    a.zero_rax();
    let top = a.here();
    for u in 0..UNROLL {
        let disp = (u * 64) as i32;
        let mut val: Vec<Zmm> = vec![0; n_ops];
        for (r, op) in expr.ops.iter().enumerate() {
            if let Some(z) = fixed[r] {
                val[r] = z;
                continue;
            }
            let dst = regs.pop()?;
            match *op {
                Op::Input(k) => {
                    let Operand::Dense(s) = inputs[k] else {
                        unreachable!("scalars are fixed")
                    };
                    a.load(dst, reg_of(s)?, RAX, disp);
                }
                Op::Const(_) => unreachable!("constants are fixed"),
                Op::Unary(f, x) => unary(&mut a, f, dst, val[x], helpers[r]),
                Op::Binary(f, x, y) => {
                    let tmp = if matches!(f, Binary::Max | Binary::Min) {
                        Some(regs.pop()?)
                    } else {
                        None
                    };
                    binary(&mut a, f, dst, val[x], val[y], tmp);
                    if let Some(t) = tmp {
                        regs.push(t);
                    }
                }
                Op::Select {
                    cmp,
                    a: x,
                    b: y,
                    then,
                    other,
                } => {
                    a.cmp(1, val[x], val[y], predicate(cmp));
                    a.blend(dst, 1, val[other], val[then]);
                }
            }
            val[r] = dst;
            // operands whose last reader this was
            let mut done = op.operands();
            done.sort_unstable();
            done.dedup();
            for o in done {
                if last[o] == Some(r) && fixed[o].is_none() {
                    regs.push(val[o]);
                }
            }
            // a value nobody reads (pruned expressions have none)
            if last[r].is_none() {
                regs.push(dst);
            }
        }
        for (j, &o) in expr.outputs.iter().enumerate() {
            a.store(val[o], reg_of(outputs[j])?, RAX, disp);
        }
        // every value dies with the copy
        let mut live: Vec<Zmm> = expr
            .outputs
            .iter()
            .filter(|&&o| fixed[o].is_none())
            .map(|&o| val[o])
            .collect();
        live.sort_unstable();
        live.dedup();
        for z in live {
            regs.push(z);
        }
    }
    a.add_rax((16 * UNROLL) as i32);
    a.cmp_rax(BLOCK as i32);
    a.jl_back(top);
    for &r in saved.iter().rev() {
        a.pop(r);
    }
    a.ret();
    Some(a.finish())
}

fn unary(a: &mut Asm, f: Unary, dst: Zmm, x: Zmm, k: Option<Zmm>) {
    let k = || k.expect("a helper constant");
    match f {
        Unary::Neg => a.arith(Arith::Xor, dst, x, k()),
        Unary::Abs => a.arith(Arith::And, dst, x, k()),
        Unary::Relu => {
            // x < 0 ? 0 : x, NaN kept
            a.cmp(1, x, k(), predicate(Cmp::Lt));
            a.blend(dst, 1, x, k());
        }
        Unary::Sqrt => a.sqrt(dst, x),
        Unary::Rsqrt => {
            a.sqrt(dst, x);
            a.arith(Arith::Div, dst, k(), dst);
        }
        Unary::Reciprocal => a.arith(Arith::Div, dst, k(), x),
        Unary::Floor => a.round(dst, x, 0x09),
        Unary::Ceil => a.round(dst, x, 0x0a),
        Unary::Trunc => a.round(dst, x, 0x0b),
        Unary::Round => a.round(dst, x, 0x08),
        _ => unreachable!("`supported` admits no other unary op"),
    }
}

fn binary(a: &mut Asm, f: Binary, dst: Zmm, x: Zmm, y: Zmm, tmp: Option<Zmm>) {
    let op = match f {
        Binary::Add => Arith::Add,
        Binary::Sub => Arith::Sub,
        Binary::Mul => Arith::Mul,
        Binary::Div => Arith::Div,
        Binary::Max | Binary::Min => {
            // IEEE maximum / minimum as Cranelift's fmax / fmin: vmaxps
            // returns its second operand for NaN and for ±0 pairs, so
            // both orders, combined by bits (+0 wins a max, -0 a min),
            // then NaN wherever either operand is
            let t = tmp.expect("a scratch register");
            let (m, join) = if matches!(f, Binary::Max) {
                (Arith::Max, Arith::And)
            } else {
                (Arith::Min, Arith::Or)
            };
            a.arith(m, t, x, y);
            a.arith(m, dst, y, x);
            a.arith(join, dst, dst, t);
            a.cmp(1, x, y, UNORD);
            a.arith(Arith::Add, t, x, y);
            a.blend(dst, 1, dst, t);
            return;
        }
        Binary::Pow => unreachable!("`supported` refuses pow"),
    };
    a.arith(op, dst, x, y);
}

/// Machine code in a read-only executable mapping of its own, unmapped
/// when dropped.
pub(crate) struct Exec {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is never written after `new` returns, and freed
// once, by `Drop`.
unsafe impl Send for Exec {}
unsafe impl Sync for Exec {}

impl Exec {
    /// Map `code` executable: written while writable, then made read and
    /// execute only.
    #[cfg(unix)]
    pub(crate) fn new(code: &[u8]) -> Option<Exec> {
        let len = code.len().max(1);
        // SAFETY: a fresh private anonymous mapping of `len` bytes, written
        // within its bounds before its protection changes.
        unsafe {
            let p = libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            if p == libc::MAP_FAILED {
                return None;
            }
            std::ptr::copy_nonoverlapping(code.as_ptr(), p.cast::<u8>(), code.len());
            if libc::mprotect(p, len, libc::PROT_READ | libc::PROT_EXEC) != 0 {
                libc::munmap(p, len);
                return None;
            }
            Some(Exec { ptr: p.cast(), len })
        }
    }

    #[cfg(not(unix))]
    pub(crate) fn new(_code: &[u8]) -> Option<Exec> {
        None
    }

    /// The address of its first instruction.
    pub(crate) fn addr(&self) -> usize {
        self.ptr as usize
    }
}

impl Drop for Exec {
    fn drop(&mut self) {
        #[cfg(unix)]
        // SAFETY: the mapping made by `new`, unmapped once; the kernel that
        // calls it is dropped with it.
        unsafe {
            libc::munmap(self.ptr.cast(), self.len);
        }
    }
}

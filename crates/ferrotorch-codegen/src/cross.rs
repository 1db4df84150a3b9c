//! Scalar expressions compiled for other ISAs (seeds/000's ARM and
//! RISC-V targets): aarch64 and riscv64 machine code from Cranelift, and
//! a static Linux executable around it that runs under `qemu-user`.
//!
//! # Note [Cross executables]
//! [`CrossCode::executable`] writes an ELF file of one loadable segment:
//! a start stub, the function, then the argument and result arrays. The
//! stub (a dozen instructions, encoded here) passes the two arrays'
//! addresses to the function by PC-relative address, calls it, writes the
//! results to standard output with the `write` system call and exits.
//! No libc, no linker, no relocations: the function is arithmetic only
//! (host library calls have no address on another machine, so an
//! expression needing one is refused), and Cranelift keeps its constants
//! inside the function's code.

use crate::emit::Target;
use crate::expr::Expr;
use cranelift_codegen::ir::{AbiParam, Function, Signature, UserFuncName};
use cranelift_codegen::isa::OwnedTargetIsa;
use cranelift_codegen::settings::{self, Configurable};
use cranelift_codegen::{control::ControlPlane, Context};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use std::str::FromStr;

/// A target instruction set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isa {
    /// 64-bit ARM (`aarch64-unknown-linux-gnu`).
    Aarch64,
    /// 64-bit RISC-V, RV64GC without compressed instructions
    /// (`riscv64gc-unknown-linux-gnu`).
    Riscv64,
}

impl Isa {
    fn triple(self) -> &'static str {
        match self {
            Isa::Aarch64 => "aarch64-unknown-linux-gnu",
            Isa::Riscv64 => "riscv64gc-unknown-linux-gnu",
        }
    }

    /// The ELF machine number (`e_machine`).
    pub fn elf_machine(self) -> u16 {
        match self {
            Isa::Aarch64 => 183,
            Isa::Riscv64 => 243,
        }
    }

    /// The `qemu-user` program that runs its executables.
    pub fn qemu(self) -> &'static str {
        match self {
            Isa::Aarch64 => "qemu-aarch64",
            Isa::Riscv64 => "qemu-riscv64",
        }
    }

    fn target_isa(self) -> Result<OwnedTargetIsa, String> {
        let mut flags = settings::builder();
        flags
            .set("opt_level", "speed")
            .map_err(|e| format!("cranelift flag: {e}"))?;
        let triple = target_lexicon::Triple::from_str(self.triple())
            .map_err(|e| format!("target triple: {e}"))?;
        let mut isa = cranelift_codegen::isa::lookup(triple)
            .map_err(|e| format!("no {self:?} code generator: {e}"))?;
        if self == Isa::Riscv64 {
            for f in ["has_m", "has_a", "has_f", "has_d"] {
                isa.enable(f).map_err(|e| format!("{f}: {e}"))?;
            }
        }
        isa.finish(settings::Flags::new(flags))
            .map_err(|e| format!("cranelift: {e}"))
    }
}

/// Machine code of a scalar function `fn(args: *const f64, outs: *mut
/// f64)` for another ISA.
#[derive(Clone, Debug)]
pub struct CrossCode {
    /// Its instruction set.
    pub isa: Isa,
    /// The function's code (constants included).
    pub code: Vec<u8>,
    /// How many arguments it reads.
    pub n_inputs: usize,
    /// How many results it writes.
    pub n_outputs: usize,
}

/// Whether `expr` uses only what compiles without host functions.
fn arithmetic_only(expr: &Expr) -> Result<(), String> {
    for op in &expr.ops {
        let ok = op.is_arithmetic();
        if !ok {
            return Err(format!(
                "{op:?} calls a host function: cross-compiled code is arithmetic only"
            ));
        }
    }
    Ok(())
}

/// Compile `expr` (in f64) for `isa`.
pub fn compile_scalar(expr: &Expr, isa: Isa) -> Result<CrossCode, String> {
    expr.validate()?;
    arithmetic_only(expr)?;
    let target_isa = isa.target_isa()?;
    let target = Target {
        fma: target_isa.has_native_fma(),
        ptr: target_isa.pointer_type(),
        call_conv: target_isa.default_call_conv(),
    };
    let mut sig = Signature::new(target.call_conv);
    sig.params.push(AbiParam::new(target.ptr));
    sig.params.push(AbiParam::new(target.ptr));
    let mut ctx =
        Context::for_function(Function::with_name_signature(UserFuncName::user(0, 0), sig));
    let mut fctx = FunctionBuilderContext::new();
    {
        let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
        crate::scalar::fill(&mut b, &target, expr);
        b.seal_all_blocks();
        b.finalize(target_isa.frontend_config());
    }
    let compiled = ctx
        .compile(&*target_isa, &mut ControlPlane::default())
        .map_err(|e| format!("cranelift could not compile for {isa:?}: {:?}", e.inner))?;
    if !compiled.buffer.relocs().is_empty() {
        return Err(format!("{isa:?} code needs relocations"));
    }
    Ok(CrossCode {
        isa,
        code: compiled.code_buffer().to_vec(),
        n_inputs: expr.n_inputs,
        n_outputs: expr.outputs.len(),
    })
}

/// Where an executable is loaded.
const BASE: u64 = 0x40_0000;
/// ELF header and one program header.
const HEADERS: usize = 64 + 56;

fn align(v: &mut Vec<u8>, to: usize) {
    while !v.len().is_multiple_of(to) {
        v.push(0);
    }
}

impl CrossCode {
    /// A static Linux executable for [`Isa`] that calls the function on
    /// `args` and writes its results to standard output as little-endian
    /// f64s (Note [Cross executables]).
    pub fn executable(&self, args: &[f64]) -> Result<Vec<u8>, String> {
        if args.len() != self.n_inputs {
            return Err(format!(
                "the function takes {} arguments ({} given)",
                self.n_inputs,
                args.len()
            ));
        }
        let stub_at = HEADERS.next_multiple_of(16);
        let stub_len = 64;
        let func_at = stub_at + stub_len;
        let args_at = (func_at + self.code.len()).next_multiple_of(16);
        let outs_at = args_at + 8 * args.len().max(1);
        let out_bytes = 8 * self.n_outputs;
        let stub = match self.isa {
            Isa::Aarch64 => aarch64_stub(stub_at, func_at, args_at, outs_at, out_bytes),
            Isa::Riscv64 => riscv64_stub(stub_at, func_at, args_at, outs_at, out_bytes),
        };
        assert!(stub.len() * 4 <= stub_len, "the stub fits its slot");
        let mut f = elf_header(self.isa, BASE + stub_at as u64);
        align(&mut f, 16);
        for w in &stub {
            f.extend_from_slice(&w.to_le_bytes());
        }
        f.resize(func_at, 0);
        f.extend_from_slice(&self.code);
        f.resize(args_at, 0);
        for a in args {
            f.extend_from_slice(&a.to_le_bytes());
        }
        f.resize(outs_at + out_bytes, 0);
        // the segment covers the whole file
        let len = f.len() as u64;
        f[64 + 32..64 + 40].copy_from_slice(&len.to_le_bytes());
        f[64 + 40..64 + 48].copy_from_slice(&len.to_le_bytes());
        Ok(f)
    }
}

/// An ELF64 little-endian executable header and one read-write-execute
/// `PT_LOAD` program header (sizes filled in later).
fn elf_header(isa: Isa, entry: u64) -> Vec<u8> {
    let mut h = Vec::with_capacity(HEADERS);
    h.extend_from_slice(&[0x7f, b'E', b'L', b'F', 2, 1, 1, 0]);
    h.extend_from_slice(&[0; 8]);
    h.extend_from_slice(&2u16.to_le_bytes()); // ET_EXEC
    h.extend_from_slice(&isa.elf_machine().to_le_bytes());
    h.extend_from_slice(&1u32.to_le_bytes());
    h.extend_from_slice(&entry.to_le_bytes());
    h.extend_from_slice(&64u64.to_le_bytes()); // program headers
    h.extend_from_slice(&0u64.to_le_bytes()); // no section headers
    let flags: u32 = if isa == Isa::Riscv64 { 0x4 } else { 0 }; // double-float ABI
    h.extend_from_slice(&flags.to_le_bytes());
    for v in [64u16, 56, 1, 64, 0, 0] {
        h.extend_from_slice(&v.to_le_bytes());
    }
    h.extend_from_slice(&1u32.to_le_bytes()); // PT_LOAD
    h.extend_from_slice(&7u32.to_le_bytes()); // R | W | X
    h.extend_from_slice(&0u64.to_le_bytes());
    h.extend_from_slice(&BASE.to_le_bytes());
    h.extend_from_slice(&BASE.to_le_bytes());
    h.extend_from_slice(&0u64.to_le_bytes()); // filesz
    h.extend_from_slice(&0u64.to_le_bytes()); // memsz
    h.extend_from_slice(&0x1000u64.to_le_bytes());
    h
}

/// aarch64: `adr x0, args; adr x1, outs; bl f; write(1, outs, n); exit(0)`.
fn aarch64_stub(at: usize, f: usize, args: usize, outs: usize, n: usize) -> Vec<u32> {
    let adr = |rd: u32, pc: usize, to: usize| {
        let imm = (to as i64 - pc as i64) as u32;
        0x1000_0000 | ((imm & 3) << 29) | (((imm >> 2) & 0x7ffff) << 5) | rd
    };
    let movz = |rd: u32, imm: u32| 0xd280_0000 | (imm << 5) | rd;
    let pc = |k: usize| at + 4 * k;
    vec![
        adr(0, pc(0), args),
        adr(1, pc(1), outs),
        0x9400_0000 | ((((f as i64 - pc(2) as i64) >> 2) as u32) & 0x3ff_ffff), // bl
        movz(0, 1),
        adr(1, pc(4), outs),
        movz(2, n as u32),
        movz(8, 64), // write
        0xd400_0001, // svc #0
        movz(0, 0),
        movz(8, 93), // exit
        0xd400_0001,
    ]
}

/// riscv64: the same with `auipc`/`addi`, `jal` and `ecall`.
fn riscv64_stub(at: usize, f: usize, args: usize, outs: usize, n: usize) -> Vec<u32> {
    let addi =
        |rd: u32, rs: u32, imm: i32| ((imm as u32 & 0xfff) << 20) | (rs << 15) | (rd << 7) | 0x13;
    // (auipc, addi) of a PC-relative address
    let la = |rd: u32, pc: usize, to: usize| {
        let off = to as i64 - pc as i64;
        let lo = ((off << 52) >> 52) as i32; // sign-extended low 12 bits
        let hi = ((off - lo as i64) >> 12) as u32 & 0xf_ffff;
        [(hi << 12) | (rd << 7) | 0x17, addi(rd, rd, lo)]
    };
    let jal = |rd: u32, pc: usize, to: usize| {
        let imm = (to as i64 - pc as i64) as u32;
        (((imm >> 20) & 1) << 31)
            | (((imm >> 1) & 0x3ff) << 21)
            | (((imm >> 11) & 1) << 20)
            | (((imm >> 12) & 0xff) << 12)
            | (rd << 7)
            | 0x6f
    };
    let pc = |k: usize| at + 4 * k;
    let (a0, a1, a2, a7, ra) = (10, 11, 12, 17, 1);
    let mut w = Vec::new();
    w.extend(la(a0, pc(0), args));
    w.extend(la(a1, pc(2), outs));
    w.push(jal(ra, pc(4), f));
    w.push(addi(a0, 0, 1));
    w.extend(la(a1, pc(6), outs));
    w.push(addi(a2, 0, n as i32));
    w.push(addi(a7, 0, 64)); // write
    w.push(0x0000_0073); // ecall
    w.push(addi(a0, 0, 0));
    w.push(addi(a7, 0, 93)); // exit
    w.push(0x0000_0073);
    w
}

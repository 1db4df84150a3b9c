//! A small x86-64 assembler: the AVX-512 instructions the wide stage
//! loops use (Note [Wide stage loops] in `wide/mod.rs`), and the few
//! general-purpose ones around them.
//!
//! Every vector instruction is EVEX-encoded at 512 bits; memory operands
//! always take the `[base + index·4 + disp32]` form (a SIB byte, a 32-bit
//! displacement, never EVEX's scaled 8-bit one), or `[rip + disp32]` for
//! the constant table appended after the code.

/// A general-purpose register, by its hardware number (`RAX` = 0).
pub type Gpr = u8;
pub const RAX: Gpr = 0;
pub const RCX: Gpr = 1;
pub const RDX: Gpr = 2;
pub const RBX: Gpr = 3;
pub const RBP: Gpr = 5;
pub const RSI: Gpr = 6;
pub const RDI: Gpr = 7;

/// A 512-bit register, `zmm0`..`zmm31`.
pub type Zmm = u8;

/// An opmask register, `k1`..`k7`.
pub type Kreg = u8;

/// Opcode maps of the EVEX prefix.
#[derive(Clone, Copy)]
enum Map {
    M0f = 1,
    M0f38 = 2,
    M0f3a = 3,
}

/// Legacy prefixes folded into EVEX.pp.
#[derive(Clone, Copy)]
enum Pp {
    None = 0,
    P66 = 1,
}

/// The r/m operand of an EVEX instruction.
#[derive(Clone, Copy)]
enum Rm {
    Reg(Zmm),
    /// `[base + index·4 + disp]` (`index` none: `[base + disp]`).
    Mem {
        base: Gpr,
        index: Option<Gpr>,
        disp: i32,
    },
    /// `[rip + constant k]` in the table after the code.
    Const(usize),
}

/// Three-operand arithmetic: `dst = a op b`.
#[derive(Clone, Copy, Debug)]
pub enum Arith {
    Add,
    Sub,
    Mul,
    Div,
    Min,
    Max,
    And,
    Or,
    Xor,
}

impl Arith {
    fn code(self) -> (Pp, u8) {
        match self {
            Arith::Add => (Pp::None, 0x58),
            Arith::Mul => (Pp::None, 0x59),
            Arith::Sub => (Pp::None, 0x5c),
            Arith::Min => (Pp::None, 0x5d),
            Arith::Div => (Pp::None, 0x5e),
            Arith::Max => (Pp::None, 0x5f),
            // vpandd / vpord / vpxord
            Arith::And => (Pp::P66, 0xdb),
            Arith::Or => (Pp::P66, 0xeb),
            Arith::Xor => (Pp::P66, 0xef),
        }
    }
}

/// Code being assembled, with its constant table and jump labels.
#[derive(Default)]
pub struct Asm {
    code: Vec<u8>,
    consts: Vec<u32>,
    /// (position of a rip-relative disp32, constant index)
    fixups: Vec<(usize, usize)>,
}

impl Asm {
    /// The index of the constant with these bits in the table.
    pub fn constant(&mut self, bits: u32) -> usize {
        match self.consts.iter().position(|&c| c == bits) {
            Some(k) => k,
            None => {
                self.consts.push(bits);
                self.consts.len() - 1
            }
        }
    }

    /// Where the next instruction goes (a label for [`Asm::jl_back`]).
    pub fn here(&self) -> usize {
        self.code.len()
    }

    #[allow(clippy::too_many_arguments)]
    fn evex(
        &mut self,
        map: Map,
        pp: Pp,
        reg: u8,
        vvvv: u8,
        rm: Rm,
        mask: Kreg,
        opcode: u8,
        imm: Option<u8>,
    ) {
        let (b, x) = match rm {
            Rm::Reg(r) => ((r >> 3) & 1, (r >> 4) & 1),
            Rm::Mem { base, index, .. } => ((base >> 3) & 1, index.map_or(0, |i| (i >> 3) & 1)),
            Rm::Const(_) => (0, 0),
        };
        let r = (reg >> 3) & 1;
        let r2 = (reg >> 4) & 1;
        let p0 = ((r ^ 1) << 7) | ((x ^ 1) << 6) | ((b ^ 1) << 5) | ((r2 ^ 1) << 4) | map as u8;
        let p1 = ((!vvvv & 0xf) << 3) | 0b100 | pp as u8;
        // L'L = 10: 512 bits
        let p2 = (0b10 << 5) | ((((vvvv >> 4) & 1) ^ 1) << 3) | (mask & 7);
        self.code.extend_from_slice(&[0x62, p0, p1, p2, opcode]);
        match rm {
            Rm::Reg(m) => self.code.push(0xc0 | ((reg & 7) << 3) | (m & 7)),
            Rm::Mem { base, index, disp } => {
                // mod = 10 (disp32), r/m = 100 (a SIB byte follows)
                self.code.push(0x80 | ((reg & 7) << 3) | 0b100);
                let idx = index.map_or(0b100, |i| i & 7);
                self.code.push((0b10 << 6) | (idx << 3) | (base & 7));
                self.code.extend_from_slice(&disp.to_le_bytes());
            }
            Rm::Const(k) => {
                // mod = 00, r/m = 101: [rip + disp32]
                self.code.push(((reg & 7) << 3) | 0b101);
                self.fixups.push((self.code.len(), k));
                self.code.extend_from_slice(&[0; 4]);
            }
        }
        if let Some(i) = imm {
            self.code.push(i);
        }
    }

    /// `dst = a op b` (`vaddps`, ..., `vpxord`).
    pub fn arith(&mut self, op: Arith, dst: Zmm, a: Zmm, b: Zmm) {
        let (pp, code) = op.code();
        self.evex(Map::M0f, pp, dst, a, Rm::Reg(b), 0, code, None);
    }

    /// `vsqrtps dst, a`
    pub fn sqrt(&mut self, dst: Zmm, a: Zmm) {
        self.evex(Map::M0f, Pp::None, dst, 0, Rm::Reg(a), 0, 0x51, None);
    }

    /// `vrndscaleps dst, a, imm` (rounding mode in `imm`'s low bits).
    pub fn round(&mut self, dst: Zmm, a: Zmm, imm: u8) {
        self.evex(Map::M0f3a, Pp::P66, dst, 0, Rm::Reg(a), 0, 0x08, Some(imm));
    }

    /// `vcmpps k, a, b, pred`
    pub fn cmp(&mut self, k: Kreg, a: Zmm, b: Zmm, pred: u8) {
        self.evex(Map::M0f, Pp::None, k, a, Rm::Reg(b), 0, 0xc2, Some(pred));
    }

    /// `vblendmps dst{k}, a, b`: `k ? b : a` per lane.
    pub fn blend(&mut self, dst: Zmm, k: Kreg, a: Zmm, b: Zmm) {
        self.evex(Map::M0f38, Pp::P66, dst, a, Rm::Reg(b), k, 0x65, None);
    }

    /// `vmovups dst, [base + index·4 + disp]`
    pub fn load(&mut self, dst: Zmm, base: Gpr, index: Gpr, disp: i32) {
        let rm = Rm::Mem {
            base,
            index: Some(index),
            disp,
        };
        self.evex(Map::M0f, Pp::None, dst, 0, rm, 0, 0x10, None);
    }

    /// `vmovups [base + index·4 + disp], src`
    pub fn store(&mut self, src: Zmm, base: Gpr, index: Gpr, disp: i32) {
        let rm = Rm::Mem {
            base,
            index: Some(index),
            disp,
        };
        self.evex(Map::M0f, Pp::None, src, 0, rm, 0, 0x11, None);
    }

    /// `vbroadcastss dst, [base]`
    pub fn broadcast(&mut self, dst: Zmm, base: Gpr) {
        let rm = Rm::Mem {
            base,
            index: None,
            disp: 0,
        };
        self.evex(Map::M0f38, Pp::P66, dst, 0, rm, 0, 0x18, None);
    }

    /// `vbroadcastss dst, [rip + constant]`: the f32 with these bits.
    pub fn broadcast_const(&mut self, dst: Zmm, bits: u32) {
        let k = self.constant(bits);
        self.evex(Map::M0f38, Pp::P66, dst, 0, Rm::Const(k), 0, 0x18, None);
    }

    fn rex(&mut self, w: bool, reg: Gpr, base: Gpr) {
        let rex = 0x40 | ((w as u8) << 3) | (((reg >> 3) & 1) << 2) | ((base >> 3) & 1);
        if rex != 0x40 {
            self.code.push(rex);
        }
    }

    /// `push r`
    pub fn push(&mut self, r: Gpr) {
        self.rex(false, 0, r);
        self.code.push(0x50 + (r & 7));
    }

    /// `pop r`
    pub fn pop(&mut self, r: Gpr) {
        self.rex(false, 0, r);
        self.code.push(0x58 + (r & 7));
    }

    /// `mov dst, [rdi + 8·slot]`: a pointer from the argument array.
    pub fn load_arg(&mut self, dst: Gpr, slot: usize) {
        self.rex(true, dst, RDI);
        // mod = 10, r/m = rdi: [rdi + disp32]
        self.code
            .extend_from_slice(&[0x8b, 0x80 | ((dst & 7) << 3) | (RDI & 7)]);
        self.code
            .extend_from_slice(&((slot * 8) as i32).to_le_bytes());
    }

    /// `xor eax, eax`
    pub fn zero_rax(&mut self) {
        self.code.extend_from_slice(&[0x31, 0xc0]);
    }

    /// `add rax, imm32`
    pub fn add_rax(&mut self, imm: i32) {
        self.code.extend_from_slice(&[0x48, 0x05]);
        self.code.extend_from_slice(&imm.to_le_bytes());
    }

    /// `cmp rax, imm32`
    pub fn cmp_rax(&mut self, imm: i32) {
        self.code.extend_from_slice(&[0x48, 0x3d]);
        self.code.extend_from_slice(&imm.to_le_bytes());
    }

    /// `jl label` (a label at or before this point).
    pub fn jl_back(&mut self, label: usize) {
        let end = self.code.len() + 6;
        let rel = label as i64 - end as i64;
        self.code.extend_from_slice(&[0x0f, 0x8c]);
        self.code.extend_from_slice(&(rel as i32).to_le_bytes());
    }

    /// `vzeroupper; ret`
    pub fn ret(&mut self) {
        self.code.extend_from_slice(&[0xc5, 0xf8, 0x77, 0xc3]);
    }

    /// The finished bytes: the code, padded to 64 bytes, then the
    /// constant table, with every rip-relative displacement resolved.
    pub fn finish(mut self) -> Vec<u8> {
        while !self.code.len().is_multiple_of(64) {
            // int3: never reached
            self.code.push(0xcc);
        }
        let table = self.code.len();
        for &(at, k) in &self.fixups {
            let rel = (table + 4 * k) as i64 - (at + 4) as i64;
            self.code[at..at + 4].copy_from_slice(&(rel as i32).to_le_bytes());
        }
        for c in &self.consts {
            self.code.extend_from_slice(&c.to_le_bytes());
        }
        self.code
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Encodings checked against GNU objdump's disassembly of the same
    // bytes (`objdump -D -b binary -mi386:x86-64`) while writing them.
    #[test]
    fn encodings() {
        let mut a = Asm::default();
        a.arith(Arith::Add, 1, 2, 3);
        assert_eq!(a.code, [0x62, 0xf1, 0x6c, 0x48, 0x58, 0xcb]); // vaddps zmm1,zmm2,zmm3
        let mut a = Asm::default();
        a.arith(Arith::Sub, 17, 9, 26);
        // vsubps zmm17, zmm9, zmm26
        assert_eq!(a.code, [0x62, 0x81, 0x34, 0x48, 0x5c, 0xca]);
        let mut a = Asm::default();
        a.load(20, 13, RAX, 128);
        // vmovups zmm20, [r13 + rax*4 + 0x80]
        assert_eq!(
            a.code,
            [0x62, 0xc1, 0x7c, 0x48, 0x10, 0xa4, 0x85, 0x80, 0, 0, 0]
        );
        let mut a = Asm::default();
        a.cmp(1, 4, 30, 0x11);
        // vcmpps k1, zmm4, zmm30, 0x11
        assert_eq!(a.code, [0x62, 0x91, 0x5c, 0x48, 0xc2, 0xce, 0x11]);
        let mut a = Asm::default();
        a.blend(5, 1, 6, 7);
        // vblendmps zmm5{k1}, zmm6, zmm7
        assert_eq!(a.code, [0x62, 0xf2, 0x4d, 0x49, 0x65, 0xef]);
    }
}

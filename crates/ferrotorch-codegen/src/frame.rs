//! What a kernel body needs to read and write rows: each input's source
//! (set up once in the entry block) and loads and stores of the compute
//! type, as vectors or scalars. Shared by pointwise and row kernels.

use crate::emit::Target;
use crate::kernel::{Access, Float};
use cranelift_codegen::ir::{types, InstBuilder, MemFlagsData, Type, Value};
use cranelift_frontend::FunctionBuilder;

/// Where one input comes from.
#[derive(Clone, Copy)]
pub(crate) enum Source {
    Contiguous(Value),
    Broadcast { scalar: Value, vector: Value },
    Strided { ptr: Value, step: Value },
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

impl Frame {
    /// Set up the inputs `ins[k]` (read as `access[k]`, with element
    /// strides from `strides`) in the current block.
    pub fn new(
        b: &mut FunctionBuilder,
        target: Target,
        float: Float,
        access: &[Access],
        ins: Value,
        strides: Value,
    ) -> Frame {
        let lane = match float {
            Float::F32 => types::F32,
            Float::F64 => types::F64,
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
                        Source::Broadcast { scalar, vector }
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
            Source::Broadcast { scalar, vector: v } => {
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

//! Pointwise rows: each elementwise op's value and derivative, written
//! once and read by every consumer.
//!
//! # Note [Pointwise rows]
//! A pointwise op's row (PyTorch's `derivatives.yaml` line, with the
//! value beside it) holds its derivative — what it reads (input, result
//! or nothing) and its formula — and, where the op is a composition of
//! the code generator's primitives ([`prim`]), its value. Formulas are
//! generic Rust functions over the value algebra [`Pw`], so one formula
//! is instantiated for each reader:
//!
//! - eager autograd evaluates it with tensor ops ([`TVal`]), so
//!   `create_graph` differentiates the formula itself;
//! - the fused backward loop (Note [Fused pointwise backward]) runs it on
//!   `f32`/`f64` elements, inlined into the loop;
//! - the code generator records it ([`SymV`] → [`Recorded`]) and splices
//!   the ops into a kernel: the compiled derivative of a fused group
//!   (`ferrotorch_codegen::grad`) and the lowering of an op to kernel
//!   code (`ferrotorch_jit`'s `value_op`) are row lookups, and an op
//!   fuses when its row has a value.
//!
//! Activations with parameters (`leaky_relu`, `softplus`, `gelu`, `elu`
//! ...) are rows of [`act`] (Note [Activation rows]); eager code also runs
//! their values as one elementwise loop.
//!
//! So adding or fixing a pointwise op is one row ([`unary`], [`binary`]
//! or [`act`]'s table) plus its fixture line, and eager and compiled
//! derivatives agree by construction. Ops outside the algebra (the
//! Bessel functions, `fmax`, `remainder`) keep eager-only formulas in
//! `autograd::derivatives::pointwise`.

mod act;
mod algebra;
mod binary;
pub mod prim;
mod sym;
mod tensor;
mod unary;

pub(crate) use act::named as act_named;
pub use act::{act, act_of_prim, act_rows, ActRow, Param};
pub use algebra::{Pw, PwExt};
pub use binary::{binary, binary_prim, binary_rows, BinaryIn, BinaryRow, When};
pub use sym::{record, Recorded, SymV};
pub use tensor::{eval_ops, TVal};
pub use unary::{unary, unary_rows, Fuse, Reads, UnaryRow, FUSE_SMALL_MAX};

//! Native code for ferrotorch graphs (issue 20), written with Cranelift
//! so that no system LLVM is needed and a kernel compiles in
//! milliseconds.
//!
//! - [`expr`]: the input, a pointwise expression DAG ([`Expr`]).
//! - [`Kernel`]: an expression over rows of tensor elements, vectorised
//!   (Note [Generated kernels]), with transcendentals inline or, in
//!   blocks, as the eager kernels' wide loops (Note [Blocked kernels]);
//!   the JIT compiles `prim::FusionGroup`s to these.
//! - [`grad::backward`]: an expression's derivative as an expression
//!   (Note [Fused backward]).
//! - [`RowKernel`]: an expression followed by a reduction or
//!   normalisation over each row (Note [Row kernels]).
//! - `cross` (feature `cross-isa`): scalar expressions as aarch64 and
//!   riscv64 code, in executables `qemu-user` runs.
//! - [`ScalarFn`]: an expression of floats as one native function (fx
//!   graphs of Python floats).
//!
//! ```
//! use ferrotorch_codegen::{Expr, ScalarFn, expr::{Binary, Unary}};
//! let mut e = Expr::new(1);
//! let x = e.input(0);
//! let t = e.unary(Unary::Tanh, x);
//! let two = e.constant(2.0);
//! let y = e.binary(Binary::Mul, t, two);
//! e.outputs.push(y);
//! let f = ScalarFn::compile(&e).unwrap();
//! assert!((f.call(&[0.5]).unwrap()[0] - 2.0 * 0.5f64.tanh()).abs() < 1e-15);
//! ```

#![warn(missing_docs)]

pub mod blocked;
#[cfg(feature = "cross-isa")]
pub mod cross;
mod emit;
pub mod expr;
mod frame;
pub mod grad;
mod host;
pub mod kernel;
pub mod libm;
mod math;
pub mod rowwise;
pub mod scalar;
pub mod wasm;
mod wide;

pub use blocked::Strategy;
pub use expr::Expr;
pub use host::available;
pub use kernel::{Access, Elem, Kernel};
pub use rowwise::{RowKernel, RowOp};
pub use scalar::ScalarFn;

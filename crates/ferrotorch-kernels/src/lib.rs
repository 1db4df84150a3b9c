//! CPU kernels for ferrotorch.
//!
//! This crate knows nothing about tensors: it works on slices and raw strided
//! buffers. The tensor layer (`ferrotorch-core`) decides dtypes, shapes and
//! broadcasting, then hands contiguous runs of elements to the loops here.
//!
//! - [`backward`]: long elementwise backward formulas (GELU) as their own
//!   multiversioned loops (Note [Kernels, not closures, for long formulas]).
//! - [`math`]: branch-free scalar approximations (exp, tanh, erf, ...) written so
//!   that LLVM vectorises them when they are inlined into a loop.
//! - [`simd`]: the loops themselves, compiled several times for different CPU
//!   feature levels (AVX-512, AVX2+FMA, baseline) and chosen once at run time.
//! - [`norm`]: layer normalisation rows, forward and backward.
//! - [`rnn`]: the pointwise part of a GRU or LSTM step, forward and backward.
//! - [`parallel`]: the intra-op thread pool (`set_num_threads`).
//! - [`gemm`]: matrix multiplication on strided operands.
//! - [`reduce`]: vectorised sums and min/max over slices.
//! - [`conv`]: direct convolution, any stride, with a fused store (AVX-512
//!   or AVX2, picked at run time).
//! - [`winograd`]: 3×3 stride-1 convolution by Winograd F(2×2, 3×3) on the
//!   direct kernel's tile; [`winograd4`] the transforms of F(4×4, 3×3) for
//!   the same driver; [`winograd_few`] F(2×2) for maps of few tiles, the
//!   product transposed.

#[cfg(target_arch = "x86_64")]
mod avx512;
pub mod backward;
pub mod conv;
pub mod cpu;
pub mod gemm;
pub mod math;
pub mod norm;
mod pair_avx512;
pub mod parallel;
pub mod reduce;
pub mod rnn;
pub mod simd;
pub mod softmax;
mod softmax_avx512;
pub mod sync;
pub mod transpose;
pub mod winograd;
pub mod winograd4;
pub mod winograd_few;

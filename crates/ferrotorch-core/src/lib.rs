//! ferrotorch-core: the c10 and ATen layers of ferrotorch.
//!
//! | layer | here |
//! |---|---|
//! | storage (c10 `StorageImpl`, allocators) | [`storage`] |
//! | tensor (c10 `TensorImpl`) | [`tensor`], [`dtype`], [`scalar`], [`device`] |
//! | native ops (ATen) | [`native`] — methods on [`Tensor`] |
//! | dispatcher (c10 dispatcher) | [`dispatch`] |
//! | pointwise rows (`derivatives.yaml`, one value and derivative per op) | [`rows`] |
//! | autograd (`torch.autograd`) | [`autograd`] |
//!
//! Users depend on the `ferrotorch` facade crate rather than on this one.

// Pointwise bodies are written once and instantiated for every dtype,
// bool included, so `x > y` on bools and negated float comparisons (which
// must stay NaN-aware) are intended.
#![allow(clippy::bool_comparison, clippy::neg_cmp_op_on_partial_ord)]

pub mod amp;
pub mod autograd;
pub mod device;
pub mod dispatch;
pub mod dtype;
pub mod error;
#[cfg(unix)]
mod fork;
mod hash;
pub mod library;
#[cfg(unix)]
pub mod multiprocessing;
pub mod native;
pub mod profiler;
pub mod rows;
pub mod scalar;
pub mod storage;
pub mod tensor;

pub use device::Device;
pub use dtype::{
    get_default_dtype, promote_types, result_type, set_default_dtype, DType, ResultTypeArg,
};
pub use error::{Error, ErrorKind, Result};
pub use half::{bf16, f16};
pub use scalar::Scalar;
pub use tensor::memory_format::MemoryFormat;
pub use tensor::{tensor, Tensor, TensorOptions};

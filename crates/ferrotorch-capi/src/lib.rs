//! ferrotorch's C ABI, `crates/ferrotorch-c/include/ferrotorch.h`: the functions
//! that `libferrotorch_c` exports (Note [The C ABI's two crates]).
//!
//! Everything a C program (or Go, through cgo, or any language with a C
//! FFI) needs to build, train, save and run models: tensors, every
//! dispatcher op by name with boxed arguments and typed entry points for
//! the common ones, autograd, `nn` modules, optimizers and schedulers,
//! data loaders, state dicts and safetensors, saved programs, and DLPack.
//!
//! The rules, in brief (the header repeats them):
//! - every function that can fail returns an `FtStatus`, `FT_OK` (0) on
//!   success, and writes results through out-pointers; the message is
//!   `ft_last_error()`, per thread (Note [The C boundary]);
//! - handles are opaque and each is freed once with its `ft_*_free`;
//!   functions taking a handle borrow it, results are new handles the
//!   caller owns (Note [C handles]);
//! - nothing unwinds out of a call: a panic is `FT_ERROR_INTERNAL`.

#![allow(clippy::not_unsafe_ptr_arg_deref)]

pub mod autograd;
pub mod data;
pub mod dlpack;
mod handle;
pub mod nn;
pub mod ops;
pub mod optim;
pub mod plugin;
pub mod plugin_class;
mod procs;
pub mod script;
pub mod state;
pub mod status;
pub mod tensor;
pub mod value;

pub use procs::proc_names;

/// The library's version, `"0.1.0"` (static; never freed).
#[no_mangle]
pub extern "C" fn ft_version() -> *const std::ffi::c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr() as *const std::ffi::c_char
}

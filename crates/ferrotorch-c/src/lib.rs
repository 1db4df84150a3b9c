//! `libferrotorch_c`: ferrotorch's C ABI as a shared and a static library.
//!
//! The functions are ferrotorch-capi's (Note [The C ABI's two crates] in
//! its Cargo.toml); a cdylib or staticlib exports the `#[no_mangle]`
//! functions of the crates it is built from, so this crate only names it.
//! The header is `include/ferrotorch.h`.

pub use ferrotorch_capi::*;

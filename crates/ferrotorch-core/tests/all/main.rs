//! Every integration test of ferrotorch-core, linked into one binary.
//!
//! # Note [One test binary per crate]
//! Each file under `tests/` would otherwise become its own executable that
//! links the whole (large, unoptimised) core library: seventeen of them
//! filled CI's disk. The test files are modules of this one binary instead;
//! tests that seed the global generator share [`rng_lock`].

mod autocast;
mod autograd;
mod complex;
mod conv_prepack;
mod custom_classes;
mod custom_ops;
mod dispatch;
mod hardening;
mod linalg_special;
mod nn_kernels;
mod printing;
mod profiler;
mod random;
mod reference_ops;
mod shared_memory;
mod tensor_api;

/// Serialises tests that seed or draw from the global default generator.
pub fn rng_lock() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

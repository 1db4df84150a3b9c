//! The `ferrotorch` npm package's native add-on: tensors, every dispatcher
//! op, autograd and saved programs for Node.js, through N-API (napi-rs).
//!
//! The add-on exports a small core — tensor handles and their accessors
//! (Note [Tensor handles]), `_bindingOps` and the op-call function (every
//! op by id, Note [The op call path]), the `ScriptModule` class,
//! typed-array sharing, grad mode and `autograd.grad` — and `lib/*.js`
//! builds PyTorch's API in JavaScript's conventions from it: the `Tensor`
//! class, and each op as a function and, when its first argument is
//! `Tensor self`, a method, generated from the schemas at load (Note [One
//! binding layer] in the core).

// napi-rs registers #[napi] items only outside cfg(test): a test build of
// this library (clippy --all-targets) sees them unused
#![cfg_attr(test, allow(dead_code))]

mod autograd;
mod convert;
mod create;
mod errors;
mod js;
mod ops;
mod script;
mod slots;
mod tensor;

#[napi_derive::module_init]
fn init() {
    // nn.functional's ATen ops (activations, losses) are ops by name here too
    ferrotorch_nn::functional::register_ops();
    ferrotorch_core::dispatch::binding::register_test_ops_if_asked();
}

/// The package version.
#[napi_derive::napi]
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}

/// Node-API version this add-on is built against, read by Node at load.
/// Reporting `NAPI_VERSION_EXPERIMENTAL` makes Node run finalizers directly
/// from the garbage collector instead of on a later turn of the event loop
/// (Note [Finalizers in the collector]).
///
/// # Note [Finalizers in the collector]
/// Node ≥ 18.19/20.10 runs an add-on's finalizers during garbage
/// collection only when the add-on opts in this way; otherwise it queues
/// them for `setImmediate`, and a synchronous loop that drops tensors
/// (`for (...) { const t = ft.zeros([1024]) }`) never frees one until the
/// loop ends: 1,000,000 such tensors held 4.3 GB. Our finalizers only
/// release Rust memory and call GC-safe N-API functions
/// (`napi_adjust_external_memory`, `napi_delete_reference`), as the
/// experimental contract requires.
#[no_mangle]
pub extern "C" fn node_api_module_get_api_version_v1() -> i32 {
    i32::MAX
}

/// # Note [The add-on's allocator]
/// Every Rust allocation of the add-on (tensor headers, storages, the
/// handles of Note [Tensor handles]) goes through mimalloc, not glibc's
/// malloc. V8 collects small `Tensor`s only when its young generation
/// fills (about every 65,000 tensors with Node 20's defaults), and the
/// finalizers then free all of them, cold, in one batch: with glibc that
/// batch took 31 % of a 1-element `a.add(b)` loop (`unlink_chunk`,
/// `_int_malloc`, `malloc_consolidate`), and the call cost 2.3–2.4 µs; with
/// mimalloc 1.2–1.3 µs (BENCHMARKS.md, session 28). The add-on is loaded
/// with `dlopen`, so mimalloc's thread-locals must use the dynamic TLS
/// model (`local_dynamic_tls`): with the default initial-exec model the
/// loader refuses the library ("cannot allocate memory in static TLS
/// block"). Memory Node owns (`fromTypedArray`'s buffers) is never freed
/// by it.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

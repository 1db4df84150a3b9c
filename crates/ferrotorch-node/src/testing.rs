//! A test-only op that panics, registered only when the environment asks
//! (`FERROTORCH_TEST_OPS=1`), so the test suite can check that a panic in
//! a kernel reaches JavaScript as an `Error` and never unwinds into Node.

use ferrotorch_core::dispatch::{self, IValue};

/// Register `_test_panic(Tensor self, str message) -> Tensor` when
/// `FERROTORCH_TEST_OPS=1`.
pub(crate) fn register_if_asked() {
    if std::env::var("FERROTORCH_TEST_OPS").as_deref() != Ok("1") {
        return;
    }
    let schema = "_test_panic(Tensor self, str message) -> Tensor";
    let r = dispatch::register_op(
        schema,
        |a: &dispatch::Args| -> ferrotorch_core::Result<IValue> {
            let msg = a.opt_str(1)?.unwrap_or_default();
            panic!("{msg}")
        },
    );
    // registered once per process; a second load of the add-on finds it
    let _ = r;
}

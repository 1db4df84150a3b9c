//! What keeps this process's locks usable in a child made by `fork()`.
//!
//! # Note [Fork safety]
//! `fork()` copies one thread. A lock another thread held at that moment
//! stays held forever in the child, so the child's first allocation or
//! random draw would hang (Python's `multiprocessing` with the fork start
//! method, DataLoader workers). `pthread_atfork` handlers therefore take
//! the process-wide locks of this crate before the fork (in lock order:
//! the default generator, the shared-memory arena, the shared-file table,
//! the allocator cache) and release them after it in both processes. The
//! child also forgets the shared-memory arena it was filling: parent and
//! child would otherwise carve the same bytes of one shared file for
//! different tensors. The intra-op thread pool does the same for itself
//! (`ferrotorch_kernels::parallel`: the child starts a new pool, its
//! parent's helper threads do not exist there). The handlers are installed
//! the first time the allocator's cache or shared memory is used.

use std::sync::Once;

/// Install the handlers (once per process).
pub(crate) fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: three extern "C" functions that only lock and unlock.
        unsafe { libc::pthread_atfork(Some(prepare), Some(parent), Some(child)) };
    });
}

extern "C" fn prepare() {
    crate::native::random::fork_lock();
    crate::storage::shared::fork_lock();
    crate::storage::fork_lock_cache();
}

extern "C" fn parent() {
    crate::storage::fork_unlock_cache();
    crate::storage::shared::fork_unlock(false);
    crate::native::random::fork_unlock();
}

extern "C" fn child() {
    crate::storage::fork_unlock_cache();
    crate::storage::shared::fork_unlock(true);
    crate::native::random::fork_unlock();
}

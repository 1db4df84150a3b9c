//! A lock that a child made by `fork()` can reset.
//!
//! # Note [Locks across fork]
//! A process-wide lock that `fork()` may copy while another thread holds it
//! must be taken before the fork and released after it in both processes
//! (`pthread_atfork`). parking_lot's locks cannot be released that way in
//! the child: a thread of the parent parked on the lock is still in
//! parking_lot's queue there, and the unlock hands the lock over to that
//! thread (its eventual fairness) — which does not exist in the child, so
//! the child's next lock hangs. [`ForkLock`] is a spin-then-yield lock over
//! one atomic flag: releasing it is one store, whoever waits, so it is
//! safe in the child. It guards the few short critical sections that must
//! survive fork: the intra-op pool's handle, the allocator's cache, the
//! shared-memory tables and the default generator.

use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, Ordering};

/// A mutual-exclusion lock that can be held across `fork()` and released
/// in the child (Note [Locks across fork]).
pub struct ForkLock<T> {
    locked: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: the value is reached only through a guard, one at a time.
unsafe impl<T: Send> Sync for ForkLock<T> {}
unsafe impl<T: Send> Send for ForkLock<T> {}

/// Access to a [`ForkLock`]'s value; unlocks on drop.
pub struct ForkLockGuard<'a, T> {
    lock: &'a ForkLock<T>,
}

impl<T> ForkLock<T> {
    /// A new, unlocked lock.
    pub const fn new(value: T) -> ForkLock<T> {
        ForkLock {
            locked: AtomicBool::new(false),
            value: UnsafeCell::new(value),
        }
    }

    /// Take the lock, spinning briefly and then yielding while another
    /// thread holds it.
    pub fn lock(&self) -> ForkLockGuard<'_, T> {
        let mut spins = 0u32;
        while self
            .locked
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            spins += 1;
            if spins < 64 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
        ForkLockGuard { lock: self }
    }

    /// Take the lock and keep it until [`ForkLock::fork_release`] (a
    /// `pthread_atfork` prepare handler).
    pub fn fork_hold(&self) {
        std::mem::forget(self.lock());
    }

    /// Release a lock taken by [`ForkLock::fork_hold`], in the parent or the
    /// child of the fork.
    ///
    /// # Safety
    /// The lock must be held by `fork_hold` on this thread, with no guard
    /// alive.
    pub unsafe fn fork_release(&self) {
        self.locked.store(false, Ordering::Release);
    }
}

impl<T> Deref for ForkLockGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard holds the lock.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> DerefMut for ForkLockGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard holds the lock.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T> Drop for ForkLockGuard<'_, T> {
    fn drop(&mut self) {
        self.lock.locked.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn counts_under_contention_and_releases_after_a_hold() {
        let l = Arc::new(ForkLock::new(0u64));
        let hs: Vec<_> = (0..4)
            .map(|_| {
                let l = l.clone();
                std::thread::spawn(move || {
                    for _ in 0..10_000 {
                        *l.lock() += 1;
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(*l.lock(), 40_000);
        l.fork_hold();
        // SAFETY: held by fork_hold just above.
        unsafe { l.fork_release() };
        *l.lock() += 1;
        assert_eq!(*l.lock(), 40_001);
    }
}

//! Opaque handles: how a Rust value crosses the boundary and comes back.
//!
//! # Note [C handles]
//! A handle (`FtTensor*`, `FtModule*`, ...) is a pointer to a slot holding
//! one reference to a Rust value (a `Tensor` is itself reference-counted:
//! `ft_tensor_clone` makes a second handle to the same tensor, and each
//! handle is freed once). A slot starts with a tag saying which kind of
//! handle it is and whether it is live. Freeing a handle drops the value
//! and marks the slot freed, and the slot's memory is kept in a pool for
//! the next handle of its kind, never given back to the allocator, so
//! reading the tag of a freed handle is defined: a double free, a freed
//! handle or a handle of the wrong kind is `FT_ERROR_INVALID_HANDLE`, and a
//! null one `FT_ERROR_NULL_HANDLE`, in every build. (A freed slot reused by
//! a later handle cannot be told from it; that is the price of handles as
//! cheap as a pointer.) Debug builds also keep the set of every live handle,
//! so a pointer that was never a handle is caught too instead of read.
//! Handles may be used from any thread; freeing one while another thread
//! still uses it is the caller's bug, as with any C API.

use crate::status::{Fail, FtStatus, Res};
use parking_lot::Mutex;
use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicU32, Ordering};

/// A freed slot's tag: the kind's tag with this bit cleared.
const LIVE_BIT: u32 = 0x8000_0000;

/// One handle's memory: its tag and (while live) its value.
pub struct Slot<T> {
    tag: AtomicU32,
    value: UnsafeCell<MaybeUninit<T>>,
}

// SAFETY: the value is only reached through `get` (shared) and `free`
// (exclusive, after the tag's compare-exchange wins); T is Send + Sync.
unsafe impl<T: Send + Sync> Sync for Slot<T> {}

/// A kind of handle: its tag, its C name, and its pool of freed slots.
pub trait Kind: Sized + Send + Sync + 'static {
    /// What the handle holds.
    type Value: Send + Sync + 'static;
    /// The C type's name, for messages (`FtTensor`).
    const NAME: &'static str;
    /// This kind's tag (without the live bit).
    const TAG: u32;
    /// The freed slots.
    fn pool() -> &'static Mutex<Vec<usize>>;
    /// The slot behind a handle of this kind.
    fn slot(h: *const Self) -> *const Slot<Self::Value> {
        h as *const Slot<Self::Value>
    }
}

#[cfg(debug_assertions)]
static LIVE: Mutex<Option<std::collections::HashSet<usize>>> = Mutex::new(None);

/// A new handle holding `value` (Note [C handles]).
pub fn new_handle<K: Kind>(value: K::Value) -> *mut K {
    let reused = K::pool().lock().pop();
    let slot = match reused {
        Some(addr) => addr as *mut Slot<K::Value>,
        None => Box::into_raw(Box::new(Slot {
            tag: AtomicU32::new(K::TAG),
            value: UnsafeCell::new(MaybeUninit::uninit()),
        })),
    };
    // SAFETY: the slot is ours alone: fresh, or popped from the pool
    // (freed, so no handle to it is live).
    unsafe {
        (*(*slot).value.get()).write(value);
        (*slot).tag.store(K::TAG | LIVE_BIT, Ordering::Release);
    }
    #[cfg(debug_assertions)]
    LIVE.lock()
        .get_or_insert_with(Default::default)
        .insert(slot as usize);
    slot as *mut K
}

fn check<K: Kind>(what: &str, h: *const K) -> Res<*const Slot<K::Value>> {
    if h.is_null() {
        return Err(Fail::new(
            FtStatus::FtErrorNullHandle,
            format!("{what}: got a null {}", K::NAME),
        ));
    }
    let slot = K::slot(h);
    #[cfg(debug_assertions)]
    {
        let known = LIVE
            .lock()
            .as_ref()
            .is_some_and(|s| s.contains(&(slot as usize)));
        let pooled = K::pool().lock().contains(&(slot as usize));
        if !known && !pooled {
            return Err(Fail::new(
                FtStatus::FtErrorInvalidHandle,
                format!("{what}: {h:p} is not a live {} handle", K::NAME),
            ));
        }
    }
    // SAFETY: slots are never deallocated (Note [C handles]), so a pointer
    // that was ever a handle can be read.
    let tag = unsafe { (*slot).tag.load(Ordering::Acquire) };
    if tag != K::TAG | LIVE_BIT {
        let why = if tag == K::TAG {
            "was already freed"
        } else {
            "is a different kind of handle"
        };
        return Err(Fail::new(
            FtStatus::FtErrorInvalidHandle,
            format!("{what}: this {} {why}", K::NAME),
        ));
    }
    Ok(slot)
}

/// The value behind a live handle, or an error naming `what`.
pub fn get<'a, K: Kind>(what: &str, h: *const K) -> Res<&'a K::Value> {
    let slot = check(what, h)?;
    // SAFETY: live (checked), so initialised; freed only by `free`, which
    // the caller must not race with (Note [C handles]).
    Ok(unsafe { (*(*slot).value.get()).assume_init_ref() })
}

/// Free a handle: drop its value and pool its slot. Null is allowed
/// (nothing to do), as with C's `free`.
pub fn free<K: Kind>(what: &str, h: *mut K) -> Res<()> {
    if h.is_null() {
        return Ok(());
    }
    let slot = check(what, h)?;
    // SAFETY: as in `check`; the compare-exchange makes exactly one
    // caller the freer of a live slot.
    let won = unsafe {
        (*slot)
            .tag
            .compare_exchange(
                K::TAG | LIVE_BIT,
                K::TAG,
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_ok()
    };
    if !won {
        return Err(Fail::new(
            FtStatus::FtErrorInvalidHandle,
            format!("{what}: this {} was already freed", K::NAME),
        ));
    }
    #[cfg(debug_assertions)]
    if let Some(s) = LIVE.lock().as_mut() {
        s.remove(&(slot as usize));
    }
    // SAFETY: we won the slot; its value is initialised and dropped once.
    unsafe { (*(*slot).value.get()).assume_init_drop() };
    K::pool().lock().push(slot as usize);
    Ok(())
}

/// Make `$name` (an opaque type declared beside it, so that cbindgen sees
/// it) a handle kind whose slots hold `$value`.
macro_rules! handle_kind {
    ($name:ident, $value:ty, $tag:expr) => {
        impl $crate::handle::Kind for $name {
            type Value = $value;
            const NAME: &'static str = stringify!($name);
            const TAG: u32 = $tag;
            fn pool() -> &'static parking_lot::Mutex<Vec<usize>> {
                static POOL: parking_lot::Mutex<Vec<usize>> = parking_lot::Mutex::new(Vec::new());
                &POOL
            }
        }
    };
}
pub(crate) use handle_kind;

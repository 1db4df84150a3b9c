//! The table of tensors that JavaScript `Tensor` objects hold (Note
//! [Tensor handles] in `tensor.rs`): a `Tensor`'s `_h` is the index of its
//! slot here, on the JavaScript thread that made it.
//!
//! # Note [Slot reentrancy]
//! The table is a thread-local `RefCell`, borrowed only for a push, a pop
//! or a clone, never across an N-API call: finalizers run inside V8's
//! collector (Note [Finalizers in the collector]), which may start in any
//! N-API call, and they free slots. A tensor taken out of the table is
//! dropped after the borrow ends (dropping storage shared with a
//! TypedArray releases an N-API reference). Should a finalizer still find
//! the table borrowed, it queues the slot, and the next insert frees it.

use ferrotorch_core::Tensor as Core;
use std::cell::{Cell, RefCell};

/// What a slot holds: the tensor (`None` once disposed) and the bytes
/// reported to V8 for it (Note [Tensor memory in V8]).
struct Handle {
    t: Option<Core>,
    bytes: i64,
}

#[derive(Default)]
struct Slots {
    items: Vec<Option<Handle>>,
    vacant: Vec<u32>,
}

thread_local! {
    static SLOTS: RefCell<Slots> = RefCell::new(Slots::default());
    /// Slots whose finalizer found the table borrowed (Note [Slot
    /// reentrancy]).
    static DEFERRED: Cell<Vec<u32>> = const { Cell::new(Vec::new()) };
}

/// What a slot index names.
pub(crate) enum Lookup {
    /// A live tensor (a new reference to it).
    Live(Core),
    /// A tensor that `dispose()` freed.
    Disposed,
    /// No tensor: not a slot index, or a vacant slot.
    Missing,
}

/// A new slot holding `t`; the change of memory to report to V8: `t`'s
/// bytes, less those of slots whose freeing was deferred (Note [Slot
/// reentrancy]).
pub(crate) fn insert(t: Core) -> (u32, i64) {
    let bytes = (t.numel() * t.element_size()) as i64;
    let deferred = DEFERRED.with(Cell::take);
    let (id, freed) = SLOTS.with(|s| {
        let mut s = s.borrow_mut();
        let mut freed = Vec::with_capacity(deferred.len());
        for d in deferred {
            if let Some(h) = s.items[d as usize].take() {
                freed.push(h);
                s.vacant.push(d);
            }
        }
        let h = Some(Handle { t: Some(t), bytes });
        let id = match s.vacant.pop() {
            Some(i) => {
                s.items[i as usize] = h;
                i
            }
            None => {
                s.items.push(h);
                (s.items.len() - 1) as u32
            }
        };
        (id, freed)
    });
    let freed_bytes: i64 = freed.iter().map(|h| h.bytes).sum();
    drop(freed);
    (id, bytes - freed_bytes)
}

/// The table index a JavaScript number names, if it can name one.
fn index(id: f64) -> Option<usize> {
    (id >= 0.0 && id < u32::MAX as f64 && id.fract() == 0.0).then_some(id as usize)
}

/// The tensor in slot `id`.
pub(crate) fn get(id: f64) -> Lookup {
    let Some(i) = index(id) else {
        return Lookup::Missing;
    };
    SLOTS.with(|s| match s.borrow().items.get(i) {
        Some(Some(Handle { t: Some(t), .. })) => Lookup::Live(t.clone()),
        Some(Some(Handle { t: None, .. })) => Lookup::Disposed,
        _ => Lookup::Missing,
    })
}

/// Free slot `id`'s tensor now, keeping the slot (its object may still be
/// used, and throws); the bytes to take back from V8, if it held one.
pub(crate) fn dispose(id: f64) -> Option<i64> {
    let i = index(id)?;
    let (t, bytes) = SLOTS.with(|s| {
        let mut s = s.borrow_mut();
        let h = s.items.get_mut(i)?.as_mut()?;
        let t = h.t.take()?;
        Some((t, std::mem::take(&mut h.bytes)))
    })?;
    drop(t); // after the borrow (Note [Slot reentrancy])
    Some(bytes)
}

/// Free slot `id` (its object was collected); the bytes to take back
/// from V8 (none yet if the freeing is deferred: Note [Slot reentrancy]).
pub(crate) fn remove(id: u32) -> i64 {
    let taken = SLOTS.with(|s| {
        let mut s = s.try_borrow_mut().ok()?;
        let h = s.items.get_mut(id as usize).and_then(Option::take);
        if h.is_some() {
            s.vacant.push(id);
        }
        Some(h)
    });
    match taken {
        Some(h) => h.map_or(0, |h| h.bytes),
        None => {
            DEFERRED.with(|d| {
                let mut v = d.take();
                v.push(id);
                d.set(v);
            });
            0
        }
    }
}

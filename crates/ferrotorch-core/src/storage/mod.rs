//! Storage: a refcounted byte buffer plus how to free it (c10 `StorageImpl`).
//!
//! Tensors never own memory directly: they point into a [`Storage`] with an
//! offset, sizes and strides, and views share one storage. The storage also
//! carries the version counter of Note [Version counter] and the lock of
//! Note [Storage access locks].

mod alloc;
pub mod shared;

pub use alloc::{
    cache_hits, cache_limit, cached_bytes, empty_cache, set_cache_limit, zero_fresh, ALIGNMENT,
};
#[cfg(unix)]
pub(crate) use alloc::{fork_lock_cache, fork_unlock_cache};

use crate::device::Device;
use crate::error::Result;
use parking_lot::lock_api::{RawRwLock as _, RawRwLockRecursive as _};
use parking_lot::RawRwLock;
use shared::SharedFile;
use std::cell::UnsafeCell;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};
use std::sync::Arc;

enum Owner {
    /// From the caching CPU allocator, with its rounded block size.
    Cached(usize),
    /// Someone else's memory, released by running the deleter.
    External(Option<Box<dyn FnOnce() + Send + Sync>>),
    /// Part of a shared-memory file, at this byte offset (Note [Shared
    /// memory]).
    Shared(Arc<SharedFile>, usize),
}

impl Owner {
    /// Give the memory at `ptr` back.
    fn release(&mut self, ptr: NonNull<u8>) {
        match self {
            // SAFETY: allocated by `alloc::allocate` with this size.
            Owner::Cached(size) => unsafe { alloc::release(ptr, *size) },
            Owner::External(del) => {
                if let Some(d) = del.take() {
                    d()
                }
            }
            Owner::Shared(..) => {} // the file's Arc unmaps it when last
        }
    }
}

struct StorageImpl {
    /// The first byte: fixed, but for the one move into shared memory
    /// (Note [Moving a storage into shared memory]).
    ptr: AtomicPtr<u8>,
    nbytes: usize,
    /// Who frees `ptr`; replaced only under the exclusive storage lock.
    owner: UnsafeCell<Owner>,
    /// A buffer this storage left for shared memory while a raw pointer to
    /// it was out (Note [Moving a storage into shared memory]).
    retired: UnsafeCell<Option<(NonNull<u8>, Owner)>>,
    /// Whether a raw pointer to the memory was handed to foreign code.
    exported: AtomicBool,
    shared: AtomicBool,
    device: Device,
    version: AtomicU64,
    lock: RawRwLock,
    resizable: bool,
    readonly: bool,
    /// Creation order (Note [Storage serials]).
    serial: u64,
}

/// # Note [Storage serials]
/// Each storage takes a number from one process-wide counter when it is
/// made, so "was this memory made after point P" is one comparison. The
/// tracer uses it to tell a tensor an unrecorded op made during the trace
/// (it would be baked into the graph as a constant: reported) from one that
/// existed before (a genuine constant).
static NEXT_SERIAL: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

// SAFETY: the buffer is plain bytes; concurrent access goes through the
// storage lock (Note [Storage access locks]), and the deleter is Send + Sync.
unsafe impl Send for StorageImpl {}
unsafe impl Sync for StorageImpl {}

impl Drop for StorageImpl {
    fn drop(&mut self) {
        let ptr = NonNull::new(*self.ptr.get_mut()).expect("storage pointers are non-null");
        self.owner.get_mut().release(ptr);
        if let Some((p, mut owner)) = self.retired.get_mut().take() {
            owner.release(p);
        }
    }
}

/// A refcounted buffer of bytes. Cloning shares it.
///
/// # Note [Version counter]
/// Every in-place write to any view of a storage bumps its version counter.
/// Autograd records the version of each tensor it saves for backward and
/// refuses to run a backward that would read a tensor modified since.
///
/// # Note [Storage access locks]
/// Views let several tensors, on several threads, alias one buffer. A kernel
/// takes the storage's read lock for each input and the write lock for its
/// output (all in address order, see [`lock_storages`]), so two threads
/// writing the same memory are serialised instead of racing. Locks are only
/// held around the innermost kernel, never across op calls.
#[derive(Clone)]
pub struct Storage(Arc<StorageImpl>);

impl Storage {
    /// Allocate `nbytes` of uninitialised host memory from the caching
    /// allocator. Fails cleanly when the size is impossible.
    pub fn new_uninit(nbytes: usize) -> Result<Storage> {
        let Some((ptr, size)) = alloc::allocate(nbytes) else {
            crate::bail!(
                Runtime,
                "DefaultCPUAllocator: can't allocate memory: you tried to allocate {nbytes} bytes. Error code 12 (Cannot allocate memory)"
            );
        };
        Ok(Storage::from_impl(ptr, nbytes, Owner::Cached(size), true))
    }

    /// Allocate `nbytes` of zeroed host memory.
    pub fn new_zeroed(nbytes: usize) -> Result<Storage> {
        let s = Storage::new_uninit(nbytes)?;
        // SAFETY: the block holds at least nbytes.
        unsafe { std::ptr::write_bytes(s.data_ptr(), 0, nbytes) };
        Ok(s)
    }

    /// Wrap memory that someone else owns. `deleter` runs when the last
    /// tensor using it is dropped (zero-copy NumPy and DLPack use this).
    ///
    /// # Safety
    /// `ptr` must be valid for reads and writes of `nbytes` bytes, suitably
    /// aligned for the dtype it will be viewed as, until `deleter` runs.
    pub unsafe fn from_external(
        ptr: NonNull<u8>,
        nbytes: usize,
        deleter: impl FnOnce() + Send + Sync + 'static,
    ) -> Storage {
        Storage::from_impl(ptr, nbytes, Owner::External(Some(Box::new(deleter))), false)
    }

    /// Wrap memory that someone else owns and that must not be written
    /// (a read-only NumPy array, a memory-mapped file opened read-only,
    /// `bytes`). See Note [Read-only storage].
    ///
    /// # Safety
    /// `ptr` must be valid for reads of `nbytes` bytes, suitably aligned for
    /// the dtype it will be viewed as, until `deleter` runs.
    pub unsafe fn from_external_readonly(
        ptr: NonNull<u8>,
        nbytes: usize,
        deleter: impl FnOnce() + Send + Sync + 'static,
    ) -> Storage {
        let mut s =
            Storage::from_impl(ptr, nbytes, Owner::External(Some(Box::new(deleter))), false);
        Arc::get_mut(&mut s.0).expect("fresh storage").readonly = true;
        s
    }

    fn from_impl(ptr: NonNull<u8>, nbytes: usize, owner: Owner, resizable: bool) -> Storage {
        let shared = matches!(owner, Owner::Shared(..));
        Storage(Arc::new(StorageImpl {
            ptr: AtomicPtr::new(ptr.as_ptr()),
            nbytes,
            owner: UnsafeCell::new(owner),
            retired: UnsafeCell::new(None),
            exported: AtomicBool::new(false),
            shared: AtomicBool::new(shared),
            device: Device::Cpu,
            version: AtomicU64::new(0),
            lock: RawRwLock::INIT,
            resizable,
            readonly: false,
            serial: NEXT_SERIAL.fetch_add(1, Ordering::Relaxed),
        }))
    }

    /// When this storage was made, in creation order (Note [Storage
    /// serials]).
    pub fn serial(&self) -> u64 {
        self.0.serial
    }

    /// The serial the next storage will get.
    pub fn next_serial() -> u64 {
        NEXT_SERIAL.load(Ordering::Relaxed)
    }

    /// Whether the memory may not be written (Note [Read-only storage]).
    pub fn is_readonly(&self) -> bool {
        self.0.readonly
    }

    /// An error for `op` writing in place into read-only memory.
    ///
    /// # Note [Read-only storage]
    /// A tensor that views memory its owner declared read-only (a NumPy
    /// array with `writeable=False`, `np.load(..., mmap_mode='r')`,
    /// `np.frombuffer(bytes)`) has read-only storage: every in-place op
    /// checks this before it writes (through the in-place checks of the
    /// autograd layer and the kernels' own, and the optimizers' slice
    /// access), so such memory is never written — PyTorch only warns and
    /// then writes or crashes. Out-of-place ops, views and `clone()` work as
    /// usual; a clone is writable.
    pub fn check_writable(&self, op: &str) -> Result<()> {
        crate::ensure!(
            !self.0.readonly,
            Runtime,
            "{op}: the tensor is read-only (it views memory that its owner marked read-only, such as a non-writeable NumPy array); clone() it before writing in place"
        );
        Ok(())
    }

    /// Address of the first byte. Read it while holding the storage's
    /// lock (Note [Storage access locks]); code that hands the address to
    /// foreign code calls [`Storage::mark_exported`].
    pub fn data_ptr(&self) -> *mut u8 {
        self.0.ptr.load(Ordering::Acquire)
    }

    /// Record that the address was handed to foreign code (NumPy, DLPack,
    /// a JavaScript typed array, a C caller) that may keep using it without
    /// the storage's lock (Note [Moving a storage into shared memory]).
    pub fn mark_exported(&self) {
        self.0.exported.store(true, Ordering::Relaxed);
    }

    /// Whether [`Storage::mark_exported`] was called: foreign code may
    /// write the memory without bumping the version counter.
    pub fn is_exported(&self) -> bool {
        self.0.exported.load(Ordering::Relaxed)
    }

    /// Size in bytes.
    pub fn nbytes(&self) -> usize {
        self.0.nbytes
    }

    /// The device the memory is on.
    pub fn device(&self) -> Device {
        self.0.device
    }

    /// Whether the allocator owns the memory (false for external memory).
    pub fn resizable(&self) -> bool {
        self.0.resizable && !self.is_shared()
    }

    /// The current version (Note [Version counter]).
    pub fn version(&self) -> u64 {
        self.0.version.load(Ordering::Acquire)
    }

    /// Record an in-place write (Note [Version counter]).
    pub fn bump_version(&self) {
        // every writer checks first (Note [Read-only storage])
        debug_assert!(!self.0.readonly, "a write reached read-only storage");
        self.0.version.fetch_add(1, Ordering::AcqRel);
    }

    /// Whether the memory is in a shared-memory file (Note [Shared memory]).
    pub fn is_shared(&self) -> bool {
        self.0.shared.load(Ordering::Acquire)
    }

    /// A new storage of `nbytes` zeroed bytes in shared memory.
    pub fn new_shared(nbytes: usize) -> Result<Storage> {
        let (file, offset) = shared::allocate(nbytes)?;
        Ok(Storage::in_file(file, offset, nbytes))
    }

    /// A storage over `nbytes` of a shared file from `offset` on (a file
    /// received from another process: the range is checked against it).
    pub fn from_shared(file: Arc<SharedFile>, offset: usize, nbytes: usize) -> Result<Storage> {
        crate::ensure!(
            offset
                .checked_add(nbytes)
                .is_some_and(|end| end <= file.len()),
            Runtime,
            "shared memory: a storage of {nbytes} bytes at offset {offset} does not fit in its file of {} bytes",
            file.len()
        );
        crate::ensure!(
            offset.is_multiple_of(ALIGNMENT),
            Runtime,
            "shared memory: a storage at offset {offset} is not aligned to {ALIGNMENT} bytes"
        );
        Ok(Storage::in_file(file, offset, nbytes))
    }

    fn in_file(file: Arc<SharedFile>, offset: usize, nbytes: usize) -> Storage {
        // SAFETY: offset + nbytes lies inside the mapping (checked by the
        // callers), so the address is inside it or one past a full one.
        let ptr = unsafe { NonNull::new_unchecked(file.base().as_ptr().add(offset)) };
        Storage::from_impl(ptr, nbytes, Owner::Shared(file, offset), false)
    }

    /// The shared file and byte offset this storage lives at, if shared
    /// (`UntypedStorage._share_fd_cpu_`'s answer; PyTorch's
    /// `MapAllocator::fromDataPtr`).
    pub fn shared_file(&self) -> Option<(Arc<SharedFile>, usize)> {
        if !self.is_shared() {
            return None;
        }
        let _g = lock_storages(&[self], &[]);
        // SAFETY: the owner is replaced only under the exclusive lock,
        // and we hold the shared one.
        match unsafe { &*self.0.owner.get() } {
            Owner::Shared(f, off) => Some((f.clone(), *off)),
            _ => None,
        }
    }

    /// Move the bytes into shared memory, in place: every tensor and view
    /// over this storage sees the shared copy, and the version counter is
    /// unchanged (the values are). A no-op when already shared.
    ///
    /// # Note [Moving a storage into shared memory]
    /// `share_memory_()` is in place, as in PyTorch: the storage object
    /// stays, and its address and owner change once, under the storage's
    /// exclusive lock, so no kernel is running over it (kernels read the
    /// address only while they hold its lock). The old buffer is freed —
    /// unless the address had been handed to foreign code that reads it
    /// without our locks (a NumPy array from `t.numpy()`, a DLPack
    /// capsule, a JavaScript typed array, a C caller of the data pointer):
    /// then it is kept until the storage dies, so such a reader sees the
    /// values as of the move instead of freed memory. (PyTorch frees it.)
    /// A read-only storage cannot move (its owner forbade writes, and the
    /// move is a write of the new copy). The bytes of a storage shared with
    /// other processes are not resized.
    pub fn share_memory_(&self) -> Result<()> {
        if self.is_shared() {
            return Ok(());
        }
        self.check_writable("share_memory_")?;
        let (file, offset) = shared::allocate(self.0.nbytes)?;
        let _g = lock_storages(&[], &[self]);
        if self.is_shared() {
            return Ok(()); // another thread moved it first
        }
        let old = self.data_ptr();
        // SAFETY: offset + nbytes lies inside the new file (allocate).
        let new = unsafe { file.base().as_ptr().add(offset) };
        // In parallel: the new file's pages fault in as they are first
        // written, and faulting is most of the cost (64 MiB: ~40 ms of
        // faults, ~7 ms of copying on one thread), so each thread of the
        // pool faults its own part (as PyTorch's parallel copy_ does).
        let (src, dst) = (old as usize, new as usize);
        ferrotorch_kernels::parallel::parallel_for(self.0.nbytes, 1 << 21, |r| {
            // SAFETY: both ranges hold nbytes, are distinct memory, and no
            // kernel touches the old one (we hold the exclusive lock); the
            // chunks are disjoint.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    (src + r.start) as *const u8,
                    (dst + r.start) as *mut u8,
                    r.len(),
                )
            }
        });
        // SAFETY: owner and retired change only under the exclusive lock.
        let owner = unsafe { &mut *self.0.owner.get() };
        let old_owner = std::mem::replace(owner, Owner::Shared(file, offset));
        self.0.ptr.store(new, Ordering::Release);
        self.0.shared.store(true, Ordering::Release);
        let old = NonNull::new(old).expect("storage pointers are non-null");
        if self.0.exported.load(Ordering::Relaxed) {
            // SAFETY: as above.
            unsafe { *self.0.retired.get() = Some((old, old_owner)) };
        } else {
            let mut o = old_owner;
            o.release(old);
        }
        Ok(())
    }

    /// A handle that does not keep the storage alive.
    pub fn downgrade(&self) -> WeakStorage {
        WeakStorage(Arc::downgrade(&self.0))
    }

    /// Whether two handles share one buffer.
    pub fn is_same(&self, other: &Storage) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// Number of handles to this storage (tensors and views using it).
    pub fn use_count(&self) -> usize {
        Arc::strong_count(&self.0)
    }
}

/// A [`Storage`] handle that does not keep it alive.
pub struct WeakStorage(std::sync::Weak<StorageImpl>);

impl WeakStorage {
    /// The storage, if it is still alive.
    pub fn upgrade(&self) -> Option<Storage> {
        self.0.upgrade().map(Storage)
    }

    /// Whether the storage is still alive.
    pub fn alive(&self) -> bool {
        self.0.strong_count() > 0
    }
}

/// An empty `Vec` with room for `n` values, or the CPU allocator's
/// out-of-memory error instead of an abort: every host buffer whose size a
/// user's argument decides (`randperm(n)`, `multinomial(.., n)`,
/// `repeat_interleave(n)`) is reserved through this or [`Storage::new_uninit`].
pub fn try_vec<T>(n: usize) -> Result<Vec<T>> {
    let mut v = Vec::new();
    if v.try_reserve_exact(n).is_err() {
        crate::bail!(
            Runtime,
            "DefaultCPUAllocator: can't allocate memory: you tried to allocate {} bytes. Error code 12 (Cannot allocate memory)",
            (n as u128) * std::mem::size_of::<T>() as u128
        );
    }
    Ok(v)
}

impl std::fmt::Debug for Storage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Storage({:p}, {} bytes)", self.data_ptr(), self.nbytes())
    }
}

/// Held storage locks; released on drop.
pub struct AccessGuard<'a> {
    held: smallvec::SmallVec<[(&'a RawRwLock, bool); 4]>,
}

impl Drop for AccessGuard<'_> {
    fn drop(&mut self) {
        for (l, exclusive) in self.held.drain(..) {
            // SAFETY: each lock was acquired in `lock_storages` in this mode.
            unsafe {
                if exclusive {
                    l.unlock_exclusive()
                } else {
                    l.unlock_shared()
                }
            }
        }
    }
}

/// Lock storages for one kernel: `reads` shared, `writes` exclusive; a
/// storage in both is locked once, exclusively. Locks are taken in address
/// order so that concurrent kernels cannot deadlock.
/// See Note [Storage access locks].
pub fn lock_storages<'a>(reads: &[&'a Storage], writes: &[&'a Storage]) -> AccessGuard<'a> {
    // (address, write?) sorted writes-first per address; ops lock one to
    // four storages, so an insertion sort over an inline array is cheapest.
    let mut all: smallvec::SmallVec<[(usize, &'a StorageImpl, bool); 4]> = reads
        .iter()
        .map(|s| (&*s.0, false))
        .chain(writes.iter().map(|s| (&*s.0, true)))
        .map(|(s, w)| (s as *const StorageImpl as usize, s, w))
        .collect();
    for i in 1..all.len() {
        let mut j = i;
        while j > 0 && (all[j - 1].0, !all[j - 1].2) > (all[j].0, !all[j].2) {
            all.swap(j - 1, j);
            j -= 1;
        }
    }
    let mut held: smallvec::SmallVec<[(&'a RawRwLock, bool); 4]> = smallvec::SmallVec::new();
    let mut last: usize = 0;
    for (addr, s, w) in all {
        if addr == last {
            continue; // already locked, in the strongest mode needed (sorted writes first)
        }
        last = addr;
        if w {
            s.lock.lock_exclusive();
        } else {
            s.lock.lock_shared_recursive();
        }
        held.push((&s.lock, w));
    }
    AccessGuard { held }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;

    #[test]
    fn blocks_are_aligned_and_reused() {
        let a = Storage::new_uninit(1 << 20).unwrap();
        assert_eq!(a.data_ptr() as usize % ALIGNMENT, 0);
        let p = a.data_ptr();
        drop(a);
        let hits = cache_hits();
        let b = Storage::new_uninit(1 << 20).unwrap();
        assert!(cache_hits() > hits);
        // another thread may take the block first; only equal when reused
        if b.data_ptr() == p {
            assert_eq!(b.nbytes(), 1 << 20);
        }
        let z = Storage::new_zeroed(100).unwrap();
        let s = unsafe { std::slice::from_raw_parts(z.data_ptr(), 100) };
        assert!(s.iter().all(|&b| b == 0));
    }

    #[test]
    fn impossible_sizes_are_errors() {
        assert!(Storage::new_uninit(usize::MAX - 10).is_err());
    }

    #[test]
    fn external_memory_runs_its_deleter_once() {
        static FREED: AtomicBool = AtomicBool::new(false);
        let mut buf = vec![1u8; 16].into_boxed_slice();
        let p = NonNull::new(buf.as_mut_ptr()).unwrap();
        let s = unsafe { Storage::from_external(p, 16, || FREED.store(true, Ordering::SeqCst)) };
        let s2 = s.clone();
        drop(s);
        assert!(!FREED.load(Ordering::SeqCst));
        assert_eq!(s2.data_ptr(), buf.as_mut_ptr());
        drop(s2);
        assert!(FREED.load(Ordering::SeqCst));
    }

    #[test]
    fn lock_storages_dedups_and_versions_count() {
        let a = Storage::new_uninit(8).unwrap();
        let b = a.clone();
        {
            let _g = lock_storages(&[&a, &b], &[&a]);
        }
        let _g2 = lock_storages(&[&a], &[]);
        assert_eq!(a.version(), 0);
        b.bump_version();
        assert_eq!(a.version(), 1);
    }
}

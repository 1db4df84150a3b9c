//! Shared-memory files: the memory behind shared storage, and how a file
//! received from another process is checked and mapped.
//!
//! # Note [Shared memory]
//! `share_memory_()` moves a storage into a *shared file*: on Linux an
//! anonymous memory file (`memfd_create`), which has no name anywhere, so
//! nothing can leak in `/dev/shm` (or fill a 64 MB `/dev/shm` in a
//! container): the kernel frees it when the last process holding a
//! descriptor or a mapping of it exits, however it exits (SIGKILL
//! included). Elsewhere on Unix the fallback is a POSIX shared-memory
//! object that is unlinked the moment it is opened, which has the same
//! lifetime once open. A process hands a file to another as a file
//! descriptor over a Unix socket (`SCM_RIGHTS`, see `crate::multiprocessing`);
//! the receiver maps the same pages, so writes on either side are seen by
//! the other.
//!
//! Small storages (up to [`ARENA_OBJECT_MAX`] bytes) are carved out of
//! arenas of [`ARENA_BYTES`] bytes, so 100,000 small shared tensors hold a
//! few hundred descriptors and mappings, not 100,000 of each (the fd and
//! `vm.max_map_count` limits PyTorch's users hit). An arena lives while any
//! storage in it does; its space is not reused before that. Larger
//! storages get a file each. A receiver maps a whole file once and shares
//! the mapping among all tensors it receives from that file: files are
//! known by their (device, inode), so the same file arriving again (a
//! second tensor of one arena, the same tensor sent twice) costs no new
//! mapping and its extra descriptor is closed at once.
//!
//! Files are sized once and then sealed against shrinking and growing
//! (`F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL`), and a receiver refuses a
//! Linux file without those seals: a peer that truncated a file under our
//! mapping would otherwise turn our next read into SIGBUS. Every offset
//! and size that comes with a descriptor is checked against the file's
//! real size before anything is mapped. Processes that exchange tensors
//! trust each other with the data of their shared files (as with
//! PyTorch's): a receiver can read the other storages of an arena it was
//! sent one storage of.

use crate::error::Result;
use ferrotorch_kernels::sync::ForkLock;
use std::collections::HashMap;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::ptr::NonNull;
use std::sync::{Arc, Weak};

/// Bytes of one arena of small shared storages.
pub const ARENA_BYTES: usize = 4 << 20;
/// The largest storage carved out of an arena; larger ones get a file.
pub const ARENA_OBJECT_MAX: usize = 256 << 10;
/// Alignment of storages inside an arena (a cache line and an AVX-512
/// vector, as the CPU allocator's blocks).
const ARENA_ALIGN: usize = 64;

/// A shared-memory file mapped into this process (Note [Shared memory]).
pub struct SharedFile {
    fd: OwnedFd,
    base: NonNull<u8>,
    len: usize,
    key: (u64, u64),
}

// SAFETY: the mapping is plain shared bytes; access to storages in it goes
// through the storage locks (Note [Storage access locks]).
unsafe impl Send for SharedFile {}
unsafe impl Sync for SharedFile {}

impl std::fmt::Debug for SharedFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "SharedFile(fd {}, {} bytes at {:p})",
            self.fd.as_raw_fd(),
            self.len,
            self.base
        )
    }
}

impl Drop for SharedFile {
    fn drop(&mut self) {
        // SAFETY: mapped by `map` with this length; no storage uses it any
        // more (each holds an Arc).
        unsafe { libc::munmap(self.base.as_ptr().cast(), self.len.max(1)) };
        let mut files = FILES.lock();
        if let Some(files) = files.as_mut() {
            if files.get(&self.key).is_some_and(|w| w.strong_count() == 0) {
                files.remove(&self.key);
            }
        }
    }
}

/// Files mapped in this process, by (device, inode).
type FileTable = HashMap<(u64, u64), Weak<SharedFile>>;
static FILES: ForkLock<Option<FileTable>> = ForkLock::new(None);

/// The arena small storages are carved from, and its next free offset.
static ARENA: ForkLock<Option<(Arc<SharedFile>, usize)>> = ForkLock::new(None);

fn os_error(what: &str) -> crate::Error {
    let e = std::io::Error::last_os_error();
    crate::Error::new(crate::ErrorKind::Runtime, format!("{what}: {e}"))
}

impl SharedFile {
    /// The file's descriptor (owned by this mapping; dup it to keep it).
    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// The file's size in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the file is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The address the file is mapped at.
    pub fn base(&self) -> NonNull<u8> {
        self.base
    }

    /// A new shared file of `len` bytes (zero-filled), sealed and mapped.
    pub fn create(len: usize) -> Result<Arc<SharedFile>> {
        let fd = create_fd(len)?;
        map(fd, len)
    }

    /// Map a file descriptor received from another process, after checking
    /// it (Note [Shared memory]). The descriptor is consumed: kept with
    /// the mapping, or closed when the file is already mapped here.
    pub fn open(fd: OwnedFd) -> Result<Arc<SharedFile>> {
        let (key, len) = stat(fd.as_raw_fd())?;
        if let Some(f) = FILES
            .lock()
            .get_or_insert_with(HashMap::new)
            .get(&key)
            .and_then(Weak::upgrade)
        {
            return Ok(f); // `fd` closes here: the mapping has its own
        }
        check_seals(fd.as_raw_fd())?;
        map(fd, len)
    }

    /// How many shared files this process has mapped (its descriptors and
    /// mappings for shared memory).
    pub fn mapped_count() -> usize {
        FILES
            .lock()
            .as_ref()
            .map_or(0, |m| m.values().filter(|w| w.strong_count() > 0).count())
    }
}

/// Room for `nbytes` in shared memory: a file and the offset in it
/// (Note [Shared memory]).
pub fn allocate(nbytes: usize) -> Result<(Arc<SharedFile>, usize)> {
    #[cfg(unix)]
    crate::fork::install();
    if nbytes > ARENA_OBJECT_MAX {
        return Ok((SharedFile::create(nbytes)?, 0));
    }
    let mut arena = ARENA.lock();
    if let Some((file, next)) = arena.as_mut() {
        let at = next.next_multiple_of(ARENA_ALIGN);
        if at + nbytes <= file.len {
            *next = at + nbytes;
            return Ok((file.clone(), at));
        }
    }
    let file = SharedFile::create(ARENA_BYTES)?;
    *arena = Some((file.clone(), nbytes));
    Ok((file, 0))
}

/// Hold the arena and file-table locks across a `fork()` (Note [Fork
/// safety]).
pub(crate) fn fork_lock() {
    ARENA.fork_hold();
    FILES.fork_hold();
}

/// Release what [`fork_lock`] held; in the child, also forget the arena
/// being filled (the parent goes on carving it).
pub(crate) fn fork_unlock(child: bool) {
    // SAFETY: both held by fork_lock on this thread.
    unsafe {
        FILES.fork_release();
        ARENA.fork_release();
    }
    if child {
        ARENA.lock().take();
    }
}

/// Drop the arena under construction (tests: the next small storage
/// starts a new file, so counts of files are exact).
pub fn release_arena() {
    ARENA.lock().take();
}

#[cfg(target_os = "linux")]
fn create_fd(len: usize) -> Result<OwnedFd> {
    // SAFETY: a NUL-terminated name and valid flags.
    let fd = unsafe {
        libc::memfd_create(
            c"ferrotorch-shm".as_ptr(),
            libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING,
        )
    };
    if fd < 0 {
        return Err(os_error("share_memory_: memfd_create failed"));
    }
    // SAFETY: a fresh descriptor we own.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    size_fd(&fd, len)?;
    let seals = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_SEAL;
    // SAFETY: fcntl on our descriptor.
    if unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_ADD_SEALS, seals) } != 0 {
        return Err(os_error(
            "share_memory_: sealing the shared memory file failed",
        ));
    }
    Ok(fd)
}

/// The fallback of Note [Shared memory]: a POSIX shared-memory object,
/// unlinked as soon as it is open so that no name outlives this call.
#[cfg(all(unix, not(target_os = "linux")))]
fn create_fd(len: usize) -> Result<OwnedFd> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    for _ in 0..16 {
        let name = format!(
            "/ferrotorch_{}_{}\0",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        // SAFETY: a NUL-terminated name.
        let fd = unsafe {
            libc::shm_open(
                name.as_ptr().cast(),
                libc::O_RDWR | libc::O_CREAT | libc::O_EXCL,
                0o600,
            )
        };
        if fd < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::AlreadyExists {
                continue;
            }
            return Err(os_error("share_memory_: shm_open failed"));
        }
        // SAFETY: as above; the object stays alive through `fd`.
        unsafe { libc::shm_unlink(name.as_ptr().cast()) };
        // SAFETY: a fresh descriptor we own.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        size_fd(&fd, len)?;
        return Ok(fd);
    }
    crate::bail!(Runtime, "share_memory_: no free shared-memory name")
}

fn size_fd(fd: &OwnedFd, len: usize) -> Result<()> {
    let Ok(off) = libc::off_t::try_from(len) else {
        crate::bail!(Runtime, "share_memory_: {len} bytes is too large a file");
    };
    // SAFETY: ftruncate on our descriptor.
    if unsafe { libc::ftruncate(fd.as_raw_fd(), off) } != 0 {
        return Err(os_error(&format!(
            "share_memory_: sizing a shared memory file to {len} bytes failed"
        )));
    }
    Ok(())
}

/// (device, inode) and size of a descriptor that must be a regular file.
fn stat(fd: RawFd) -> Result<((u64, u64), usize)> {
    // SAFETY: fstat writes the struct.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return Err(os_error(
            "shared memory: fstat of a received descriptor failed",
        ));
    }
    crate::ensure!(
        st.st_mode & libc::S_IFMT == libc::S_IFREG,
        Runtime,
        "shared memory: the received descriptor is not a shared memory file (mode {:o})",
        st.st_mode
    );
    let Ok(len) = usize::try_from(st.st_size) else {
        crate::bail!(
            Runtime,
            "shared memory: the received file has a negative size"
        );
    };
    #[allow(clippy::unnecessary_cast)] // the field types differ across platforms
    Ok(((st.st_dev as u64, st.st_ino as u64), len))
}

#[cfg(target_os = "linux")]
fn check_seals(fd: RawFd) -> Result<()> {
    // SAFETY: fcntl on a descriptor we hold.
    let seals = unsafe { libc::fcntl(fd, libc::F_GET_SEALS) };
    let need = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW;
    crate::ensure!(
        seals >= 0 && seals & need == need,
        Runtime,
        "shared memory: the received file is not sealed against resizing (seals {seals:#x}); only files made by share_memory_ are accepted"
    );
    Ok(())
}

#[cfg(all(unix, not(target_os = "linux")))]
fn check_seals(_fd: RawFd) -> Result<()> {
    Ok(())
}

fn map(fd: OwnedFd, len: usize) -> Result<Arc<SharedFile>> {
    let (key, _) = stat(fd.as_raw_fd())?;
    // SAFETY: a shared read-write mapping of a file we hold; at least one
    // byte so that an empty file still has an address.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len.max(1),
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd.as_raw_fd(),
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(os_error(&format!(
            "shared memory: mapping {len} bytes failed"
        )));
    }
    let file = Arc::new(SharedFile {
        fd,
        base: NonNull::new(p.cast()).expect("mmap gives a non-null address"),
        len,
        key,
    });
    FILES
        .lock()
        .get_or_insert_with(HashMap::new)
        .insert(key, Arc::downgrade(&file));
    Ok(file)
}

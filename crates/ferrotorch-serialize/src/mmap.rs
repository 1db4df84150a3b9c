//! A file mapped into memory (`torch.load(mmap=True)`): private, so writes
//! to the tensors over it stay in this process, unmapped when the last
//! tensor over it is dropped.

use ferrotorch_core::storage::Storage;
use ferrotorch_core::tensor::layout::Layout;
use ferrotorch_core::{DType, Error, ErrorKind, Result, Tensor};
use std::ptr::NonNull;
use std::sync::Arc;

struct Region {
    ptr: NonNull<u8>,
    len: usize,
}

// the region is only read (and privately written) through the tensors
// over it, which the storage locks guard
unsafe impl Send for Region {}
unsafe impl Sync for Region {}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: ptr/len are the mapping made in `open`, unmapped once
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
}

/// A mapped file.
pub struct Mapping {
    region: Option<Arc<Region>>,
}

impl Mapping {
    /// Map the file at `path` privately (copy-on-write).
    pub fn open(path: &std::path::Path) -> Result<Mapping> {
        Mapping::open_with(path, false)
    }

    /// [`Mapping::open`], with `populate` faulting every page in at once
    /// (for a file that is about to be read through).
    pub fn open_with(path: &std::path::Path, populate: bool) -> Result<Mapping> {
        use std::os::unix::io::AsRawFd;
        let f = std::fs::File::open(path).map_err(|e| {
            Error::new(
                ErrorKind::Runtime,
                format!("torch.load: cannot open {}: {e}", path.display()),
            )
        })?;
        let len = f
            .metadata()
            .map_err(|e| {
                Error::new(
                    ErrorKind::Runtime,
                    format!("torch.load: {}: {e}", path.display()),
                )
            })?
            .len() as usize;
        if len == 0 {
            return Ok(Mapping { region: None });
        }
        // SAFETY: a fresh private mapping of a file we opened, checked below
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | if populate { libc::MAP_POPULATE } else { 0 },
                f.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(Error::new(
                ErrorKind::Runtime,
                format!(
                    "torch.load: cannot map {}: {}",
                    path.display(),
                    std::io::Error::last_os_error()
                ),
            ));
        }
        let ptr = NonNull::new(p.cast::<u8>()).ok_or_else(|| {
            Error::new(ErrorKind::Runtime, "torch.load: mmap gave a null address")
        })?;
        Ok(Mapping {
            region: Some(Arc::new(Region { ptr, len })),
        })
    }

    /// The file's bytes.
    pub fn bytes(&self) -> &[u8] {
        match &self.region {
            // SAFETY: the mapping is len bytes and lives as long as self
            Some(r) => unsafe { std::slice::from_raw_parts(r.ptr.as_ptr(), r.len) },
            None => &[],
        }
    }

    /// Whether `data` lies in the mapping (a deflated entry, inflated,
    /// does not).
    pub fn contains(&self, data: &[u8]) -> bool {
        self.region.as_ref().is_some_and(|r| {
            let start = r.ptr.as_ptr() as usize;
            let at = data.as_ptr() as usize;
            at >= start && at + data.len() <= start + r.len
        })
    }

    /// A 1-D tensor of `dtype` over `data`, a part of [`Mapping::bytes`]
    /// aligned for `dtype`; it keeps the mapping alive.
    pub fn tensor_of(&self, data: &[u8], dtype: DType) -> Result<Tensor> {
        let r = self
            .region
            .as_ref()
            .ok_or_else(|| Error::new(ErrorKind::Runtime, "torch.load: an empty mapping"))?;
        let start = r.ptr.as_ptr() as usize;
        let at = data.as_ptr() as usize;
        ferrotorch_core::ensure!(
            at >= start && at + data.len() <= start + r.len,
            Runtime,
            "torch.load: a storage outside the mapped file"
        );
        let keep = r.clone();
        // SAFETY: data lies in the live mapping (checked above), which the
        // deleter keeps mapped until the storage is dropped
        let storage = unsafe {
            Storage::from_external(
                NonNull::new(data.as_ptr() as *mut u8)
                    .ok_or_else(|| Error::new(ErrorKind::Runtime, "torch.load: null data"))?,
                data.len(),
                move || drop(keep),
            )
        };
        let n = data.len() / dtype.size();
        Tensor::from_storage(storage, Layout::contiguous("torch.load", &[n])?, dtype)
    }
}

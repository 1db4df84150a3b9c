//! Safe slice access to whole contiguous tensors, for fused kernels that
//! live outside the core (optimizer steps).
//!
//! # Note [Fused slice access]
//! An optimizer updates a parameter and its state elementwise from the
//! gradient; going through one tensor op per term costs an allocation and
//! a dispatch each. [`zip_slices_mut`] hands such a kernel plain slices
//! instead, after checking what makes that sound: every tensor of the
//! element type asked for, of one shape, all with the same strides and
//! non-overlapping and dense (contiguous, or a permutation of contiguous
//! such as a transposed weight: element `i` of every slice is then the same
//! logical element), and no written tensor sharing storage with any other
//! tensor. Callers with mixed layouts copy first ([`same_dense_layout`]). It takes the storage locks
//! (Note [Storage access locks]) and bumps the written storages' versions,
//! so autograd still sees the writes.

use super::Tensor;
use crate::dtype::Element;
use crate::error::Result;
use crate::storage::lock_storages;

/// Whether every tensor has `ts[0]`'s shape and strides (those of size-1
/// dims aside: they address nothing) and is non-overlapping and dense:
/// what [`zip_slices_mut`] accepts.
pub fn same_dense_layout(ts: &[&Tensor]) -> bool {
    let Some(first) = ts.first() else {
        return true;
    };
    first.layout().is_dense()
        && ts.iter().all(|t| {
            t.shape() == first.shape()
                && t.shape()
                    .iter()
                    .zip(t.stride().iter().zip(first.stride()))
                    .all(|(&n, (a, b))| n <= 1 || a == b)
        })
}

/// Call `f` with mutable slices of `writes` and shared slices of `reads`,
/// tensors of element type `T` laid out alike (see [`same_dense_layout`]).
/// See Note [Fused slice access].
pub fn zip_slices_mut<T: Element>(
    op: &str,
    writes: &[&Tensor],
    reads: &[&Tensor],
    f: impl FnOnce(&mut [&mut [T]], &[&[T]]),
) -> Result<()> {
    let n = writes.first().or(reads.first()).map_or(0, |t| t.numel());
    for t in writes.iter().chain(reads) {
        crate::ensure!(
            t.dtype() == T::DTYPE,
            Runtime,
            "{op}: expected a tensor of dtype {}, but got {}",
            T::DTYPE,
            t.dtype()
        );
    }
    let all: Vec<&Tensor> = writes.iter().chain(reads).copied().collect();
    if !same_dense_layout(&all) {
        let layouts: Vec<String> = all
            .iter()
            .map(|t| format!("shape {:?} strides {:?}", t.shape(), t.stride()))
            .collect();
        crate::bail!(
            Runtime,
            "{op}: expected dense tensors laid out alike, but got {}",
            layouts.join(", ")
        );
    }
    for w in writes {
        w.storage().check_writable(op)?;
    }
    for (i, w) in writes.iter().enumerate() {
        let shared = writes
            .iter()
            .enumerate()
            .filter(|&(j, _)| j != i)
            .map(|(_, t)| t)
            .chain(reads)
            .any(|t| t.storage().is_same(w.storage()));
        crate::ensure!(
            !shared,
            Runtime,
            "{op}: a tensor written in place shares its storage with another argument"
        );
    }
    let ws: Vec<_> = writes.iter().map(|t| t.storage()).collect();
    let rs: Vec<_> = reads.iter().map(|t| t.storage()).collect();
    let _guard = lock_storages(&rs, &ws);
    // SAFETY: each tensor is non-overlapping and dense with non-negative
    // strides, so its `n` elements of `T` are exactly the `n` slots from
    // its data pointer on, inside its storage (a checked layout); all share
    // one layout, so slot `i` is the same element in each; the locks are
    // held, and written storages alias nothing else passed in.
    let mut wslices: Vec<&mut [T]> = writes
        .iter()
        .map(|t| unsafe { std::slice::from_raw_parts_mut(t.data_ptr() as *mut T, n) })
        .collect();
    let rslices: Vec<&[T]> = reads
        .iter()
        .map(|t| unsafe { std::slice::from_raw_parts(t.data_ptr() as *const T, n) })
        .collect();
    f(&mut wslices, &rslices);
    for t in writes {
        t.storage().bump_version();
    }
    Ok(())
}

/// Call `f` with mutable slices of `writes` and shared slices of `reads`:
/// contiguous tensors of element type `T`, each of its own length (a
/// kernel over rows with per-row statistics, such as layer norm). Checks
/// and locks as [`zip_slices_mut`] does, all storages in one
/// `lock_storages` call (Note [Storage access locks]).
pub fn contiguous_slices_mut<T: Element>(
    op: &str,
    writes: &[&Tensor],
    reads: &[&Tensor],
    f: impl FnOnce(&mut [&mut [T]], &[&[T]]),
) -> Result<()> {
    for t in writes.iter().chain(reads) {
        crate::ensure!(
            t.dtype() == T::DTYPE && t.is_contiguous(),
            Runtime,
            "{op}: expected contiguous tensors of dtype {}, but got {} with shape {:?} and strides {:?}",
            T::DTYPE,
            t.dtype(),
            t.shape(),
            t.stride()
        );
    }
    for (i, w) in writes.iter().enumerate() {
        w.storage().check_writable(op)?;
        let shared = writes
            .iter()
            .enumerate()
            .filter(|&(j, _)| j != i)
            .map(|(_, t)| t)
            .chain(reads)
            .any(|t| t.storage().is_same(w.storage()));
        crate::ensure!(
            !shared,
            Runtime,
            "{op}: a tensor written in place shares its storage with another argument"
        );
    }
    let ws: Vec<_> = writes.iter().map(|t| t.storage()).collect();
    let rs: Vec<_> = reads.iter().map(|t| t.storage()).collect();
    let _guard = lock_storages(&rs, &ws);
    // SAFETY: each tensor is contiguous, so its numel elements of `T` start
    // at data_ptr inside its storage; the locks are held, and written
    // storages alias nothing else passed in.
    let mut wslices: Vec<&mut [T]> = writes
        .iter()
        .map(|t| unsafe { std::slice::from_raw_parts_mut(t.data_ptr() as *mut T, t.numel()) })
        .collect();
    let rslices: Vec<&[T]> = reads
        .iter()
        .map(|t| unsafe { std::slice::from_raw_parts(t.data_ptr() as *const T, t.numel()) })
        .collect();
    f(&mut wslices, &rslices);
    for t in writes {
        t.storage().bump_version();
    }
    Ok(())
}

impl Tensor {
    /// The elements in row-major order as little-endian bytes (what file
    /// formats such as safetensors store).
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        // a conjugated view's values (Note [The conjugate bit])
        let t = self.resolved()?.contiguous()?;
        let n = t.numel() * t.element_size();
        let _guard = lock_storages(&[t.storage()], &[]);
        // SAFETY: `t` is contiguous, so its `n` bytes start at data_ptr and
        // lie inside its storage; the read lock is held.
        let bytes = unsafe { std::slice::from_raw_parts(t.data_ptr() as *const u8, n) };
        Ok(little_endian(bytes.to_vec(), t.element_size()))
    }

    /// Append [`Tensor::to_bytes`]'s bytes to `out`, copying once (how a
    /// file writer fills one buffer without a temporary per tensor).
    pub fn append_bytes(&self, out: &mut Vec<u8>) -> Result<()> {
        let t = self.resolved()?.contiguous()?;
        let n = t.numel() * t.element_size();
        let start = out.len();
        {
            let _guard = lock_storages(&[t.storage()], &[]);
            // SAFETY: as in `to_bytes`.
            let bytes = unsafe { std::slice::from_raw_parts(t.data_ptr() as *const u8, n) };
            out.extend_from_slice(bytes);
        }
        if cfg!(target_endian = "big") && t.element_size() > 1 {
            out[start..]
                .chunks_mut(t.element_size())
                .for_each(<[u8]>::reverse);
        }
        Ok(())
    }

    /// Write [`Tensor::to_bytes`]'s bytes into `out`, which must be
    /// exactly `numel * element_size` bytes long.
    pub fn write_bytes(&self, out: &mut [u8]) -> Result<()> {
        let t = self.resolved()?.contiguous()?;
        let n = t.numel() * t.element_size();
        crate::ensure!(
            out.len() == n,
            Value,
            "write_bytes: a buffer of {} bytes for a tensor of {n}",
            out.len()
        );
        {
            let _guard = lock_storages(&[t.storage()], &[]);
            // SAFETY: as in `to_bytes`.
            let bytes = unsafe { std::slice::from_raw_parts(t.data_ptr() as *const u8, n) };
            out.copy_from_slice(bytes);
        }
        if cfg!(target_endian = "big") && t.element_size() > 1 {
            out.chunks_mut(t.element_size()).for_each(<[u8]>::reverse);
        }
        Ok(())
    }

    /// Call `f` with the elements' bytes in row-major order and native byte
    /// order, without a copy when the tensor is contiguous (its storage
    /// read-locked meanwhile): how foreign code (a collective engine) reads
    /// a tensor.
    pub fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> Result<R> {
        let t = self.resolved()?.contiguous()?;
        let n = t.numel() * t.element_size();
        let _guard = lock_storages(&[t.storage()], &[]);
        // SAFETY: as in `to_bytes`.
        let bytes = unsafe { std::slice::from_raw_parts(t.data_ptr() as *const u8, n) };
        Ok(f(bytes))
    }

    /// Call `f` with the elements' bytes (native byte order) for writing in
    /// place, then count the write (Note [Version counter]): how foreign
    /// code (a collective engine) fills a tensor. A contiguous tensor is
    /// written directly under its storage's exclusive lock; any other is
    /// filled through a contiguous copy written back with `copy_`. Either
    /// way this is not an op autograd records (as torch's c10d writes).
    pub fn with_bytes_mut<R>(&self, op: &str, f: impl FnOnce(&mut [u8]) -> R) -> Result<R> {
        self.storage().check_writable(op)?;
        if !self.is_contiguous() || self.is_conj() {
            let _g = crate::autograd::no_grad();
            // a fresh copy: a non-contiguous tensor's contiguous() copies,
            // and a contiguous conjugated one's resolved() does
            let c = self.resolved()?.contiguous()?;
            let r = c.with_bytes_mut(op, f)?;
            self.copy_(&c)?;
            return Ok(r);
        }
        let n = self.numel() * self.element_size();
        let r = {
            let _guard = lock_storages(&[], &[self.storage()]);
            // SAFETY: contiguous, so its `n` bytes start at data_ptr inside
            // its storage; the exclusive lock is held while `f` writes.
            let bytes = unsafe { std::slice::from_raw_parts_mut(self.data_ptr(), n) };
            f(bytes)
        };
        self.storage().bump_version();
        Ok(r)
    }

    /// For a bool tensor over memory someone else filled (NumPy, DLPack):
    /// an error unless every byte is 0 or 1, the only bytes a Rust `bool`
    /// may hold. Read through a `uint8` view of the same memory, never as
    /// `bool`. Other dtypes accept every byte pattern.
    pub fn check_bool_bytes(&self, op: &str) -> Result<()> {
        if self.dtype() != crate::DType::Bool || self.numel() == 0 {
            return Ok(());
        }
        let bytes = Tensor::from_parts(
            self.storage().clone(),
            self.layout().clone(),
            crate::DType::U8,
        );
        let max = bytes.amax(&[], false)?.item()?.to_i64();
        crate::ensure!(
            max <= 1,
            Value,
            "{op}: a bool array holds the byte {max}; bools must be 0 or 1 (convert it with `array != 0`)"
        );
        Ok(())
    }

    /// A tensor of `dtype` and `shape` from little-endian bytes. The length
    /// must match exactly, and bool bytes must be 0 or 1.
    pub fn from_bytes(bytes: &[u8], shape: &[usize], dtype: crate::DType) -> Result<Tensor> {
        let numel = shape.iter().try_fold(1usize, |a, &s| a.checked_mul(s));
        let need = numel.and_then(|n| n.checked_mul(dtype.size()));
        crate::ensure!(
            need == Some(bytes.len()),
            Runtime,
            "from_bytes: {} bytes cannot hold a {dtype} tensor of shape {shape:?}",
            bytes.len()
        );
        crate::ensure!(
            dtype != crate::DType::Bool || bytes.iter().all(|&b| b <= 1),
            Runtime,
            "from_bytes: a bool tensor's bytes must be 0 or 1"
        );
        let t = Tensor::empty(shape, dtype)?;
        let data: std::borrow::Cow<[u8]> = if cfg!(target_endian = "big") {
            little_endian(bytes.to_vec(), dtype.size()).into()
        } else {
            bytes.into()
        };
        {
            let _guard = lock_storages(&[], &[t.storage()]);
            // SAFETY: `t` is a fresh contiguous tensor of exactly
            // `bytes.len()` bytes (checked above), locked for writing; every
            // byte pattern is a valid value of its dtype except bools,
            // checked above.
            unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), t.data_ptr(), data.len()) };
        }
        Ok(t)
    }
}

/// Convert between native and little-endian element order (a no-op on
/// little-endian hosts).
fn little_endian(mut bytes: Vec<u8>, size: usize) -> Vec<u8> {
    if cfg!(target_endian = "big") && size > 1 {
        bytes.chunks_mut(size).for_each(<[u8]>::reverse);
    }
    bytes
}

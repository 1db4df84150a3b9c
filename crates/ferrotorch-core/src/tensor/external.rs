//! Tensors over memory someone else owns: NumPy arrays, DLPack producers,
//! JavaScript typed arrays, C callers' buffers.
//!
//! # Note [Checked external layouts]
//! A foreign array's address, shape and strides come from code we do not
//! control. Before any tensor views them, [`Tensor::from_external`] checks
//! that the extent they span neither overflows nor passes `isize::MAX`,
//! and that the address is aligned to the element size; a refused layout
//! still gives the memory back (its release runs before the error
//! returns), so no foreign buffer leaks on a bad call.

use super::layout::{contiguous_strides, Layout};
use super::Tensor;
use crate::dtype::DType;
use crate::error::Result;
use crate::storage::Storage;
use crate::{bail, ensure};
use std::ptr::NonNull;

/// The bytes an external view spans, after checking that its layout is
/// one a tensor can view: no overflow, and aligned unless empty.
fn checked_extent(
    op: &str,
    addr: usize,
    dtype: DType,
    shape: &[usize],
    strides: &[usize],
) -> Result<usize> {
    ensure!(
        strides.len() == shape.len(),
        Value,
        "{op}: shape and strides differ in length"
    );
    let overflow = || {
        crate::Error::new(
            crate::ErrorKind::Value,
            format!("{op}: the memory's extent overflows"),
        )
    };
    let extent = if shape.contains(&0) {
        0
    } else {
        let mut last = 0usize;
        for (&n, &s) in shape.iter().zip(strides) {
            last = (n - 1)
                .checked_mul(s)
                .and_then(|x| x.checked_add(last))
                .ok_or_else(overflow)?;
        }
        last + 1
    };
    let nbytes = extent.checked_mul(dtype.size()).ok_or_else(overflow)?;
    // no allocation reaches past isize::MAX (a bogus address such as a
    // DLPack byte_offset of 2^63 is refused here)
    if addr
        .checked_add(nbytes)
        .is_none_or(|end| end > isize::MAX as usize)
    {
        return Err(overflow());
    }
    if extent > 0 && !addr.is_multiple_of(dtype.size()) {
        bail!(
            Value,
            "{op}: the data at address {addr:#x} is not aligned to its {}-byte elements",
            dtype.size()
        );
    }
    Ok(nbytes)
}

impl Tensor {
    /// A tensor viewing memory someone else owns (a NumPy array, a DLPack
    /// producer, a C caller's buffer): `shape` and element `strides`
    /// (`None`: row-major) from `addr`; `release` runs when the last tensor
    /// over the memory drops. The layout is checked first (Note [Checked
    /// external layouts]); when it is refused, `release` runs before the error
    /// returns. `op` names the caller in errors.
    ///
    /// # Safety
    /// Every element the shape and strides reach from `addr` must stay
    /// valid for reads (and, unless `readonly`, writes) until `release`
    /// runs.
    pub unsafe fn from_external(
        op: &str,
        addr: usize,
        dtype: DType,
        shape: &[usize],
        strides: Option<&[usize]>,
        readonly: bool,
        release: impl FnOnce() + Send + Sync + 'static,
    ) -> Result<Tensor> {
        let strides = strides.map_or_else(|| contiguous_strides(shape).to_vec(), <[usize]>::to_vec);
        let nbytes = match checked_extent(op, addr, dtype, shape, &strides) {
            Ok(n) => n,
            Err(e) => {
                release(); // the memory is given back even when refused
                return Err(e);
            }
        };
        let extent = nbytes / dtype.size();
        let ptr = NonNull::new(addr as *mut u8).unwrap_or(NonNull::dangling());
        // SAFETY: the caller promises the extent stays valid until `release`.
        let storage = unsafe {
            if readonly {
                Storage::from_external_readonly(ptr, nbytes, release)
            } else {
                Storage::from_external(ptr, nbytes, release)
            }
        };
        let flat = Tensor::from_storage(storage, Layout::contiguous(op, &[extent])?, dtype)?;
        flat.as_strided(shape, &strides, Some(0))
    }
}

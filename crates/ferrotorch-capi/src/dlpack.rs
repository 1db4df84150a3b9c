//! DLPack from C: hand a tensor to any DLPack consumer, or view any
//! producer's memory as a tensor, without copying.

use crate::status::{entry, put, FtStatus};
use crate::tensor::{out_tensor, tensor, FtTensor};
use ferrotorch_core::tensor::dlpack::{self, DLManagedTensorVersioned};

/// `t` as a DLPack 1.0 `DLManagedTensorVersioned*` sharing its memory.
/// The consumer owns it and calls its `deleter` once. Tensors that
/// require grad are refused, as torch refuses them (detach first).
#[no_mangle]
pub extern "C" fn ft_tensor_to_dlpack(
    t: *const FtTensor,
    out: *mut *mut DLManagedTensorVersioned,
) -> FtStatus {
    let what = "ft_tensor_to_dlpack";
    entry(what, || {
        if out.is_null() {
            return put(what, out, std::ptr::null_mut());
        }
        let m = dlpack::export_versioned(tensor(what, t)?, false)?;
        put(what, out, m)
    })
}

/// A tensor over a producer's `DLManagedTensorVersioned` (CPU memory):
/// this takes ownership of `m`, whose deleter runs when the last tensor
/// over the memory is freed, or before an error returns. Its fields are
/// validated first (device, dtype, shape, strides, extent, alignment);
/// read-only memory is copied.
#[no_mangle]
pub extern "C" fn ft_tensor_from_dlpack(
    m: *mut DLManagedTensorVersioned,
    out: *mut *mut FtTensor,
) -> FtStatus {
    let what = "ft_tensor_from_dlpack";
    entry(what, || {
        if m.is_null() {
            return Err(crate::status::Fail::new(
                FtStatus::FtErrorNullHandle,
                format!("{what}: null DLManagedTensorVersioned"),
            ));
        }
        let owner = m as usize;
        let release = move || {
            let m = owner as *mut DLManagedTensorVersioned;
            // SAFETY: the producer's structure, live until its deleter,
            // which runs exactly once: here.
            unsafe {
                if let Some(d) = (*m).deleter {
                    d(m)
                }
            }
        };
        // SAFETY: the caller hands us a live managed tensor.
        let (dl, flags, major) =
            unsafe { (&raw const (*m).dl_tensor, (*m).flags, (*m).version[0]) };
        if major != 1 {
            release();
            return Err(crate::status::Fail::new(
                FtStatus::FtErrorNotImplemented,
                format!("{what}: unsupported DLPack version {major}"),
            ));
        }
        if out.is_null() {
            release();
            return put(what, out, std::ptr::null_mut());
        }
        // SAFETY: valid until the deleter, which `release` calls.
        let t = unsafe { dlpack::import(dl, flags & dlpack::FLAG_READ_ONLY != 0, release) }?;
        out_tensor(what, out, t)
    })
}

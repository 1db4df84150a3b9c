//! DLPack (<https://dmlc.github.io/dlpack/latest/>): the C structures, and
//! export and import of CPU tensors through them, shared by every binding
//! (Python's capsules, the C ABI's `ft_tensor_to_dlpack`).
//!
//! # Note [DLPack ownership]
//! An exported `DLManagedTensor[Versioned]` owns a boxed context holding a
//! clone of the tensor (so the storage outlives the consumer's use) and the
//! shape and stride arrays; the consumer calls its deleter exactly once.
//! On import, the producer's structure is validated first (Note [Checked
//! external layouts]), and the caller's `release` (which calls the
//! producer's deleter) runs when the last tensor over the memory drops, or
//! at once when the import is refused, so a refused import never leaks.

use super::Tensor;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::Result;
use crate::{bail, ensure};
use std::ffi::c_void;

/// `kDLCPU`.
pub const DL_CPU: i32 = 1;
/// `DLPACK_FLAG_BITMASK_READ_ONLY`.
pub const FLAG_READ_ONLY: u64 = 1;
/// `DLPACK_FLAG_BITMASK_IS_COPIED`.
pub const FLAG_IS_COPIED: u64 = 1 << 1;

/// `DLDevice`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DLDevice {
    /// `kDLCPU` = 1, `kDLCUDA` = 2, ...
    pub device_type: i32,
    /// The device's ordinal.
    pub device_id: i32,
}

/// `DLDataType`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DLDataType {
    /// `kDLInt` 0, `kDLUInt` 1, `kDLFloat` 2, `kDLBfloat` 4, `kDLBool` 6.
    pub code: u8,
    /// Bits per element.
    pub bits: u8,
    /// Vector lanes (1 for scalars).
    pub lanes: u16,
}

/// `DLTensor`: a borrowed view of n-dimensional memory.
#[repr(C)]
pub struct DLTensor {
    /// The data's base address.
    pub data: *mut c_void,
    /// Where the memory lives.
    pub device: DLDevice,
    /// Number of dimensions.
    pub ndim: i32,
    /// Element type.
    pub dtype: DLDataType,
    /// `ndim` sizes.
    pub shape: *mut i64,
    /// `ndim` strides in elements, or null for row-major.
    pub strides: *mut i64,
    /// Bytes from `data` to the first element.
    pub byte_offset: u64,
}

/// `DLManagedTensor` (DLPack 0.x).
#[repr(C)]
pub struct DLManagedTensor {
    /// The view.
    pub dl_tensor: DLTensor,
    /// The producer's context.
    pub manager_ctx: *mut c_void,
    /// Frees the structure and releases the memory; called once.
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

/// `DLManagedTensorVersioned` (DLPack 1.x).
#[repr(C)]
pub struct DLManagedTensorVersioned {
    /// `{major, minor}`: `{1, 0}` here.
    pub version: [u32; 2],
    /// The producer's context.
    pub manager_ctx: *mut c_void,
    /// Frees the structure and releases the memory; called once.
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    /// `FLAG_READ_ONLY`, `FLAG_IS_COPIED`.
    pub flags: u64,
    /// The view.
    pub dl_tensor: DLTensor,
}

/// What an exported tensor keeps alive.
struct Ctx {
    _tensor: Tensor,
    _shape: Vec<i64>,
    _strides: Vec<i64>,
}

/// DLPack's type for a dtype.
pub fn dl_dtype(d: DType) -> DLDataType {
    let (code, bits) = match d {
        DType::Bool => (6, 8),
        DType::U8 => (1, 8),
        DType::I8 => (0, 8),
        DType::I16 => (0, 16),
        DType::I32 => (0, 32),
        DType::I64 => (0, 64),
        DType::F16 => (2, 16),
        DType::BF16 => (4, 16),
        DType::F32 => (2, 32),
        DType::F64 => (2, 64),
        DType::C32 => (5, 32),
        DType::C64 => (5, 64),
        DType::C128 => (5, 128),
    };
    DLDataType {
        code,
        bits,
        lanes: 1,
    }
}

/// The dtype for DLPack's type, or an error naming it.
pub fn from_dl_dtype(t: DLDataType) -> Result<DType> {
    ensure!(
        t.lanes == 1,
        NotImplemented,
        "from_dlpack: vector dtypes (lanes={}) are not supported",
        t.lanes
    );
    Ok(match (t.code, t.bits) {
        (6, 8) => DType::Bool,
        (1, 8) => DType::U8,
        (0, 8) => DType::I8,
        (0, 16) => DType::I16,
        (0, 32) => DType::I32,
        (0, 64) => DType::I64,
        (2, 16) => DType::F16,
        (4, 16) => DType::BF16,
        (2, 32) => DType::F32,
        (2, 64) => DType::F64,
        (5, 32) => DType::C32,
        (5, 64) => DType::C64,
        (5, 128) => DType::C128,
        (c, b) => bail!(
            NotImplemented,
            "from_dlpack: unsupported DLPack dtype (code {c}, bits {b})"
        ),
    })
}

/// Whether `t` can be exported: torch refuses tensors that require grad.
fn check_export(t: &Tensor) -> Result<()> {
    ensure!(
        !t.is_conj(),
        Runtime,
        "Can't export tensors with the conjugate bit set; call resolve_conj() first"
    );
    ensure!(
        !t.requires_grad(),
        Runtime,
        "Can't export tensors that require gradient, use tensor.detach()"
    );
    ensure!(
        matches!(t.device(), Device::Cpu),
        NotImplemented,
        "to_dlpack: only CPU tensors can be exported"
    );
    Ok(())
}

fn view(t: &Tensor) -> (Box<Ctx>, DLTensor) {
    let mut ctx = Box::new(Ctx {
        _shape: t.shape().iter().map(|&s| s as i64).collect(),
        _strides: t.stride().iter().map(|&s| s as i64).collect(),
        _tensor: t.clone(),
    });
    t.storage().mark_exported(); // Note [Moving a storage into shared memory]
    let dl = DLTensor {
        data: t.data_ptr() as *mut c_void,
        device: DLDevice {
            device_type: DL_CPU,
            device_id: 0,
        },
        ndim: t.dim() as i32,
        dtype: dl_dtype(t.dtype()),
        shape: ctx._shape.as_mut_ptr(),
        strides: ctx._strides.as_mut_ptr(),
        byte_offset: 0,
    };
    (ctx, dl)
}

unsafe extern "C" fn delete_legacy(m: *mut DLManagedTensor) {
    if m.is_null() {
        return;
    }
    // SAFETY: made by Box::into_raw in `export_legacy`, with a boxed Ctx.
    let m = unsafe { Box::from_raw(m) };
    drop(unsafe { Box::from_raw(m.manager_ctx as *mut Ctx) });
}

unsafe extern "C" fn delete_versioned(m: *mut DLManagedTensorVersioned) {
    if m.is_null() {
        return;
    }
    // SAFETY: as in delete_legacy.
    let m = unsafe { Box::from_raw(m) };
    drop(unsafe { Box::from_raw(m.manager_ctx as *mut Ctx) });
}

/// `t` as a DLPack 1.x managed tensor sharing its memory; the consumer
/// owns it and calls its deleter once (Note [DLPack ownership]). `copied`
/// sets `FLAG_IS_COPIED` (the caller exported a fresh copy).
pub fn export_versioned(t: &Tensor, copied: bool) -> Result<*mut DLManagedTensorVersioned> {
    check_export(t)?;
    let (ctx, dl) = view(t);
    Ok(Box::into_raw(Box::new(DLManagedTensorVersioned {
        version: [1, 0],
        manager_ctx: Box::into_raw(ctx) as *mut c_void,
        deleter: Some(delete_versioned),
        flags: if copied { FLAG_IS_COPIED } else { 0 },
        dl_tensor: dl,
    })))
}

/// `t` as a legacy (0.x) DLPack managed tensor; as [`export_versioned`].
pub fn export_legacy(t: &Tensor) -> Result<*mut DLManagedTensor> {
    check_export(t)?;
    let (ctx, dl) = view(t);
    Ok(Box::into_raw(Box::new(DLManagedTensor {
        dl_tensor: dl,
        manager_ctx: Box::into_raw(ctx) as *mut c_void,
        deleter: Some(delete_legacy),
    })))
}

/// A tensor over a producer's `DLTensor`. Its fields are validated first;
/// `release` runs when the last tensor over the memory drops, or before an
/// error returns (Note [DLPack ownership]). Read-only memory becomes a
/// writable copy (torch's behaviour), read through a read-only view.
///
/// # Safety
/// `dl` must point to a `DLTensor` whose `shape` (and `strides`, when not
/// null) hold `ndim` entries, and whose memory stays valid until
/// `release` runs.
pub unsafe fn import(
    dl: *const DLTensor,
    read_only: bool,
    release: impl FnOnce() + Send + Sync + 'static,
) -> Result<Tensor> {
    // SAFETY: the caller promises a valid DLTensor (or null, refused).
    let parsed = unsafe { parse(dl) };
    let (addr, dtype, shape, strides) = match parsed {
        Ok(p) => p,
        Err(e) => {
            release();
            return Err(e);
        }
    };
    // SAFETY: the producer keeps the memory valid until `release`.
    let t = unsafe {
        Tensor::from_external(
            "from_dlpack",
            addr,
            dtype,
            &shape,
            strides.as_deref(),
            read_only,
            release,
        )
    }?;
    t.check_bool_bytes("from_dlpack")?;
    if read_only {
        t.deep_clone()
    } else {
        Ok(t)
    }
}

type Parsed = (usize, DType, Vec<usize>, Option<Vec<usize>>);

/// The address, dtype, shape and strides a producer describes, checked.
///
/// # Safety
/// As [`import`].
unsafe fn parse(dl: *const DLTensor) -> Result<Parsed> {
    ensure!(!dl.is_null(), Value, "from_dlpack: null DLTensor");
    // SAFETY: non-null and valid by the caller's promise.
    let dl = unsafe { &*dl };
    ensure!(
        dl.device.device_type == DL_CPU,
        NotImplemented,
        "from_dlpack: device type {} is not available in this build (only the CPU)",
        dl.device.device_type
    );
    let dtype = from_dl_dtype(dl.dtype)?;
    ensure!(
        (0..=64).contains(&dl.ndim) && (dl.ndim == 0 || !dl.shape.is_null()),
        Value,
        "from_dlpack: invalid tensor of {} dimensions (shape {})",
        dl.ndim,
        if dl.shape.is_null() {
            "missing"
        } else {
            "given"
        }
    );
    let ndim = dl.ndim as usize;
    // SAFETY: shape/strides hold ndim entries (strides may be null).
    let shape: Vec<i64> = if ndim == 0 {
        vec![]
    } else {
        unsafe { std::slice::from_raw_parts(dl.shape, ndim) }.to_vec()
    };
    ensure!(
        shape.iter().all(|&s| s >= 0),
        Value,
        "from_dlpack: negative size in shape {shape:?}"
    );
    let strides: Option<Vec<i64>> = if dl.strides.is_null() || ndim == 0 {
        None
    } else {
        Some(unsafe { std::slice::from_raw_parts(dl.strides, ndim) }.to_vec())
    };
    ensure!(
        strides.iter().flatten().all(|&s| s >= 0),
        NotImplemented,
        "from_dlpack: negative strides are not supported"
    );
    let addr = (dl.data as usize)
        .checked_add(usize::try_from(dl.byte_offset).unwrap_or(usize::MAX))
        .ok_or_else(|| {
            crate::Error::new(
                crate::ErrorKind::Value,
                "from_dlpack: data pointer plus offset overflows",
            )
        })?;
    Ok((
        addr,
        dtype,
        shape.iter().map(|&s| s as usize).collect(),
        strides.map(|st| st.iter().map(|&s| s as usize).collect()),
    ))
}

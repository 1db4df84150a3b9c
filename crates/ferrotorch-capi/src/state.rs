//! `FtStateDict`: named tensors (a module's `state_dict()`), and
//! safetensors files.

use crate::handle::{free, get, handle_kind, new_handle};
use crate::status::{entry, put, Fail, FtStatus, Res};
use crate::tensor::{out_tensor, tensor, FtTensor};
use crate::value::c_str;
use ferrotorch_nn::StateDict;
use std::ffi::{c_char, CString};

/// An ordered map from names to tensors (Note [C handles]); its
/// tensors are shared, not copied.
pub struct FtStateDict {
    _opaque: [u8; 0],
}

handle_kind!(FtStateDict, parking_lot::RwLock<StateDict>, 0x7E03);

pub(crate) fn out_state_dict(what: &str, out: *mut *mut FtStateDict, sd: StateDict) -> Res<()> {
    if out.is_null() {
        return put(what, out, std::ptr::null_mut());
    }
    put(
        what,
        out,
        new_handle::<FtStateDict>(parking_lot::RwLock::new(sd)),
    )
}

pub(crate) fn state_dict<'a>(
    what: &str,
    h: *const FtStateDict,
) -> Res<parking_lot::RwLockReadGuard<'a, StateDict>> {
    Ok(get::<FtStateDict>(what, h)?.read())
}

/// An empty state dict.
#[no_mangle]
pub extern "C" fn ft_state_dict_new(out: *mut *mut FtStateDict) -> FtStatus {
    let what = "ft_state_dict_new";
    entry(what, || out_state_dict(what, out, StateDict::new()))
}

/// Release a state dict (null is a no-op); its tensors live on while
/// other references hold them.
#[no_mangle]
pub extern "C" fn ft_state_dict_free(sd: *mut FtStateDict) -> FtStatus {
    entry("ft_state_dict_free", || free("ft_state_dict_free", sd))
}

/// Number of entries.
#[no_mangle]
pub extern "C" fn ft_state_dict_len(sd: *const FtStateDict, out: *mut usize) -> FtStatus {
    let what = "ft_state_dict_len";
    entry(what, || put(what, out, state_dict(what, sd)?.len()))
}

/// The name of entry `i` (in insertion order), a new string freed with
/// `ft_string_free`.
#[no_mangle]
pub extern "C" fn ft_state_dict_key(
    sd: *const FtStateDict,
    i: usize,
    out: *mut *mut c_char,
) -> FtStatus {
    let what = "ft_state_dict_key";
    entry(what, || {
        let d = state_dict(what, sd)?;
        let key = d.keys().nth(i).ok_or_else(|| {
            Fail::new(
                FtStatus::FtErrorIndex,
                format!("{what}: index {i} is out of range for {} entries", d.len()),
            )
        })?;
        let c = CString::new(key.as_str()).unwrap_or_default();
        if out.is_null() {
            return put(what, out, std::ptr::null_mut());
        }
        put(what, out, c.into_raw())
    })
}

/// The tensor named `name` (a new reference); `FT_ERROR_KEY` when absent.
#[no_mangle]
pub extern "C" fn ft_state_dict_get(
    sd: *const FtStateDict,
    name: *const c_char,
    out: *mut *mut FtTensor,
) -> FtStatus {
    let what = "ft_state_dict_get";
    entry(what, || {
        let name = c_str(what, name)?;
        let t = state_dict(what, sd)?.get(name).cloned().ok_or_else(|| {
            Fail::new(
                FtStatus::FtErrorKey,
                format!("{what}: no entry named '{name}'"),
            )
        })?;
        out_tensor(what, out, t)
    })
}

/// Set entry `name` to (a reference to) `t`, replacing one of that name.
#[no_mangle]
pub extern "C" fn ft_state_dict_insert(
    sd: *const FtStateDict,
    name: *const c_char,
    t: *const FtTensor,
) -> FtStatus {
    let what = "ft_state_dict_insert";
    entry(what, || {
        let name = c_str(what, name)?;
        let t = tensor(what, t)?.clone();
        get::<FtStateDict>(what, sd)?.write().insert(name, t);
        Ok(())
    })
}

/// Write the entries to a safetensors file at `path` (atomically: a
/// temporary file renamed into place).
#[no_mangle]
pub extern "C" fn ft_safetensors_save(sd: *const FtStateDict, path: *const c_char) -> FtStatus {
    let what = "ft_safetensors_save";
    entry(what, || {
        let path = c_str(what, path)?;
        let sd = state_dict(what, sd)?;
        ferrotorch_nn::safetensors::save_file(&sd, path, None)?;
        Ok(())
    })
}

/// Read a safetensors file into a new state dict. The file is validated
/// (header, offsets, dtypes) before any tensor is made; it never runs code.
#[no_mangle]
pub extern "C" fn ft_safetensors_load(path: *const c_char, out: *mut *mut FtStateDict) -> FtStatus {
    let what = "ft_safetensors_load";
    entry(what, || {
        let path = c_str(what, path)?;
        let sd = ferrotorch_nn::safetensors::load_file(path)?;
        out_state_dict(what, out, sd)
    })
}

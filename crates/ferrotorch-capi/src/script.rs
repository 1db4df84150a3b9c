//! `FtScriptModule`: saved programs (traced graphs with their weights)
//! loaded from files and run.

use crate::handle::{free, get, handle_kind, new_handle};
use crate::status::{entry, put, Fail, FtStatus};
use crate::tensor::{out_tensor, slice, tensor, FtTensor};
use crate::value::c_str;
use ferrotorch_jit::ScriptModule;

/// A loaded program (`torch.jit.ScriptModule`; Note [C handles]).
pub struct FtScriptModule {
    _opaque: [u8; 0],
}

handle_kind!(FtScriptModule, ScriptModule, 0x7E06);

/// `torch.jit.load(path)`: read a saved program. The file is validated
/// before use (its archive, graph, ops and weights); loading never runs
/// code from it.
#[no_mangle]
pub extern "C" fn ft_script_module_load(
    path: *const std::ffi::c_char,
    out: *mut *mut FtScriptModule,
) -> FtStatus {
    let what = "ft_script_module_load";
    entry(what, || {
        let path = c_str(what, path)?;
        if out.is_null() {
            return put(what, out, std::ptr::null_mut());
        }
        let m = ferrotorch_jit::load(path)?;
        put(what, out, new_handle::<FtScriptModule>(m))
    })
}

/// `module.forward(*inputs)`: outputs written to `outputs[0..capacity]`
/// as new handles, their number to `n`.
#[no_mangle]
pub extern "C" fn ft_script_module_forward(
    m: *const FtScriptModule,
    inputs: *const *const FtTensor,
    ninputs: usize,
    outputs: *mut *mut FtTensor,
    capacity: usize,
    n: *mut usize,
) -> FtStatus {
    let what = "ft_script_module_forward";
    entry(what, || {
        let m = get::<FtScriptModule>(what, m)?;
        let xs = slice(what, inputs, ninputs)?
            .iter()
            .map(|&h| tensor(what, h).cloned())
            .collect::<Result<Vec<_>, _>>()?;
        let ys = m.forward(&xs)?;
        if ys.len() > capacity || n.is_null() {
            return Err(Fail::new(
                FtStatus::FtErrorValue,
                format!(
                    "{what}: the program returned {} outputs; the array holds {capacity}",
                    ys.len()
                ),
            ));
        }
        let count = ys.len();
        for (i, y) in ys.into_iter().enumerate() {
            // SAFETY: i < capacity slots, as the caller promises.
            out_tensor(what, unsafe { outputs.add(i) }, y)?;
        }
        put(what, n, count)
    })
}

/// Release a program (null is a no-op).
#[no_mangle]
pub extern "C" fn ft_script_module_free(m: *mut FtScriptModule) -> FtStatus {
    entry("ft_script_module_free", || free("ft_script_module_free", m))
}

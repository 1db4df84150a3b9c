//! Custom ops from C and from shared libraries loaded at run time
//! (`torch.ops.load_library`): `ft_library_def` gives an op a kernel
//! written in C, and [`load_library`] loads a plugin that registers its
//! ops through this process's functions.
//!
//! # Note [Plugin ABI]
//! A plugin is a shared library exporting two C functions:
//!
//! ```c
//! uint32_t ferrotorch_plugin_abi_version(void); // return FT_PLUGIN_ABI_VERSION
//! FtStatus ferrotorch_plugin_init(FtGetProc get_proc);
//! ```
//!
//! Loading checks the version first: a plugin built for another version
//! of this ABI is refused, naming both, before any of its code beyond that
//! function runs. `init` then registers ops with `ft_library_def`, and
//! classes with `ft_class_def` and its siblings (Note [Plugin classes]). A
//! plugin does not link `libferrotorch_c`: a second copy would hold a
//! second op registry, invisible to the process loading the plugin (the
//! Python extension, a Rust program, a Go program). It calls this
//! process's copy through the pointers `get_proc("ft_...")` returns — any
//! function of `ferrotorch.h`, null for an unknown name — typed with the
//! header's declarations (`__typeof__(ft_call) *call = get_proc("ft_call")`).
//! A kernel gets its arguments as borrowed `FtValue`s (handles valid for
//! the call) and writes one result (a tensor handle it hands over, a
//! number, or none); on failure it returns an error status after
//! `ft_set_error`. The version is raised whenever a function, a struct or
//! the kernel signature changes incompatibly. A loaded library is never
//! unloaded (its kernels stay registered); loading one path again does
//! nothing. Loading a library runs its code: it is a program, not a data
//! file, as in PyTorch.

use crate::status::{entry, Fail, FtStatus, Res};
use crate::tensor::{code_of, FtTensor};
use crate::value::{c_str, FtTag, FtValue};
use ferrotorch_core::dispatch::IValue;
use ferrotorch_core::{Error, ErrorKind, Result, Tensor};
use parking_lot::Mutex;
use std::ffi::{c_char, c_void, CStr, CString};
use std::path::{Path, PathBuf};

/// The plugin ABI version this build loads (Note [Plugin ABI]).
pub const FT_PLUGIN_ABI_VERSION: u32 = 1;

/// A kernel written in C: the op's arguments (`nargs` borrowed values, in
/// schema order, defaults filled in) and `user_data` in, one result out
/// through `result` (a tensor handle the caller takes over, a number, or
/// `FT_TAG_NONE`). Returns `FT_OK`, or an error status after
/// `ft_set_error`.
pub type FtKernel = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        args: *const FtValue,
        nargs: usize,
        result: *mut FtValue,
    ) -> FtStatus,
>;

/// This process's function called `name` (a function of `ferrotorch.h`),
/// or null: what a plugin calls the library through (Note [Plugin ABI]).
pub type FtGetProc = Option<unsafe extern "C" fn(name: *const c_char) -> *const c_void>;

/// Set this thread's `ft_last_error()` message: a C kernel says why it
/// failed before returning an error status.
#[no_mangle]
pub extern "C" fn ft_set_error(message: *const c_char) {
    let msg = if message.is_null() {
        String::new()
    } else {
        // SAFETY: non-null; the caller promises a NUL-terminated string.
        unsafe { CStr::from_ptr(message) }
            .to_string_lossy()
            .into_owned()
    };
    crate::status::set_last(&msg);
}

/// Define op `ns::name` from `schema` (`"myplugin::axpy(Tensor x, Tensor
/// y, float a) -> Tensor"`) with `kernel` as its CPU kernel, called with
/// `user_data` (Note [Plugin ABI]). The op has no derivative: backward
/// through it is an error naming it. The namespace may hold ops from
/// several calls; an op name already taken is an error.
#[no_mangle]
pub extern "C" fn ft_library_def(
    schema: *const c_char,
    kernel: FtKernel,
    user_data: *mut c_void,
) -> FtStatus {
    let what = "ft_library_def";
    entry(what, || {
        let schema = c_str(what, schema)?.to_string();
        let Some(kernel) = kernel else {
            return Err(Fail::new(
                FtStatus::FtErrorNullHandle,
                format!("{what}: the kernel is null"),
            ));
        };
        let ns = schema
            .split_once("::")
            .map(|(ns, _)| ns.trim().to_string())
            .ok_or_else(|| {
                Fail::new(
                    FtStatus::FtErrorValue,
                    format!("{what}: the schema must name its namespace (ns::op(...)): {schema}"),
                )
            })?;
        let mut lib =
            ferrotorch_core::library::Library::new(&ns, ferrotorch_core::library::Kind::Fragment)?;
        let data = UserData(user_data);
        let op = schema
            .split('(')
            .next()
            .unwrap_or_default()
            .trim()
            .to_string();
        lib.def_impl(&schema, move |a| {
            let data = &data;
            call_kernel(&op, kernel, data.0, a.values())
        })?;
        Ok(())
    })
}

/// The plugin's `user_data`, passed back to its kernel.
struct UserData(*mut c_void);
// SAFETY: the pointer is the plugin's and is only passed back to it; a
// plugin registering a kernel promises it may be called from any thread.
unsafe impl Send for UserData {}
unsafe impl Sync for UserData {}

/// The arguments of one kernel call as C values, with what they point to.
pub(crate) struct CArgs {
    pub(crate) values: Vec<FtValue>,
    handles: Vec<*mut FtTensor>,
    _lists: Vec<Vec<i64>>,
    _floats: Vec<Vec<f64>>,
    _bools: Vec<Vec<u8>>,
    _strings: Vec<CString>,
    _tensor_lists: Vec<Vec<*mut FtTensor>>,
}

impl Drop for CArgs {
    fn drop(&mut self) {
        for &h in &self.handles {
            let _ = crate::handle::free::<FtTensor>("kernel argument", h);
        }
    }
}

pub(crate) fn c_args(op: &str, vals: &[IValue]) -> Result<CArgs> {
    let mut a = CArgs {
        values: Vec::with_capacity(vals.len()),
        handles: Vec::new(),
        _lists: Vec::new(),
        _floats: Vec::new(),
        _bools: Vec::new(),
        _strings: Vec::new(),
        _tensor_lists: Vec::new(),
    };
    let handle = |a: &mut CArgs, t: &Tensor| {
        let h = crate::handle::new_handle::<FtTensor>(t.clone());
        a.handles.push(h);
        h
    };
    for v in vals {
        let mut out = FtValue::empty();
        match v {
            IValue::None => {}
            IValue::Tensor(t) => {
                out.tag = FtTag::FtTagTensor as i32;
                out.tensor = handle(&mut a, t);
            }
            IValue::Int(i) => {
                out.tag = FtTag::FtTagInt as i32;
                out.i = *i;
            }
            IValue::Float(f) => {
                out.tag = FtTag::FtTagFloat as i32;
                out.f = *f;
            }
            IValue::Bool(b) => {
                out.tag = FtTag::FtTagBool as i32;
                out.i = i64::from(*b);
            }
            IValue::DType(d) => {
                out.tag = FtTag::FtTagDtype as i32;
                out.i = i64::from(code_of(*d));
            }
            IValue::Str(s) => {
                let c = CString::new(s.replace('\0', "")).unwrap_or_default();
                out.tag = FtTag::FtTagStr as i32;
                out.str = c.as_ptr();
                a._strings.push(c);
            }
            IValue::IntList(l) => {
                out.tag = FtTag::FtTagIntList as i32;
                a._lists.push(l.clone());
                let l = a._lists.last().expect("pushed");
                (out.list, out.len) = (l.as_ptr() as *const c_void, l.len());
            }
            IValue::FloatList(l) => {
                out.tag = FtTag::FtTagFloatList as i32;
                a._floats.push(l.clone());
                let l = a._floats.last().expect("pushed");
                (out.list, out.len) = (l.as_ptr() as *const c_void, l.len());
            }
            IValue::BoolList(l) => {
                out.tag = FtTag::FtTagBoolList as i32;
                a._bools.push(l.iter().map(|&b| u8::from(b)).collect());
                let l = a._bools.last().expect("pushed");
                (out.list, out.len) = (l.as_ptr() as *const c_void, l.len());
            }
            IValue::TensorList(l) => {
                out.tag = FtTag::FtTagTensorList as i32;
                let hs: Vec<*mut FtTensor> = l.iter().map(|t| handle(&mut a, t)).collect();
                a._tensor_lists.push(hs);
                let l = a._tensor_lists.last().expect("pushed");
                (out.list, out.len) = (l.as_ptr() as *const c_void, l.len());
            }
            IValue::OptTensorList(l) => {
                out.tag = FtTag::FtTagOptTensorList as i32;
                let hs: Vec<*mut FtTensor> = l
                    .iter()
                    .map(|t| {
                        t.as_ref()
                            .map_or(std::ptr::null_mut(), |t| handle(&mut a, t))
                    })
                    .collect();
                a._tensor_lists.push(hs);
                let l = a._tensor_lists.last().expect("pushed");
                (out.list, out.len) = (l.as_ptr() as *const c_void, l.len());
            }
            other => ferrotorch_core::bail!(
                NotImplemented,
                "{op}: an argument of type {} cannot be passed to a C kernel",
                other.type_name()
            ),
        }
        a.values.push(out);
    }
    Ok(a)
}

fn call_kernel(
    op: &str,
    kernel: unsafe extern "C" fn(*mut c_void, *const FtValue, usize, *mut FtValue) -> FtStatus,
    user_data: *mut c_void,
    vals: &[IValue],
) -> Result<IValue> {
    let args = c_args(op, vals)?;
    let mut result = FtValue::empty();
    crate::status::set_last("");
    // SAFETY: the plugin registered `kernel` for this op; the arguments
    // and the result slot are valid for the call.
    let status = unsafe {
        kernel(
            user_data,
            args.values.as_ptr(),
            args.values.len(),
            &mut result,
        )
    };
    drop(args);
    if status != FtStatus::FtOk {
        let msg = crate::status::last_message();
        return Err(Error::new(
            ErrorKind::Runtime,
            format!(
                "{op}: the kernel failed ({status:?}){}",
                if msg.is_empty() {
                    String::new()
                } else {
                    format!(": {msg}")
                }
            ),
        ));
    }
    result_value(op, &result)
}

/// What a C kernel wrote into `result`: none, a tensor handle (taken
/// over), a number, or a list or string in memory from [`ft_alloc`]
/// (taken over and freed).
pub(crate) fn result_value(op: &str, result: &FtValue) -> Result<IValue> {
    let bad = |what: &str| {
        Error::new(
            ErrorKind::Runtime,
            format!("{op}: the kernel returned {what}"),
        )
    };
    Ok(match result.tag {
        0 => IValue::None,
        1 => {
            let h = result.tensor;
            let t = crate::tensor::tensor("kernel result", h)
                .map_err(|_| bad("an invalid tensor handle"))?
                .clone();
            let _ = crate::handle::free::<FtTensor>("kernel result", h);
            IValue::Tensor(t)
        }
        2 => IValue::Int(result.i),
        3 => IValue::Float(result.f),
        4 => IValue::Bool(result.i != 0),
        7 | 8 | 10 => crate::plugin_class::take_list(op, result)?,
        t => {
            return Err(bad(&format!(
                "a value of tag {t}, which kernels cannot return"
            )))
        }
    })
}

/// This process's function called `name` (see [`FtGetProc`]).
#[no_mangle]
pub extern "C" fn ft_get_proc(name: *const c_char) -> *const c_void {
    if name.is_null() {
        return std::ptr::null();
    }
    // SAFETY: non-null; the caller promises a NUL-terminated string.
    let name = unsafe { CStr::from_ptr(name) }.to_bytes();
    crate::procs::PROCS
        .iter()
        .find(|p| p.0.as_bytes() == name)
        .map_or(std::ptr::null(), |p| p.1)
}

fn loaded() -> &'static Mutex<Vec<PathBuf>> {
    static L: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
    &L
}

/// The libraries loaded so far (`torch.ops.loaded_libraries`).
pub fn loaded_libraries() -> Vec<PathBuf> {
    loaded().lock().clone()
}

fn dl_error() -> String {
    // SAFETY: dlerror returns null or a NUL-terminated message.
    let e = unsafe { libc::dlerror() };
    if e.is_null() {
        "unknown error".into()
    } else {
        // SAFETY: checked non-null above.
        unsafe { CStr::from_ptr(e) }.to_string_lossy().into_owned()
    }
}

/// Load the plugin at `path` and run its registration
/// (`torch.ops.load_library`; Note [Plugin ABI]): its ops join the
/// dispatcher. Loading a path again does nothing.
pub fn load_library(path: impl AsRef<Path>) -> Result<()> {
    let path = path.as_ref();
    let full = std::fs::canonicalize(path).map_err(|e| {
        Error::new(
            ErrorKind::Io,
            format!("load_library: cannot open {}: {e}", path.display()),
        )
    })?;
    let mut done = loaded().lock();
    if done.contains(&full) {
        return Ok(());
    }
    let c = CString::new(full.as_os_str().as_encoded_bytes()).map_err(|_| {
        Error::new(
            ErrorKind::Value,
            "load_library: the path holds a NUL byte".to_string(),
        )
    })?;
    let fail = |msg: String| {
        Error::new(
            ErrorKind::Runtime,
            format!("load_library({}): {msg}", full.display()),
        )
    };
    // SAFETY: dlopen of a path; the library's initialisers run, as any
    // library's do when loaded.
    let lib = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if lib.is_null() {
        return Err(fail(dl_error()));
    }
    let sym = |name: &CStr| {
        // SAFETY: lib is a live handle from dlopen.
        unsafe { libc::dlsym(lib, name.as_ptr()) }
    };
    let close = || {
        // SAFETY: lib came from dlopen and nothing of it is in use.
        unsafe { libc::dlclose(lib) };
    };
    let version = sym(c"ferrotorch_plugin_abi_version");
    let init = sym(c"ferrotorch_plugin_init");
    if version.is_null() || init.is_null() {
        close();
        return Err(fail(
            "not a ferrotorch plugin: it exports no ferrotorch_plugin_abi_version and ferrotorch_plugin_init".into(),
        ));
    }
    // SAFETY: the plugin ABI defines the symbol as `uint32_t (void)`.
    let version: unsafe extern "C" fn() -> u32 = unsafe { std::mem::transmute(version) };
    // SAFETY: calling the plugin's version function, as the ABI says.
    let v = unsafe { version() };
    if v != FT_PLUGIN_ABI_VERSION {
        close();
        return Err(fail(format!(
            "the plugin was built for plugin ABI version {v}, but this build of ferrotorch loads version {FT_PLUGIN_ABI_VERSION}; rebuild it against this ferrotorch.h"
        )));
    }
    // SAFETY: the plugin ABI defines the symbol as `FtStatus (FtGetProc)`.
    let init: unsafe extern "C" fn(FtGetProc) -> FtStatus = unsafe { std::mem::transmute(init) };
    crate::status::set_last("");
    // SAFETY: calling the plugin's init with this process's lookup.
    let status = unsafe { init(Some(ft_get_proc)) };
    if status != FtStatus::FtOk {
        // its ops may be registered already: the library stays loaded
        return Err(fail(format!(
            "ferrotorch_plugin_init failed ({status:?}): {}",
            crate::status::last_message()
        )));
    }
    done.push(full);
    Ok(())
}

/// `ft_load_library(path)`: [`load_library`] from C.
#[no_mangle]
pub extern "C" fn ft_load_library(path: *const c_char) -> FtStatus {
    let what = "ft_load_library";
    entry(what, || -> Res<()> {
        let p = c_str(what, path)?;
        load_library(p)?;
        Ok(())
    })
}

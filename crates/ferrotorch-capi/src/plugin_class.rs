//! Custom classes from C plugins (`torch.classes.load_library`): a plugin
//! defines a class, its constructor, methods and pickling with C
//! functions over an opaque state pointer.
//!
//! # Note [Plugin classes]
//! `ft_class_def("ns::Name", free_state)` registers the class;
//! `ft_class_def_init(name, "Tensor x, int n=1", init, user_data)` its
//! constructor, which makes the state (`*state = ...`);
//! `ft_class_def_method(name, "push(Tensor x) -> ()", method, user_data)`
//! a method, which gets the state first; `ft_class_def_pickle(name,
//! "Tensor[]", getstate, setstate, user_data)` saving and copying (the
//! state value `getstate` returns is what a saved program holds, and
//! `setstate` gets it as its one argument). An object owns its state and
//! calls `free_state` on it when the last reference goes. As with
//! TorchBind classes, methods may be called from any thread: a class
//! whose methods change the state guards it with its own lock. Methods
//! are ops (Note [Custom classes]), so their arguments and results are
//! those of C kernels (Note [Plugin ABI]); a list or string result lives
//! in memory from `ft_alloc`, which the library takes over and frees.
//! The functions are new in plugin ABI version 1 and change nothing a
//! plugin of that version relies on.

use crate::plugin::{c_args, result_value};
use crate::status::{entry, Fail, FtStatus, Res};
use crate::tensor::FtTensor;
use crate::value::{c_str, FtValue};
use ferrotorch_core::dispatch::IValue;
use ferrotorch_core::library::{Kind, Library};
use ferrotorch_core::{Error, ErrorKind, Result};
use parking_lot::Mutex;
use std::collections::{HashMap, HashSet};
use std::ffi::{c_char, c_void};

/// Frees a class's state (given to `ft_class_def`).
pub type FtStateFree = Option<unsafe extern "C" fn(state: *mut c_void)>;

/// Makes a state from the bound arguments (a constructor, or `setstate`
/// with the saved state as its one argument); returns `FT_OK` after
/// writing `*state`, or an error status after `ft_set_error`.
pub type FtClassInit = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        args: *const FtValue,
        nargs: usize,
        state: *mut *mut c_void,
    ) -> FtStatus,
>;

/// A method: the object's state and the other bound arguments in, one
/// result out (as a C kernel's).
pub type FtClassMethod = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        state: *mut c_void,
        args: *const FtValue,
        nargs: usize,
        result: *mut FtValue,
    ) -> FtStatus,
>;

/// An object's state: the plugin's pointer and how to free it.
struct CObject {
    state: *mut c_void,
    free: unsafe extern "C" fn(*mut c_void),
}

// SAFETY: the plugin's state; a plugin defining a class promises that its
// methods may run on any thread (Note [Plugin classes]).
unsafe impl Send for CObject {}
unsafe impl Sync for CObject {}

impl Drop for CObject {
    fn drop(&mut self) {
        // SAFETY: the state came from this class's init; freed once, here.
        unsafe { (self.free)(self.state) }
    }
}

/// `user_data`, passed back to the plugin.
#[derive(Clone, Copy)]
struct Data(*mut c_void);
// SAFETY: the plugin's pointer, only passed back to it (Note [Plugin ABI]).
unsafe impl Send for Data {}
unsafe impl Sync for Data {}

fn frees() -> &'static Mutex<HashMap<String, unsafe extern "C" fn(*mut c_void)>> {
    static F: std::sync::OnceLock<Mutex<HashMap<String, unsafe extern "C" fn(*mut c_void)>>> =
        std::sync::OnceLock::new();
    F.get_or_init(Default::default)
}

fn split(what: &str, name: &str) -> Res<(String, String)> {
    name.split_once("::")
        .map(|(ns, n)| (ns.trim().to_string(), n.trim().to_string()))
        .ok_or_else(|| {
            Fail::new(
                FtStatus::FtErrorValue,
                format!("{what}: the class must be named ns::Name, not {name:?}"),
            )
        })
}

fn free_of(what: &str, name: &str) -> Res<unsafe extern "C" fn(*mut c_void)> {
    frees().lock().get(name).copied().ok_or_else(|| {
        Fail::new(
            FtStatus::FtErrorValue,
            format!("{what}: class {name} was not defined (ft_class_def first)"),
        )
    })
}

fn fail(what: &str, status: FtStatus) -> Error {
    let msg = crate::status::last_message();
    Error::new(
        ErrorKind::Runtime,
        format!(
            "{what}: the plugin failed ({status:?}){}",
            if msg.is_empty() {
                String::new()
            } else {
                format!(": {msg}")
            }
        ),
    )
}

fn run_init(
    what: &str,
    init: unsafe extern "C" fn(*mut c_void, *const FtValue, usize, *mut *mut c_void) -> FtStatus,
    data: Data,
    free: unsafe extern "C" fn(*mut c_void),
    vals: &[IValue],
) -> Result<CObject> {
    let args = c_args(what, vals)?;
    let mut state = std::ptr::null_mut();
    crate::status::set_last("");
    // SAFETY: the plugin registered `init`; the arguments and the state
    // slot are valid for the call.
    let status = unsafe { init(data.0, args.values.as_ptr(), args.values.len(), &mut state) };
    drop(args);
    if status != FtStatus::FtOk {
        return Err(fail(what, status));
    }
    Ok(CObject { state, free })
}

fn run_method(
    what: &str,
    method: unsafe extern "C" fn(
        *mut c_void,
        *mut c_void,
        *const FtValue,
        usize,
        *mut FtValue,
    ) -> FtStatus,
    data: Data,
    obj: &CObject,
    vals: &[IValue],
) -> Result<IValue> {
    let args = c_args(what, vals)?;
    let mut result = FtValue::empty();
    crate::status::set_last("");
    // SAFETY: the plugin registered `method` for this class; the state is
    // the object's, the arguments and the result slot valid for the call.
    let status = unsafe {
        method(
            data.0,
            obj.state,
            args.values.as_ptr(),
            args.values.len(),
            &mut result,
        )
    };
    drop(args);
    if status != FtStatus::FtOk {
        return Err(fail(what, status));
    }
    result_value(what, &result)
}

fn null(what: &str, which: &str) -> Fail {
    Fail::new(
        FtStatus::FtErrorNullHandle,
        format!("{what}: {which} is null"),
    )
}

/// Define class `name` (`"ns::Name"`): its objects hold a state pointer
/// that `free_state` frees (Note [Plugin classes]).
#[no_mangle]
pub extern "C" fn ft_class_def(name: *const c_char, free_state: FtStateFree) -> FtStatus {
    let what = "ft_class_def";
    entry(what, || {
        let name = c_str(what, name)?.to_string();
        let free = free_state.ok_or_else(|| null(what, "free_state"))?;
        let (ns, class) = split(what, &name)?;
        let mut lib = Library::new(&ns, Kind::Fragment)?;
        lib.class_::<CObject>(&class)?;
        frees().lock().insert(format!("{ns}::{class}"), free);
        Ok(())
    })
}

/// The constructor of class `name`: `args` its argument list in schema
/// form (`"Tensor x, int n=1"`), `init` makes the state.
#[no_mangle]
pub extern "C" fn ft_class_def_init(
    name: *const c_char,
    args: *const c_char,
    init: FtClassInit,
    user_data: *mut c_void,
) -> FtStatus {
    let what = "ft_class_def_init";
    entry(what, || {
        let name = c_str(what, name)?.to_string();
        let args = c_str(what, args)?.to_string();
        let init = init.ok_or_else(|| null(what, "init"))?;
        let free = free_of(what, &name)?;
        let (ns, class) = split(what, &name)?;
        let data = Data(user_data);
        let op = format!("{name}::__init__");
        let mut lib = Library::new(&ns, Kind::Fragment)?;
        lib.class_::<CObject>(&class)?
            .def_init_raw(&args, move |vals| run_init(&op, init, data, free, vals))?;
        Ok(())
    })
}

/// A method of class `name`, declared `"push(Tensor x) -> ()"`.
#[no_mangle]
pub extern "C" fn ft_class_def_method(
    name: *const c_char,
    decl: *const c_char,
    method: FtClassMethod,
    user_data: *mut c_void,
) -> FtStatus {
    let what = "ft_class_def_method";
    entry(what, || {
        let name = c_str(what, name)?.to_string();
        let decl = c_str(what, decl)?.to_string();
        let method = method.ok_or_else(|| null(what, "method"))?;
        free_of(what, &name)?;
        let (ns, class) = split(what, &name)?;
        let data = Data(user_data);
        let op = format!(
            "{name}::{}",
            decl.split('(').next().unwrap_or_default().trim()
        );
        let mut lib = Library::new(&ns, Kind::Fragment)?;
        lib.class_::<CObject>(&class)?
            .def_raw(&decl, move |obj, vals| {
                run_method(&op, method, data, obj, vals)
            })?;
        Ok(())
    })
}

/// Saving and copying objects of class `name`: `getstate` returns the
/// state (of schema type `state_type`, `"Tensor[]"`), `setstate` makes a
/// state from it.
#[no_mangle]
pub extern "C" fn ft_class_def_pickle(
    name: *const c_char,
    state_type: *const c_char,
    getstate: FtClassMethod,
    setstate: FtClassInit,
    user_data: *mut c_void,
) -> FtStatus {
    let what = "ft_class_def_pickle";
    entry(what, || {
        let name = c_str(what, name)?.to_string();
        let state_type = c_str(what, state_type)?.to_string();
        let getstate = getstate.ok_or_else(|| null(what, "getstate"))?;
        let setstate = setstate.ok_or_else(|| null(what, "setstate"))?;
        let free = free_of(what, &name)?;
        let (ns, class) = split(what, &name)?;
        let data = Data(user_data);
        let (get_op, set_op) = (
            format!("{name}::__getstate__"),
            format!("{name}::__setstate__"),
        );
        let mut lib = Library::new(&ns, Kind::Fragment)?;
        lib.class_::<CObject>(&class)?.def_pickle_raw(
            &state_type,
            move |obj| run_method(&get_op, getstate, data, obj, &[]),
            move |state| run_init(&set_op, setstate, data, free, &[state]),
        )?;
        Ok(())
    })
}

fn allocations() -> &'static Mutex<HashSet<usize>> {
    static A: std::sync::OnceLock<Mutex<HashSet<usize>>> = std::sync::OnceLock::new();
    A.get_or_init(Default::default)
}

/// `bytes` of memory for a list or string result (Note [Plugin classes]):
/// the library frees it after reading the result. Null when out of memory.
#[no_mangle]
pub extern "C" fn ft_alloc(bytes: usize) -> *mut c_void {
    // SAFETY: malloc of at least one byte; null on failure.
    let p = unsafe { libc::malloc(bytes.max(1)) };
    if !p.is_null() {
        allocations().lock().insert(p as usize);
    }
    p
}

/// A list result (int, float or tensor list) read and its memory freed;
/// tensors' handles are taken over.
pub(crate) fn take_list(op: &str, result: &FtValue) -> Result<IValue> {
    let p = result.list as usize;
    let bad = |m: String| Error::new(ErrorKind::Runtime, format!("{op}: the kernel returned {m}"));
    if result.len > 0 && !allocations().lock().remove(&p) {
        return Err(bad("a list whose memory is not from ft_alloc".into()));
    }
    let n = result.len;
    let out = match result.tag {
        7 => {
            // SAFETY: ft_alloc memory holding `n` int64_t, per the tag.
            let s = unsafe { std::slice::from_raw_parts(result.list as *const i64, n) };
            IValue::IntList(s.to_vec())
        }
        8 => {
            // SAFETY: as above, `n` doubles.
            let s = unsafe { std::slice::from_raw_parts(result.list as *const f64, n) };
            IValue::FloatList(s.to_vec())
        }
        _ => {
            // SAFETY: as above, `n` tensor handles.
            let hs = unsafe { std::slice::from_raw_parts(result.list as *const *mut FtTensor, n) };
            let mut ts = Vec::with_capacity(n);
            for &h in hs {
                let t = crate::tensor::tensor("kernel result", h)
                    .map_err(|_| bad("an invalid tensor handle in a list".into()))?
                    .clone();
                let _ = crate::handle::free::<FtTensor>("kernel result", h);
                ts.push(t);
            }
            IValue::TensorList(ts)
        }
    };
    if n > 0 {
        // SAFETY: from ft_alloc (checked above), freed once.
        unsafe { libc::free(result.list as *mut c_void) };
    }
    Ok(out)
}

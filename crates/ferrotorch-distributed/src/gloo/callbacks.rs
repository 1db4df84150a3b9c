//! The store, as the shim calls it: each callback catches panics and
//! errors and reports them through `err`.

use crate::store::Store;
use std::os::raw::{c_char, c_int, c_void};

unsafe fn report(err: *mut c_char, errlen: usize, msg: &str) -> c_int {
    if !err.is_null() && errlen > 0 {
        let n = msg.len().min(errlen - 1);
        // SAFETY: the shim passes a buffer of errlen bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(msg.as_ptr(), err as *mut u8, n);
            *err.add(n) = 0;
        }
    }
    -1
}

unsafe fn store<'a>(this: *mut c_void) -> &'a dyn Store {
    // SAFETY: `this` is the `Box<Arc<dyn Store>>` the connection made,
    // alive until it returns.
    unsafe { &**(this as *const std::sync::Arc<dyn Store>) }
}

unsafe fn key<'a>(k: *const c_char, n: usize) -> &'a str {
    if n == 0 {
        return "";
    }
    // SAFETY: the shim passes a std::string's data and size.
    let b = unsafe { std::slice::from_raw_parts(k as *const u8, n) };
    std::str::from_utf8(b).unwrap_or("<not UTF-8>")
}

pub unsafe extern "C" fn set(
    this: *mut c_void,
    k: *const c_char,
    kl: usize,
    v: *const u8,
    vl: usize,
    err: *mut c_char,
    el: usize,
) -> c_int {
    let r = std::panic::catch_unwind(|| {
        // SAFETY: buffers from the shim (see `key`).
        let v: &[u8] = if vl == 0 {
            &[]
        } else {
            unsafe { std::slice::from_raw_parts(v, vl) }
        };
        let k = unsafe { key(k, kl) };
        unsafe { store(this) }.set(k, v)
    });
    match r {
        Ok(Ok(())) => 0,
        Ok(Err(e)) => unsafe { report(err, el, &e.to_string()) },
        Err(_) => unsafe { report(err, el, "store.set panicked") },
    }
}

pub unsafe extern "C" fn get(
    this: *mut c_void,
    k: *const c_char,
    kl: usize,
    out: *mut *mut u8,
    ol: *mut usize,
    err: *mut c_char,
    el: usize,
) -> c_int {
    let r = std::panic::catch_unwind(|| unsafe { store(this) }.get(unsafe { key(k, kl) }));
    match r {
        Ok(Ok(v)) => {
            let b = v.into_boxed_slice();
            // SAFETY: out-pointers from the shim; free_value takes it back.
            unsafe {
                *ol = b.len();
                *out = Box::into_raw(b) as *mut u8;
            }
            0
        }
        Ok(Err(e)) => unsafe { report(err, el, &e.to_string()) },
        Err(_) => unsafe { report(err, el, "store.get panicked") },
    }
}

pub unsafe extern "C" fn free_value(v: *mut u8, n: usize) {
    if !v.is_null() {
        // SAFETY: made by `get` from a boxed slice of n bytes.
        drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(v, n)) });
    }
}

pub unsafe extern "C" fn wait(
    this: *mut c_void,
    ks: *const *const c_char,
    kls: *const usize,
    n: usize,
    ms: i64,
    err: *mut c_char,
    el: usize,
) -> c_int {
    let r = std::panic::catch_unwind(|| {
        let keys: Vec<String> = (0..n)
            // SAFETY: n keys from the shim.
            .map(|i| unsafe { key(*ks.add(i), *kls.add(i)) }.to_string())
            .collect();
        let t = std::time::Duration::from_millis(ms.max(0) as u64);
        unsafe { store(this) }.wait(&keys, Some(t))
    });
    match r {
        Ok(Ok(())) => 0,
        Ok(Err(e)) => unsafe { report(err, el, &e.to_string()) },
        Err(_) => unsafe { report(err, el, "store.wait panicked") },
    }
}

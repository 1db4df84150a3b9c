//! The `"gloo"` backend: Gloo's collectives (Debian's `libgloo-dev`)
//! through the C++ shim the build compiles (`shim/gloo_shim.cc`), over
//! Gloo's TCP transport, with rendezvous through a [`Store`].

use crate::store::Store;
use crate::ReduceOp;
use ferrotorch_core::{DType, Error, ErrorKind, Result, Tensor};
use std::sync::Arc;
use std::time::Duration;

fn err(msg: String) -> Error {
    Error::new(ErrorKind::Runtime, msg)
}

/// Whether this build has the Gloo backend (`torch.distributed.is_gloo_available`).
pub fn is_available() -> bool {
    cfg!(ft_gloo)
}

/// Why the backend is missing, and how to get it.
pub const UNAVAILABLE: &str = "the gloo backend is not built: install Gloo's headers and library \
(Debian: apt-get install libgloo-dev) and build with the `gloo` feature of ferrotorch-distributed";

#[cfg(ft_gloo)]
mod ffi {
    use std::os::raw::{c_char, c_int, c_void};

    #[repr(C)]
    pub struct StoreVtable {
        pub this: *mut c_void,
        pub set: unsafe extern "C" fn(
            *mut c_void,
            *const c_char,
            usize,
            *const u8,
            usize,
            *mut c_char,
            usize,
        ) -> c_int,
        pub get: unsafe extern "C" fn(
            *mut c_void,
            *const c_char,
            usize,
            *mut *mut u8,
            *mut usize,
            *mut c_char,
            usize,
        ) -> c_int,
        pub free_value: unsafe extern "C" fn(*mut u8, usize),
        pub wait: unsafe extern "C" fn(
            *mut c_void,
            *const *const c_char,
            *const usize,
            usize,
            i64,
            *mut c_char,
            usize,
        ) -> c_int,
    }

    #[repr(C)]
    pub struct Ctx {
        _private: [u8; 0],
    }

    extern "C" {
        pub fn ft_gloo_connect(
            store: StoreVtable,
            rank: c_int,
            size: c_int,
            host: *const c_char,
            timeout_ms: i64,
            err: *mut c_char,
            errlen: usize,
        ) -> *mut Ctx;
        pub fn ft_gloo_free(c: *mut Ctx);
        pub fn ft_gloo_allreduce(
            c: *mut Ctx,
            data: *mut c_void,
            count: usize,
            dtype: c_int,
            op: c_int,
            err: *mut c_char,
            errlen: usize,
        ) -> c_int;
        pub fn ft_gloo_broadcast(
            c: *mut Ctx,
            data: *mut c_void,
            nbytes: usize,
            root: c_int,
            err: *mut c_char,
            errlen: usize,
        ) -> c_int;
        pub fn ft_gloo_allgather(
            c: *mut Ctx,
            input: *const c_void,
            out: *mut c_void,
            nbytes: usize,
            err: *mut c_char,
            errlen: usize,
        ) -> c_int;
        pub fn ft_gloo_barrier(c: *mut Ctx, err: *mut c_char, errlen: usize) -> c_int;
    }
}

#[cfg(ft_gloo)]
mod callbacks {
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
}

/// A connected Gloo context: one rank of a group (`ProcessGroupGloo`).
pub struct ProcessGroupGloo {
    #[cfg(ft_gloo)]
    ctx: std::sync::Mutex<usize>,
    rank: usize,
    size: usize,
    _store: Arc<dyn Store>,
}

#[cfg(ft_gloo)]
fn call(what: &str, f: impl FnOnce(*mut std::os::raw::c_char, usize) -> i32) -> Result<()> {
    let mut buf = vec![0u8; 1024];
    if f(buf.as_mut_ptr() as *mut std::os::raw::c_char, buf.len()) != 0 {
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        return Err(err(format!(
            "gloo {what}: {}",
            String::from_utf8_lossy(&buf[..end])
        )));
    }
    Ok(())
}

fn dtype_code(d: DType, what: &str) -> Result<i32> {
    Ok(match d {
        DType::F32 => 0,
        DType::F64 => 1,
        DType::I32 => 2,
        DType::I64 => 3,
        DType::U8 => 4,
        DType::I8 => 5,
        d => {
            return Err(err(format!(
                "gloo {what}: dtype {d} is not reduced by Gloo (float32, float64, int32, int64, uint8, int8)"
            )))
        }
    })
}

impl ProcessGroupGloo {
    /// Connect rank `rank` of `size` through `store` (every rank publishes
    /// its TCP address on `hostname` there and connects to the others).
    pub fn new(
        store: Arc<dyn Store>,
        rank: usize,
        size: usize,
        hostname: &str,
        timeout: Duration,
    ) -> Result<ProcessGroupGloo> {
        if size == 0 || rank >= size {
            return Err(err(format!(
                "gloo: rank {rank} is not in a group of {size}"
            )));
        }
        #[cfg(not(ft_gloo))]
        {
            let _ = (hostname, timeout);
            Err(err(UNAVAILABLE.into()))
        }
        #[cfg(ft_gloo)]
        {
            let boxed: Box<Arc<dyn Store>> = Box::new(store.clone());
            let this = &*boxed as *const Arc<dyn Store> as *mut std::os::raw::c_void;
            let vt = ffi::StoreVtable {
                this,
                set: callbacks::set,
                get: callbacks::get,
                free_value: callbacks::free_value,
                wait: callbacks::wait,
            };
            let host = std::ffi::CString::new(hostname)
                .map_err(|_| err("gloo: a hostname with NUL".into()))?;
            let mut ctx = std::ptr::null_mut();
            call("connect", |e, n| {
                // SAFETY: the vtable's `this` lives (boxed) until this returns;
                // the shim only calls the store while connecting.
                ctx = unsafe {
                    ffi::ft_gloo_connect(
                        vt,
                        rank as i32,
                        size as i32,
                        host.as_ptr(),
                        timeout.as_millis() as i64,
                        e,
                        n,
                    )
                };
                if ctx.is_null() {
                    -1
                } else {
                    0
                }
            })?;
            drop(boxed);
            Ok(ProcessGroupGloo {
                ctx: std::sync::Mutex::new(ctx as usize),
                rank,
                size,
                _store: store,
            })
        }
    }

    /// This process's rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of ranks.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Run `f` on a contiguous copy of `t`'s bytes, then write them back
    /// into `t` (its version bumps, as an in-place op's).
    fn in_place(t: &Tensor, f: impl FnOnce(&mut [u8]) -> Result<()>) -> Result<()> {
        let mut bytes = t.to_bytes()?;
        f(&mut bytes)?;
        let out = Tensor::from_bytes(&bytes, t.shape(), t.dtype())?;
        t.copy_(&out)
    }

    /// `all_reduce(t, op)`: every rank's `t` becomes the reduction of all.
    pub fn all_reduce(&self, t: &Tensor, op: ReduceOp) -> Result<()> {
        let code = dtype_code(t.dtype(), "all_reduce")?;
        let gloo_op = match op {
            ReduceOp::Sum | ReduceOp::Avg => 0,
            ReduceOp::Product => 1,
            ReduceOp::Min => 2,
            ReduceOp::Max => 3,
        };
        if op == ReduceOp::Avg && !t.is_floating_point() {
            return Err(err(format!(
                "gloo all_reduce: AVG of a {} tensor",
                t.dtype()
            )));
        }
        let n = t.numel();
        self.with_ctx(|ctx| {
            Self::in_place(t, |b| {
                #[cfg(ft_gloo)]
                return call("all_reduce", |e, l| unsafe {
                    ffi::ft_gloo_allreduce(
                        ctx as *mut ffi::Ctx,
                        b.as_mut_ptr().cast(),
                        n,
                        code,
                        gloo_op,
                        e,
                        l,
                    )
                });
                #[cfg(not(ft_gloo))]
                {
                    let _ = (ctx, b, n, code, gloo_op);
                    Err(err(UNAVAILABLE.into()))
                }
            })
        })?;
        if op == ReduceOp::Avg {
            t.copy_(&t.div(self.size as f64)?)?;
        }
        Ok(())
    }

    /// `broadcast(t, src)`: every rank's `t` becomes rank `src`'s.
    pub fn broadcast(&self, t: &Tensor, src: usize) -> Result<()> {
        if src >= self.size {
            return Err(err(format!(
                "gloo broadcast: src {src} is not a rank of {}",
                self.size
            )));
        }
        self.with_ctx(|ctx| {
            Self::in_place(t, |b| {
                #[cfg(ft_gloo)]
                return call("broadcast", |e, l| unsafe {
                    ffi::ft_gloo_broadcast(
                        ctx as *mut ffi::Ctx,
                        b.as_mut_ptr().cast(),
                        b.len(),
                        src as i32,
                        e,
                        l,
                    )
                });
                #[cfg(not(ft_gloo))]
                {
                    let _ = (ctx, b);
                    Err(err(UNAVAILABLE.into()))
                }
            })
        })
    }

    /// `all_gather`: every rank's `t`, in rank order (each the same shape).
    pub fn all_gather(&self, t: &Tensor) -> Result<Vec<Tensor>> {
        let input = t.to_bytes()?;
        let mut out = vec![0u8; input.len() * self.size];
        self.with_ctx(|ctx| {
            #[cfg(ft_gloo)]
            return call("all_gather", |e, l| unsafe {
                ffi::ft_gloo_allgather(
                    ctx as *mut ffi::Ctx,
                    input.as_ptr().cast(),
                    out.as_mut_ptr().cast(),
                    input.len(),
                    e,
                    l,
                )
            });
            #[cfg(not(ft_gloo))]
            {
                let _ = (ctx, &mut out);
                Err(err(UNAVAILABLE.into()))
            }
        })?;
        out.chunks(input.len().max(1))
            .take(self.size)
            .map(|c| {
                Tensor::from_bytes(if input.is_empty() { &[] } else { c }, t.shape(), t.dtype())
            })
            .collect()
    }

    /// `barrier()`: returns once every rank has called it.
    pub fn barrier(&self) -> Result<()> {
        self.with_ctx(|ctx| {
            #[cfg(ft_gloo)]
            return call("barrier", |e, l| unsafe {
                ffi::ft_gloo_barrier(ctx as *mut ffi::Ctx, e, l)
            });
            #[cfg(not(ft_gloo))]
            {
                let _ = ctx;
                Err(err(UNAVAILABLE.into()))
            }
        })
    }

    /// One collective at a time on the context (Gloo's contexts are not
    /// for concurrent use).
    fn with_ctx<R>(&self, f: impl FnOnce(usize) -> Result<R>) -> Result<R> {
        #[cfg(ft_gloo)]
        {
            let g = self.ctx.lock().unwrap();
            f(*g)
        }
        #[cfg(not(ft_gloo))]
        f(0)
    }
}

#[cfg(ft_gloo)]
impl Drop for ProcessGroupGloo {
    fn drop(&mut self) {
        let p = *self.ctx.lock().unwrap();
        // SAFETY: made by ft_gloo_connect, freed once.
        unsafe { ffi::ft_gloo_free(p as *mut ffi::Ctx) };
    }
}

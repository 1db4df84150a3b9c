//! The `"gloo"` backend: Gloo's collectives (Debian's `libgloo-dev`)
//! through the C++ shim the build compiles (`shim/gloo_shim.cc`), over
//! Gloo's TCP transport, with rendezvous through a [`Store`].

#[cfg(ft_gloo)]
mod callbacks;
#[cfg(ft_gloo)]
mod ffi;

use crate::group::{err, ProcessGroup};
#[cfg(ft_gloo)]
use crate::group::{Elem, Engine, Fingerprint, Inline, Reduction, INLINE_BYTES};
use crate::store::Store;
use ferrotorch_core::Result;
use std::sync::Arc;
use std::time::Duration;

/// Whether this build has the Gloo backend (`torch.distributed.is_gloo_available`).
pub fn is_available() -> bool {
    cfg!(ft_gloo)
}

/// Why the backend is missing, and how to get it.
pub const UNAVAILABLE: &str = "the gloo backend is not built: install Gloo's headers and library \
(Debian: apt-get install libgloo-dev) and build with the `gloo` feature of ferrotorch-distributed";

/// A connected Gloo context: one rank of a group, as an [`Engine`].
#[cfg_attr(not(ft_gloo), allow(dead_code))]
pub struct ProcessGroupGloo {
    /// the shim's context: collectives come one at a time (the group's
    /// turn), while sends and receives may run beside them on other
    /// threads, on Gloo's unbound buffers (as torch's ProcessGroupGloo)
    #[cfg(ft_gloo)]
    ctx: usize,
    rank: usize,
    size: usize,
    _store: Arc<dyn Store>,
}

impl ProcessGroupGloo {
    /// Connect rank `rank` of `size` through `store` (every rank publishes
    /// its TCP address on `hostname` there and connects to the others);
    /// each collective gives up after `timeout`.
    pub fn connect(
        store: Arc<dyn Store>,
        rank: usize,
        size: usize,
        hostname: &str,
        timeout: Duration,
    ) -> Result<ProcessGroup> {
        if size == 0 || rank >= size {
            return Err(err(format!(
                "gloo: rank {rank} is not in a group of {size}"
            )));
        }
        #[cfg(not(ft_gloo))]
        {
            let _ = (hostname, timeout, store);
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
            Ok(ProcessGroup::new(Box::new(ProcessGroupGloo {
                ctx: ctx as usize,
                rank,
                size,
                _store: store,
            })))
        }
    }

    /// Run `f` on the context with a buffer for the shim's message.
    #[cfg(ft_gloo)]
    fn run(
        &self,
        what: &str,
        f: impl FnOnce(usize, *mut std::os::raw::c_char, usize) -> i32,
    ) -> Result<()> {
        call(what, |e, n| f(self.ctx, e, n))
    }
}

#[cfg(ft_gloo)]
fn call(what: &str, f: impl FnOnce(*mut std::os::raw::c_char, usize) -> i32) -> Result<()> {
    crate::group::shim_call("gloo", what, f)
}

#[cfg(ft_gloo)]
use ffi::*;

// SAFETY (every call below): the context is live (freed only on drop);
// each buffer is valid for the length passed, and
// the lengths agree across ranks (the group's fingerprints check it).
// Without Gloo no ProcessGroupGloo is ever made (`new` says UNAVAILABLE).
#[cfg(ft_gloo)]
impl Engine for ProcessGroupGloo {
    fn name(&self) -> &'static str {
        "gloo"
    }

    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn all_reduce(&self, buf: &mut [u8], elem: Elem, op: Reduction) -> Result<()> {
        let n = buf.len() / elem.size();
        self.run("all_reduce", |c, e, l| unsafe {
            ft_gloo_allreduce(
                c as *mut Ctx,
                buf.as_mut_ptr().cast(),
                n,
                elem as i32,
                op as i32,
                e,
                l,
            )
        })
    }

    fn broadcast(&self, buf: &mut [u8], root: usize) -> Result<()> {
        self.run("broadcast", |c, e, l| unsafe {
            ft_gloo_broadcast(
                c as *mut Ctx,
                buf.as_mut_ptr().cast(),
                buf.len(),
                root as i32,
                e,
                l,
            )
        })
    }

    fn all_gather(&self, input: &[u8], out: &mut [u8]) -> Result<()> {
        self.run("all_gather", |c, e, l| unsafe {
            ft_gloo_allgather(
                c as *mut Ctx,
                input.as_ptr().cast(),
                out.as_mut_ptr().cast(),
                input.len(),
                e,
                l,
            )
        })
    }

    fn reduce(
        &self,
        input: &[u8],
        out: &mut [u8],
        elem: Elem,
        op: Reduction,
        root: usize,
    ) -> Result<()> {
        let n = input.len() / elem.size();
        self.run("reduce", |c, e, l| unsafe {
            ft_gloo_reduce(
                c as *mut Ctx,
                input.as_ptr().cast(),
                out.as_mut_ptr().cast(),
                n,
                elem as i32,
                op as i32,
                root as i32,
                e,
                l,
            )
        })
    }

    fn gather(&self, input: &[u8], out: &mut [u8], root: usize) -> Result<()> {
        self.run("gather", |c, e, l| unsafe {
            ft_gloo_gather(
                c as *mut Ctx,
                input.as_ptr().cast(),
                out.as_mut_ptr().cast(),
                input.len(),
                root as i32,
                e,
                l,
            )
        })
    }

    fn scatter(&self, input: &[u8], out: &mut [u8], root: usize) -> Result<()> {
        self.run("scatter", |c, e, l| unsafe {
            ft_gloo_scatter(
                c as *mut Ctx,
                input.as_ptr().cast(),
                out.as_mut_ptr().cast(),
                out.len(),
                root as i32,
                e,
                l,
            )
        })
    }

    fn all_to_all(&self, input: &[u8], out: &mut [u8]) -> Result<()> {
        let each = input.len() / self.size;
        self.run("all_to_all_single", |c, e, l| unsafe {
            ft_gloo_alltoall(
                c as *mut Ctx,
                input.as_ptr().cast(),
                out.as_mut_ptr().cast(),
                each,
                e,
                l,
            )
        })
    }

    fn all_to_all_v(
        &self,
        input: &[u8],
        in_bytes: &[i64],
        out: &mut [u8],
        out_bytes: &[i64],
    ) -> Result<()> {
        self.run("all_to_all_single", |c, e, l| unsafe {
            ft_gloo_alltoallv(
                c as *mut Ctx,
                input.as_ptr().cast(),
                in_bytes.as_ptr(),
                out.as_mut_ptr().cast(),
                out_bytes.as_ptr(),
                e,
                l,
            )
        })
    }

    fn send(&self, data: &[u8], dst: usize, tag: u64) -> Result<()> {
        self.run("send", |c, e, l| unsafe {
            ft_gloo_send(
                c as *mut Ctx,
                data.as_ptr().cast(),
                data.len(),
                dst as i32,
                tag,
                e,
                l,
            )
        })
    }

    fn recv(&self, buf: &mut [u8], src: usize, tag: u64) -> Result<()> {
        self.run("recv", |c, e, l| unsafe {
            ft_gloo_recv(
                c as *mut Ctx,
                buf.as_mut_ptr().cast(),
                buf.len(),
                src as i32,
                tag,
                e,
                l,
            )
        })
    }

    fn barrier(&self) -> Result<()> {
        self.run("barrier", |c, e, l| unsafe {
            ft_gloo_barrier(c as *mut Ctx, e, l)
        })
    }

    fn agree(&self, fp: &Fingerprint, inline: Option<Inline<'_>>) -> Result<bool> {
        let (data, nbytes, elem, op) = match inline {
            Some((b, e, r)) => (b.as_mut_ptr(), b.len(), e as i32, r as i32),
            None => (std::ptr::null_mut(), 0, 0, 0),
        };
        if nbytes > INLINE_BYTES {
            return Err(err(format!(
                "gloo: {nbytes} bytes inline in the fingerprint check (at most {INLINE_BYTES})"
            )));
        }
        let mut agreed = 0;
        self.run("fingerprint check", |c, e, l| unsafe {
            ft_gloo_agree(
                c as *mut Ctx,
                fp.as_ptr(),
                fp.len(),
                data.cast(),
                nbytes,
                elem,
                op,
                &mut agreed,
                e,
                l,
            )
        })?;
        Ok(agreed != 0)
    }
}

#[cfg(ft_gloo)]
impl Drop for ProcessGroupGloo {
    fn drop(&mut self) {
        // SAFETY: made by ft_gloo_connect, freed once.
        unsafe { ffi::ft_gloo_free(self.ctx as *mut ffi::Ctx) };
    }
}

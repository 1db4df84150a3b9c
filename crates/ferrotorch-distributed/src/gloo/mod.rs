//! The `"gloo"` backend: Gloo's collectives (Debian's `libgloo-dev`)
//! through the C++ shim the build compiles (`shim/gloo_shim.cc`), over
//! Gloo's TCP transport, with rendezvous through a [`Store`].

#[cfg(ft_gloo)]
mod callbacks;
#[cfg(ft_gloo)]
mod ffi;

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

// # Note [Collective fingerprints]
// Ranks that disagree on which collective comes next (one calls
// all_reduce of a [3] tensor while another broadcasts a [4] one, or skips
// one) are PyTorch users' worst DDP failure: a hang, or data mixed up.
// Before each collective every rank contributes a fingerprint of its call
// — sequence number, op, dtype, element count, a hash of the shape, root,
// reduction — to one small Gloo all-gather (56 bytes a rank), and a
// mismatch is an error on every rank at once that names each side's call.
// On by default; FERROTORCH_DISTRIBUTED_CHECK=0 turns it off (a 2-rank
// all-gather per collective, ~0.1 ms on loopback).

/// Fields of a fingerprint.
const FP: usize = 7;
const OPS: [&str; 8] = [
    "all_reduce",
    "broadcast",
    "all_gather",
    "barrier",
    "reduce",
    "gather",
    "scatter",
    "all_to_all_single",
];
const REDUCTIONS: [&str; 5] = ["SUM", "AVG", "PRODUCT", "MIN", "MAX"];

fn fingerprints_on() -> bool {
    std::env::var("FERROTORCH_DISTRIBUTED_CHECK").map_or(true, |v| v != "0")
}

fn fingerprint(what: &str, seq: i64, t: Option<&Tensor>, root: i64, extra: i64) -> [i64; FP] {
    let op = OPS.iter().position(|o| *o == what).unwrap_or(OPS.len()) as i64;
    let (dtype, numel, shape) = match t {
        Some(t) => {
            let mut h: u64 = 0xcbf2_9ce4_8422_2325;
            for &d in t.shape() {
                h = (h ^ d as u64).wrapping_mul(0x100_0000_01b3);
            }
            (t.dtype().scalar_type(), t.numel() as i64, h as i64)
        }
        None => (-1, 0, 0),
    };
    [seq, op, dtype, numel, shape, root, extra]
}

fn describe(fp: &[i64; FP]) -> String {
    let op = OPS.get(fp[1] as usize).copied().unwrap_or("?");
    let mut s = format!("{op} #{}", fp[0]);
    if fp[2] >= 0 {
        let dt = DType::from_scalar_type(fp[2])
            .map(|d| d.to_string())
            .unwrap_or_else(|| format!("dtype {}", fp[2]));
        s += &format!(" of a {dt} tensor of {} elements", fp[3]);
    }
    if fp[5] >= 0 {
        s += &format!(", root {}", fp[5]);
    }
    if fp[6] >= 0 {
        s += &format!(
            ", {}",
            REDUCTIONS.get(fp[6] as usize).copied().unwrap_or("?")
        );
    }
    s
}

/// The message naming each rank's call, if the ranks disagree.
fn disagreement(all: &[[i64; FP]]) -> Option<String> {
    if all.iter().all(|fp| fp == &all[0]) {
        return None;
    }
    let calls: Vec<String> = all
        .iter()
        .enumerate()
        .map(|(r, fp)| format!("rank {r} calls {}", describe(fp)))
        .collect();
    Some(format!(
        "gloo: the ranks disagree on the next collective (desynchronised ranks): {}",
        calls.join("; ")
    ))
}

/// A connected Gloo context: one rank of a group (`ProcessGroupGloo`).
pub struct ProcessGroupGloo {
    #[cfg(ft_gloo)]
    ctx: std::sync::Mutex<usize>,
    /// collectives called so far (Note [Collective fingerprints])
    seq: std::sync::atomic::AtomicI64,
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
            Ok(ProcessGroupGloo {
                ctx: std::sync::Mutex::new(ctx as usize),
                seq: std::sync::atomic::AtomicI64::new(0),
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
        // a collective writes the data, as torch's c10d does: not an op
        // autograd records (a parameter broadcast at DDP's construction)
        let _g = ferrotorch_core::autograd::no_grad();
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
        self.checked("all_reduce", Some(t), -1, op as i64, |ctx| {
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
            let _g = ferrotorch_core::autograd::no_grad();
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
        self.checked("broadcast", Some(t), src as i64, -1, |ctx| {
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
        self.checked("all_gather", Some(t), -1, -1, |ctx| {
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
        self.checked("barrier", None, -1, -1, |ctx| {
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

    fn check_rank(&self, what: &str, r: usize) -> Result<()> {
        if r >= self.size {
            return Err(err(format!(
                "gloo {what}: rank {r} is not in a group of {}",
                self.size
            )));
        }
        Ok(())
    }

    /// `reduce(t, dst, op)`: rank `dst`'s `t` becomes the reduction of
    /// every rank's (the others' are left as they were).
    pub fn reduce(&self, t: &Tensor, dst: usize, op: ReduceOp) -> Result<()> {
        self.check_rank("reduce", dst)?;
        let code = dtype_code(t.dtype(), "reduce")?;
        let gloo_op = match op {
            ReduceOp::Sum | ReduceOp::Avg => 0,
            ReduceOp::Product => 1,
            ReduceOp::Min => 2,
            ReduceOp::Max => 3,
        };
        let input = t.to_bytes()?;
        let mut out = vec![0u8; input.len()];
        let n = t.numel();
        self.checked("reduce", Some(t), dst as i64, op as i64, |ctx| {
            #[cfg(ft_gloo)]
            return call("reduce", |e, l| unsafe {
                ffi::ft_gloo_reduce(
                    ctx as *mut ffi::Ctx,
                    input.as_ptr().cast(),
                    out.as_mut_ptr().cast(),
                    n,
                    code,
                    gloo_op,
                    dst as i32,
                    e,
                    l,
                )
            });
            #[cfg(not(ft_gloo))]
            {
                let _ = (ctx, &mut out, n, code, gloo_op);
                Err(err(UNAVAILABLE.into()))
            }
        })?;
        if self.rank == dst {
            let r = Tensor::from_bytes(&out, t.shape(), t.dtype())?;
            let r = if op == ReduceOp::Avg {
                r.div(self.size as f64)?
            } else {
                r
            };
            t.copy_(&r)?;
        }
        Ok(())
    }

    /// `gather(t, dst)`: on rank `dst`, every rank's `t` in rank order;
    /// elsewhere `None`.
    pub fn gather(&self, t: &Tensor, dst: usize) -> Result<Option<Vec<Tensor>>> {
        self.check_rank("gather", dst)?;
        let input = t.to_bytes()?;
        let mut out = vec![
            0u8;
            if self.rank == dst {
                input.len() * self.size
            } else {
                0
            }
        ];
        self.checked("gather", Some(t), dst as i64, -1, |ctx| {
            #[cfg(ft_gloo)]
            return call("gather", |e, l| unsafe {
                ffi::ft_gloo_gather(
                    ctx as *mut ffi::Ctx,
                    input.as_ptr().cast(),
                    out.as_mut_ptr().cast(),
                    input.len(),
                    dst as i32,
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
        if self.rank != dst {
            return Ok(None);
        }
        self.pieces(&out, input.len(), t).map(Some)
    }

    fn pieces(&self, out: &[u8], each: usize, like: &Tensor) -> Result<Vec<Tensor>> {
        (0..self.size)
            .map(|i| Tensor::from_bytes(&out[i * each..(i + 1) * each], like.shape(), like.dtype()))
            .collect()
    }

    /// `scatter(out, src, pieces)`: rank `i`'s `out` becomes `pieces[i]`
    /// of rank `src` (which alone passes `pieces`, one per rank, each of
    /// `out`'s shape and dtype).
    pub fn scatter(&self, out: &Tensor, src: usize, pieces: Option<&[Tensor]>) -> Result<()> {
        self.check_rank("scatter", src)?;
        let each = out.numel() * out.element_size();
        let mut input = Vec::new();
        if self.rank == src {
            let ps = pieces
                .ok_or_else(|| err("gloo scatter: the source rank must pass the pieces".into()))?;
            if ps.len() != self.size {
                return Err(err(format!(
                    "gloo scatter: {} pieces for {} ranks",
                    ps.len(),
                    self.size
                )));
            }
            for p in ps {
                if p.shape() != out.shape() || p.dtype() != out.dtype() {
                    return Err(err(format!(
                        "gloo scatter: a piece of shape {:?} ({}) for an output of shape {:?} ({})",
                        p.shape(),
                        p.dtype(),
                        out.shape(),
                        out.dtype()
                    )));
                }
                p.append_bytes(&mut input)?;
            }
        }
        Self::in_place(out, |b| {
            self.checked("scatter", Some(out), src as i64, -1, |ctx| {
                #[cfg(ft_gloo)]
                return call("scatter", |e, l| unsafe {
                    ffi::ft_gloo_scatter(
                        ctx as *mut ffi::Ctx,
                        input.as_ptr().cast(),
                        b.as_mut_ptr().cast(),
                        each,
                        src as i32,
                        e,
                        l,
                    )
                });
                #[cfg(not(ft_gloo))]
                {
                    let _ = (ctx, b, &input, each);
                    Err(err(UNAVAILABLE.into()))
                }
            })
        })
    }

    /// `all_to_all_single(out, input)`: `input` split evenly along dim 0
    /// into one piece per rank; piece `i` goes to rank `i`, and `out`
    /// holds the pieces received, in rank order.
    pub fn all_to_all_single(&self, out: &Tensor, input: &Tensor) -> Result<()> {
        if input.shape() != out.shape() || input.dtype() != out.dtype() {
            return Err(err(format!(
                "gloo all_to_all_single: input {:?} ({}) and output {:?} ({}) differ",
                input.shape(),
                input.dtype(),
                out.shape(),
                out.dtype()
            )));
        }
        if input.dim() == 0 || !input.shape()[0].is_multiple_of(self.size) {
            return Err(err(format!(
                "gloo all_to_all_single: dim 0 of {:?} does not split evenly over {} ranks",
                input.shape(),
                self.size
            )));
        }
        let data = input.to_bytes()?;
        let each = data.len() / self.size;
        Self::in_place(out, |b| {
            self.checked("all_to_all_single", Some(input), -1, -1, |ctx| {
                #[cfg(ft_gloo)]
                return call("all_to_all_single", |e, l| unsafe {
                    ffi::ft_gloo_alltoall(
                        ctx as *mut ffi::Ctx,
                        data.as_ptr().cast(),
                        b.as_mut_ptr().cast(),
                        each,
                        e,
                        l,
                    )
                });
                #[cfg(not(ft_gloo))]
                {
                    let _ = (ctx, b, &data, each);
                    Err(err(UNAVAILABLE.into()))
                }
            })
        })
    }

    /// `send(t, dst, tag)`: blocks until rank `dst` has received it.
    pub fn send(&self, t: &Tensor, dst: usize, tag: u64) -> Result<()> {
        self.check_rank("send", dst)?;
        if dst == self.rank {
            return Err(err("gloo send: a rank cannot send to itself".into()));
        }
        let data = t.to_bytes()?;
        self.with_ctx(|ctx| {
            #[cfg(ft_gloo)]
            return call("send", |e, l| unsafe {
                ffi::ft_gloo_send(
                    ctx as *mut ffi::Ctx,
                    data.as_ptr().cast(),
                    data.len(),
                    dst as i32,
                    tag,
                    e,
                    l,
                )
            });
            #[cfg(not(ft_gloo))]
            {
                let _ = (ctx, &data, tag);
                Err(err(UNAVAILABLE.into()))
            }
        })
    }

    /// `recv(t, src, tag)`: `t` becomes what rank `src` sent.
    pub fn recv(&self, t: &Tensor, src: usize, tag: u64) -> Result<()> {
        self.check_rank("recv", src)?;
        if src == self.rank {
            return Err(err("gloo recv: a rank cannot receive from itself".into()));
        }
        Self::in_place(t, |b| {
            self.with_ctx(|ctx| {
                #[cfg(ft_gloo)]
                return call("recv", |e, l| unsafe {
                    ffi::ft_gloo_recv(
                        ctx as *mut ffi::Ctx,
                        b.as_mut_ptr().cast(),
                        b.len(),
                        src as i32,
                        tag,
                        e,
                        l,
                    )
                });
                #[cfg(not(ft_gloo))]
                {
                    let _ = (ctx, b, tag);
                    Err(err(UNAVAILABLE.into()))
                }
            })
        })
    }

    /// [`Self::with_ctx`] for a collective: first, unless turned off, every
    /// rank's fingerprint of the call it is making is gathered and compared
    /// (Note [Collective fingerprints]).
    fn checked<R>(
        &self,
        what: &'static str,
        t: Option<&Tensor>,
        root: i64,
        extra: i64,
        f: impl FnOnce(usize) -> Result<R>,
    ) -> Result<R> {
        let seq = self.seq.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.with_ctx(|ctx| {
            if self.size > 1 && fingerprints_on() {
                let mine = fingerprint(what, seq, t, root, extra);
                let all = self.exchange(ctx, &mine)?;
                if let Some(e) = disagreement(&all) {
                    return Err(err(e));
                }
            }
            f(ctx)
        })
    }

    /// Every rank's fingerprint, in rank order.
    fn exchange(&self, ctx: usize, mine: &[i64; FP]) -> Result<Vec<[i64; FP]>> {
        let input: Vec<u8> = mine.iter().flat_map(|v| v.to_le_bytes()).collect();
        let mut out = vec![0u8; input.len() * self.size];
        #[cfg(ft_gloo)]
        call("fingerprint check", |e, l| unsafe {
            ffi::ft_gloo_allgather(
                ctx as *mut ffi::Ctx,
                input.as_ptr().cast(),
                out.as_mut_ptr().cast(),
                input.len(),
                e,
                l,
            )
        })?;
        #[cfg(not(ft_gloo))]
        let _ = (ctx, &mut out);
        Ok(out
            .chunks(FP * 8)
            .map(|c| {
                let mut fp = [0i64; FP];
                for (k, v) in fp.iter_mut().enumerate() {
                    *v = i64::from_le_bytes(c[k * 8..k * 8 + 8].try_into().expect("8 bytes"));
                }
                fp
            })
            .collect())
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

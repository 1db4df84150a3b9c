//! A process group: torch's collectives on tensors, over any [`Engine`]
//! (Gloo, MPI) that moves bytes. Shapes, dtypes and roots are checked
//! here, each call's fingerprint is compared across ranks (Note
//! [Collective fingerprints]), and tensors are read and written in place
//! without copies when contiguous.

use crate::ReduceOp;
use ferrotorch_core::{DType, Error, ErrorKind, Result, Tensor};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Mutex, MutexGuard};

pub(crate) fn err(msg: String) -> Error {
    Error::new(ErrorKind::Runtime, msg)
}

/// Call a shim function that writes a NUL-terminated message into the
/// buffer it is given and returns non-zero on failure.
#[cfg(any(ft_gloo, ft_mpi))]
pub(crate) fn shim_call(
    backend: &str,
    what: &str,
    f: impl FnOnce(*mut std::os::raw::c_char, usize) -> i32,
) -> Result<()> {
    let mut buf = vec![0u8; 1024];
    if f(buf.as_mut_ptr() as *mut std::os::raw::c_char, buf.len()) != 0 {
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        return Err(err(format!(
            "{backend} {what}: {}",
            String::from_utf8_lossy(&buf[..end])
        )));
    }
    Ok(())
}

/// An element type the engines reduce (codes shared with the shims).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum Elem {
    /// `float32`
    F32 = 0,
    /// `float64`
    F64 = 1,
    /// `int32`
    I32 = 2,
    /// `int64`
    I64 = 3,
    /// `uint8`
    U8 = 4,
    /// `int8`
    I8 = 5,
}

impl Elem {
    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            Elem::F32 | Elem::I32 => 4,
            Elem::F64 | Elem::I64 => 8,
            Elem::U8 | Elem::I8 => 1,
        }
    }
}

/// A reduction an engine computes (`AVG` is a sum divided here).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum Reduction {
    /// sum
    Sum = 0,
    /// product
    Product = 1,
    /// minimum
    Min = 2,
    /// maximum
    Max = 3,
}

/// The byte-level collectives of one rank of a group, as an engine (Gloo,
/// MPI) provides them. Buffers are in native byte order; every rank passes
/// the same lengths (the group checks that first).
pub trait Engine: Send + Sync {
    /// The backend's name (`"gloo"`, `"mpi"`), for messages.
    fn name(&self) -> &'static str;
    /// This process's rank in the group.
    fn rank(&self) -> usize;
    /// The number of ranks.
    fn size(&self) -> usize;
    /// Every rank's `buf` becomes the reduction of all of them.
    fn all_reduce(&self, buf: &mut [u8], elem: Elem, op: Reduction) -> Result<()>;
    /// Every rank's `buf` becomes rank `root`'s.
    fn broadcast(&self, buf: &mut [u8], root: usize) -> Result<()>;
    /// `out` (size × `input.len()` bytes) becomes every rank's `input`.
    fn all_gather(&self, input: &[u8], out: &mut [u8]) -> Result<()>;
    /// On `root`, `out` becomes the reduction of every rank's `input`
    /// (elsewhere `out` is scratch of the same length).
    fn reduce(
        &self,
        input: &[u8],
        out: &mut [u8],
        elem: Elem,
        op: Reduction,
        root: usize,
    ) -> Result<()>;
    /// On `root`, `out` (size × `input.len()`) becomes every rank's
    /// `input`; elsewhere `out` is empty.
    fn gather(&self, input: &[u8], out: &mut [u8], root: usize) -> Result<()>;
    /// Rank `i`'s `out` becomes piece `i` of `root`'s `input` (size ×
    /// `out.len()` bytes there, empty elsewhere).
    fn scatter(&self, input: &[u8], out: &mut [u8], root: usize) -> Result<()>;
    /// Piece `i` of `input` (split evenly) goes to rank `i`; `out` holds
    /// the pieces received, in rank order.
    fn all_to_all(&self, input: &[u8], out: &mut [u8]) -> Result<()>;
    /// Uneven pieces: `in_bytes[i]` bytes of `input` (in order) go to rank
    /// `i`, and `out_bytes[i]` bytes of `out` come from rank `i`.
    fn all_to_all_v(
        &self,
        input: &[u8],
        in_bytes: &[i64],
        out: &mut [u8],
        out_bytes: &[i64],
    ) -> Result<()>;
    /// Send `data` to `dst`, returning once it is received or buffered.
    fn send(&self, data: &[u8], dst: usize, tag: u64) -> Result<()>;
    /// Receive exactly `buf.len()` bytes from `src`.
    fn recv(&self, buf: &mut [u8], src: usize, tag: u64) -> Result<()>;
    /// Return once every rank has called it.
    fn barrier(&self) -> Result<()>;
    /// Whether every rank's fingerprint of the collective it is about to
    /// make equals `fp`; with `inline` (at most [`INLINE_BYTES`]) that
    /// collective is this small all-reduce, done here too when they agree
    /// (Note [Collective fingerprints]). Every rank learns the same answer,
    /// and none returns before all have called it. By default one
    /// all-gather of the fingerprints, then the all-reduce.
    fn agree(&self, fp: &Fingerprint, inline: Option<Inline<'_>>) -> Result<bool> {
        let same = gather_fingerprints(self, fp)?.iter().all(|f| f == fp);
        if let (true, Some((buf, elem, op))) = (same, inline) {
            self.all_reduce(buf, elem, op)?;
        }
        Ok(same)
    }
}

/// A small all-reduce's bytes, element type and reduction, carried by an
/// engine's fingerprint check ([`Engine::agree`]).
pub type Inline<'a> = (&'a mut [u8], Elem, Reduction);

/// The most bytes [`Engine::agree`] carries inline.
pub const INLINE_BYTES: usize = 256;

/// Every rank's fingerprint, in rank order (one all-gather).
fn gather_fingerprints<E: Engine + ?Sized>(
    engine: &E,
    fp: &Fingerprint,
) -> Result<Vec<Fingerprint>> {
    let input: Vec<u8> = fp.iter().flat_map(|v| v.to_ne_bytes()).collect();
    let mut out = vec![0u8; input.len() * engine.size()];
    engine.all_gather(&input, &mut out)?;
    Ok(out
        .chunks(FP * 8)
        .map(|c| {
            std::array::from_fn(|k| {
                i64::from_ne_bytes(c[k * 8..k * 8 + 8].try_into().expect("8 bytes"))
            })
        })
        .collect())
}

// # Note [Collective fingerprints]
// Ranks that disagree on which collective comes next (one calls
// all_reduce of a [3] tensor while another broadcasts a [4] one, or skips
// one) are PyTorch users' worst DDP failure: a hang, or data mixed up.
// Before each collective every rank compares a fingerprint of its call
// — sequence number, op, dtype, element count, a hash of the shape, root,
// reduction — with the others' on the same engine, and a mismatch is an
// error on every rank at once that names each side's call. By default
// (MPI) the comparison is one small all-gather (56 bytes a rank, a few µs
// on shared memory). On Gloo, where every collective costs its TCP round
// trips (~0.15 ms on a loopback), it is one all-reduce of a record of
// Gloo's own reduction machinery — each field's maximum and minimum, equal
// only if every rank's is — and a small all-reduce (≤ 256 bytes: a loss, a
// counter) rides in the same record, so it costs no call beyond itself;
// only on a mismatch are the fingerprints all-gathered to name each side.
// A checked barrier needs nothing more: no rank finishes the comparison
// before every rank has joined it. On by default;
// FERROTORCH_DISTRIBUTED_CHECK=0 turns it off (one small collective more
// per large one).

/// Fields of a fingerprint.
const FP: usize = 7;

/// A call's fingerprint (Note [Collective fingerprints]).
pub type Fingerprint = [i64; FP];
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

fn fingerprint(what: &str, seq: i64, t: Option<&Tensor>, root: i64, extra: i64) -> Fingerprint {
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

fn describe(fp: &Fingerprint) -> String {
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
fn disagreement(backend: &str, all: &[Fingerprint]) -> Option<String> {
    if all.iter().all(|fp| fp == &all[0]) {
        return None;
    }
    let calls: Vec<String> = all
        .iter()
        .enumerate()
        .map(|(r, fp)| format!("rank {r} calls {}", describe(fp)))
        .collect();
    Some(format!(
        "{backend}: the ranks disagree on the next collective (desynchronised ranks): {}",
        calls.join("; ")
    ))
}

fn elem(d: DType, backend: &str, what: &str) -> Result<Elem> {
    Ok(match d {
        DType::F32 => Elem::F32,
        DType::F64 => Elem::F64,
        DType::I32 => Elem::I32,
        DType::I64 => Elem::I64,
        DType::U8 => Elem::U8,
        DType::I8 => Elem::I8,
        d => {
            return Err(err(format!(
                "{backend} {what}: dtype {d} is not reduced by {backend} (float32, float64, int32, int64, uint8, int8)"
            )))
        }
    })
}

fn reduction(op: ReduceOp) -> Reduction {
    match op {
        ReduceOp::Sum | ReduceOp::Avg => Reduction::Sum,
        ReduceOp::Product => Reduction::Product,
        ReduceOp::Min => Reduction::Min,
        ReduceOp::Max => Reduction::Max,
    }
}

/// One rank of a process group (torch's `ProcessGroup`): collectives on
/// tensors over an [`Engine`].
pub struct ProcessGroup {
    engine: Box<dyn Engine>,
    /// collectives called so far (Note [Collective fingerprints])
    seq: AtomicI64,
    /// one collective (its fingerprint and its data) at a time, so two
    /// threads' calls never interleave on the wire
    turn: Mutex<()>,
}

impl ProcessGroup {
    /// A group over `engine`.
    pub fn new(engine: Box<dyn Engine>) -> ProcessGroup {
        ProcessGroup {
            engine,
            seq: AtomicI64::new(0),
            turn: Mutex::new(()),
        }
    }

    /// This process's rank in the group.
    pub fn rank(&self) -> usize {
        self.engine.rank()
    }

    /// The number of ranks.
    pub fn size(&self) -> usize {
        self.engine.size()
    }

    /// The backend's name (`"gloo"`, `"mpi"`).
    pub fn backend(&self) -> &'static str {
        self.engine.name()
    }

    fn check_rank(&self, what: &str, r: usize) -> Result<()> {
        if r >= self.size() {
            return Err(err(format!(
                "{} {what}: rank {r} is not in a group of {}",
                self.backend(),
                self.size()
            )));
        }
        Ok(())
    }

    fn reduce_args(&self, t: &Tensor, what: &str, op: ReduceOp) -> Result<(Elem, Reduction)> {
        let e = elem(t.dtype(), self.backend(), what)?;
        if op == ReduceOp::Avg && !t.is_floating_point() {
            return Err(err(format!(
                "{} {what}: AVG of a {} tensor",
                self.backend(),
                t.dtype()
            )));
        }
        Ok((e, reduction(op)))
    }

    fn average(&self, t: &Tensor, op: ReduceOp) -> Result<()> {
        if op == ReduceOp::Avg {
            let _g = ferrotorch_core::autograd::no_grad();
            t.copy_(&t.div(self.size() as f64)?)?;
        }
        Ok(())
    }

    /// `all_reduce(t, op)`: every rank's `t` becomes the reduction of all.
    pub fn all_reduce(&self, t: &Tensor, op: ReduceOp) -> Result<()> {
        let (e, r) = self.reduce_args(t, "all_reduce", op)?;
        // a small one rides in the fingerprint check (a copy of its bytes:
        // the group's turn is always taken before a tensor's lock)
        let mut small = (self.checking() && t.numel() * t.element_size() <= INLINE_BYTES)
            .then(|| t.with_bytes(<[u8]>::to_vec))
            .transpose()?;
        let inline = small.as_mut().map(|b| (b.as_mut_slice(), e, r));
        let (turn, checked) = self.check("all_reduce", Some(t), -1, op as i64, inline)?;
        match small {
            Some(b) if checked => t.with_bytes_mut("all_reduce", |o| o.copy_from_slice(&b))?,
            _ => t.with_bytes_mut("all_reduce", |b| self.engine.all_reduce(b, e, r))??,
        }
        drop(turn);
        self.average(t, op)
    }

    /// `broadcast(t, src)`: every rank's `t` becomes rank `src`'s.
    pub fn broadcast(&self, t: &Tensor, src: usize) -> Result<()> {
        self.check_rank("broadcast", src)?;
        self.checked("broadcast", Some(t), src as i64, -1, || {
            t.with_bytes_mut("broadcast", |b| self.engine.broadcast(b, src))?
        })
    }

    /// `all_gather_into_tensor(out, t)`: `out` (`size` × `t`'s elements,
    /// contiguous rows in rank order) becomes every rank's `t`.
    pub fn all_gather_into(&self, out: &Tensor, t: &Tensor) -> Result<()> {
        if out.numel() != t.numel() * self.size() || out.dtype() != t.dtype() {
            return Err(err(format!(
                "{} all_gather_into_tensor: an output of shape {:?} ({}) for {} inputs of shape {:?} ({})",
                self.backend(),
                out.shape(),
                out.dtype(),
                self.size(),
                t.shape(),
                t.dtype()
            )));
        }
        self.checked("all_gather", Some(t), -1, -1, || {
            out.with_bytes_mut("all_gather", |o| {
                t.with_bytes(|i| self.engine.all_gather(i, o))
            })??
        })
    }

    /// `all_gather`: every rank's `t`, in rank order (each the same shape).
    pub fn all_gather(&self, t: &Tensor) -> Result<Vec<Tensor>> {
        let mut shape = vec![self.size()];
        shape.extend_from_slice(t.shape());
        let out = Tensor::empty(&shape, t.dtype())?;
        self.all_gather_into(&out, t)?;
        (0..self.size()).map(|i| out.select(0, i as i64)).collect()
    }

    /// `barrier()`: returns once every rank has called it.
    pub fn barrier(&self) -> Result<()> {
        let (_turn, checked) = self.check("barrier", None, -1, -1, None)?;
        if checked {
            return Ok(());
        }
        self.engine.barrier()
    }

    /// `reduce(t, dst, op)`: rank `dst`'s `t` becomes the reduction of
    /// every rank's (the others' are left as they were).
    pub fn reduce(&self, t: &Tensor, dst: usize, op: ReduceOp) -> Result<()> {
        self.check_rank("reduce", dst)?;
        let (e, r) = self.reduce_args(t, "reduce", op)?;
        let input = t.with_bytes(<[u8]>::to_vec)?;
        self.checked("reduce", Some(t), dst as i64, op as i64, || {
            if self.rank() == dst {
                t.with_bytes_mut("reduce", |o| self.engine.reduce(&input, o, e, r, dst))?
            } else {
                let mut scratch = vec![0u8; input.len()];
                self.engine.reduce(&input, &mut scratch, e, r, dst)
            }
        })?;
        if self.rank() == dst {
            self.average(t, op)?;
        }
        Ok(())
    }

    /// `gather(t, dst)`: on rank `dst`, every rank's `t` in rank order;
    /// elsewhere `None`.
    pub fn gather(&self, t: &Tensor, dst: usize) -> Result<Option<Vec<Tensor>>> {
        self.check_rank("gather", dst)?;
        let root = self.rank() == dst;
        let mut shape = vec![if root { self.size() } else { 0 }];
        shape.extend_from_slice(t.shape());
        let out = Tensor::empty(&shape, t.dtype())?;
        self.checked("gather", Some(t), dst as i64, -1, || {
            out.with_bytes_mut("gather", |o| {
                t.with_bytes(|i| self.engine.gather(i, o, dst))
            })??
        })?;
        if !root {
            return Ok(None);
        }
        (0..self.size())
            .map(|i| out.select(0, i as i64))
            .collect::<Result<Vec<_>>>()
            .map(Some)
    }

    /// `scatter(out, src, pieces)`: rank `i`'s `out` becomes `pieces[i]`
    /// of rank `src` (which alone passes `pieces`, one per rank, each of
    /// `out`'s shape and dtype).
    pub fn scatter(&self, out: &Tensor, src: usize, pieces: Option<&[Tensor]>) -> Result<()> {
        self.check_rank("scatter", src)?;
        let mut input = Vec::new();
        if self.rank() == src {
            let ps = pieces.ok_or_else(|| {
                err(format!(
                    "{} scatter: the source rank must pass the pieces",
                    self.backend()
                ))
            })?;
            if ps.len() != self.size() {
                return Err(err(format!(
                    "{} scatter: {} pieces for {} ranks",
                    self.backend(),
                    ps.len(),
                    self.size()
                )));
            }
            for p in ps {
                if p.shape() != out.shape() || p.dtype() != out.dtype() {
                    return Err(err(format!(
                        "{} scatter: a piece of shape {:?} ({}) for an output of shape {:?} ({})",
                        self.backend(),
                        p.shape(),
                        p.dtype(),
                        out.shape(),
                        out.dtype()
                    )));
                }
                p.with_bytes(|b| input.extend_from_slice(b))?;
            }
        }
        self.checked("scatter", Some(out), src as i64, -1, || {
            out.with_bytes_mut("scatter", |o| self.engine.scatter(&input, o, src))?
        })
    }

    /// `all_to_all_single(out, input)`: `input` split evenly along dim 0
    /// into one piece per rank; piece `i` goes to rank `i`, and `out`
    /// holds the pieces received, in rank order.
    pub fn all_to_all_single(&self, out: &Tensor, input: &Tensor) -> Result<()> {
        if input.shape() != out.shape() || input.dtype() != out.dtype() {
            return Err(err(format!(
                "{} all_to_all_single: input {:?} ({}) and output {:?} ({}) differ",
                self.backend(),
                input.shape(),
                input.dtype(),
                out.shape(),
                out.dtype()
            )));
        }
        if input.dim() == 0 || !input.shape()[0].is_multiple_of(self.size()) {
            return Err(err(format!(
                "{} all_to_all_single: dim 0 of {:?} does not split evenly over {} ranks",
                self.backend(),
                input.shape(),
                self.size()
            )));
        }
        // an input sharing the output's memory is read first
        let own = if input.storage().is_same(out.storage()) {
            Some(input.with_bytes(<[u8]>::to_vec)?)
        } else {
            None
        };
        self.checked("all_to_all_single", Some(input), -1, -1, || {
            out.with_bytes_mut("all_to_all_single", |o| match &own {
                Some(i) => self.engine.all_to_all(i, o),
                None => input.with_bytes(|i| self.engine.all_to_all(i, o))?,
            })?
        })
    }

    /// `all_to_all_single(out, input, output_split_sizes, input_split_sizes)`:
    /// rows `input_splits[i]` of `input` (along dim 0, in order) go to rank
    /// `i`; `out` receives `output_splits[i]` rows from rank `i`, in rank
    /// order. Rows must have the same shape and dtype on both sides.
    pub fn all_to_all_single_uneven(
        &self,
        out: &Tensor,
        input: &Tensor,
        output_splits: &[usize],
        input_splits: &[usize],
    ) -> Result<()> {
        let b = self.backend();
        let n = self.size();
        let row = |t: &Tensor| -> Result<usize> {
            if t.dim() == 0 {
                return Err(err(format!(
                    "{b} all_to_all_single: a 0-d tensor has no rows to split"
                )));
            }
            Ok(t.shape()[1..].iter().product::<usize>() * t.element_size())
        };
        if input.dtype() != out.dtype() || input.shape().get(1..) != out.shape().get(1..) {
            return Err(err(format!(
                "{b} all_to_all_single: rows of input {:?} ({}) and output {:?} ({}) differ",
                input.shape(),
                input.dtype(),
                out.shape(),
                out.dtype()
            )));
        }
        for (what, splits, t) in [
            ("input", input_splits, input),
            ("output", output_splits, out),
        ] {
            if splits.len() != n || splits.iter().sum::<usize>() != t.shape()[0] {
                return Err(err(format!(
                    "{b} all_to_all_single: {what}_split_sizes {splits:?} must be {n} sizes summing to dim 0 of {:?}",
                    t.shape()
                )));
            }
        }
        let (ri, ro) = (row(input)? as i64, row(out)? as i64);
        let ib: Vec<i64> = input_splits.iter().map(|&s| s as i64 * ri).collect();
        let ob: Vec<i64> = output_splits.iter().map(|&s| s as i64 * ro).collect();
        let data = input.with_bytes(<[u8]>::to_vec)?;
        // dim 0 legitimately differs across ranks here: the fingerprint
        // carries the rows' shape and the dtype (an empty tensor of them)
        let mut rows = vec![0];
        rows.extend_from_slice(&input.shape()[1..]);
        let probe = Tensor::empty(&rows, input.dtype())?;
        self.checked("all_to_all_single", Some(&probe), -1, -1, || {
            out.with_bytes_mut("all_to_all_single", |o| {
                self.engine.all_to_all_v(&data, &ib, o, &ob)
            })?
        })
    }

    fn check_peer(&self, what: &str, peer: usize) -> Result<()> {
        self.check_rank(what, peer)?;
        if peer == self.rank() {
            let dir = if what == "send" {
                "send to"
            } else {
                "receive from"
            };
            return Err(err(format!(
                "{} {what}: a rank cannot {dir} itself",
                self.backend()
            )));
        }
        Ok(())
    }

    /// `send(t, dst, tag)`: returns once rank `dst` has received it (or the
    /// engine has buffered it).
    pub fn send(&self, t: &Tensor, dst: usize, tag: u64) -> Result<()> {
        self.check_peer("send", dst)?;
        t.with_bytes(|b| self.engine.send(b, dst, tag))?
    }

    /// `recv(t, src, tag)`: `t` becomes what rank `src` sent.
    pub fn recv(&self, t: &Tensor, src: usize, tag: u64) -> Result<()> {
        self.check_peer("recv", src)?;
        t.with_bytes_mut("recv", |b| self.engine.recv(b, src, tag))?
    }

    /// Run collective `f` after, unless turned off, every rank's
    /// fingerprint of the call it is making is compared (Note
    /// [Collective fingerprints]).
    fn checked<R>(
        &self,
        what: &'static str,
        t: Option<&Tensor>,
        root: i64,
        extra: i64,
        f: impl FnOnce() -> Result<R>,
    ) -> Result<R> {
        let _turn = self.check(what, t, root, extra, None)?;
        f()
    }

    /// Whether calls are fingerprinted (Note [Collective fingerprints]).
    fn checking(&self) -> bool {
        self.size() > 1 && fingerprints_on()
    }

    /// Take the group's turn and, unless turned off, compare every rank's
    /// fingerprint of the call (with `inline`, that small all-reduce is
    /// done too); the turn, and whether the comparison ran.
    fn check(
        &self,
        what: &'static str,
        t: Option<&Tensor>,
        root: i64,
        extra: i64,
        inline: Option<Inline<'_>>,
    ) -> Result<(MutexGuard<'_, ()>, bool)> {
        let turn = self.turn.lock().unwrap_or_else(|p| p.into_inner());
        let seq = self.seq.fetch_add(1, Ordering::Relaxed);
        if !self.checking() {
            return Ok((turn, false));
        }
        let mine = fingerprint(what, seq, t, root, extra);
        let failed = |e: Error| {
            err(format!(
                "{} {what}: the fingerprint check failed: {e}",
                self.backend()
            ))
        };
        if self.engine.agree(&mine, inline).map_err(failed)? {
            return Ok((turn, true));
        }
        let all = gather_fingerprints(&*self.engine, &mine).map_err(failed)?;
        Err(err(disagreement(self.backend(), &all).unwrap_or_else(
            || {
                format!(
                    "{}: the ranks disagree on the next collective (desynchronised ranks)",
                    self.backend()
                )
            },
        )))
    }
}

//! The `"mpi"` backend: the collectives of the MPI that `mpicc` names at
//! build time (Debian's Open MPI, `libopenmpi-dev`) through a C shim
//! (`shim/mpi_shim.c`), for programs launched by `mpirun`/`srun`: ranks
//! and world size come from MPI, not from a store.
//!
//! # Note [The MPI shim, not the mpi crate]
//! The `mpi` crate (rsmpi) generates its bindings with bindgen, so it
//! needs libclang at build time, and it fails the whole build where MPI
//! is absent. torch's rule is the opposite: a backend whose library is
//! missing is merely unavailable (`is_mpi_available()` is false, and
//! `init_process_group("mpi")` says how to get it). So, as for Gloo, a
//! small C file compiled by `cc` against the `mpi.h` that `mpicc
//! -showme` names carries the dozen MPI calls we make; the engine is the
//! same Open MPI either way. MPI is initialised once per process with
//! `MPI_THREAD_MULTIPLE` (collectives run on a group's worker thread
//! while the main thread computes) and finalised at exit, as torch's
//! ProcessGroupMPI does; with a lower thread level every call takes one
//! process-wide lock.

#[cfg(ft_mpi)]
mod ffi;
#[cfg(ft_mpi)]
mod watchdog;

use crate::group::{err, ProcessGroup};
#[cfg(ft_mpi)]
use crate::group::{Elem, Engine, Reduction};
use ferrotorch_core::Result;
use std::time::Duration;

/// Whether this build has the MPI backend (`torch.distributed.is_mpi_available`).
pub fn is_available() -> bool {
    cfg!(ft_mpi)
}

/// Why the backend is missing, and how to get it.
pub const UNAVAILABLE: &str = "the mpi backend is not built: install an MPI with its `mpicc` \
(Debian: apt-get install libopenmpi-dev openmpi-bin) and build with the `mpi` feature of ferrotorch-distributed";

/// The world as MPI sees it: (rank, size). Initialises MPI on first use
/// (a process not started by `mpirun` is a world of one).
pub fn world() -> Result<(usize, usize)> {
    #[cfg(ft_mpi)]
    {
        init().map(|w| (w.rank, w.size))
    }
    #[cfg(not(ft_mpi))]
    Err(err(UNAVAILABLE.into()))
}

#[cfg(ft_mpi)]
struct World {
    rank: usize,
    size: usize,
    /// whether every call takes [`SERIAL`] (MPI granted less than
    /// MPI_THREAD_MULTIPLE)
    serialize: bool,
}

#[cfg(ft_mpi)]
static WORLD: std::sync::OnceLock<std::result::Result<World, String>> = std::sync::OnceLock::new();
#[cfg(ft_mpi)]
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[cfg(ft_mpi)]
fn init() -> Result<&'static World> {
    WORLD
        .get_or_init(|| {
            let (mut rank, mut size, mut level) = (0, 0, 0);
            call("init", |e, l| unsafe {
                // SAFETY: out-pointers to locals; the shim initialises once.
                ffi::ft_mpi_init(&mut rank, &mut size, &mut level, e, l)
            })
            .map_err(|e| e.to_string())?;
            if level < 2 {
                return Err(format!(
                    "mpi: MPI granted thread level {level} (FUNNELED or less); ferrotorch needs MPI_THREAD_SERIALIZED or MULTIPLE"
                ));
            }
            Ok(World {
                rank: rank as usize,
                size: size as usize,
                serialize: level < 3,
            })
        })
        .as_ref()
        .map_err(|e| err(e.clone()))
}

#[cfg(ft_mpi)]
fn call(what: &str, f: impl FnOnce(*mut std::os::raw::c_char, usize) -> i32) -> Result<()> {
    crate::group::shim_call("mpi", what, f)
}

/// One rank of an MPI communicator, as an [`Engine`].
#[cfg_attr(not(ft_mpi), allow(dead_code))]
pub struct ProcessGroupMPI {
    comm: usize,
    rank: usize,
    size: usize,
    tag_ub: u64,
    /// how long a call may wait for the others (Note [MPI's watchdog])
    timeout: Duration,
}

impl ProcessGroupMPI {
    /// A group of the world ranks `ranks` (every rank of the world when
    /// `None`). Only those ranks call this; this process must be one. A
    /// call that waits longer than `timeout` for the other ranks ends the
    /// job (Note [MPI's watchdog]).
    pub fn create(ranks: Option<&[usize]>, timeout: Duration) -> Result<ProcessGroup> {
        #[cfg(not(ft_mpi))]
        {
            let _ = (ranks, timeout);
            Err(err(UNAVAILABLE.into()))
        }
        #[cfg(ft_mpi)]
        {
            let w = init()?;
            let list: Vec<i32> = match ranks {
                None => Vec::new(),
                Some(r) => {
                    if let Some(bad) = r.iter().find(|&&x| x >= w.size) {
                        return Err(err(format!(
                            "mpi new_group: rank {bad} is not in the world of {}",
                            w.size
                        )));
                    }
                    if !r.contains(&w.rank) {
                        return Err(err(format!(
                            "mpi new_group: this rank ({}) is not one of {r:?}",
                            w.rank
                        )));
                    }
                    r.iter().map(|&x| x as i32).collect()
                }
            };
            let (mut rank, mut size) = (0, 0);
            let mut comm = std::ptr::null_mut();
            let _serial = w
                .serialize
                .then(|| SERIAL.lock().unwrap_or_else(|p| p.into_inner()));
            call("new_group", |e, l| {
                // SAFETY: `list` outlives the call; out-pointers to locals.
                comm = unsafe {
                    ffi::ft_mpi_comm(list.as_ptr(), list.len() as i32, &mut rank, &mut size, e, l)
                };
                if comm.is_null() {
                    -1
                } else {
                    0
                }
            })?;
            // SAFETY: MPI is initialised.
            let tag_ub = unsafe { ffi::ft_mpi_tag_ub() } as u64;
            Ok(ProcessGroup::new(Box::new(ProcessGroupMPI {
                comm: comm as usize,
                rank: rank as usize,
                size: size as usize,
                tag_ub,
                timeout,
            })))
        }
    }
}

#[cfg(ft_mpi)]
impl ProcessGroupMPI {
    /// Run `f` on the communicator (under the process-wide lock when MPI
    /// is not thread-multiple), watched (Note [MPI's watchdog]).
    fn run(
        &self,
        what: &'static str,
        f: impl FnOnce(*mut ffi::Comm, *mut std::os::raw::c_char, usize) -> i32,
    ) -> Result<()> {
        let w = init()?;
        let _watched = watchdog::watch(what, w.rank, self.timeout);
        let _serial = w
            .serialize
            .then(|| SERIAL.lock().unwrap_or_else(|p| p.into_inner()));
        call(what, |e, l| f(self.comm as *mut ffi::Comm, e, l))
    }

    fn tag(&self, what: &str, tag: u64) -> Result<i32> {
        if tag > self.tag_ub {
            return Err(err(format!(
                "mpi {what}: tag {tag} is over this MPI's largest tag ({})",
                self.tag_ub
            )));
        }
        Ok(tag as i32)
    }
}

// SAFETY (every call below): the communicator lives until drop; each
// buffer is valid for the length passed, and the lengths agree across
// ranks (the group's fingerprints check it). Without MPI no
// ProcessGroupMPI is ever made (`new` says UNAVAILABLE).
#[cfg(ft_mpi)]
impl Engine for ProcessGroupMPI {
    fn name(&self) -> &'static str {
        "mpi"
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
            ffi::ft_mpi_allreduce(c, buf.as_mut_ptr().cast(), n, elem as i32, op as i32, e, l)
        })
    }

    fn broadcast(&self, buf: &mut [u8], root: usize) -> Result<()> {
        self.run("broadcast", |c, e, l| unsafe {
            ffi::ft_mpi_bcast(c, buf.as_mut_ptr().cast(), buf.len(), root as i32, e, l)
        })
    }

    fn all_gather(&self, input: &[u8], out: &mut [u8]) -> Result<()> {
        self.run("all_gather", |c, e, l| unsafe {
            ffi::ft_mpi_allgather(
                c,
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
            ffi::ft_mpi_reduce(
                c,
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
            ffi::ft_mpi_gather(
                c,
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
            ffi::ft_mpi_scatter(
                c,
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
            ffi::ft_mpi_alltoall(
                c,
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
        let n = self.size as i32;
        self.run("all_to_all_single", |c, e, l| unsafe {
            ffi::ft_mpi_alltoallv(
                c,
                input.as_ptr().cast(),
                in_bytes.as_ptr(),
                out.as_mut_ptr().cast(),
                out_bytes.as_ptr(),
                n,
                e,
                l,
            )
        })
    }

    fn send(&self, data: &[u8], dst: usize, tag: u64) -> Result<()> {
        let tag = self.tag("send", tag)?;
        self.run("send", |c, e, l| unsafe {
            ffi::ft_mpi_send(c, data.as_ptr().cast(), data.len(), dst as i32, tag, e, l)
        })
    }

    fn recv(&self, buf: &mut [u8], src: usize, tag: u64) -> Result<()> {
        let tag = self.tag("recv", tag)?;
        self.run("recv", |c, e, l| unsafe {
            ffi::ft_mpi_recv(c, buf.as_mut_ptr().cast(), buf.len(), src as i32, tag, e, l)
        })
    }

    fn barrier(&self) -> Result<()> {
        self.run("barrier", |c, e, l| unsafe { ffi::ft_mpi_barrier(c, e, l) })
    }
}

#[cfg(ft_mpi)]
impl Drop for ProcessGroupMPI {
    fn drop(&mut self) {
        // SAFETY: made by ft_mpi_comm, freed once (the shim skips
        // MPI_Comm_free once MPI is finalised).
        unsafe { ffi::ft_mpi_comm_free(self.comm as *mut ffi::Comm) };
    }
}

//! Bounded waits for MPI, which has none of its own.
//!
//! # Note [MPI's watchdog]
//! Gloo's calls give up after the group's timeout; MPI's never do, so a
//! rank that is alive but never joins a collective (stuck in a loop, or
//! desynchronised with the fingerprint check off) would leave the others
//! blocked for ever — PyTorch's MPI backend does exactly that. Here every
//! call of an MPI group is watched: it records its start in a table (one
//! uncontended lock, no thread woken: the 4-byte all-reduce keeps its few
//! µs), and one thread per process looks at the table four times a
//! second. A call older than its group's timeout (`init_process_group`'s
//! `timeout`, torch's 30 minutes by default) is reported on stderr —
//! which call, on which rank, for how long — and `MPI_Abort` ends the
//! job, so every rank exits non-zero within a quarter of a second of the
//! timeout and `mpirun` names the rank that aborted (as PyTorch's NCCL
//! watchdog does).

use super::ffi;
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How often the watchdog looks.
const LOOK_EVERY: Duration = Duration::from_millis(250);

/// The exit code of a job the watchdog ends.
const ABORT_CODE: i32 = 3;

struct Call {
    what: &'static str,
    rank: usize,
    started: Instant,
    timeout: Duration,
}

#[derive(Default)]
struct Table {
    next: u64,
    calls: HashMap<u64, Call>,
}

static TABLE: Mutex<Option<Table>> = Mutex::new(None);
static THREAD: OnceLock<()> = OnceLock::new();

/// A call in flight; dropping it ends the watch.
pub(super) struct Watched(u64);

impl Drop for Watched {
    fn drop(&mut self) {
        if let Some(t) = TABLE.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
            t.calls.remove(&self.0);
        }
    }
}

/// Watch call `what` of `rank`, which must end within `timeout`.
pub(super) fn watch(what: &'static str, rank: usize, timeout: Duration) -> Watched {
    THREAD.get_or_init(|| {
        // without the thread the call is merely unwatched (as MPI's own)
        let _ = std::thread::Builder::new()
            .name("mpi-watchdog".into())
            .spawn(look);
    });
    let mut g = TABLE.lock().unwrap_or_else(|p| p.into_inner());
    let t = g.get_or_insert_with(Table::default);
    let id = t.next;
    t.next += 1;
    t.calls.insert(
        id,
        Call {
            what,
            rank,
            started: Instant::now(),
            timeout,
        },
    );
    Watched(id)
}

fn look() {
    loop {
        std::thread::sleep(LOOK_EVERY);
        let late = {
            let g = TABLE.lock().unwrap_or_else(|p| p.into_inner());
            g.as_ref().and_then(|t| {
                t.calls
                    .values()
                    .find(|c| c.started.elapsed() > c.timeout)
                    .map(|c| (c.what, c.rank, c.started.elapsed()))
            })
        };
        if let Some((what, rank, waited)) = late {
            eprintln!(
                "ferrotorch.distributed (mpi): rank {rank}'s {what} has not completed after {:.1} s \
(the group's timeout): another rank is not taking part (hung, or calling a different \
collective with the check off); aborting the job",
                waited.as_secs_f64()
            );
            // SAFETY: MPI is initialised (a group exists); MPI_Abort may be
            // called from any thread at MPI_THREAD_MULTIPLE.
            unsafe { ffi::ft_mpi_abort(ABORT_CODE) };
        }
    }
}

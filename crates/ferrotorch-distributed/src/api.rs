//! torch.distributed's functions on the default group, for Rust programs:
//! `init_process_group("gloo")` (env:// rendezvous, as `mp.spawn` and
//! torchrun set it up) or `init_process_group("mpi")` (ranks from
//! `mpirun`/`srun`), then `get_rank()`, `all_reduce(&t, ReduceOp::Sum)`,
//! `barrier()` and the rest, as in Python.

use crate::group::{err, ProcessGroup};
use crate::store::{PrefixStore, Store, TCPStore};
use crate::{ProcessGroupGloo, ProcessGroupMPI, ReduceOp};
use ferrotorch_core::{Result, Tensor};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// torch's default timeout for collectives and rendezvous (30 minutes).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// How to join the default group (`init_process_group`'s arguments).
#[derive(Clone, Debug)]
pub struct InitOptions {
    /// `"gloo"` or `"mpi"` (`"nccl"` is torch's no-GPU error).
    pub backend: String,
    /// `env://` (the default: `MASTER_ADDR`, `MASTER_PORT`, `RANK`,
    /// `WORLD_SIZE`), `tcp://host:port` or `file:///path` (one machine, or
    /// a shared file system; loopback transport) with `rank` and
    /// `world_size`.
    pub init_method: Option<String>,
    /// This process's rank (`None`: from the environment, or MPI).
    pub rank: Option<usize>,
    /// The number of ranks (`None`: from the environment, or MPI).
    pub world_size: Option<usize>,
    /// How long rendezvous and each collective may wait for a peer.
    pub timeout: Duration,
}

impl InitOptions {
    /// The options for `backend`, everything else defaulted.
    pub fn new(backend: &str) -> InitOptions {
        InitOptions {
            backend: backend.to_string(),
            init_method: None,
            rank: None,
            world_size: None,
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

struct Default {
    group: Arc<ProcessGroup>,
    /// the store and transport host new Gloo groups rendezvous through
    store: Option<Arc<dyn Store>>,
    host: String,
    timeout: Duration,
    groups: usize,
}

static DEFAULT: Mutex<Option<Default>> = Mutex::new(None);

fn env(name: &str) -> Result<String> {
    std::env::var(name).map_err(|_| {
        err(format!(
            "Error initializing torch.distributed using env:// rendezvous: environment variable {name} expected, but not set"
        ))
    })
}

fn number(name: &str, v: &str) -> Result<usize> {
    v.parse()
        .map_err(|_| err(format!("{name} must be a non-negative integer, got {v:?}")))
}

/// The address this rank's Gloo pairs listen on: loopback for a master
/// on loopback, else this host's address.
fn transport_host(master: &str) -> String {
    if master == "localhost" || master == "::1" || master.starts_with("127.") {
        return "127.0.0.1".into();
    }
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is writable for its length; gethostname
    // NUL-terminates within it on success.
    let ok = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } == 0;
    let name = if ok {
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        String::from_utf8_lossy(&buf[..end]).into_owned()
    } else {
        return "127.0.0.1".into();
    };
    use std::net::ToSocketAddrs;
    (name.as_str(), 0)
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.find(|a| a.is_ipv4()))
        .map(|a| a.ip().to_string())
        .unwrap_or_else(|| "127.0.0.1".into())
}

/// One intra-op thread per rank unless `OMP_NUM_THREADS` says otherwise,
/// as torchrun sets it.
fn one_thread() {
    if std::env::var_os("OMP_NUM_THREADS").is_none() {
        ferrotorch_kernels::parallel::set_num_threads(1);
    }
}

/// `torch.distributed.init_process_group(backend)` with env://
/// rendezvous (or, for `"mpi"`, MPI's ranks).
pub fn init_process_group(backend: &str) -> Result<()> {
    init_process_group_with(InitOptions::new(backend))
}

/// `torch.distributed.init_process_group(...)` with every option.
pub fn init_process_group_with(opts: InitOptions) -> Result<()> {
    let mut slot = DEFAULT.lock().unwrap_or_else(|p| p.into_inner());
    if slot.is_some() {
        return Err(err(
            "trying to initialize the default process group twice!".into()
        ));
    }
    let d = match opts.backend.as_str() {
        "nccl" => {
            return Err(err(
                "ProcessGroupNCCL is only supported with GPUs, no GPUs found!".into(),
            ))
        }
        "mpi" => {
            one_thread();
            Default {
                group: Arc::new(ProcessGroupMPI::create(None, opts.timeout)?),
                store: None,
                host: String::new(),
                timeout: opts.timeout,
                groups: 0,
            }
        }
        "gloo" => {
            let method = opts.init_method.as_deref().unwrap_or("env://");
            let needs = |what: &str| {
                let (Some(rank), Some(world)) = (opts.rank, opts.world_size) else {
                    return Err(err(format!("{what} rendezvous needs rank and world_size")));
                };
                Ok((rank, world))
            };
            // where the store is: a file, or a TCPStore's master
            let (file, master, port, (rank, world)) = if let Some(path) =
                method.strip_prefix("file://")
            {
                (Some(path), "127.0.0.1".to_string(), 0, needs("file://")?)
            } else if method.starts_with("env://") {
                let rank = match opts.rank {
                    Some(r) => r,
                    None => number("RANK", &env("RANK")?)?,
                };
                let world = match opts.world_size {
                    Some(w) => w,
                    None => number("WORLD_SIZE", &env("WORLD_SIZE")?)?,
                };
                let port = env("MASTER_PORT")?;
                (
                    None,
                    env("MASTER_ADDR")?,
                    number("MASTER_PORT", &port)?,
                    (rank, world),
                )
            } else if let Some(rest) = method.strip_prefix("tcp://") {
                let hostport = rest.split('?').next().unwrap_or("");
                let (host, port) = hostport.rsplit_once(':').ok_or_else(|| {
                    err(format!("init_method {method:?}: expected tcp://host:port"))
                })?;
                (
                    None,
                    host.to_string(),
                    number("the port", port)?,
                    needs("tcp://")?,
                )
            } else {
                return Err(err(format!(
                    "init_method {method:?} is not supported (env://, tcp://host:port or file:///path)"
                )));
            };
            if world == 0 {
                return Err(err("world_size must be positive, got 0".into()));
            }
            if rank >= world {
                return Err(err(format!("Invalid rank {rank} for world_size {world}")));
            }
            let port = u16::try_from(port)
                .map_err(|_| err(format!("MASTER_PORT {port} is not a port")))?;
            one_thread();
            let store: Arc<dyn Store> = match file {
                Some(path) => {
                    let s = crate::FileStore::new(path, Some(world))?;
                    s.set_timeout(opts.timeout);
                    Arc::new(s)
                }
                None => Arc::new(TCPStore::new(&master, port, rank == 0, opts.timeout)?),
            };
            let host = transport_host(&master);
            let prefixed: Arc<dyn Store> = Arc::new(PrefixStore::new("default_pg", store.clone()));
            Default {
                group: Arc::new(ProcessGroupGloo::connect(
                    prefixed,
                    rank,
                    world,
                    &host,
                    opts.timeout,
                )?),
                store: Some(store),
                host,
                timeout: opts.timeout,
                groups: 0,
            }
        }
        other => {
            return Err(err(format!(
                "Invalid backend: '{other}' (this build has \"gloo\" and \"mpi\")"
            )))
        }
    };
    *slot = Some(d);
    Ok(())
}

/// `torch.distributed.is_initialized()`.
pub fn is_initialized() -> bool {
    DEFAULT.lock().unwrap_or_else(|p| p.into_inner()).is_some()
}

/// The default group (`group.WORLD`).
pub fn default_group() -> Result<Arc<ProcessGroup>> {
    DEFAULT
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .as_ref()
        .map(|d| d.group.clone())
        .ok_or_else(|| {
            err("Default process group has not been initialized, please make sure to call init_process_group.".into())
        })
}

/// `torch.distributed.destroy_process_group()`: leave the default group
/// (its connections close once no one holds it).
pub fn destroy_process_group() {
    DEFAULT.lock().unwrap_or_else(|p| p.into_inner()).take();
}

/// `torch.distributed.new_group(ranks)`: a group of some of the default
/// group's ranks. Every rank calls it, in the same order; a rank outside
/// it gets `None` (torch's `NON_GROUP_MEMBER`).
pub fn new_group(ranks: &[usize]) -> Result<Option<Arc<ProcessGroup>>> {
    let mut slot = DEFAULT.lock().unwrap_or_else(|p| p.into_inner());
    let d = slot.as_mut().ok_or_else(|| {
        err("Default process group has not been initialized, please make sure to call init_process_group.".into())
    })?;
    let mut ranks = ranks.to_vec();
    ranks.sort_unstable();
    ranks.dedup();
    let world = d.group.size();
    if ranks.is_empty() || ranks[ranks.len() - 1] >= world {
        return Err(err(format!(
            "new_group: ranks {ranks:?} are not ranks of a world of {world}"
        )));
    }
    d.groups += 1;
    let me = d.group.rank();
    let Some(local) = ranks.iter().position(|&r| r == me) else {
        return Ok(None);
    };
    let g = match &d.store {
        None => ProcessGroupMPI::create(Some(&ranks), d.timeout)?,
        Some(store) => {
            let prefixed: Arc<dyn Store> = Arc::new(PrefixStore::new(
                &format!("group_{}", d.groups),
                store.clone(),
            ));
            ProcessGroupGloo::connect(prefixed, local, ranks.len(), &d.host, d.timeout)?
        }
    };
    Ok(Some(Arc::new(g)))
}

/// `torch.distributed.get_rank()`.
pub fn get_rank() -> Result<usize> {
    Ok(default_group()?.rank())
}

/// `torch.distributed.get_world_size()`.
pub fn get_world_size() -> Result<usize> {
    Ok(default_group()?.size())
}

/// `torch.distributed.get_backend()`.
pub fn get_backend() -> Result<&'static str> {
    Ok(default_group()?.backend())
}

/// `torch.distributed.all_reduce(t, op)` on the default group.
pub fn all_reduce(t: &Tensor, op: ReduceOp) -> Result<()> {
    default_group()?.all_reduce(t, op)
}

/// `torch.distributed.broadcast(t, src)` on the default group.
pub fn broadcast(t: &Tensor, src: usize) -> Result<()> {
    default_group()?.broadcast(t, src)
}

/// `torch.distributed.all_gather` on the default group: every rank's `t`.
pub fn all_gather(t: &Tensor) -> Result<Vec<Tensor>> {
    default_group()?.all_gather(t)
}

/// `torch.distributed.reduce(t, dst, op)` on the default group.
pub fn reduce(t: &Tensor, dst: usize, op: ReduceOp) -> Result<()> {
    default_group()?.reduce(t, dst, op)
}

/// `torch.distributed.barrier()` on the default group.
pub fn barrier() -> Result<()> {
    default_group()?.barrier()
}

/// `torch.distributed.send(t, dst)` on the default group (tag 0).
pub fn send(t: &Tensor, dst: usize) -> Result<()> {
    default_group()?.send(t, dst, 0)
}

/// `torch.distributed.recv(t, src)` on the default group (tag 0).
pub fn recv(t: &Tensor, src: usize) -> Result<()> {
    default_group()?.recv(t, src, 0)
}

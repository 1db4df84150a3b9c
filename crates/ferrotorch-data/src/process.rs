//! DataLoader workers as processes (Note [Process workers]).
//!
//! # Note [Process workers]
//! A Rust program cannot fork itself safely once it has threads, and it
//! cannot pickle a closure, so worker processes are the program itself,
//! started again with `std::process::Command` (as Python's spawn start
//! method re-imports the main module): the program calls
//! [`run_if_worker`] first thing in `main`, which, in a worker, serves
//! batches and exits, and otherwise returns at once. The dataset goes to
//! each worker over a Unix socket as shared tensors plus bytes
//! ([`ProcessDataset`]; a `TensorDataset`'s tensors move into shared memory
//! once and are mapped, not copied, by every worker); jobs (batch number
//! and indices) follow, and each batch comes back as shared tensors that
//! the worker stacked straight into shared memory — the same sockets and
//! messages as `ferrotorch_core::multiprocessing` (Note [Tensor messages]).
//! Workers exit when their socket closes or their parent dies; a worker
//! that dies is an error naming its pid (and signal), never a hang.

use crate::dataset::{Dataset, TensorDataset};
use ferrotorch_core::multiprocessing::{recv_tensor, send_tensor};
use ferrotorch_core::tensor::shared::stack_shared;
use ferrotorch_core::{bail, ensure, Error, ErrorKind, Result, Tensor};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::net::UnixStream;
use std::process::{Child, Command};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// The environment variable that makes a process a worker: the type name of
/// the dataset it serves.
pub const WORKER_ENV: &str = "FERROTORCH_DATA_WORKER";
/// The descriptor a worker finds its socket at.
const WORKER_FD: i32 = 3;
/// The largest control message either side accepts (indices of a batch).
const MAX_FRAME: usize = 64 << 20;

/// A dataset that can be sent to a worker process: shared tensors plus
/// bytes describing the rest.
pub trait ProcessDataset: Dataset<Item = Vec<Tensor>> + Sized + 'static {
    /// The tensors (sent as shared memory) and bytes that rebuild `self`.
    fn to_parts(&self) -> Result<(Vec<Tensor>, Vec<u8>)>;
    /// Rebuild the dataset in a worker from what [`ProcessDataset::to_parts`] gave.
    fn from_parts(tensors: Vec<Tensor>, bytes: &[u8]) -> Result<Self>;
}

impl ProcessDataset for TensorDataset {
    fn to_parts(&self) -> Result<(Vec<Tensor>, Vec<u8>)> {
        Ok((self.tensors().to_vec(), Vec::new()))
    }

    fn from_parts(tensors: Vec<Tensor>, _bytes: &[u8]) -> Result<Self> {
        TensorDataset::new(tensors)
    }
}

/// How workers are started: this program again, with these arguments
/// (default: the ones this process got).
#[derive(Clone, Debug, Default)]
pub struct WorkerCommand {
    /// The program (default: `std::env::current_exe()`).
    pub program: Option<std::path::PathBuf>,
    /// Its arguments (default: this process's).
    pub args: Option<Vec<OsString>>,
}

fn io(what: &str, e: std::io::Error) -> Error {
    Error::new(ErrorKind::Runtime, format!("{what}: {e}"))
}

fn write_frame(sock: &UnixStream, bytes: &[u8]) -> Result<()> {
    let mut s = sock;
    s.write_all(&(bytes.len() as u32).to_le_bytes())
        .and_then(|_| s.write_all(bytes))
        .map_err(|e| io("DataLoader worker socket", e))
}

fn read_frame(sock: &UnixStream) -> Result<Option<Vec<u8>>> {
    let mut s = sock;
    let mut len = [0u8; 4];
    match s.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(io("DataLoader worker socket", e)),
    }
    let len = u32::from_le_bytes(len) as usize;
    ensure!(
        len <= MAX_FRAME,
        Runtime,
        "DataLoader worker socket: a message of {len} bytes (at most {MAX_FRAME})"
    );
    let mut buf = vec![0u8; len];
    s.read_exact(&mut buf)
        .map_err(|e| io("DataLoader worker socket", e))?;
    Ok(Some(buf))
}

fn u64_at(b: &[u8], at: usize) -> Result<u64> {
    b.get(at..at + 8)
        .map(|s| u64::from_le_bytes(s.try_into().expect("8 bytes")))
        .ok_or_else(|| Error::new(ErrorKind::Runtime, "DataLoader: truncated message"))
}

fn send_tensors(sock: &UnixStream, ts: &[Tensor]) -> Result<()> {
    write_frame(sock, &(ts.len() as u64).to_le_bytes())?;
    ts.iter().try_for_each(|t| send_tensor(sock, t))
}

fn recv_tensors(sock: &UnixStream) -> Result<Vec<Tensor>> {
    let n = read_frame(sock)?
        .ok_or_else(|| Error::new(ErrorKind::Runtime, "DataLoader: the socket closed"))?;
    let n = u64_at(&n, 0)? as usize;
    ensure!(n <= 4096, Runtime, "DataLoader: {n} tensors in one message");
    (0..n).map(|_| recv_tensor(sock)).collect()
}

/// In a process a DataLoader started as its worker for datasets of type
/// `D`, serve batches until the loader is done, then exit the process;
/// anywhere else, return at once. Call it first thing in `main` (Note
/// [Process workers]), once per dataset type the program loads with
/// process workers.
pub fn run_if_worker<D: ProcessDataset>() {
    match std::env::var(WORKER_ENV) {
        Ok(name) if name == std::any::type_name::<D>() => {}
        _ => return,
    }
    // SAFETY: the parent placed the socket at WORKER_FD before exec.
    let sock = unsafe { UnixStream::from_raw_fd(WORKER_FD) };
    watch_parent();
    let code = match serve::<D>(&sock) {
        Ok(()) => 0,
        // the loader went away mid-epoch (dropped iterator): not an error
        Err(e) if e.to_string().contains("Broken pipe") => 0,
        Err(e) => {
            eprintln!("ferrotorch DataLoader worker: {e}");
            1
        }
    };
    std::process::exit(code);
}

/// Exit when the parent dies (its socket may be held open elsewhere).
fn watch_parent() {
    // SAFETY: getppid has no preconditions.
    let ppid = unsafe { libc::getppid() };
    std::thread::spawn(move || loop {
        std::thread::sleep(std::time::Duration::from_millis(200));
        // SAFETY: as above.
        if unsafe { libc::getppid() } != ppid {
            std::process::exit(1);
        }
    });
}

fn serve<D: ProcessDataset>(sock: &UnixStream) -> Result<()> {
    ferrotorch_kernels::parallel::set_num_threads(1); // as torch's workers
    let tensors = recv_tensors(sock)?;
    let bytes = read_frame(sock)?.unwrap_or_default();
    let dataset = D::from_parts(tensors, &bytes)?;
    while let Some(job) = read_frame(sock)? {
        if job.first() != Some(&b'J') {
            return Ok(()); // the end marker
        }
        let no = u64_at(&job, 1)?;
        let n = u64_at(&job, 9)? as usize;
        ensure!(
            job.len() == 17 + 8 * n,
            Runtime,
            "DataLoader: a malformed job"
        );
        let indices: Vec<usize> = (0..n)
            .map(|i| u64_at(&job, 17 + 8 * i).map(|v| v as usize))
            .collect::<Result<_>>()?;
        match fetch_shared(&dataset, &indices) {
            Ok(batch) => {
                let mut head = vec![b'R'];
                head.extend_from_slice(&no.to_le_bytes());
                write_frame(sock, &head)?;
                send_tensors(sock, &batch)?;
            }
            Err(e) => {
                let mut head = vec![b'X'];
                head.extend_from_slice(&no.to_le_bytes());
                head.extend_from_slice(e.to_string().as_bytes());
                write_frame(sock, &head)?;
            }
        }
    }
    Ok(())
}

/// `default_collate` straight into shared memory.
fn fetch_shared<D: Dataset<Item = Vec<Tensor>>>(
    dataset: &D,
    indices: &[usize],
) -> Result<Vec<Tensor>> {
    let samples = indices
        .iter()
        .map(|&i| dataset.get(i))
        .collect::<Result<Vec<_>>>()?;
    crate::loader::collate_fields(samples, stack_shared)
}

type Delivery = (Option<usize>, Result<Vec<Tensor>>);

struct Worker {
    sock: UnixStream,
    child: Arc<Mutex<Child>>,
    reader: Option<JoinHandle<()>>,
}

/// The worker processes of one epoch and the batches they owe.
pub(crate) struct ProcessPool {
    workers: Vec<Worker>,
    rx: Receiver<Delivery>,
    jobs: std::collections::VecDeque<(usize, Vec<usize>)>,
    turn: usize,
    ready: BTreeMap<usize, Result<Vec<Tensor>>>,
    failed: Option<Error>,
}

fn spawn_one<D: ProcessDataset>(
    cmd: &WorkerCommand,
    parts: &(Vec<Tensor>, Vec<u8>),
    tx: Sender<Delivery>,
) -> Result<Worker> {
    let (ours, theirs) = UnixStream::pair().map_err(|e| io("DataLoader worker socket", e))?;
    let program = match &cmd.program {
        Some(p) => p.clone(),
        None => std::env::current_exe().map_err(|e| io("DataLoader worker program", e))?,
    };
    let args: Vec<OsString> = match &cmd.args {
        Some(a) => a.clone(),
        None => std::env::args_os().skip(1).collect(),
    };
    let fd = theirs.as_raw_fd();
    let mut c = Command::new(program);
    c.args(args).env(WORKER_ENV, std::any::type_name::<D>());
    use std::os::unix::process::CommandExt;
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        c.pre_exec(move || {
            let r = if fd == WORKER_FD {
                libc::fcntl(fd, libc::F_SETFD, 0)
            } else {
                libc::dup2(fd, WORKER_FD)
            };
            if r < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = c
        .spawn()
        .map_err(|e| io("DataLoader: starting a worker process", e))?;
    drop(theirs);
    send_tensors(&ours, &parts.0)?;
    write_frame(&ours, &parts.1)?;
    let child = Arc::new(Mutex::new(child));
    let (sock, kid) = (
        ours.try_clone()
            .map_err(|e| io("DataLoader worker socket", e))?,
        child.clone(),
    );
    let reader = std::thread::spawn(move || read_results(&sock, &kid, &tx));
    Ok(Worker {
        sock: ours,
        child,
        reader: Some(reader),
    })
}

fn read_results(sock: &UnixStream, child: &Mutex<Child>, tx: &Sender<Delivery>) {
    loop {
        let frame = match read_frame(sock) {
            Ok(Some(f)) => f,
            _ => break,
        };
        let no = match u64_at(&frame, 1) {
            Ok(n) => n as usize,
            Err(e) => {
                let _ = tx.send((None, Err(e)));
                return;
            }
        };
        let got = match frame.first() {
            Some(b'R') => recv_tensors(sock),
            _ => Err(Error::new(
                ErrorKind::Runtime,
                format!(
                    "Caught an error in DataLoader worker process: {}",
                    String::from_utf8_lossy(&frame[9..])
                ),
            )),
        };
        let broken = got.is_err() && frame.first() == Some(&b'R');
        if tx.send((Some(no), got)).is_err() || broken {
            return;
        }
    }
    // the socket closed: say how the worker ended
    let mut c = child.lock().unwrap_or_else(|e| e.into_inner());
    let pid = c.id();
    let mut status = None;
    for _ in 0..100 {
        if let Ok(Some(s)) = c.try_wait() {
            status = Some(s);
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    use std::os::unix::process::ExitStatusExt;
    let msg = match status {
        Some(s) if s.success() => return,
        Some(s) if s.signal().is_some() => format!(
            "DataLoader worker (pid {pid}) is killed by signal: {}",
            signal_name(s.signal().unwrap_or(0))
        ),
        _ => format!("DataLoader worker (pid(s) {pid}) exited unexpectedly"),
    };
    let _ = tx.send((None, Err(Error::new(ErrorKind::Runtime, msg))));
}

fn signal_name(sig: i32) -> String {
    match sig {
        9 => "Killed".into(),
        11 => "Segmentation fault".into(),
        15 => "Terminated".into(),
        6 => "Aborted".into(),
        n => format!("signal {n}"),
    }
}

impl ProcessPool {
    /// Start `n` workers for `dataset` and queue the epoch's jobs, `cap`
    /// of them in flight.
    pub(crate) fn start<D: ProcessDataset>(
        dataset: &D,
        n: usize,
        cap: usize,
        cmd: &WorkerCommand,
        jobs: std::collections::VecDeque<(usize, Vec<usize>)>,
    ) -> Result<ProcessPool> {
        let parts = dataset.to_parts()?;
        for t in &parts.0 {
            t.share_memory_()?; // once: every worker maps the same memory
        }
        let (tx, rx) = channel();
        let mut pool = ProcessPool {
            workers: Vec::with_capacity(n),
            rx,
            jobs,
            turn: 0,
            ready: BTreeMap::new(),
            failed: None,
        };
        for _ in 0..n {
            let w = spawn_one::<D>(cmd, &parts, tx.clone())?;
            pool.workers.push(w);
        }
        for _ in 0..cap {
            pool.send_next()?;
        }
        Ok(pool)
    }

    fn send_next(&mut self) -> Result<()> {
        let Some((no, indices)) = self.jobs.pop_front() else {
            return Ok(());
        };
        let mut job = vec![b'J'];
        job.extend_from_slice(&(no as u64).to_le_bytes());
        job.extend_from_slice(&(indices.len() as u64).to_le_bytes());
        for i in indices {
            job.extend_from_slice(&(i as u64).to_le_bytes());
        }
        let w = &self.workers[self.turn % self.workers.len()];
        self.turn += 1;
        write_frame(&w.sock, &job)
    }

    /// Batch `no`, waiting for it; the first failure ends the epoch.
    pub(crate) fn batch(&mut self, no: usize) -> Result<Vec<Tensor>> {
        if let Some(e) = &self.failed {
            bail!(Runtime, "{e}");
        }
        loop {
            if let Some(b) = self.ready.remove(&no) {
                if b.is_err() {
                    self.failed = b.as_ref().err().cloned();
                } else {
                    self.send_next()?;
                }
                return b;
            }
            match self.rx.recv() {
                Ok((Some(n), b)) => {
                    self.ready.insert(n, b);
                }
                Ok((None, Err(e))) => {
                    self.failed = Some(e.clone());
                    return Err(e);
                }
                Ok((None, Ok(_))) | Err(_) => {
                    bail!(Runtime, "DataLoader worker exited unexpectedly")
                }
            }
        }
    }
}

impl crate::loader::BatchSource<Vec<Tensor>> for ProcessPool {
    fn batch(&mut self, no: usize) -> Result<Vec<Tensor>> {
        ProcessPool::batch(self, no)
    }
}

impl Drop for ProcessPool {
    fn drop(&mut self) {
        for w in &self.workers {
            let _ = write_frame(&w.sock, b"E");
            let _ = w.sock.shutdown(std::net::Shutdown::Both);
        }
        for w in &mut self.workers {
            let mut c = w.child.lock().unwrap_or_else(|e| e.into_inner());
            let mut done = false;
            for _ in 0..200 {
                if let Ok(Some(_)) = c.try_wait() {
                    done = true;
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            if !done {
                let _ = c.kill();
                let _ = c.wait();
            }
            drop(c);
            if let Some(r) = w.reader.take() {
                let _ = r.join();
            }
        }
    }
}

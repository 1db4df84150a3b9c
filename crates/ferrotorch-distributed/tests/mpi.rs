//! The MPI backend: the same collectives as the Gloo tests, with ranks as
//! processes that `mpirun` starts (this test binary, run again with
//! `FT_MPI_CHILD` set, checks its own rank and exits non-zero on a
//! failure, which makes `mpirun` fail).

use ferrotorch_core::{DType, Tensor};
use ferrotorch_distributed::{is_mpi_available, mpi, ProcessGroupMPI, ReduceOp};
use std::process::Command;
use std::time::{Duration, Instant};

mod common;

/// torch's default timeout (30 minutes)
const LONG: Duration = Duration::from_secs(1800);

/// `mpirun -np n` of this binary's test `name`, as CI runs it: as root
/// in a container (Open MPI's two ALLOW_RUN_AS_ROOT switches), without
/// the single-copy mechanism containers forbid, oversubscribed on 2 cores.
fn mpirun(n: usize, name: &str) -> std::process::Output {
    Command::new("mpirun")
        .args(["--oversubscribe", "-np", &n.to_string()])
        .arg(std::env::current_exe().unwrap())
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env("FT_MPI_CHILD", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_btl_vader_single_copy_mechanism", "none")
        .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
        .output()
        .expect("mpirun")
}

fn child() -> bool {
    std::env::var_os("FT_MPI_CHILD").is_some()
}

fn runnable() -> bool {
    if !is_mpi_available() {
        eprintln!("skipped: {}", mpi::UNAVAILABLE);
        return false;
    }
    if Command::new("mpirun").arg("--version").output().is_err() {
        eprintln!("skipped: no mpirun (Debian: apt-get install openmpi-bin)");
        return false;
    }
    true
}

fn check(out: std::process::Output, what: &str) {
    assert!(
        out.status.success(),
        "{what} under mpirun failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn rank_collectives() {
    if !child() {
        return;
    }
    let g = ProcessGroupMPI::create(None, LONG).unwrap();
    common::check_reductions(g.size(), &common::reductions(&g).unwrap());
    let r = g.rank();
    if g.size() == 1 {
        return;
    }
    common::check_rooted(g.size(), r, common::rooted(&g).unwrap());
    // a sub-group of the even ranks
    let evens: Vec<usize> = (0..g.size()).step_by(2).collect();
    if r.is_multiple_of(2) {
        let sub = ProcessGroupMPI::create(Some(&evens), LONG).unwrap();
        assert_eq!((sub.rank(), sub.size()), (r / 2, evens.len()));
        let x = Tensor::ones(&[3], DType::I64).unwrap();
        sub.all_reduce(&x, ReduceOp::Sum).unwrap();
        assert_eq!(x.to_vec::<i64>().unwrap(), vec![evens.len() as i64; 3]);
    }
    if g.size() == 2 {
        // on a fresh group: its sequence numbers start at 0
        let fresh = ProcessGroupMPI::create(None, LONG).unwrap();
        common::check_desynchronised(&common::desynchronised(&fresh).unwrap());
    }
    // errors named, not crashes: a float16 reduction, a tag past MPI's
    // largest, a receive shorter than what was sent
    let h = Tensor::ones(&[2], DType::F16).unwrap();
    let e = g.all_reduce(&h, ReduceOp::Sum).unwrap_err().to_string();
    assert!(e.contains("mpi all_reduce") && e.contains("float16"), "{e}");
    let peer = (r + 1) % g.size();
    let e = g.send(&h, peer, u64::MAX).unwrap_err().to_string();
    assert!(e.contains("largest tag"), "{e}");
    if g.size() == 2 {
        if r == 0 {
            g.send(&Tensor::ones(&[4], DType::F32).unwrap(), 1, 3)
                .unwrap();
        } else {
            let e = g
                .recv(&Tensor::zeros(&[2], DType::F32).unwrap(), 0, 3)
                .unwrap_err()
                .to_string();
            assert!(e.contains("mpi recv"), "{e}");
        }
    }
    g.barrier().unwrap();
}

/// One test starts every MPI job, one after the other (two Open MPI jobs
/// starting at once on one machine can race creating their session
/// directories).
#[test]
fn mpi_collectives_match_a_single_process() {
    if child() || !runnable() {
        return;
    }
    for n in [1, 2, 4] {
        check(mpirun(n, "rank_collectives"), &format!("{n} ranks"));
    }
    // a process not started by mpirun is a world of one (MPI's singleton
    // start, in a child process: MPI starts once per process)
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["singleton_world", "--exact", "--nocapture"])
        .env("FT_MPI_CHILD", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .output()
        .unwrap();
    check(out, "a singleton");
    // a rank that is alive but never joins: the watchdog ends the job
    // after the group's timeout (Note [MPI's watchdog])
    let t = Instant::now();
    let out = mpirun(2, "hung_rank");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "a hung rank's job succeeded");
    assert!(
        stderr.contains("rank 0's all_gather has not completed after")
            && stderr.contains("another rank is not taking part"),
        "{stderr}"
    );
    assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
}

#[test]
fn hung_rank() {
    if !child() {
        return;
    }
    let g = ProcessGroupMPI::create(None, Duration::from_secs(2)).unwrap();
    if g.rank() == 0 {
        // the fingerprints' all-gather is where rank 0 waits
        let _ = g.all_reduce(&Tensor::ones(&[2], DType::F32).unwrap(), ReduceOp::Sum);
    } else {
        std::thread::sleep(Duration::from_secs(60));
    }
}

#[test]
fn singleton_world() {
    if !child() {
        return;
    }
    assert_eq!(mpi::world().unwrap(), (0, 1));
    let g = ProcessGroupMPI::create(None, LONG).unwrap();
    let x = Tensor::from_vec(vec![1.5f32, 2.0], &[2]).unwrap();
    g.all_reduce(&x, ReduceOp::Avg).unwrap();
    assert_eq!(x.to_vec::<f32>().unwrap(), vec![1.5, 2.0]);
}

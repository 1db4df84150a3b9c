"""A Rust program trained with DistributedDataParallel (examples/ddp.rs)
under each engine's launcher: ferrotorch's torchrun on Gloo and mpirun on
MPI, 2 ranks each, give the parameters one process gets on the whole
batch (the example itself checks the ranks are bit-identical)."""

import os
import shutil
import subprocess
import sys

import pytest

import ferrotorch.distributed as dist

from test_distributed_mpi import MPI_ENV

EX = os.environ.get("FERROTORCH_EXAMPLES")
pytestmark = pytest.mark.skipif(not EX or not os.path.exists(os.path.join(EX or "", "ddp")),
                                reason="set FERROTORCH_EXAMPLES to the built examples (scripts/test.sh does)")


def checksum(out):
    line = [l for l in out.splitlines() if l.startswith("params: ")]
    assert line, out
    return [float(v) for v in line[-1].split()[1:]]


def run(cmd, **env):
    r = subprocess.run(cmd, env=dict(os.environ, **env), capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    return checksum(r.stdout)


def close(a, b):
    assert all(abs(x - y) <= 1e-5 * max(1.0, abs(y)) for x, y in zip(a, b)), (a, b)


def test_the_rust_example_under_torchrun_on_gloo_matches_one_process():
    if not dist.is_gloo_available():
        pytest.skip("the gloo backend is not built")
    exe = os.path.join(EX, "ddp")
    want = run([exe, "--single"])
    got = run([sys.executable, "-m", "ferrotorch.distributed.run", "--standalone", "--nproc-per-node", "2",
               "--no-python", exe])
    close(got, want)


def test_the_rust_example_under_mpirun_matches_one_process():
    if not dist.is_mpi_available() or shutil.which("mpirun") is None:
        pytest.skip("the mpi backend or mpirun is missing")
    exe = os.path.join(EX, "ddp")
    want = run([exe, "--single"])
    got = run(["mpirun", "-np", "2", exe, "--backend", "mpi"], **MPI_ENV)
    close(got, want)

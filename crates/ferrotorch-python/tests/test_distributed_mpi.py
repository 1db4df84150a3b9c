"""torch.distributed on MPI: programs started as a cluster starts them,
``mpirun -np N python train.py`` with ``init_process_group("mpi")``
(rank and world size from MPI), checked against single-process
references: the collectives with 2 and 4 ranks, a sub-group, the object
forms, point to point, and DDP on shards matching one process on the
whole batch; a rank that fails makes mpirun fail."""

import os
import shutil
import subprocess
import sys

import pytest

import ferrotorch as torch
import ferrotorch.distributed as dist

pytestmark = [
    pytest.mark.skipif(not dist.is_mpi_available(), reason="the mpi backend is not built"),
    pytest.mark.skipif(shutil.which("mpirun") is None, reason="no mpirun (apt-get install openmpi-bin)"),
]

HERE = os.path.dirname(os.path.abspath(__file__))

# as a user's cluster job runs: the environment mpirun passes on, plus
# what CI's container needs (root, no single-copy shared memory)
MPI_ENV = {
    "OMPI_ALLOW_RUN_AS_ROOT": "1",
    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    "OMPI_MCA_btl_vader_single_copy_mechanism": "none",
    "OMPI_MCA_rmaps_base_oversubscribe": "1",
}


def mpirun(n, script, tmp_path, timeout=180, **extra):
    env = dict(os.environ, OUT=str(tmp_path), **MPI_ENV, **extra)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), HERE) if p)
    return subprocess.run(["mpirun", "-np", str(n), sys.executable, str(script)], env=env,
                          capture_output=True, text=True, timeout=timeout)


COLLECTIVES = r"""
import os
import ferrotorch as torch
import ferrotorch.distributed as dist

dist.init_process_group("mpi")
rank, world = dist.get_rank(), dist.get_world_size()
assert dist.get_backend() == "mpi" and torch.get_num_threads() == 1
r = float(rank)
res = {}
x = torch.tensor([r + 1, -r, 2 * r])
dist.all_reduce(x)
res["sum"] = x.tolist()
a = torch.tensor([r, 1.0], dtype=torch.float64)
w = dist.all_reduce(a, op=dist.ReduceOp.AVG, async_op=True)
w.wait()
res["avg"] = a.tolist()
i = torch.tensor([rank + 1] * 2, dtype=torch.int64)
dist.all_reduce(i, op=dist.ReduceOp.PRODUCT)
res["prod"] = i.tolist()
t = (torch.arange(6.0).view(2, 3) * (r + 1)).t()  # non-contiguous, reduced in place
dist.all_reduce(t, op=dist.ReduceOp.MIN)
res["min_t"] = t.tolist()
b = torch.full((3,), r, dtype=torch.uint8)
dist.broadcast(b, src=world - 1)
res["bcast"] = b.tolist()
out = torch.zeros(world * 2)
dist.all_gather_into_tensor(out, torch.tensor([r, 10 * r]))
res["gather"] = out.tolist()
rs = torch.zeros(1)
dist.reduce_scatter_tensor(rs, torch.arange(float(world)) + r)
res["rs"] = rs.tolist()
g = [torch.zeros(1) for _ in range(world)] if rank == 0 else None
dist.gather(torch.tensor([r * r]), g, dst=0)
res["g0"] = None if g is None else [v.item() for v in g]
sc = torch.zeros(2, dtype=torch.int32)
dist.scatter(sc, [torch.tensor([k, -k], dtype=torch.int32) for k in range(world)] if rank == 0 else None, src=0)
res["scatter"] = sc.tolist()
objs = [{"step": 7, "name": "run"} if rank == 0 else None]
dist.broadcast_object_list(objs, src=0)
res["obj"] = objs[0]
every = [None] * world
dist.all_gather_object(every, ("rank", rank))
res["objs"] = every
nxt, prv = (rank + 1) % world, (rank - 1) % world
got = torch.zeros(2)
req = dist.irecv(got, src=prv, tag=5)
dist.send(torch.tensor([r, r]), dst=nxt, tag=5)
req.wait()
res["ring"] = got.tolist()
evens = dist.new_group([k for k in range(world) if k % 2 == 0])
if rank % 2 == 0:
    e = torch.ones(1)
    dist.all_reduce(e, group=evens)
    res["evens"] = e.item()
else:
    assert evens is dist.GroupMember.NON_GROUP_MEMBER
dist.barrier()
with open(os.path.join(os.environ["OUT"], f"{rank}.txt"), "w") as f:
    f.write(repr(res))
dist.destroy_process_group()
"""


@pytest.mark.parametrize("world", [2, 4])
def test_collectives_under_mpirun_match_a_single_process(tmp_path, world):
    script = tmp_path / "collectives.py"
    script.write_text(COLLECTIVES)
    r = mpirun(world, script, tmp_path)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    n = world
    for rank in range(n):
        got = eval(open(tmp_path / f"{rank}.txt").read())  # noqa: S307 (our own repr)
        want = {
            "sum": [sum(k + 1 for k in range(n)), -sum(range(n)), 2 * sum(range(n))],
            "avg": [sum(range(n)) / n, 1.0],
            "prod": [__import__("math").factorial(n)] * 2,
            "min_t": [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]],
            "bcast": [n - 1] * 3,
            "gather": [v for k in range(n) for v in (k, 10.0 * k)],
            "rs": [float(rank * n + sum(range(n)))],
            "g0": [float(k * k) for k in range(n)] if rank == 0 else None,
            "scatter": [rank, -rank],
            "obj": {"step": 7, "name": "run"},
            "objs": [("rank", k) for k in range(n)],
            "ring": [float((rank - 1) % n)] * 2,
        }
        if rank % 2 == 0:
            want["evens"] = float(len(range(0, n, 2)))
        assert got == want, rank


# DDP as a cluster job: each rank trains on its shard of the global batch
DDP_TRAIN = r"""
import os
import ferrotorch as torch
import ferrotorch.distributed as dist
from ferrotorch.nn.parallel import DistributedDataParallel as DDP
from test_ddp import STEPS, mlp, train

dist.init_process_group("mpi")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(99 + rank)  # different local init: rank 0's must win
model = DDP(mlp() if rank == 0 else torch.nn.Sequential(
    torch.nn.Linear(6, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3)), bucket_cap_mb=0.0005)
opt = torch.optim.AdamW(model.parameters(), lr=0.01)
params = train(model, opt, STEPS, shard=(rank, world))
torch.save(params, os.path.join(os.environ["OUT"], f"{rank}.pt"))
if rank == 1 and os.environ.get("FAIL"):
    raise SystemExit(4)
dist.barrier()
"""


def test_ddp_under_mpirun_matches_one_process_and_a_failing_rank_fails_the_job(tmp_path):
    from test_ddp import reference

    script = tmp_path / "train.py"
    script.write_text(DDP_TRAIN)
    r = mpirun(2, script, tmp_path)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    want = reference("adamw")
    got = [torch.load(str(tmp_path / f"{k}.pt")) for k in range(2)]
    for a, b, w in zip(got[0], got[1], want):
        assert torch.equal(a, b)  # bit-identical across ranks
        assert (a - w).abs().max().item() <= 1e-5
    # a rank that exits with an error (while rank 0 waits in a barrier)
    # makes mpirun stop the job and fail, naming it
    r = mpirun(2, script, tmp_path, timeout=60, FAIL="1")
    assert r.returncode != 0
    assert "exited" in (r.stdout + r.stderr) or "non-zero" in (r.stdout + r.stderr)


# a rank that dies (kill -9) or hangs while the other waits in a collective
FAULT = r"""
import datetime, os, signal, time
import ferrotorch as torch
import ferrotorch.distributed as dist

dist.init_process_group("mpi", timeout=datetime.timedelta(seconds=3))
x = torch.ones(4)
dist.all_reduce(x)
if dist.get_rank() == 1:
    if os.environ["FAULT"] == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(120)  # alive, but never joins
dist.all_reduce(x)
"""


@pytest.mark.parametrize("fault", ["kill", "hang"])
def test_a_killed_or_hung_rank_fails_the_job_within_seconds(tmp_path, fault):
    import time

    script = tmp_path / "fault.py"
    script.write_text(FAULT)
    t = time.monotonic()
    r = mpirun(2, script, tmp_path, timeout=90, FAULT=fault)
    took = time.monotonic() - t
    out = r.stdout + r.stderr
    assert r.returncode != 0, out[-3000:]
    assert took < 30, took  # mpirun's start-up included
    if fault == "hang":
        # MPI has no timeouts: the watchdog ends the job (Note [MPI's watchdog])
        assert "has not completed after" in out and "another rank is not taking part" in out, out[-3000:]


def test_mpi_errors_are_torchs():
    with pytest.raises(RuntimeError, match="only supported with GPUs"):
        dist.init_process_group("nccl")
    assert isinstance(dist.is_mpi_available(), bool) and dist.is_mpi_available()

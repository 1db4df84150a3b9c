"""torch.distributed on Gloo: ranks started with mp.spawn and env://
rendezvous (the PyTorch DDP tutorial's pattern), the collectives against
single-process references with 2 and 4 ranks (oversubscribed on 2 cores),
the stores, and torch's errors."""

import datetime
import os
import socket

import pytest

import ferrotorch as torch
import ferrotorch.distributed as dist
import ferrotorch.multiprocessing as mp

pytestmark = pytest.mark.skipif(not dist.is_gloo_available(), reason="the gloo backend is not built")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def collectives(rank, world, port, out_dir):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    os.environ["RANK"], os.environ["WORLD_SIZE"] = str(rank), str(world)
    dist.init_process_group("gloo")
    assert dist.get_rank() == rank and dist.get_world_size() == world
    assert dist.get_backend() == "gloo" and dist.is_initialized()
    assert torch.get_num_threads() == 1  # one intra-op thread per rank, as torchrun
    r = float(rank)
    res = {}
    x = torch.tensor([r + 1, -r, 2 * r])
    dist.all_reduce(x)
    res["sum"] = x.tolist()
    m = torch.tensor([r, 5 - r], dtype=torch.float64)
    w = dist.all_reduce(m, op=dist.ReduceOp.MAX, async_op=True)
    assert w.wait() and w.is_completed()
    res["max"] = m.tolist()
    a = torch.tensor([r, 1.0])
    dist.all_reduce(a, op=dist.ReduceOp.AVG)
    res["avg"] = a.tolist()
    i = torch.tensor([rank + 1] * 3, dtype=torch.int64)
    dist.all_reduce(i, op=dist.ReduceOp.PRODUCT)
    res["prod"] = i.tolist()
    t = (torch.arange(6.0).view(2, 3) * (r + 1)).t()  # non-contiguous, reduced in place
    dist.all_reduce(t, op=dist.ReduceOp.MIN)
    res["min_t"] = t.tolist()
    b = torch.full((2, 2), r)
    dist.broadcast(b, src=world - 1)
    res["bcast"] = b.tolist()
    got = [torch.zeros(2) for _ in range(world)]
    dist.all_gather(got, torch.tensor([r, 10 * r]))
    res["gather"] = [g.tolist() for g in got]
    dist.barrier()
    # Note [Gloo's yielding destructor]: each call runs SCHED_BATCH and puts
    # the caller's own policy back (a batch caller stays batch)
    assert os.sched_getscheduler(0) == os.SCHED_OTHER
    os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
    dist.all_reduce(torch.ones(1))
    assert os.sched_getscheduler(0) == os.SCHED_BATCH
    os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    with open(os.path.join(out_dir, f"{rank}.txt"), "w") as f:
        f.write(repr(res))
    dist.destroy_process_group()


@pytest.mark.parametrize("world", [2, 4])
def test_collectives_match_a_single_process(tmp_path, world):
    mp.spawn(collectives, args=(world, free_port(), str(tmp_path)), nprocs=world)
    n = world
    want = {
        "sum": [sum(r + 1 for r in range(n)), -sum(range(n)), 2 * sum(range(n))],
        "max": [n - 1, 5.0],
        "avg": [sum(range(n)) / n, 1.0],
        "prod": [float(__import__("math").factorial(n))] * 3,
        "min_t": [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]],
        "bcast": [[n - 1.0] * 2] * 2,
        "gather": [[r, 10.0 * r] for r in range(n)],
    }
    for r in range(n):
        got = eval(open(tmp_path / f"{r}.txt").read())  # noqa: S307 (our own repr)
        assert got == {k: (v if k != "prod" else [int(x) for x in v]) for k, v in want.items()}, r


def more_collectives(rank, world, port, out_dir):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    r, last = float(rank), world - 1
    res = {}
    x = torch.tensor([r + 1, 2.0])
    dist.reduce(x, dst=last, op=dist.ReduceOp.PRODUCT)
    res["reduce"] = x.tolist()
    gl = [torch.zeros(2, dtype=torch.int32) for _ in range(world)] if rank == 0 else None
    dist.gather(torch.tensor([rank, rank], dtype=torch.int32), gl, dst=0)
    res["gather"] = [t.tolist() for t in gl] if gl else None
    out = torch.zeros(3)
    dist.scatter(out, [torch.full((3,), 10.0 * i) for i in range(world)] if rank == 1 else None, src=1)
    res["scatter"] = out.tolist()
    a2a = torch.zeros(world, dtype=torch.int64)
    dist.all_to_all_single(a2a, torch.tensor([rank * 100 + i for i in range(world)]))
    res["a2a"] = a2a.tolist()
    # uneven (torch's split sizes): i+1 rows to rank i, rank+1 rows from each
    send = torch.tensor([[rank * 10.0 + i] for i in range(world) for _ in range(i + 1)])
    uneven = torch.zeros(world * (rank + 1), 1)
    dist.all_to_all_single(uneven, send, output_split_sizes=[rank + 1] * world,
                           input_split_sizes=list(range(1, world + 1)))
    res["uneven"] = uneven.flatten().tolist()
    into = torch.zeros(world * 2)
    dist.all_gather_into_tensor(into, torch.tensor([r, -r]))
    res["into"] = into.tolist()
    rs = torch.zeros(2)
    dist.reduce_scatter_tensor(rs, torch.arange(2.0 * world) * (r + 1))
    res["rs"] = rs.tolist()
    if rank == 0:
        dist.send(torch.tensor([42.0, 43.0]), dst=1, tag=3)
    elif rank == 1:
        got = torch.zeros(2)
        dist.recv(got, src=0, tag=3)
        res["recv"] = got.tolist()
    objs = [None] * world
    dist.all_gather_object(objs, {"rank": rank, "w": torch.ones(rank + 1), "name": f"r{rank}"})
    res["objs"] = [(o["rank"], o["w"].tolist(), o["name"]) for o in objs]
    lst = [{"lr": 0.1, "step": 7}, "hello"] if rank == 0 else [None, None]
    dist.broadcast_object_list(lst, src=0)
    res["bol"] = lst
    with open(os.path.join(out_dir, f"{rank}.txt"), "w") as f:
        f.write(repr(res))


@pytest.mark.parametrize("world", [2, 3])
def test_rooted_collectives_objects_and_point_to_point(tmp_path, world):
    mp.spawn(more_collectives, args=(world, free_port(), str(tmp_path)), nprocs=world)
    import math

    for r in range(world):
        got = eval(open(tmp_path / f"{r}.txt").read())  # noqa: S307 (our own repr)
        assert got["reduce"] == ([float(math.factorial(world)), 2.0 ** world] if r == world - 1
                                 else [r + 1.0, 2.0])
        assert got["gather"] == ([[i, i] for i in range(world)] if r == 0 else None)
        assert got["scatter"] == [10.0 * r] * 3
        assert got["a2a"] == [i * 100 + r for i in range(world)]
        assert got["uneven"] == [i * 10.0 + r for i in range(world) for _ in range(r + 1)]
        assert got["into"] == [v for i in range(world) for v in (float(i), -float(i))]
        total = sum(i + 1 for i in range(world))
        assert got["rs"] == [float((2 * r) * total), float((2 * r + 1) * total)]
        if r == 1:
            assert got["recv"] == [42.0, 43.0]
        assert got["objs"] == [(i, [1.0] * (i + 1), f"r{i}") for i in range(world)]
        assert got["bol"] == [{"lr": 0.1, "step": 7}, "hello"]


def async_and_groups(rank, world, port, out_dir):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    res = {}
    # several asynchronous collectives in flight, run in order
    xs = [torch.full((1000,), float(rank + k)) for k in range(4)]
    works = [dist.all_reduce(x, async_op=True) for x in xs]
    res["async"] = [w.wait() and x[0].item() for w, x in zip(works, xs)]
    assert all(w.is_completed() and w.is_success() for w in works)
    bad = dist.all_reduce(torch.ones(2, dtype=torch.float16), async_op=True)
    try:
        bad.wait()
    except RuntimeError as e:
        res["error"] = "float16" in str(e)
    evens = dist.new_group([r for r in range(world) if r % 2 == 0])
    if rank % 2 == 0:
        x = torch.tensor([float(rank)])
        dist.all_reduce(x, group=evens)
        res["evens"] = x.item()
        res["grank"] = (dist.get_rank(evens), dist.get_world_size(evens))
        b = torch.tensor([float(rank)])
        dist.broadcast(b, src=2 if world > 2 else 0, group=evens)  # a global rank
        res["gb"] = b.item()
    else:
        assert evens is dist.GroupMember.NON_GROUP_MEMBER and dist.get_rank(evens) == -1
    dist.barrier()
    with open(os.path.join(out_dir, f"{rank}.txt"), "w") as f:
        f.write(repr(res))
    dist.destroy_process_group()


def test_async_work_and_new_group(tmp_path):
    world = 4
    mp.spawn(async_and_groups, args=(world, free_port(), str(tmp_path)), nprocs=world)
    for r in range(world):
        got = eval(open(tmp_path / f"{r}.txt").read())  # noqa: S307 (our own repr)
        assert got["async"] == [float(sum(q + k for q in range(world))) for k in range(4)]
        assert got["error"] is True
        if r % 2 == 0:
            assert got["evens"] == 0.0 + 2.0
            assert got["grank"] == (r // 2, 2)
            assert got["gb"] == 2.0


def test_stores_have_torchs_api():
    s = dist.HashStore()
    s.set("k", "v")
    assert s.get("k") == b"v"
    assert s.add("n", 3) == 3 and s.add("n", 4) == 7
    assert s.compare_set("k", "v", "w") == b"w"
    p = dist.PrefixStore("pre", s)
    p.set("k", b"x")
    assert s.get("pre/k") == b"x" and p.get("k") == b"x"
    assert s.check(["k", "pre/k"]) and not s.check(["nope"])
    s.set_timeout(datetime.timedelta(milliseconds=50))
    with pytest.raises(RuntimeError, match="timed out"):
        s.get("nope")
    master = dist.TCPStore("127.0.0.1", 0, world_size=1, is_master=True,
                           timeout=datetime.timedelta(seconds=10))
    client = dist.TCPStore("127.0.0.1", master.port, is_master=False,
                           timeout=datetime.timedelta(seconds=10))
    client.set("hello", "world")
    assert master.get("hello") == b"world"
    master.wait(["hello"])
    assert master.timeout == datetime.timedelta(seconds=10)


def file_rendezvous(rank, path, out_dir):
    dist.init_process_group("gloo", init_method=f"file://{path}", rank=rank, world_size=2)
    x = torch.tensor([rank + 1.0])
    dist.all_reduce(x)
    with open(os.path.join(out_dir, f"{rank}.txt"), "w") as f:
        f.write(repr(x.tolist()))
    dist.destroy_process_group()


def test_file_store_and_file_rendezvous(tmp_path):
    # torch's FileStore API, two handles on one file as two processes
    a, b = dist.FileStore(str(tmp_path / "store"), 2), dist.FileStore(str(tmp_path / "store"), 2)
    a.set("k", "v")
    assert b.get("k") == b"v" and b.add("n", 2) == 2 and a.add("n", 5) == 7
    assert a.delete_key("k") and not b.check(["k"])
    mp.spawn(file_rendezvous, args=(str(tmp_path / "rdzv"), str(tmp_path)), nprocs=2)
    for r in range(2):
        assert (tmp_path / f"{r}.txt").read_text() == "[3.0]"


def test_torchs_errors():
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        dist.get_rank()
    with pytest.raises(RuntimeError, match="ProcessGroupNCCL is only supported with GPUs"):
        dist.init_process_group("nccl")
    with pytest.raises(ValueError, match="Invalid backend: 'bogus'"):
        dist.init_process_group("bogus")
    env = {k: os.environ.pop(k, None) for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
    try:
        with pytest.raises(ValueError, match="environment variable MASTER_ADDR expected"):
            dist.init_process_group("gloo")
        with pytest.raises(ValueError, match="world_size must be positive"):
            dist.init_process_group("gloo", init_method="tcp://127.0.0.1:1", rank=0, world_size=0)
        with pytest.raises(ValueError, match="Invalid rank 3 for world_size 2"):
            dist.init_process_group("gloo", init_method="tcp://127.0.0.1:1", rank=3, world_size=2)
    finally:
        for k, v in env.items():
            if v is not None:
                os.environ[k] = v
    assert not dist.is_initialized()


def twice(rank, port):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)
    try:
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)
    except ValueError as e:
        assert "twice" in str(e)
    else:
        raise AssertionError("a second init_process_group was accepted")


def test_init_twice_is_torchs_error():
    mp.spawn(twice, args=(free_port(),), nprocs=1)


LAUNCHED = """
import os, ferrotorch as torch, ferrotorch.distributed as dist
dist.init_process_group("gloo")
x = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(x)
open(os.path.join(os.environ["OUT"], os.environ["RANK"]), "w").write(
    f"{x.item()} {os.environ['LOCAL_RANK']} {os.environ['WORLD_SIZE']} {os.environ['OMP_NUM_THREADS']} "
    f"{dist.is_torchelastic_launched()}")
if os.environ.get("FAIL_RANK") == os.environ["RANK"]:
    raise SystemExit(3)
dist.barrier()
"""


def test_the_torchrun_launcher(tmp_path):
    import subprocess
    import sys

    script = tmp_path / "train.py"
    script.write_text(LAUNCHED)
    env = dict(os.environ, OUT=str(tmp_path))
    env.pop("OMP_NUM_THREADS", None)
    r = subprocess.run([sys.executable, "-m", "ferrotorch.distributed.run", "--standalone",
                        "--nproc-per-node", "3", str(script)], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    for rank in range(3):
        assert (tmp_path / str(rank)).read_text() == f"6.0 {rank} 3 1 True"
    # a failing worker stops the others: the launcher exits with its code, naming it
    env["FAIL_RANK"] = "1"
    r = subprocess.run([sys.executable, "-m", "ferrotorch.distributed.run", "--standalone",
                        "--nproc-per-node", "2", str(script)], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode != 0 and "local rank 1 (pid" in r.stderr and "exited with code 3" in r.stderr


def desync(rank, port, out_dir):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    try:
        if rank == 0:
            dist.all_reduce(torch.ones(3))
        else:
            dist.broadcast(torch.ones(5, dtype=torch.int64), src=1)
    except RuntimeError as e:
        msg = str(e)
    with open(os.path.join(out_dir, f"{rank}.txt"), "w") as f:
        f.write(msg)


def test_desynchronised_ranks_fail_at_once_naming_both_calls(tmp_path):
    mp.spawn(desync, args=(free_port(), str(tmp_path)), nprocs=2)
    for r in range(2):
        msg = (tmp_path / f"{r}.txt").read_text()
        assert "rank 0 calls all_reduce #0 of a torch.float32 tensor of 3 elements, SUM" in msg
        assert "rank 1 calls broadcast #0 of a torch.int64 tensor of 5 elements, root 1" in msg


def dies(rank, port, q):
    import signal

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    x = torch.ones(1000)
    dist.all_reduce(x)
    if rank == 1:
        os.kill(os.getpid(), signal.SIGKILL)  # kill -9 mid-training
    import time

    t = time.monotonic()
    try:
        for _ in range(3):
            dist.all_reduce(x)
        q.put(("no error", time.monotonic() - t))
    except RuntimeError as e:
        q.put((str(e), time.monotonic() - t))


def test_a_killed_rank_fails_the_others_within_seconds():
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    q = ctx.Queue()
    port = free_port()
    ps = [ctx.Process(target=dies, args=(r, port, q)) for r in range(2)]
    for p in ps:
        p.start()
    msg, secs = q.get(timeout=60)
    for p in ps:
        p.join(timeout=30)
    assert [p.exitcode for p in ps] == [0, -9]
    assert secs < 10 and "gloo" in msg and ("Connection" in msg or "closed" in msg), (msg, secs)


def hangs(rank, port, q):
    import time

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2,
                            timeout=datetime.timedelta(seconds=2))
    x = torch.ones(10)
    dist.all_reduce(x)
    if rank == 1:
        time.sleep(8)  # alive, but never calls the next collective
        return
    t = time.monotonic()
    try:
        dist.all_reduce(x)
        q.put(("no error", time.monotonic() - t))
    except RuntimeError as e:
        q.put((str(e), time.monotonic() - t))


def test_a_hung_rank_fails_the_others_after_the_timeout():
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    q = ctx.Queue()
    port = free_port()
    ps = [ctx.Process(target=hangs, args=(r, port, q)) for r in range(2)]
    for p in ps:
        p.start()
    msg, secs = q.get(timeout=60)
    for p in ps:
        p.join(timeout=30)
    # init_process_group's timeout bounds every collective (torch's default: 30 minutes)
    assert 1.5 < secs < 6 and "gloo" in msg and "imed out" in msg, (msg, secs)

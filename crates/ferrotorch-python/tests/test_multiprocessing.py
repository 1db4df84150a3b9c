"""Issue 23: shared memory, ferrotorch.multiprocessing and DataLoader worker
processes. Expected values are analytic (arange data, writes made on the
other side) and torch's documented messages."""

import os
import pickle
from multiprocessing.reduction import ForkingPickler
import signal
import time

import pytest

import ferrotorch as torch
import ferrotorch.multiprocessing as mp
from ferrotorch.utils.data import DataLoader, TensorDataset

import mp_helpers as h

METHODS = ["fork", "spawn", "forkserver"]


def test_share_memory_is_in_place_for_views():
    a = torch.arange(12.0).view(3, 4)
    v = a.t()[1:3]
    p0 = a.data_ptr()
    assert not a.is_shared()
    assert a.share_memory_() is a
    assert a.is_shared() and v.is_shared() and a.untyped_storage().is_shared()
    assert a.data_ptr() != p0
    assert v.tolist() == [[1.0, 5.0, 9.0], [2.0, 6.0, 10.0]]
    v.fill_(-1.0)
    assert a[0].tolist() == [0.0, -1.0, -1.0, 3.0]


def test_share_memory_keeps_a_numpy_view_readable():
    np = pytest.importorskip("numpy")
    a = torch.arange(1000.0)
    n = a.numpy()
    a.share_memory_()
    a.fill_(5.0)
    # the array viewed the old buffer: still valid, values as of the move
    assert float(np.asarray(n)[999]) == 999.0


def test_untyped_storage_descriptors_round_trip():
    a = torch.arange(8.0)
    fd, nbytes, offset = a.untyped_storage()._share_fd_cpu_()
    assert nbytes == 32 and offset % 64 == 0
    s = torch.UntypedStorage._new_shared_fd_cpu(fd, nbytes, offset)
    assert s.nbytes() == 32 and s.is_shared()
    with pytest.raises(RuntimeError, match="does not fit"):
        type(s)._new_shared_fd_cpu(fd, 1 << 40, 0)


@pytest.mark.parametrize("method", METHODS)
def test_a_queue_sends_a_handle_and_both_sides_see_writes(method):
    ctx = mp.get_context(method)
    q, r = ctx.Queue(), ctx.Queue()
    t = torch.arange(6.0).view(2, 3).t()
    p = ctx.Process(target=h.add_one_and_answer, args=(q, r))
    p.start()
    q.put(t)
    got = r.get(timeout=60)
    p.join(60)
    assert p.exitcode == 0
    assert t.is_shared()
    assert t.tolist() == [[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]]  # the child's add_
    assert got.tolist() == [42.0] * 3 and got.is_shared()


def test_a_parameter_arrives_as_a_parameter_and_shares_memory():
    ctx = mp.get_context("spawn")
    q, r = ctx.Queue(), ctx.Queue()
    w = torch.nn.Parameter(torch.ones(4))
    p = ctx.Process(target=h.echo_param, args=(q, r))
    p.start()
    q.put(w)
    assert r.get(timeout=60) == ("Parameter", True, True)
    assert r.get(timeout=60) == "done"
    p.join(60)
    assert w.tolist() == [2.0] * 4


def test_a_result_outlives_the_process_that_sent_it():
    # Python's DupFd keeps the descriptor in the sender: lost when it exits
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=h.put_and_exit, args=(q,))
    p.start()
    p.join(60)
    assert p.exitcode == 0
    assert q.get(timeout=60).tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]


def test_pool_pipe_and_simple_queue():
    ctx = mp.get_context("fork")
    with ctx.Pool(2) as pool:
        outs = pool.map(h.square, [torch.full((2,), float(i)) for i in range(4)])
    assert [o.tolist() for o in outs] == [[0.0, 0.0], [1.0, 1.0], [4.0, 4.0], [9.0, 9.0]]
    assert all(o.is_shared() for o in outs)
    a, b = ctx.Pipe()
    x = torch.zeros(3)
    a.send(x)
    y = b.recv()
    y.add_(7)
    assert x.tolist() == [7.0] * 3
    sq = ctx.SimpleQueue()
    sq.put(x)
    assert sq.get().data_ptr() == x.data_ptr()  # same process: the same mapping


def test_a_non_leaf_that_requires_grad_is_refused():
    x = torch.ones(2, requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError, match="Cowardly refusing to serialize non-leaf tensor"):
        ForkingPickler.dumps(y)
    leaf = pickle.loads(ForkingPickler.dumps(x))
    assert leaf.requires_grad and leaf.is_leaf


def test_sharing_strategies():
    assert mp.get_sharing_strategy() == "file_descriptor"
    assert mp.get_all_sharing_strategies() == {"file_descriptor"}
    mp.set_sharing_strategy("file_descriptor")
    with pytest.raises(ValueError, match="file_descriptor"):
        mp.set_sharing_strategy("file_system")


def test_spawn_raises_a_childs_error_and_its_signal():
    with pytest.raises(mp.ProcessRaisedException, match="child 1 failed on purpose"):
        mp.spawn(h.raise_in_child, nprocs=2)
    with pytest.raises(mp.ProcessExitedException, match="SIGKILL") as e:
        mp.spawn(h.kill_self, nprocs=2)
    assert e.value.exit_code == -signal.SIGKILL


def test_hostile_shared_descriptions_are_errors():
    C = torch._C
    r, w = os.pipe()
    try:
        with pytest.raises(RuntimeError, match="not a shared memory file"):
            C._tensor_from_shared(r, ("float32", [2], [1], 0, 0, 8, False))
    finally:
        os.close(r)
        os.close(w)
    src = torch.arange(4.0)  # owns the descriptor
    fd, meta = C._share_tensor(src)
    bad = list(meta)
    bad[5] = 1 << 40  # storage bytes
    with pytest.raises(RuntimeError, match="does not fit"):
        C._tensor_from_shared(fd, tuple(bad))
    bad = list(meta)
    bad[1] = [1 << 30]  # sizes past the storage
    with pytest.raises(RuntimeError, match="out of bounds"):
        C._tensor_from_shared(fd, tuple(bad))
    bad = list(meta)
    bad[0] = "complex1024"
    with pytest.raises(ValueError, match="dtype"):
        C._tensor_from_shared(fd, tuple(bad))
    with pytest.raises(OSError):
        C._tensor_from_shared(-1, meta)


def test_a_forked_child_runs_parallel_ops_and_draws_after_the_parent_did():
    big = torch.ones(1 << 20)
    assert float((big * big).sum()) == float(1 << 20)  # the parent's pool runs
    torch.rand(3)
    ctx = mp.get_context("fork")
    r = ctx.Queue()
    p = ctx.Process(target=h.parallel_and_random, args=(r,))
    p.start()
    assert r.get(timeout=60) == (float(1 << 20), (3,))
    p.join(60)
    assert p.exitcode == 0


def test_module_state_crosses_as_shared_memory():
    m = torch.nn.Linear(3, 2)
    m.share_memory()
    assert all(p.is_shared() for p in m.parameters())
    sd = pickle.loads(ForkingPickler.dumps(m.state_dict()))
    sd["weight"].fill_(0.5)
    assert m.weight.tolist() == [[0.5] * 3] * 2


# ------------------------------------------------------------- DataLoader


def test_loader_workers_keep_order_and_are_processes():
    loader = DataLoader(h.Squares(), batch_size=4, num_workers=3)
    got, wids, pids = [], set(), set()
    for x, wid, pid in loader:
        got.append(x.reshape(-1).tolist())
        wids.update(wid.tolist())
        pids.update(pid.tolist())
        assert x.is_shared()  # collated into shared memory by the worker
    assert got == [[i * i for i in range(s, min(s + 4, 23))] for s in range(0, 23, 4)]
    assert wids == {0, 1, 2}
    assert len(pids) == 3 and os.getpid() not in pids
    from ferrotorch.utils.data import get_worker_info
    assert get_worker_info() is None


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_loader_with_other_start_methods(method):
    loader = DataLoader(h.Squares(9), batch_size=4, num_workers=2, multiprocessing_context=method)
    assert [x.reshape(-1).tolist() for x, _, _ in loader] == [[0, 1, 4, 9], [16, 25, 36, 49], [64]]


def test_worker_init_fn_runs_in_every_worker():
    vals = [v for b in DataLoader(h.InitSeen(), batch_size=1, num_workers=2,
                                  worker_init_fn=h.record_init) for v in b.tolist()]
    assert sorted(set(vals)) == [0, 1]
    assert "FT_TEST_WORKER_INIT" not in os.environ


def test_worker_errors_are_raised_with_the_workers_traceback():
    with pytest.raises(KeyError, match="Caught KeyError in DataLoader worker process") as e:
        list(DataLoader(h.Failing(), batch_size=2, num_workers=2))
    assert "Original Traceback" in str(e.value) and "mp_helpers.py" in str(e.value)
    with pytest.raises(ValueError, match="init failed"):
        list(DataLoader(h.Failing(), batch_size=2, num_workers=2, worker_init_fn=h.init_fails))
    got = [b.tolist() for b in DataLoader(h.Failing(), batch_size=2, num_workers=3, sampler=range(5))]
    assert got == [[[0.0], [1.0]], [[2.0], [3.0]], [[4.0]]]


def test_a_worker_killed_by_a_signal_is_an_error_not_a_hang():
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match=r"DataLoader worker \(pid \d+\) is killed by signal: Killed"):
        list(DataLoader(h.Killing(at=6), batch_size=2, num_workers=2))
    assert time.monotonic() - t0 < 30


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is dead for our purposes
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def test_persistent_workers_serve_every_epoch():
    loader = DataLoader(h.Squares(8), batch_size=2, num_workers=2, persistent_workers=True)
    pids = []
    for _ in range(3):
        epoch = [(x.reshape(-1).tolist(), p.tolist()) for x, _, p in loader]
        assert [e[0] for e in epoch] == [[0, 1], [4, 9], [16, 25], [36, 49]]
        pids.append({q for _, ps in epoch for q in ps})
    assert pids[0] == pids[1] == pids[2]
    # an epoch left half-way: the next one starts clean
    it = iter(loader)
    next(it)
    assert [x.reshape(-1).tolist() for x, _, _ in loader][0] == [0, 1]
    workers = list(pids[0])
    del loader, it
    import gc

    gc.collect()
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(p) for p in workers)


def test_leaving_an_epoch_early_and_iterating_twice_shut_workers_down():
    loader = DataLoader(h.Squares(40), batch_size=2, num_workers=2)
    seen = set()
    for _ in range(2):
        for x, _, p in loader:
            seen.update(p.tolist())
    it = iter(loader)
    _, _, p = next(it)
    seen.update(p.tolist())
    del it  # mid-epoch
    deadline = time.monotonic() + 10
    while any(_alive(q) for q in seen) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(q) for q in seen)


def test_shared_memory_leaves_nothing_in_dev_shm():
    before = set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()
    x = torch.randn(64, 3, 8, 8)
    for _ in DataLoader(TensorDataset(x, torch.arange(64)), batch_size=16, num_workers=2):
        pass
    torch.zeros(1000).share_memory_()
    after = set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()
    assert not {f for f in after - before if "ferrotorch" in f or "torch" in f}


def _package_path():
    """Where this ferrotorch package lies (other tests put bench/ on
    sys.path, whose scripts must not shadow the standard library)."""
    return os.path.dirname(os.path.dirname(os.path.abspath(torch.__file__)))


SMALL_SHM = r"""
import sys
import ferrotorch as torch
import ferrotorch.multiprocessing as mp

def child(conn):
    ts = conn.recv()
    for t in ts:
        t.add_(1)
    conn.send(sum(float(t[0]) for t in ts))

if __name__ == "__main__":
    # 256 MB of shared tensors: four times a 64 MB /dev/shm
    ts = [torch.zeros(16 << 20) for _ in range(4)]
    for t in ts:
        t.share_memory_()
    a, b = mp.get_context("fork").Pipe()
    p = mp.get_context("fork").Process(target=child, args=(b,))
    p.start()
    a.send(ts)
    assert a.recv() == 4.0
    p.join()
    assert all(float(t[-1]) == 1.0 for t in ts)
    if sys.argv[1] == "queue":  # Python's Queue needs /dev/shm for its semaphores
        q = mp.get_context("fork").Queue()
        q.put(ts[0])
        assert q.get().data_ptr() == ts[0].data_ptr()
    print("ok")
"""


@pytest.mark.parametrize("shm", ["64m", "none"])
def test_shared_tensors_need_no_room_in_dev_shm(shm, tmp_path):
    import shutil
    import subprocess
    import sys

    if not shutil.which("unshare"):
        pytest.skip("unshare is not installed")
    script = tmp_path / "small_shm.py"
    script.write_text(SMALL_SHM)
    # a private mount namespace: /dev/shm of 64 MB, or an empty read-only one
    opts = "size=64m" if shm == "64m" else "size=4k,ro"
    env = dict(os.environ, PYTHONPATH=_package_path())
    cmd = (f"mount -t tmpfs -o {opts} tmpfs /dev/shm && exec {sys.executable} {script} "
           f"{'queue' if shm == '64m' else 'pipe'}")
    r = subprocess.run(["unshare", "-m", "sh", "-c", cmd], capture_output=True, text=True,
                       env=env, timeout=120)
    if r.returncode != 0 and "Traceback" not in r.stderr:
        # unshare or mount refused before Python ran (no CAP_SYS_ADMIN here)
        pytest.skip(f"no private mount namespace with its own /dev/shm here: {r.stderr.strip()}")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"


def test_hogwild_example_trains_one_shared_model():
    import subprocess
    import sys

    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")
    env = dict(os.environ, PYTHONPATH=_package_path())
    r = subprocess.run([sys.executable, os.path.join(root, "examples", "python", "hogwild.py"),
                        "--processes", "2", "--steps", "150"],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    words = r.stdout.split()
    before, after = float(words[3].rstrip(",")), float(words[5])
    # only the children trained: the parent's model learnt through shared memory
    assert after < 0.5 * before, r.stdout

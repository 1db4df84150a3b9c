#!/usr/bin/env python3
"""Issue 51's figures, ferrotorch and torch.distributed side by side in
one run (alternating rounds; medians over the rounds of each round's
median), 2 ranks of 1 intra-op thread each, started with mp.spawn:

- all_reduce of 25 MB of float32 and of 4 bytes: torch's gloo backend,
  ferrotorch's gloo backend, and ferrotorch's mpi backend (under mpirun);
- a DDP training step of the W8 MLP (784-512-512-10, SGD momentum 0.9,
  batch 128 a rank), torch DDP on gloo vs ferrotorch DDP on gloo;
- scaling of W8 at a global batch of 256: one rank on the whole batch vs
  two ranks on 128 each (efficiency = T1 / (2·T2)), and how much of the
  gradients' all-reduce is hidden under backward
  (1 − (T_ddp − T_local) / T_allreduce, T_local the same step under
  ``no_sync()``, T_allreduce one all-reduce of every gradient).

    cargo build --release -p ferrotorch-python
    python3 bench/distributed.py --torch-python /path/to/venv-with-torch/bin/python [--rounds 3]

The ferrotorch side runs the package sources with the release build of
the extension (in a temporary copy of the package).
"""
import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

WORKER = r'''
import json, os, sys, time, statistics
lib, mode = sys.argv[1], sys.argv[2]
if lib == "torch":
    import torch, torch.distributed as dist, torch.multiprocessing as mp
    from torch import nn
    from torch.nn.parallel import DistributedDataParallel as DDP
else:
    import ferrotorch as torch, ferrotorch.distributed as dist, ferrotorch.multiprocessing as mp
    from ferrotorch import nn
    from ferrotorch.nn.parallel import DistributedDataParallel as DDP


def med(f, reps, warm=3):
    for _ in range(warm):
        f()
    ts = []
    for _ in range(reps):
        t = time.perf_counter(); f(); ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def w8():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))


def stepper(net, batch):
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    x, y = torch.randn(batch, 784), torch.randint(0, 10, (batch,))
    def step():
        loss = nn.functional.cross_entropy(net(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return step


def body(rank, world, out):
    res = {}
    big = torch.ones(25 * 1024 * 1024 // 4)
    res["ar25"] = med(lambda: dist.all_reduce(big), 10)
    tiny = torch.ones(1)
    res["ar4"] = med(lambda: dist.all_reduce(tiny), 300, warm=20)
    if mode == "full":
        ddp = DDP(w8())
        res["ddp"] = med(stepper(ddp, 128), 30)
        step = stepper(ddp, 128)
        def local():
            with ddp.no_sync():
                step()
        res["local"] = med(local, 30)
        grads = torch.ones(sum(p.numel() for p in ddp.parameters()))
        res["ar_grads"] = med(lambda: dist.all_reduce(grads), 30)
        if rank == 0:
            with open(out, "w") as f:
                json.dump(res, f)
    elif rank == 0:
        with open(out, "w") as f:
            json.dump(res, f)


def spawned(rank, world, port, out):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world))
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    body(rank, world, out)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    out = sys.argv[3]
    if mode == "single":
        torch.set_num_threads(1)
        with open(out, "w") as f:
            json.dump({"t1": med(stepper(w8(), 256), 30)}, f)
    elif lib == "mpi":
        torch.set_num_threads(1)
        dist.init_process_group("mpi")
        body(dist.get_rank(), dist.get_world_size(), out)
        dist.barrier()
    else:
        import socket
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        mp.spawn(spawned, args=(2, port, out), nprocs=2)
'''

MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_btl_vader_single_copy_mechanism": "none"}


def package():
    """A copy of the package sources with the release extension."""
    so = os.path.join(ROOT, "target", "release", "lib_C.so")
    if not os.path.exists(so):
        sys.exit("build the release extension first: cargo build --release -p ferrotorch-python")
    tmp = tempfile.mkdtemp()
    shutil.copytree(os.path.join(ROOT, "crates", "ferrotorch-python", "python", "ferrotorch"),
                    os.path.join(tmp, "ferrotorch"), ignore=shutil.ignore_patterns("_C.so", "__pycache__"))
    shutil.copy(so, os.path.join(tmp, "ferrotorch", "_C.so"))
    return tmp


def run(cmd, env, out):
    subprocess.run(cmd, env=env, check=True, capture_output=True, timeout=600)
    with open(out) as f:
        return json.load(f)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--torch-python", default=os.environ.get("TORCH_PYTHON", "python3"))
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    pkg = package()
    script = os.path.join(pkg, "worker.py")
    with open(script, "w") as f:
        f.write(WORKER)
    out = os.path.join(pkg, "out.json")
    ft_env = dict(os.environ, PYTHONPATH=pkg)
    ft_env.pop("OMP_NUM_THREADS", None)
    rows = {}

    def add(key, v):
        rows.setdefault(key, []).append(v)
    for _ in range(args.rounds):
        for lib, py, env in (("torch", args.torch_python, dict(os.environ)), ("ferrotorch", args.torch_python, ft_env)):
            r = run([py, script, lib, "full", out], env, out)
            for k, v in r.items():
                add((lib, k), v)
            add((lib, "t1"), run([py, script, lib, "single", out], env, out)["t1"])
        if shutil.which("mpirun"):
            r = run(["mpirun", "-np", "2", args.torch_python, script, "mpi", "collectives", out],
                    dict(ft_env, **MPI_ENV), out)
            for k, v in r.items():
                add(("mpi", k), v)
    m = {k: statistics.median(v) for k, v in rows.items()}
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    print(f"CPU: {cpu}, {os.cpu_count()} cores; 2 ranks of 1 thread; medians of {args.rounds} rounds")
    print("| workload | torch (gloo) | ferrotorch (gloo) | ratio | ferrotorch (mpi) |")
    print("|---|---|---|---|---|")
    for key, name, unit, scale in (("ar25", "all_reduce 25 MB fp32", "ms", 1e3),
                                   ("ar4", "all_reduce 4 B", "µs", 1e6),
                                   ("ddp", "DDP step, W8 MLP b128/rank", "ms", 1e3)):
        t, f = m[("torch", key)], m[("ferrotorch", key)]
        mpi = m.get(("mpi", key))
        print(f"| {name} | {t * scale:.2f} {unit} | {f * scale:.2f} {unit} | {t / f:.2f}× |"
              f" {'' if mpi is None else f'{mpi * scale:.2f} {unit}'} |")
    for lib in ("torch", "ferrotorch"):
        t1, t2 = m[(lib, "t1")], m[(lib, "ddp")]
        hidden = 1 - (t2 - m[(lib, "local")]) / m[(lib, "ar_grads")]
        print(f"{lib}: W8 global batch 256, 1 rank {t1 * 1e3:.2f} ms → 2 ranks {t2 * 1e3:.2f} ms: "
              f"scaling efficiency {t1 / (2 * t2) * 100:.0f}%, all-reduce hidden {hidden * 100:.0f}% "
              f"(local step {m[(lib, 'local')] * 1e3:.2f} ms, gradients' all-reduce {m[(lib, 'ar_grads')] * 1e3:.2f} ms)")
    shutil.rmtree(pkg, ignore_errors=True)


if __name__ == "__main__":
    main()

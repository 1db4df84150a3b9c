#!/usr/bin/env python3
"""Issue 23's figures, ferrotorch and PyTorch side by side in one run
(alternating rounds; medians of the rounds):

- DataLoader throughput: 4 workers, batches of 256x3x64x64 float32 from a
  TensorDataset of 4096 samples, shuffled, batches per second over three
  epochs after a warm-up epoch (workers start each epoch, as by default);
- a 64 MB tensor sent through a Queue to another process (fork), from
  ``put`` until the receiver's answer arrives: a fresh tensor (moved into
  shared memory on the way) and the same tensor again (already shared);
- total PSS (main process and its 4 workers, /proc/PID/smaps_rollup) while
  a DataLoader runs over a 2 GB in-memory TensorDataset, as a multiple of
  the dataset's size.

    cargo build --release -p ferrotorch-python
    python3 bench/processes.py --torch-python /path/to/venv-with-torch/bin/python [--rounds 3]

The ferrotorch side runs the package sources with the release build of the
extension (placed in a temporary copy of the package); each workload runs
in a fresh process per library and round.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

WORKLOAD = r'''
import os, sys, time, statistics
lib = sys.argv[1]
which = sys.argv[2]
if lib == "torch":
    import torch
    import torch.multiprocessing as mp
else:
    import ferrotorch as torch
    import ferrotorch.multiprocessing as mp
from importlib import import_module
data = import_module(("torch" if lib == "torch" else "ferrotorch") + ".utils.data")
torch.set_num_threads(2)


def pss(pid):
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return 0
    return 0


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


def echo(q, r):
    while True:
        t = q.get()
        if t is None:
            return
        r.put(int(t.shape[0]))


if __name__ == "__main__":
    if which == "loader":
        x = torch.randn(4096, 3, 64, 64)
        ds = data.TensorDataset(x, torch.arange(4096))
        dl = data.DataLoader(ds, batch_size=256, num_workers=4, shuffle=True)
        for _ in dl:
            pass
        t0 = time.perf_counter()
        n = 0
        for _ in range(3):
            for xb, yb in dl:
                n += 1
        print(n / (time.perf_counter() - t0))
    elif which == "queue":
        ctx = mp.get_context("fork")
        q, r = ctx.Queue(), ctx.Queue()
        p = ctx.Process(target=echo, args=(q, r), daemon=True)
        p.start()
        fresh, again = [], []
        for _ in range(7):
            t = torch.randn(16 << 20)
            s = time.perf_counter()
            q.put(t)
            r.get()
            fresh.append(time.perf_counter() - s)
            s = time.perf_counter()
            q.put(t)
            r.get()
            again.append(time.perf_counter() - s)
        q.put(None)
        p.join()
        print(statistics.median(fresh) * 1e3, statistics.median(again) * 1e3)
    elif which == "pss":
        x = torch.ones(1 << 19, 1024)  # 2 GiB of float32
        size = x.numel() * 4
        ds = data.TensorDataset(x)
        dl = data.DataLoader(ds, batch_size=256, num_workers=4, shuffle=True)
        peak = 0
        for i, (xb,) in enumerate(dl):
            if i % 50 == 25:
                me = os.getpid()
                peak = max(peak, pss(me) + sum(pss(c) for c in children(me)))
            if i == 400:
                break
        print(peak / size)
'''


def run(python, lib, which, pythonpath):
    env = dict(os.environ, PYTHONPATH=pythonpath)
    r = subprocess.run([python, "-c", WORKLOAD, lib, which], capture_output=True, text=True,
                       env=env, timeout=900)
    if r.returncode != 0:
        raise SystemExit(f"{lib} {which} failed:\n{r.stderr[-3000:]}")
    return [float(v) for v in r.stdout.split()]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--torch-python", default=os.environ.get("TORCH_PYTHON"))
    ap.add_argument("--python", default=sys.executable, help="the Python for ferrotorch")
    ap.add_argument("--only", choices=["loader", "queue", "pss"])
    args = ap.parse_args()
    ext = os.path.join(ROOT, "target", "release", "lib_C.so")
    if not os.path.exists(ext):
        raise SystemExit("build the extension first: cargo build --release -p ferrotorch-python")
    with tempfile.TemporaryDirectory() as tmp:
        pkg = os.path.join(tmp, "ferrotorch")
        shutil.copytree(os.path.join(ROOT, "crates", "ferrotorch-python", "python", "ferrotorch"),
                        pkg, ignore=shutil.ignore_patterns("_C*.so", "__pycache__"))
        shutil.copy(ext, os.path.join(pkg, "_C.so"))
        rows = {}
        for i in range(args.rounds):
            for which in (["loader", "queue", "pss"] if args.only is None else [args.only]):
                ours = run(args.python, "ferrotorch", which, tmp)
                theirs = run(args.torch_python, "torch", which, "") if args.torch_python else None
                rows.setdefault(which, []).append((ours, theirs))
                print(f"round {i + 1} {which}: ferrotorch {ours} PyTorch {theirs}", flush=True)
    med = statistics.median
    if "loader" in rows:
        ours = med(o[0] for o, _ in rows["loader"])
        line = f"DataLoader 4 workers, 256x3x64x64: ferrotorch {ours:.1f} batches/s"
        if args.torch_python:
            theirs = med(t[0] for _, t in rows["loader"])
            ratio = med(o[0] / t[0] for o, t in rows["loader"])
            line += f", PyTorch {theirs:.1f} batches/s, ratio {ratio:.2f} (> 1 favours ferrotorch)"
        print(line)
    if "queue" in rows:
        for k, what in enumerate(["fresh", "already shared"]):
            ours = med(o[k] for o, _ in rows["queue"])
            line = f"64 MB through a Queue ({what}): ferrotorch {ours:.2f} ms"
            if args.torch_python:
                theirs = med(t[k] for _, t in rows["queue"])
                line += f", PyTorch {theirs:.2f} ms, ratio {theirs / ours:.2f}"
            print(line)
    if "pss" in rows:
        ours = med(o[0] for o, _ in rows["pss"])
        line = f"total PSS over a 2 GiB dataset, 4 workers: ferrotorch {ours:.2f}x the dataset"
        if args.torch_python:
            line += f", PyTorch {med(t[0] for _, t in rows['pss']):.2f}x"
        print(line)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Issue 19's JIT figures side by side with PyTorch (TorchScript), each
library in its own child process, alternating for several rounds:

- interpreter overhead: a traced function of 100 tiny adds on a
  1-element tensor, per call (torch: the traced TorchScript function);
- trace + save + load of an MLP (torch: jit.trace + freeze + save + load);
- a traced MLP's forward at batch 1 against the eager module.

    python bench/jit.py [--rounds 5]

Needs a Python with both packages (ferrotorch on PYTHONPATH, a release
build)."""
import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import time


def timeit(f, n):
    for _ in range(max(3, n // 10)):
        f()
    ts = []
    for _ in range(n):
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts) * 1e6


def child(lib_name):
    import importlib
    import warnings

    warnings.simplefilter("ignore")
    torch = importlib.import_module(lib_name)
    torch.set_num_threads(1)
    torch.manual_seed(0)

    def adds(x):
        for _ in range(100):
            x = x + 1
        return x

    one = torch.ones(1)
    traced = torch.jit.trace(adds, one)
    net = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10)).eval()
    x1 = torch.randn(1, 64)

    def round_trip():
        m = torch.jit.trace(net, x1)
        if lib_name == "torch":
            m = torch.jit.freeze(m)
        buf = io.BytesIO()
        torch.jit.save(m, buf)
        buf.seek(0)
        return torch.jit.load(buf)

    tm = torch.jit.trace(net, x1)
    with torch.no_grad():
        out = {
            "adds_us": timeit(lambda: traced(one), 2000),
            "eager_adds_us": timeit(lambda: adds(one), 2000),
            "round_trip_us": timeit(round_trip, 200),
            "traced_mlp_b1_us": timeit(lambda: tm(x1), 2000),
            "eager_mlp_b1_us": timeit(lambda: net(x1), 2000),
        }
    print(json.dumps(out))


def run(lib):
    p = subprocess.run([sys.executable, __file__, "--child", lib], check=True,
                       capture_output=True, text=True)
    return json.loads(p.stdout.strip().splitlines()[-1])


def main():
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2])
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    rows = {}
    for _ in range(args.rounds):
        for lib in ("torch", "ferrotorch"):
            for k, v in run(lib).items():
                rows.setdefault(k, {}).setdefault(lib, []).append(v)
    print(f"{'figure (µs, median)':24s} {'torch':>10s} {'ferrotorch':>11s} {'torch/ft':>9s}")
    for k, r in rows.items():
        t, f = statistics.median(r["torch"]), statistics.median(r["ferrotorch"])
        print(f"{k:24s} {t:10.1f} {f:11.1f} {t / f:8.2f}x")


if __name__ == "__main__":
    main()

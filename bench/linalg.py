#!/usr/bin/env python3
"""Issue 25's linear-algebra rows, ferrotorch and PyTorch side by side
(each library in its own process, alternating rounds, one thread each;
medians of the per-round medians):

- ``torch.linalg.solve`` of a 1024×1024 system with one right-hand side
  (float64, well conditioned);
- ``torch.linalg.svd(A, full_matrices=False)`` of a 512×512 matrix;
- ``torch.linalg.eigh`` and ``torch.linalg.inv`` of 512×512 matrices.

    cargo build --release -p ferrotorch-python
    python3 bench/linalg.py --torch-python /path/to/venv-with-torch/bin/python [--rounds 3]
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
import sys, time, statistics
import numpy as np
lib = sys.argv[1]
torch = __import__(lib)
torch.set_num_threads(1)
rng = np.random.default_rng(0)

def timeit(f, reps=5):
    f()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts) * 1e3

a1024 = rng.standard_normal((1024, 1024)) + 1024 * np.eye(1024)
b1024 = rng.standard_normal((1024, 1))
a512 = rng.standard_normal((512, 512))
s512 = a512 + a512.T
A, B = torch.from_numpy(a1024), torch.from_numpy(b1024)
M, S = torch.from_numpy(a512), torch.from_numpy(s512)
out = {
    "solve1024": timeit(lambda: torch.linalg.solve(A, B)),
    "svd512": timeit(lambda: torch.linalg.svd(M, full_matrices=False), reps=3),
    "eigh512": timeit(lambda: torch.linalg.eigh(S), reps=3),
    "inv512": timeit(lambda: torch.linalg.inv(M)),
}
print(" ".join(f"{k}={v:.3f}" for k, v in out.items()))
'''


def run(python, lib, pythonpath):
    env = dict(os.environ, PYTHONPATH=pythonpath, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
               RAYON_NUM_THREADS="1")
    r = subprocess.run([python, "-c", WORKLOAD, lib], capture_output=True, text=True, env=env,
                       timeout=900)
    if r.returncode != 0:
        raise SystemExit(f"{lib} failed:\n{r.stderr[-3000:]}")
    return {k: float(v) for k, v in (w.split("=") for w in r.stdout.split())}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--torch-python", default=os.environ.get("TORCH_PYTHON"))
    ap.add_argument("--python", default=sys.executable)
    args = ap.parse_args()
    ext = os.path.join(ROOT, "target", "release", "lib_C.so")
    with tempfile.TemporaryDirectory() as tmp:
        pkg = os.path.join(tmp, "ferrotorch")
        shutil.copytree(os.path.join(ROOT, "crates", "ferrotorch-python", "python", "ferrotorch"),
                        pkg, ignore=shutil.ignore_patterns("_C*.so", "__pycache__"))
        shutil.copy(ext, os.path.join(pkg, "_C.so"))
        ours, theirs = [], []
        for i in range(args.rounds):
            ours.append(run(args.python, "ferrotorch", tmp))
            if args.torch_python:
                theirs.append(run(args.torch_python, "torch", ""))
            print(f"round {i + 1}: ferrotorch {ours[-1]} PyTorch {theirs[-1] if theirs else '-'}",
                  flush=True)
    med = statistics.median
    for k in ours[0]:
        line = f"{k}: ferrotorch {med(o[k] for o in ours):.2f} ms"
        if theirs:
            t = med(x[k] for x in theirs)
            line += f", PyTorch {t:.2f} ms, ferrotorch speed {t / med(o[k] for o in ours):.2f}x torch's"
        print(line)


if __name__ == "__main__":
    main()

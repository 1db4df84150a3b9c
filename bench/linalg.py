#!/usr/bin/env python3
"""Issue 25's linear-algebra rows, ferrotorch and PyTorch side by side
(each library in its own process, alternating rounds, one thread each;
medians of the per-round medians):

- ``torch.linalg.solve`` of a 1024×1024 system with one right-hand side
  (float64, well conditioned);
- ``torch.linalg.svd(A, full_matrices=False)`` of a 512×512 matrix;
- ``torch.linalg.eigh`` and ``torch.linalg.inv`` of 512×512 matrices;
- ``torch.fft.rfft`` of 2^20 float32 and float64 samples, ``torch.fft.fft``
  of 2^16 complex64 ones, and ``torch.stft`` of a 2^16-sample signal
  (n_fft 512, hop 128, Hann window).

    cargo build --release -p ferrotorch-python
    python3 bench/linalg.py --torch-python /path/to/venv-with-torch/bin/python [--rounds 3]
"""
import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _sidebyside  # noqa: E402

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
x20 = rng.standard_normal(1 << 20)
X32, X64 = torch.from_numpy(x20.astype(np.float32)), torch.from_numpy(x20)
Z16 = torch.from_numpy((rng.standard_normal(1 << 16) + 1j * rng.standard_normal(1 << 16)).astype(np.complex64))
sig = torch.from_numpy(rng.standard_normal(1 << 16).astype(np.float32))
win = torch.hann_window(512)
out.update({
    "rfft2^20_f32": timeit(lambda: torch.fft.rfft(X32), reps=7),
    "rfft2^20_f64": timeit(lambda: torch.fft.rfft(X64), reps=7),
    "fft2^16_c64": timeit(lambda: torch.fft.fft(Z16), reps=7),
    "stft2^16": timeit(lambda: torch.stft(sig, 512, hop_length=128, window=win, return_complex=True), reps=7),
})
print(" ".join(f"{k}={v:.3f}" for k, v in out.items()))
'''


ENV = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "RAYON_NUM_THREADS": "1"}


def run(python, lib, pythonpath):
    return _sidebyside.run(python, WORKLOAD, lib, pythonpath, ENV, timeout=900)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--torch-python", default=os.environ.get("TORCH_PYTHON"))
    ap.add_argument("--python", default=sys.executable)
    args = ap.parse_args()
    with _sidebyside.release_package() as tmp:
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

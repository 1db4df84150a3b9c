"""In-place element-wise ops on the W8 MLP's gradients (669,706 float32,
2.7 MB), side by side with torch, one intra-op thread, and the same ops
into a fresh tensor (Note [In-place loops vectorise]: the in-place loops
ran scalar until session 42). Each row is one call's median time.

    cargo build --release -p ferrotorch-python
    python bench/inplace.py [--rounds 5] [--torch-python PATH]

Needs torch (the reference) and the release build of the extension.
"""
import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _sidebyside  # noqa: E402

WORKLOAD = r"""
import importlib, statistics, sys, time
lib = sys.argv[1]
L = importlib.import_module(lib)
L.set_num_threads(1)
n = 669706
x, y, z = L.ones(n), L.full((n,), 2.0), L.full((n,), 0.5)
ops = {
    "div_": lambda: x.div_(2), "mul_": lambda: x.mul_(0.5), "add_": lambda: x.add_(y),
    "addcmul_": lambda: x.addcmul_(y, z, value=0.1), "relu_": lambda: x.relu_(),
    "div": lambda: x / 2, "add": lambda: x + y,
}
words = []
for name, f in ops.items():
    for _ in range(20):
        f()
    ts = []
    for _ in range(200):
        t = time.perf_counter(); f(); ts.append(time.perf_counter() - t)
    words.append(f"{name}={statistics.median(ts) * 1e3}")
print(" ".join(words))
"""

OPS = ["div_", "mul_", "add_", "addcmul_", "relu_", "div", "add"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--torch-python", default=os.environ.get("TORCH_PYTHON", sys.executable))
    a = ap.parse_args()
    got = {"torch": [], "ferrotorch": []}
    with _sidebyside.release_package() as pkg:
        for _ in range(a.rounds):  # alternating: one process per library and round
            for lib in got:
                got[lib].append(_sidebyside.run(a.torch_python, WORKLOAD, lib, pkg))
    med = statistics.median
    print(f"{'op on 2.7 MB (ms)':20s} {'torch':>8s} {'ferrotorch':>11s} {'ratio':>7s}  range")
    for op in OPS:
        t = [r[op] for r in got["torch"]]
        f = [r[op] for r in got["ferrotorch"]]
        ratios = [x / y for x, y in zip(t, f)]
        print(f"{op:20s} {med(t):8.3f} {med(f):11.3f} {med(ratios):6.2f}x  "
              f"{min(ratios):.2f}-{max(ratios):.2f}")


if __name__ == "__main__":
    main()

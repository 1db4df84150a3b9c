"""The activations with parameters (their rows, Note [Activation rows]),
forward and forward + backward, on 1,000 and 1,000,000 float32 elements,
side by side with torch, one intra-op thread. Each figure is one call's
median time; rounds alternate one process per library.

    cargo build --release -p ferrotorch-python
    python bench/activations.py [--rounds 5] [--torch-python PATH]
        [--ext LIB_C_SO] [--old-root CHECKOUT --old-ext LIB_C_SO]

``--old-root``/``--old-ext`` add an older build of ours (its package
sources and release extension) as a third column, for before/after.
Needs torch (the reference) and the release build of the extension.
"""
import argparse
import contextlib
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _sidebyside  # noqa: E402

WORKLOAD = r"""
import importlib, statistics, sys, time
lib = sys.argv[1]
L = importlib.import_module(lib)
F = L.nn.functional
L.set_num_threads(1)
acts = {
    "leaky_relu": lambda x: F.leaky_relu(x, 0.1), "hardtanh": F.hardtanh,
    "softplus": F.softplus, "mish": F.mish, "hardswish": F.hardswish,
    "hardsigmoid": F.hardsigmoid, "logsigmoid": F.logsigmoid, "elu": F.elu,
    "gelu": F.gelu,
}
words = []
for n, reps in ((1000, 400), (1000000, 12)):
    base = L.linspace(-8.0, 8.0, n)
    g = L.ones(n)
    for name, f in acts.items():
        x = base.clone()
        xg = base.clone().requires_grad_(True)
        def fwd():
            f(x)
        def both():
            f(xg).backward(g)
        for tag, fn in (("fwd", fwd), ("fwd+bwd", both)):
            for _ in range(3):
                fn()
            ts = []
            for _ in range(reps):
                t = time.perf_counter(); fn(); ts.append(time.perf_counter() - t)
            words.append(f"{name}/{tag}/{n}={statistics.median(ts) * 1e3}")
print(" ".join(words))
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--torch-python", default=os.environ.get("TORCH_PYTHON", sys.executable))
    ap.add_argument("--ext", default=None, help="our extension (default target/release/lib_C.so)")
    ap.add_argument("--old-root", default=None)
    ap.add_argument("--old-ext", default=None)
    a = ap.parse_args()
    libs = ["torch", "ferrotorch"] + (["old"] if a.old_root else [])
    got = {lib: [] for lib in libs}
    with contextlib.ExitStack() as stack:
        pkg = stack.enter_context(_sidebyside.release_package(ext=a.ext))
        old = stack.enter_context(_sidebyside.release_package(a.old_root, a.old_ext)) \
            if a.old_root else None
        for _ in range(a.rounds):
            for lib in libs:
                path, name = (old, "ferrotorch") if lib == "old" else (pkg, lib)
                got[lib].append(_sidebyside.run(a.torch_python, WORKLOAD, name, path))
    med = statistics.median
    head = f"{'ms per call':30s} {'torch':>8s} {'ferrotorch':>11s} {'torch/ours':>10s}"
    print(head + (f" {'old':>8s} {'old/new':>8s}" if old else ""))
    for key in got["torch"][0]:
        t = [r[key] for r in got["torch"]]
        f = [r[key] for r in got["ferrotorch"]]
        line = f"{key:30s} {med(t):8.4f} {med(f):11.4f} {med([x / y for x, y in zip(t, f)]):9.2f}x"
        if old:
            o = [r[key] for r in got["old"]]
            line += f" {med(o):8.4f} {med([x / y for x, y in zip(o, f)]):7.2f}x"
        print(line, flush=True)


if __name__ == "__main__":
    main()

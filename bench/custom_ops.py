#!/usr/bin/env python3
"""Issue 24's call-overhead figures, ferrotorch and PyTorch side by side
(each library in its own process, alternating rounds; medians):

- an eager call of a custom op with fourteen tensor inputs (the
  pytorch#177109 shape) whose kernel is native (ferrotorch: the Rust
  kernel of ``ft_test_ops::first_of_14``, registered with
  FERROTORCH_TEST_OPS=1), from Python;
- the same op with a Python kernel made by ``torch.library.custom_op``,
  and by ``Library.define`` + ``impl``, in both libraries.

    cargo build --release -p ferrotorch-python
    python3 bench/custom_ops.py --torch-python /path/to/venv-with-torch/bin/python [--rounds 3]
"""
import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _sidebyside  # noqa: E402

WORKLOAD = r'''
import sys, time, statistics
lib = sys.argv[1]
torch = __import__(lib)
from typing import List
Tensor = torch.Tensor
ns = "bench_" + lib

def timeit(f, n=20000, reps=5):
    for _ in range(1000):
        f()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        for _ in range(n):
            f()
        ts.append((time.perf_counter() - t) / n)
    return statistics.median(ts) * 1e6

args = [torch.ones(1) for _ in range(14)]
params = ", ".join(f"a{i}: Tensor" for i in range(14))
src = f"def first({params}) -> Tensor:\n    return a0.clone()\n"
g = {"Tensor": Tensor}
exec(src, g)
op = torch.library.custom_op(f"{ns}::first", g["first"], mutates_args=())
lib_ = torch.library.Library(ns + "_low", "DEF")
lib_.define("first(" + ", ".join(f"Tensor a{i}" for i in range(14)) + ") -> Tensor")
lib_.impl("first", lambda *a: a[0].clone(), "CPU")
low = getattr(torch.ops, ns + "_low").first
out = {"custom_op": timeit(lambda: op(*args)), "define_impl": timeit(lambda: low(*args))}
if lib == "ferrotorch":
    native = torch.ops.ft_test_ops.first_of_14
    out["native"] = timeit(lambda: native(*args))
print(" ".join(f"{k}={v:.3f}" for k, v in out.items()))
'''


ENV = {"FERROTORCH_TEST_OPS": "1"}


def run(python, lib, pythonpath):
    return _sidebyside.run(python, WORKLOAD, lib, pythonpath, ENV, timeout=600)


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
    print(f"native-kernel custom op, 14 tensors, from Python: ferrotorch "
          f"{med(o['native'] for o in ours):.2f} us")
    for k in ("custom_op", "define_impl"):
        line = f"Python-kernel custom op ({k}): ferrotorch {med(o[k] for o in ours):.2f} us"
        if theirs:
            t = med(x[k] for x in theirs)
            line += f", PyTorch {t:.2f} us, ratio {t / med(o[k] for o in ours):.2f}"
        print(line)


if __name__ == "__main__":
    main()

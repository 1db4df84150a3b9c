"""torch.jit.load + the first forward of a ResNet-18 that PyTorch traced
and saved (torch.jit.trace(torchvision.models.resnet18(), x).save(...)),
side by side with PyTorch in the same run (issue 50's speed table): each
process loads the file and runs one 1x3x224x224 forward, timed together
from the load's start; then a second forward.

    python bench/torchscript_load.py [--rounds 5]

Needs torch and torchvision (to write the file) and a release build
(target/release/lib_C.so).
"""
import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _sidebyside  # noqa: E402

WORKLOAD = r"""
import os, sys, time
lib, path = sys.argv[1], os.environ["FT_BENCH_TS"]
import importlib
L = importlib.import_module(lib)
x = L.ones(1, 3, 224, 224)
t = time.perf_counter()
m = L.jit.load(path)
with L.no_grad():
    m(x)
first = (time.perf_counter() - t) * 1e3
t = time.perf_counter()
with L.no_grad():
    m(x)
second = (time.perf_counter() - t) * 1e3
print(f"load_first_forward={first} second_forward={second}")
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    import warnings

    import torch
    import torchvision

    warnings.filterwarnings("ignore")
    path = os.path.join(tempfile.mkdtemp(), "resnet18_trace.pt")
    torch.manual_seed(0)
    m = torchvision.models.resnet18().eval()
    torch.jit.trace(m, torch.randn(1, 3, 224, 224)).save(path)
    with _sidebyside.release_package() as pkg:
        def time_one(lib, name):
            return _sidebyside.run(sys.executable, WORKLOAD, lib, pkg, env={"FT_BENCH_TS": path})[name]

        _sidebyside.alternate(["load_first_forward", "second_forward"], a.rounds, time_one,
                              "resnet18_trace.pt written by PyTorch (ms)")


if __name__ == "__main__":
    main()

"""Export ResNet-18 to ONNX, side by side with PyTorch in the same run
(issue 50's speed table): each process builds bench/jit.py's ResNet-18
(1x3x224x224 example) and times one ``torch.onnx.export`` to memory —
PyTorch's default exporter in 2.15 (``dynamo=True``, torch.export +
onnxscript) against ferrotorch's (trace + ONNX from the IR).

    python bench/onnx_export.py [--rounds 5]

Needs torch, onnx and onnxscript, and a release build
(target/release/lib_C.so).
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _sidebyside  # noqa: E402

WORKLOAD = r"""
import io, os, sys, time, warnings, logging
warnings.filterwarnings("ignore")
logging.disable(logging.WARNING)
lib = sys.argv[1]
sys.path.insert(0, os.environ["FT_BENCH_DIR"])
import importlib
L = importlib.import_module(lib)
from jit import resnet18
L.manual_seed(0)
net = resnet18(L.nn)
x = L.ones(1, 3, 224, 224)
import contextlib
buf = io.BytesIO()
t = time.perf_counter()
with contextlib.redirect_stdout(io.StringIO()):  # torch's exporter reports its steps there
    L.onnx.export(net, (x,), buf, input_names=["x"], output_names=["y"])
ms = (time.perf_counter() - t) * 1e3
print(f"export_resnet18={ms} bytes={len(buf.getvalue())}")
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    with _sidebyside.release_package() as pkg:
        def time_one(lib, name):
            return _sidebyside.run(sys.executable, WORKLOAD, lib, pkg, env={"FT_BENCH_DIR": here})[name]

        _sidebyside.alternate(["export_resnet18"], a.rounds, time_one, "ResNet-18 to ONNX (ms)")


if __name__ == "__main__":
    main()

"""ResNet-18's trace + passes + save + load (bench/jit.py's round trip),
each phase timed alone: what the round trip is made of.

    python bench/jit_phases.py ferrotorch   # or: torch

One thread, eval mode, 224x224, batch 1; medians of 5 (milliseconds).
PyTorch's passes are ``torch.jit.freeze``, ours
``optimize_for_inference``; both save into and load from a ``BytesIO``.
"""

import io
import statistics
import sys
import time
import warnings

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from jit import resnet18  # noqa: E402


def main(lib):
    import importlib

    warnings.simplefilter("ignore")
    torch = importlib.import_module(lib)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    net = resnet18(torch.nn)
    net.eval()
    x1 = torch.randn(1, 3, 224, 224)
    passes = torch.jit.freeze if lib == "torch" else torch.jit.optimize_for_inference
    t = {k: [] for k in ["forward", "trace", "passes", "save", "load"]}
    with torch.no_grad():
        for _ in range(5):
            t0 = time.perf_counter()
            net(x1)
            t1 = time.perf_counter()
            m = torch.jit.trace(net, x1, check_trace=False)
            t2 = time.perf_counter()
            m = passes(m)
            t3 = time.perf_counter()
            buf = io.BytesIO()
            torch.jit.save(m, buf)
            t4 = time.perf_counter()
            buf.seek(0)
            torch.jit.load(buf)
            t5 = time.perf_counter()
            for k, a, b in [("forward", t0, t1), ("trace", t1, t2), ("passes", t2, t3),
                            ("save", t3, t4), ("load", t4, t5)]:
                t[k].append(b - a)
    print(lib, {k: round(statistics.median(v) * 1e3, 1) for k, v in t.items()})


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "ferrotorch")

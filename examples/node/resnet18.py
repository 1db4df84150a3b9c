#!/usr/bin/env python3
"""The Python third of the seeds/000 demo: trace torchvision's ResNet-18
(written with ferrotorch's nn modules, weights from manual_seed(0)), save
the program, and record what Python's run of the saved file gives.

    python examples/node/resnet18.py OUT_DIR

writes OUT_DIR/resnet18_trace.pt and OUT_DIR/resnet18_python.json (the
top-5 classes and the output's float32 bytes in hex), which
`examples/node/resnet.js` and the Rust example `run_program` are checked
against, bit for bit."""
import json
import os
import sys

import ferrotorch as torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
from jit import resnet18  # noqa: E402  (the same definition the JIT benchmark uses)


def main(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    torch.manual_seed(0)
    net = resnet18(torch.nn).eval()
    x = torch.ones(1, 3, 224, 224)
    with torch.no_grad():
        traced = torch.jit.trace(net, (x,))
    path = os.path.join(out_dir, "resnet18_trace.pt")
    traced.save(path)
    loaded = torch.jit.load(path)
    with torch.no_grad():
        y = loaded(x).flatten()
    top5 = y.topk(5).indices.tolist()
    data = y.numpy().astype("<f4").tobytes().hex()
    with open(os.path.join(out_dir, "resnet18_python.json"), "w") as f:
        json.dump({"top5": top5, "bytes": data}, f)
    print(f"saved {path}; top-5 classes {top5}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")

#!/usr/bin/env python3
"""Export the benchmark's ResNet-18 (bench/jit.py's definition) to ONNX for
bench/node.js's onnxruntime-node row: with ferrotorch's own
``torch.onnx.export`` by default, or with PyTorch's (``--torch``; needs
torch and onnx).

    python bench/export_onnx.py /tmp/rn/resnet18.onnx [--torch]"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from jit import resnet18  # noqa: E402


def main(path, use_torch):
    if use_torch:
        import torch

        kw = {"dynamo": False}
    else:
        import ferrotorch as torch

        kw = {}
    torch.manual_seed(0)
    net = resnet18(torch.nn).eval()
    x = torch.ones(1, 3, 224, 224)
    torch.onnx.export(net, (x,), path, input_names=["x"], output_names=["y"], **kw)
    print(f"wrote {path} ({torch.__name__} {getattr(torch, '__version__', '')})")


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    main(args[0] if args else "resnet18.onnx", "--torch" in sys.argv)

#!/usr/bin/env python3
"""Export the benchmark's ResNet-18 (bench/jit.py's definition, built with
torch.nn) to ONNX with PyTorch, for bench/node.js's onnxruntime-node row.
Needs a Python with torch and onnx.

    python bench/export_onnx.py /tmp/rn/resnet18.onnx"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from jit import resnet18  # noqa: E402


def main(path):
    torch.manual_seed(0)
    net = resnet18(torch.nn).eval()
    x = torch.ones(1, 3, 224, 224)
    torch.onnx.export(net, (x,), path, dynamo=False, input_names=["x"], output_names=["y"])
    print(f"wrote {path} (torch {torch.__version__})")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "resnet18.onnx")

#!/usr/bin/env python3
"""Issue 19's JIT figures side by side with PyTorch (TorchScript), each
library in its own child process, alternating for several rounds:

- interpreter overhead: a traced function of 100 tiny adds on a
  1-element tensor, per call (torch: the traced TorchScript function);
- trace + save + load of an MLP (torch: jit.trace + freeze + save + load);
- a traced MLP's forward at batch 1 against the eager module;
- ResNet-18 (the same Python module definition for both libraries, eval
  mode, 224x224): trace + passes + save + load (torch: freeze;
  ferrotorch: optimize_for_inference), the optimised traced module's
  forward at batch 1 and 8 against the eager module, and both libraries'
  optimize_for_inference at batch 1.

    python bench/jit.py [--rounds 5] [--no-resnet]

Needs a Python with both packages (ferrotorch on PYTHONPATH, a release
build)."""
import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import time


def timeit(f, n):
    for _ in range(max(3, n // 10)):
        f()
    ts = []
    for _ in range(n):
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts) * 1e6


def resnet18(nn):
    """torchvision's ResNet-18 (BasicBlock, [2, 2, 2, 2]), written with
    the library's own nn modules."""

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.relu = nn.ReLU()
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.downsample = None
            if stride != 1 or cin != cout:
                self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                                nn.BatchNorm2d(cout))

        def forward(self, x):
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            identity = x if self.downsample is None else self.downsample(x)
            return self.relu(out + identity)

    class ResNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
            self.bn1 = nn.BatchNorm2d(64)
            self.relu = nn.ReLU()
            self.maxpool = nn.MaxPool2d(3, 2, 1)
            layers, cin = [], 64
            for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
                layers.append(nn.Sequential(Block(cin, cout, stride), Block(cout, cout, 1)))
                cin = cout
            self.layer1, self.layer2, self.layer3, self.layer4 = layers
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(512, 1000)

        def forward(self, x):
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            return self.fc(self.avgpool(x).flatten(1))

    return ResNet().eval()


def resnet_figures(torch):
    net = resnet18(torch.nn)
    x1, x8 = torch.randn(1, 3, 224, 224), torch.randn(8, 3, 224, 224)

    def round_trip(passes=None):
        # torch: freeze (its optimize_for_inference is measured below);
        # ferrotorch: optimize_for_inference (freeze + conv block fusion)
        m = torch.jit.trace(net, x1, check_trace=False)
        passes = passes or (torch.jit.freeze if torch.__name__ == "torch"
                            else torch.jit.optimize_for_inference)
        m = passes(m)
        buf = io.BytesIO()
        torch.jit.save(m, buf)
        buf.seek(0)
        return torch.jit.load(buf)

    frozen = round_trip()
    # torch cannot load what its optimize_for_inference saves (MKLDNN
    # constants): this one is not saved, for either library
    ofi = torch.jit.optimize_for_inference(torch.jit.trace(net, x1, check_trace=False))
    with torch.no_grad():
        return {
            "resnet_ofi_b1_us": timeit(lambda: ofi(x1), 10),
            "resnet_round_trip_us": timeit(round_trip, 5),
            "resnet_traced_b1_us": timeit(lambda: frozen(x1), 10),
            "resnet_eager_b1_us": timeit(lambda: net(x1), 10),
            "resnet_traced_b8_us": timeit(lambda: frozen(x8), 3),
            "resnet_eager_b8_us": timeit(lambda: net(x8), 3),
        }


def child(lib_name, resnet):
    import importlib
    import warnings

    warnings.simplefilter("ignore")
    torch = importlib.import_module(lib_name)
    torch.set_num_threads(1)
    torch.manual_seed(0)

    def adds(x):
        for _ in range(100):
            x = x + 1
        return x

    one = torch.ones(1)
    traced = torch.jit.trace(adds, one)
    net = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10)).eval()
    x1 = torch.randn(1, 64)

    def round_trip():
        m = torch.jit.trace(net, x1)
        if lib_name == "torch":
            m = torch.jit.freeze(m)
        buf = io.BytesIO()
        torch.jit.save(m, buf)
        buf.seek(0)
        return torch.jit.load(buf)

    tm = torch.jit.trace(net, x1)
    with torch.no_grad():
        out = {
            "adds_us": timeit(lambda: traced(one), 2000),
            "eager_adds_us": timeit(lambda: adds(one), 2000),
            "round_trip_us": timeit(round_trip, 200),
            "traced_mlp_b1_us": timeit(lambda: tm(x1), 2000),
            "eager_mlp_b1_us": timeit(lambda: net(x1), 2000),
        }
    if resnet:
        out.update(resnet_figures(torch))
    print(json.dumps(out))


def run(lib, resnet):
    p = subprocess.run([sys.executable, __file__, "--child", lib, str(int(resnet))], check=True,
                       capture_output=True, text=True)
    return json.loads(p.stdout.strip().splitlines()[-1])


def main():
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2], sys.argv[3] == "1")
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--no-resnet", action="store_true")
    args = ap.parse_args()
    rows = {}
    for _ in range(args.rounds):
        for lib in ("torch", "ferrotorch"):
            for k, v in run(lib, not args.no_resnet).items():
                rows.setdefault(k, {}).setdefault(lib, []).append(v)
    print(f"{'figure (µs, median)':24s} {'torch':>10s} {'ferrotorch':>11s} {'torch/ft':>9s}")
    for k, r in rows.items():
        t, f = statistics.median(r["torch"]), statistics.median(r["ferrotorch"])
        print(f"{k:24s} {t:10.1f} {f:11.1f} {t / f:8.2f}x")


if __name__ == "__main__":
    main()

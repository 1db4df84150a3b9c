#!/usr/bin/env python3
"""Run ferrotorch's and PyTorch's versions of the shared workloads in one go
and print the side-by-side table that goes into BENCHMARKS.md.

    python3 bench/compare.py [--torch-python PATH] [--skip-rust] [--skip-torch]

The Rust side is `cargo bench -p ferrotorch --bench workloads` and
`--bench training` (divan, median
of its samples); the PyTorch side is ../shared/bench/torch_workloads.py
(median of 5) plus bench/torch_autograd.py for the autograd chain, run with a Python that has torch (default: $TORCH_PYTHON or
`python3`). Both use 2 threads. These machines are noisy: compare ratios
from one run, not figures across runs.
"""
import argparse
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
N16M = 16 * 1024 * 1024

# workload -> (divan path, torch name, unit, converter from seconds)
ROWS = [
    ("W1 SGEMM 256", "w1_sgemm/256", "W1 sgemm 256", "GFLOP/s", lambda t: 2 * 256**3 / t / 1e9),
    ("W1 SGEMM 1024", "w1_sgemm/1024", "W1 sgemm 1024", "GFLOP/s", lambda t: 2 * 1024**3 / t / 1e9),
    ("W1 SGEMM 2048", "w1_sgemm/2048", "W1 sgemm 2048", "GFLOP/s", lambda t: 2 * 2048**3 / t / 1e9),
    ("W2 a+b 16M", "w2_add_16m", "W2 add 16M", "GB/s", lambda t: 3 * 4 * N16M / t / 1e9),
    ("W2 exp 16M", "w2_exp_16m", "W2 exp 16M", "GB/s", lambda t: 2 * 4 * N16M / t / 1e9),
    ("W2 tanh 16M", "w2_tanh_16m", "W2 tanh 16M", "GB/s", lambda t: 2 * 4 * N16M / t / 1e9),
    ("W2 gelu 16M", "w2_gelu_16m", "W2 gelu 16M", "GB/s", lambda t: 2 * 4 * N16M / t / 1e9),
    ("W2 m.t()+m 4096²", "w2_add_transposed_4096", "W2 add transposed 4096^2", "GB/s", lambda t: 3 * 4 * 4096 * 4096 / t / 1e9),
    ("W3 sum 16M", "w3_sum_16m", "W3 sum 16M", "GB/s", lambda t: 4 * N16M / t / 1e9),
    ("W3 softmax 4096×1024", "w3_softmax_4096x1024", "W3 softmax 4096x1024", "GB/s", lambda t: 2 * 4 * 4096 * 1024 / t / 1e9),
    ("W4 conv2d 3×3 64→64 56² b8", "w4_conv3x3_64_56_b8", "W4 conv3x3 64-64 56x56 b8", "GFLOP/s", lambda t: 2 * 8 * 64 * 64 * 9 * 56 * 56 / t / 1e9),
    ("W5 a+b 1-element", "w5_tiny_add", "W5 tiny add (python eager)", "µs", lambda t: t * 1e6),
    ("W5 a+b 1-element, requires_grad", "w5_tiny_add_grad", "W5 tiny add requires_grad", "µs", lambda t: t * 1e6),
    ("backward of a 100-op chain, 1-element", "autograd_backward_chain_100", "autograd backward chain 100", "µs", lambda t: t * 1e6),
    ("W6 RPF 50 members × 100 epochs", "w6_rpf_50x100", "W6 RPF 50x100 train", "ms", lambda t: t * 1e3),
    ("W6 RPF, members on 2 threads", "w6_rpf_50x100_2threads", "W6 RPF 50x100 train", "ms", lambda t: t * 1e3),
    ("W7 ResNet-18 eval 224² b1", "w7_resnet18_eval/1", "W7 resnet18 b1 eager", "ms", lambda t: t * 1e3),
    ("W7 ResNet-18 eval 224² b8", "w7_resnet18_eval/8", "W7 resnet18 b8 eager", "ms", lambda t: t * 1e3),
    ("W8 MLP 784-512-512-10 b128 SGD step", "w8_mlp_sgd_step", "W8 MLP 784-512-512-10 b128 step", "ms", lambda t: t * 1e3),
]

UNITS = {"ns": 1e-9, "µs": 1e-6, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def parse_divan(text):
    """Map 'group/arg' -> median seconds from divan's tree output."""
    out, stack = {}, []
    for line in text.splitlines():
        m = re.match(r"^([│ ]*)[├╰]─ (\S+)\s+(.*)$", line)
        if not m:
            continue
        depth = len(m.group(1)) // 3
        name, rest = m.group(2), m.group(3)
        stack = stack[:depth] + [name]
        cols = [c.strip() for c in rest.split("│")]
        if len(cols) >= 3 and cols[2]:
            val, unit = cols[2].split()
            out["/".join(stack)] = float(val) * UNITS[unit]
    return out


def parse_torch(text):
    out = {}
    for line in text.splitlines():
        m = re.match(r"^(.*?)\s+([0-9.]+) (\S+)$", line.strip())
        if m:
            out[m.group(1).strip()] = float(m.group(2))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--torch-python", default=os.environ.get("TORCH_PYTHON", "python3"))
    ap.add_argument("--skip-rust", action="store_true")
    ap.add_argument("--skip-torch", action="store_true")
    ap.add_argument("--only", choices=["workloads", "training"],
                    help="run one of the two groups (W1-W5 and autograd, or W6/W8)")
    args = ap.parse_args()

    rust = {}
    if not args.skip_rust:
        for bench in [b for b in ("workloads", "training") if args.only in (None, b)]:
            r = subprocess.run(["cargo", "bench", "-p", "ferrotorch", "--bench", bench],
                               cwd=ROOT, capture_output=True, text=True, check=True)
            sys.stderr.write(r.stdout)
            rust.update(parse_divan(r.stdout))
    torch = {}
    if not args.skip_torch:
        script = os.path.join(ROOT, "..", "shared", "bench", "torch_workloads.py")
        names = {"workloads": ["w1", "w2", "w3", "w4", "w5"], "training": ["w6", "w7", "w8"]}
        chosen = [w for g, ws in names.items() if args.only in (None, g) for w in ws]
        r = subprocess.run([args.torch_python, script] + chosen,
                           capture_output=True, text=True, check=True)
        sys.stderr.write(r.stdout)
        torch = parse_torch(r.stdout)
        if args.only != "training":
            r = subprocess.run([args.torch_python, os.path.join(ROOT, "bench", "torch_autograd.py")],
                               capture_output=True, text=True, check=True)
            sys.stderr.write(r.stdout)
            torch.update(parse_torch(r.stdout))

    print("| workload | unit | ferrotorch | PyTorch | ferrotorch / PyTorch |")
    print("|---|---|---|---|---|")
    for label, rkey, tkey, unit, conv in ROWS:
        if rkey not in rust and tkey not in torch:
            continue
        ours = conv(rust[rkey]) if rkey in rust else None
        theirs = torch.get(tkey)
        if ours is not None and theirs:
            ratio = ours / theirs
            # for times (µs), smaller is better: report speed-up as theirs/ours
            if unit in ("µs", "ms"):
                ratio_s = (f"{theirs / ours:.2f}× faster" if theirs >= ours
                           else f"{ours / theirs:.2f}× slower")
            else:
                ratio_s = f"{ratio:.2f}×"
        else:
            ratio_s = "–"
        fmt = lambda v: "–" if v is None else (f"{v:.3f}" if v < 10 else f"{v:.1f}")
        print(f"| {label} | {unit} | {fmt(ours)} | {fmt(theirs)} | {ratio_s} |")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Alternate ferrotorch's and PyTorch's runs of one shared workload several
times and report each pair's ratio and the median ratio.

    python3 bench/alternate.py w4 [--rounds 5] [--torch-python PATH]

On these shared machines a workload's speed can move by 2x between
minutes (both libraries' figures do), so a single side-by-side pair can
mislead; alternating the two in close succession and taking the median of
the pair ratios cancels most of that drift. The Rust side is the divan
benchmark of `cargo bench -p ferrotorch --bench workloads|training` filtered
to the workload; the PyTorch side is ../shared/bench/torch_workloads.py.
"""
import argparse
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import ROOT, ROWS, parse_divan, parse_torch  # noqa: E402

GROUP = {"w1": "workloads", "w2": "workloads", "w3": "workloads", "w4": "workloads",
         "w5": "workloads", "w6": "training", "w7": "training", "w8": "training"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("workload", choices=sorted(GROUP))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--torch-python", default=os.environ.get("TORCH_PYTHON", "python3"))
    args = ap.parse_args()
    w = args.workload
    rows = [r for r in ROWS if r[1].startswith(w + "_")]
    script = os.path.join(ROOT, "..", "shared", "bench", "torch_workloads.py")
    ratios = {r[0]: [] for r in rows}
    for i in range(args.rounds):
        r = subprocess.run(["cargo", "bench", "-q", "-p", "ferrotorch", "--bench", GROUP[w], "--", w],
                           cwd=ROOT, capture_output=True, text=True, check=True)
        rust = parse_divan(r.stdout)
        t = subprocess.run([args.torch_python, script, w], capture_output=True, text=True, check=True)
        torch = parse_torch(t.stdout)
        for label, rkey, tkey, unit, conv in rows:
            if rkey not in rust or tkey not in torch:
                continue
            ours, theirs = conv(rust[rkey]), torch[tkey]
            # > 1 favours ferrotorch, for rates and for times alike
            ratio = theirs / ours if unit in ("µs", "ms") else ours / theirs
            ratios[label].append(ratio)
            print(f"round {i + 1}: {label}: ferrotorch {ours:.4g} {unit}, "
                  f"PyTorch {theirs:.4g} {unit}, ratio {ratio:.2f}", flush=True)
    for label, rs in ratios.items():
        if rs:
            print(f"{label}: median ratio {statistics.median(rs):.2f} "
                  f"(range {min(rs):.2f}-{max(rs):.2f}, {len(rs)} rounds; > 1 favours ferrotorch)")


if __name__ == "__main__":
    main()

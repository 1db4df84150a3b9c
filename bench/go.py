#!/usr/bin/env python3
"""Issue 22's figures, side by side in one run (alternating rounds):

- W8 (one SGD-momentum step of an MLP 784-512-512-10 at batch 128) from
  Go, through the C ABI, against the same step from Rust (the divan
  benchmark `w8_mlp_sgd_step`) and from PyTorch in Python;
- `Add` on 1-element tensors from Go (ns per call, the cgo call
  included) against Rust's W5 and PyTorch's from Python.

    cargo build --release -p ferrotorch-c
    python3 bench/go.py [--rounds 5] [--torch-python /path/to/venv-with-torch/bin/python]

The Go side is go/cmd/bench, built against target/release's
libferrotorch_c.so; each round runs Go, Rust and PyTorch once, and the
medians of the per-round ratios are printed (Note in bench/alternate.py).
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import ROOT, parse_divan, parse_torch  # noqa: E402

TORCH_W8 = os.path.join(ROOT, "..", "shared", "bench", "torch_workloads.py")


def go_binary(tmp):
    lib = os.path.join(ROOT, "target", "release")
    env = dict(os.environ, CGO_LDFLAGS=f"-L{lib} -Wl,-rpath,{lib}")
    exe = os.path.join(tmp, "gobench")
    subprocess.run(["go", "build", "-o", exe, "./cmd/bench"], cwd=os.path.join(ROOT, "go"),
                   env=env, check=True)
    return exe


def parse_go(text):
    out = {}
    for line in text.splitlines():
        words = line.split()
        if len(words) >= 3:
            out[" ".join(words[:-2])] = float(words[-2])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--torch-python", default=os.environ.get("TORCH_PYTHON"))
    args = ap.parse_args()
    rows = {"W8 Go/Rust": [], "W8 Go/PyTorch": [], "W8 Go (GC per step)/Rust": [],
            "add Go ns": [], "add Rust ns": [], "add PyTorch ns": []}
    with tempfile.TemporaryDirectory() as tmp:
        exe = go_binary(tmp)
        for i in range(args.rounds):
            go = parse_go(subprocess.run([exe], capture_output=True, text=True, check=True).stdout)
            tr = subprocess.run(["cargo", "bench", "-q", "-p", "ferrotorch", "--bench", "training", "--", "w8"],
                                cwd=ROOT, capture_output=True, text=True, check=True)
            tw = subprocess.run(["cargo", "bench", "-q", "-p", "ferrotorch", "--bench", "workloads", "--",
                                 "w5_tiny_add"], cwd=ROOT, capture_output=True, text=True, check=True)
            rust = {**parse_divan(tr.stdout), **parse_divan(tw.stdout)}
            rust_w8 = rust["w8_mlp_sgd_step"] * 1e3
            rows["W8 Go/Rust"].append(go["go W8 step"] / rust_w8)
            rows["W8 Go (GC per step)/Rust"].append(go["go W8 step with GC"] / rust_w8)
            rows["add Go ns"].append(go["go add 1-element"])
            rows["add Rust ns"].append(rust["w5_tiny_add"] * 1e9)
            line = (f"round {i + 1}: W8 Go {go['go W8 step']:.3f} ms (with GC {go['go W8 step with GC']:.3f}), "
                    f"Rust {rust_w8:.3f} ms; add Go {go['go add 1-element']:.0f} ns, "
                    f"Rust {rust['w5_tiny_add'] * 1e9:.0f} ns")
            if args.torch_python:
                t = parse_torch(subprocess.run([args.torch_python, TORCH_W8, "w8", "w5"], capture_output=True,
                                               text=True, check=True).stdout)
                tw8 = t["W8 MLP 784-512-512-10 b128 step"]
                rows["W8 Go/PyTorch"].append(go["go W8 step"] / tw8)
                rows["add PyTorch ns"].append(t["W5 tiny add (python eager)"] * 1e3)
                line += f"; PyTorch W8 {tw8:.3f} ms, add {t['W5 tiny add (python eager)'] * 1e3:.0f} ns"
            print(line, flush=True)
    for k, v in rows.items():
        if v:
            print(f"median {k}: {statistics.median(v):.3f}")


if __name__ == "__main__":
    main()

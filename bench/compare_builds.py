#!/usr/bin/env python3
"""Alternate two builds of the same divan benchmark binary (say, before and
after a change of release profile) and report, per benchmark, each build's
median and the median of the paired ratios (> 1: the second build is
faster).

    python3 bench/compare_builds.py OLD_BINARY NEW_BINARY [--rounds 5] [--filter w2]

The binaries are `target/release/deps/workloads-*` (or `training-*`) of
the two builds (`cargo bench --no-run` prints their paths). Runs alternate
old, new, old, new... so that the host's drift falls on both alike.
"""
import argparse
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import parse_divan  # noqa: E402


def run(binary, filt):
    args = [binary, "--bench"] + ([filt] if filt else [])
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    return parse_divan(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--filter", default=None)
    args = ap.parse_args()
    old, new = {}, {}
    for i in range(args.rounds):
        for store, binary in ((old, args.old), (new, args.new)):
            for k, v in run(binary, args.filter).items():
                store.setdefault(k, []).append(v)
        print(f"round {i + 1}/{args.rounds} done", file=sys.stderr)
    print(f"{'benchmark':40} {'old median':>14} {'new median':>14} {'old/new (median of pairs)':>28}")
    for k in sorted(old):
        if k not in new:
            continue
        pairs = [a / b for a, b in zip(old[k], new[k])]
        print(f"{k:40} {statistics.median(old[k]) * 1e6:12.3f}us {statistics.median(new[k]) * 1e6:12.3f}us "
              f"{statistics.median(pairs):16.3f}  ({min(pairs):.2f}-{max(pairs):.2f})")


if __name__ == "__main__":
    main()

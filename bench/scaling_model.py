#!/usr/bin/env python3
"""A model of DDP step time and scaling efficiency at 8, 64 and 512 ranks
for ResNet-50 and a 124M-parameter GPT (docs/distributed-scaling.md),
from this machine's measured figures and published interconnects.

    python3 bench/scaling_model.py --overhead-us 4 --gflops 200

Per bucket of B bytes over p ranks, an all-reduce as MPI's and Gloo's
large-message algorithms (reduce-scatter + all-gather: Rabenseifner,
ring) costs

    t(B) = c + 2·log2(p)·α + 2·(p−1)/p · B/β

with c the engine's fixed per-call cost measured here (the 4-byte
all_reduce of bench/distributed.py), α the link's latency and β its
bandwidth (published figures below). Backward produces gradients at a
steady rate, buckets are reduced in order as they fill (Note [Rust DDP's
reducer]), so a step costs

    T = T_fwd + max(T_bwd + t(B), T_bwd/k + k·t(B))  with  k = ceil(G/B)

for G bytes of gradients (the first bucket cannot start before its share
of backward is done, the last not before backward ends; the rest
overlaps), and efficiency is (T_fwd + T_bwd) / T. Compute time is
FLOPs / (measured GFLOP/s of one rank).
"""
import argparse
import math

LINKS = {  # name: (latency s, bandwidth bytes/s), vendors' published figures
    "25 GbE (TCP)": (25e-6, 25e9 / 8),
    "100 Gb/s InfiniBand EDR": (1.0e-6, 100e9 / 8),
    "200 Gb/s InfiniBand HDR": (0.8e-6, 200e9 / 8),
}

MODELS = {  # name: (parameters, forward FLOPs per sample, samples a rank)
    "ResNet-50 (224², batch 32/rank)": (25.6e6, 4.1e9, 32),
    "GPT 124M (1024 tokens × 8/rank)": (124e6, 2 * 124e6 * 1024, 8),
}


def step(params, fwd_flops, samples, p, link, bucket_mb, gflops, overhead):
    alpha, beta = LINKS[link]
    grads = params * 4
    t_fwd = fwd_flops * samples / (gflops * 1e9)
    t_bwd = 2 * t_fwd
    b = bucket_mb * (1 << 20)
    k = math.ceil(grads / b)
    per = overhead + 2 * math.log2(p) * alpha + 2 * (p - 1) / p * min(b, grads) / beta
    t = t_fwd + max(t_bwd + per, t_bwd / k + k * per)
    return t, (t_fwd + t_bwd) / t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--overhead-us", type=float, required=True,
                    help="measured fixed cost of one all_reduce call (bench/distributed.py, 4 B on MPI)")
    ap.add_argument("--gflops", type=float, nargs="+", required=True,
                    help="GFLOP/s of one rank: the measured one (W1 SGEMM 2048 in BENCHMARKS.md), "
                         "and others to see where communication starts to matter")
    a = ap.parse_args()
    print(f"per-call overhead {a.overhead_us} µs")
    print("| model | GFLOP/s a rank | link | ranks | best bucket | step | efficiency | at 25 MB |")
    print("|---|---|---|---|---|---|---|---|")
    for gf in a.gflops:
        for m, (n, f, s) in MODELS.items():
            for link in LINKS:
                for p in (8, 64, 512):
                    runs = [(step(n, f, s, p, link, mb, gf, a.overhead_us * 1e-6), mb)
                            for mb in (1, 5, 25, 100)]
                    (t, eff), mb = max(runs, key=lambda r: r[0][1])
                    at25 = next(r[0][1] for r in runs if r[1] == 25)
                    print(f"| {m} | {gf:g} | {link} | {p} | {mb} MB | {t:.3f} s | {eff * 100:.1f}% |"
                          f" {at25 * 100:.1f}% |")


if __name__ == "__main__":
    main()

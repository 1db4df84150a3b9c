"""3×3 convolution layers at batch 1, eager against the same layer through
``jit.optimize_for_inference`` (whose constant filters keep their
Winograd transforms between calls: Note [Prepacked convolution filters]),
one thread by default.

    python bench/conv_frozen.py [threads]

Medians of 15 calls in milliseconds, and the largest difference between
the two outputs. With the final code eager calls under ``no_grad`` keep
their transforms too, so the two columns measure alike; the committed
figures (BENCHMARKS.md, session 27) came from a build whose eager calls
kept nothing.
"""
import statistics
import sys
import time

import ferrotorch as torch

# (channels, map size)
LAYERS = [(64, 56), (128, 28), (256, 14), (512, 7), (64, 8), (512, 4), (128, 7)]


def median_ms(f):
    ts = []
    for _ in range(15):
        t0 = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts) * 1e3


def main(threads):
    torch.set_num_threads(threads)
    for c, hw in LAYERS:
        conv = torch.nn.Conv2d(c, c, 3, padding=1).eval()
        x = torch.randn(1, c, hw, hw)
        with torch.no_grad():
            m = torch.jit.optimize_for_inference(torch.jit.trace(conv, (x,)))
            err = (m(x) - conv(x)).abs().max().item()
            eager, frozen = median_ms(lambda: conv(x)), median_ms(lambda: m(x))
        print(f"{c:4d}ch {hw:3d}x{hw:<3d} eager {eager:7.3f} ms  frozen {frozen:7.3f} ms"
              f"  ratio {eager / frozen:.2f}  maxerr {err:.2e}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1)

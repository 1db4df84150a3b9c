"""ResNet-18's convolution layers one by one at batch 1, one thread
(what the traced batch-1 figure of bench/jit.py is made of).

    python bench/conv_layers.py ferrotorch   # or: torch

Medians of 15 calls in milliseconds, with GFLOP/s and how many times
ResNet-18 runs each geometry.
"""

import statistics
import sys
import time

# (in channels, out channels, kernel, stride, padding, input size), count
LAYERS = [((3, 64, 7, 2, 3, 224), 1), ((64, 64, 3, 1, 1, 56), 4), ((64, 128, 3, 2, 1, 56), 1),
          ((128, 128, 3, 1, 1, 28), 3), ((64, 128, 1, 2, 0, 56), 1), ((128, 256, 3, 2, 1, 28), 1),
          ((256, 256, 3, 1, 1, 14), 3), ((256, 512, 3, 2, 1, 14), 1), ((512, 512, 3, 1, 1, 7), 3),
          ((256, 512, 1, 2, 0, 14), 1)]


def main(lib):
    import importlib

    torch = importlib.import_module(lib)
    torch.set_num_threads(1)
    conv2d = torch.nn.functional.conv2d
    total = 0.0
    with torch.no_grad():
        for (ci, co, k, s, p, hw), count in LAYERS:
            x, w, b = torch.randn(1, ci, hw, hw), torch.randn(co, ci, k, k), torch.randn(co)
            ts = []
            for _ in range(15):
                t0 = time.perf_counter()
                conv2d(x, w, b, stride=s, padding=p)
                ts.append(time.perf_counter() - t0)
            ms = statistics.median(ts) * 1e3
            flops = 2 * ci * co * k * k * ((hw + 2 * p - k) // s + 1) ** 2
            total += ms * count
            print(f"{ci:4d}->{co:4d} k{k} s{s} {hw:3d}x{hw:<3d} {ms:7.3f} ms x{count}"
                  f"  {flops / ms / 1e6:6.1f} GFLOP/s")
    print(f"{lib}: all convolutions {total:.2f} ms")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "ferrotorch")

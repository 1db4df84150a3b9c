#!/usr/bin/env python3
"""PyTorch side of ferrotorch's autograd benchmark (not one of the shared
W1-W9 workloads): backward through a chain of 100 ops on 1-element
tensors, `y = y * 1.0001` and `sin` alternating, the chain rebuilt before
each timed backward. Prints `name value unit` like torch_workloads.py.
"""
import time

import torch


def main():
    torch.set_num_threads(2)
    x = torch.ones(1, requires_grad=True)
    times = []
    for _ in range(2000):
        y = x
        for i in range(100):
            y = y * 1.0001 if i % 2 == 0 else torch.sin(y)
        t0 = time.perf_counter()
        y.backward()
        times.append(time.perf_counter() - t0)
    times.sort()
    print(f"autograd backward chain 100 {times[len(times) // 2] * 1e6:.3f} us")


if __name__ == "__main__":
    main()

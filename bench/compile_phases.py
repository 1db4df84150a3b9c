#!/usr/bin/env python3
"""Where the first call of ferrotorch.compile's W9 goes: the trace (one
eager run of the function), the graph passes, the kernel's compile plus
its first run, then a second run, and an eager run again. Run in a fresh
process to see the cold-memory cost of the trace's eager run.

    PYTHONPATH=<release build> python bench/compile_phases.py
    FERROTORCH_LOGS=fusion ... prints each kernel's compile time too."""
import time

import ferrotorch as torch

torch.set_num_threads(2)
x = torch.randn(16 << 20)


def w9(t):
    return t * torch.sigmoid(t) * 0.5 + torch.tanh(t)


t0 = time.perf_counter()
m = torch.jit.trace(w9, (x,), check_trace=False)
t1 = time.perf_counter()
s = m._c._run_pass("optimize")._run_pass("fuse")
t2 = time.perf_counter()
sm = torch.jit.ScriptModule(s)
sm(x)
t3 = time.perf_counter()
sm(x)
t4 = time.perf_counter()
w9(x)
t5 = time.perf_counter()
print(f"trace {1e3 * (t1 - t0):.1f} ms, passes {1e3 * (t2 - t1):.1f} ms, "
      f"first run (compile + run) {1e3 * (t3 - t2):.1f} ms, second run {1e3 * (t4 - t3):.1f} ms, "
      f"eager again {1e3 * (t5 - t4):.1f} ms")

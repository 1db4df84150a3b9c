#!/usr/bin/env python3
"""Issue 49's real programs side by side: the six training programs of
``bench/programs.py`` (cnn, lm, vae, per_sample, fx, gan), each stepped
once with ``torch`` and once with ``ferrotorch`` on 2 threads, the two
libraries alternating for several rounds.

    python bench/real_programs.py [cnn lm vae per_sample fx gan] [--rounds 5] [--steps 40]

Each library runs in its own child process per round; a round times
``--steps`` training steps after 5 warm-up steps and reports the median
step. The parent prints, per program, both libraries' median step over
the rounds, the median of the per-round ratios (torch / ferrotorch: above
1 means ferrotorch is faster) and their range. Needs a Python with both
packages (ferrotorch on PYTHONPATH, release-built)."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))


def child(lib_name, name, steps):
    import importlib

    sys.path.insert(0, HERE)
    import programs

    warnings.simplefilter("ignore")
    torch = importlib.import_module(lib_name)
    torch.set_num_threads(2)
    step = programs.make(torch, name)
    for i in range(5):
        step(i)
    times = []
    for i in range(5, 5 + steps):
        t = time.perf_counter()
        step(i)
        times.append(time.perf_counter() - t)
    print(json.dumps({"ms": statistics.median(times) * 1e3}))


def run(lib, name, steps):
    p = subprocess.run([sys.executable, __file__, "--child", lib, name, str(steps)],
                       check=True, capture_output=True, text=True)
    return json.loads(p.stdout.strip().splitlines()[-1])["ms"]


def main():
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2], sys.argv[3], int(sys.argv[4]))
        return
    sys.path.insert(0, HERE)
    import programs

    ap = argparse.ArgumentParser()
    ap.add_argument("names", nargs="*", default=list(programs.PROGRAMS))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=40)
    args = ap.parse_args()
    from _sidebyside import alternate

    alternate(args.names, args.rounds, lambda lib, name: run(lib, name, args.steps), "program (step, ms)")


if __name__ == "__main__":
    main()

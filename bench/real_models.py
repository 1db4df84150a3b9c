#!/usr/bin/env python3
"""Issue 18's real training loops side by side: the character-level models
of ``bench/char_models.py`` (an MLP over embedded context characters, a
4-layer 64-wide causal transformer, a GRU), each trained with AdamW and
cross-entropy at batch 32 on 2 threads, once with ``torch`` and once with
``ferrotorch``, alternating the two libraries for several rounds.

    python bench/real_models.py [mlp gpt gru] [--rounds 5] [--steps 60]

Each library runs in its own child process per round (see
python_overhead.py for why); a round times ``--steps`` training steps after
10 warm-up steps and reports the median step. The parent prints, per model,
both libraries' median step over the rounds, the median of the per-round
ratios (torch / ferrotorch: above 1 means ferrotorch is faster) and their
range. Needs a Python with both packages (ferrotorch on PYTHONPATH)."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def child(lib_name, model, steps):
    import importlib

    sys.path.insert(0, HERE)
    import char_models

    torch = importlib.import_module(lib_name)
    torch.manual_seed(0)
    torch.set_num_threads(2)
    net, batch = char_models.MODELS[model](torch)
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3)
    batches = [batch(i) for i in range(steps + 10)]
    for x, y in batches[:10]:
        char_models.train_step(net, opt, x, y)
    times = []
    for x, y in batches[10:]:
        t = time.perf_counter()
        char_models.train_step(net, opt, x, y)
        times.append(time.perf_counter() - t)
    print(json.dumps({"ms": statistics.median(times) * 1e3}))


def run(lib, model, steps):
    p = subprocess.run([sys.executable, __file__, "--child", lib, model, str(steps)],
                       check=True, capture_output=True, text=True)
    return json.loads(p.stdout.strip().splitlines()[-1])["ms"]


def main():
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2], sys.argv[3], int(sys.argv[4]))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("models", nargs="*", default=["mlp", "gpt", "gru"])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=60)
    args = ap.parse_args()
    from _sidebyside import alternate

    alternate(args.models, args.rounds, lambda lib, name: run(lib, name, args.steps), "model (step, ms)")


if __name__ == "__main__":
    main()

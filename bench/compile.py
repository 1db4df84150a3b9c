#!/usr/bin/env python3
"""Issue 20's figures side by side with PyTorch's torch.compile, each
library in its own child process (2 threads), alternating for several
rounds; medians in milliseconds.

- W9 ``x*sigmoid(x)*0.5 + tanh(x)`` on 16M f32: eager, compiled, and a
  16M copy (``x.clone()``) in the same process;
- a 16-op pointwise chain on 16M f32: eager and compiled;
- softmax and layer norm over the last dim of 4096x1024 after a
  pointwise op: compiled;
- the first call of compiled W9 (trace + compile + run: the cold start;
  torch's inductor keeps an on-disk cache, so its later rounds are warm
  and only the first round's figure is its true cold start);
- ResNet-18 eval (no_grad) at batch 1 and 8: compiled and eager;
- W8, an MLP 784-512-512-10 training step at batch 128 (SGD momentum):
  compiled and eager.

    python bench/compile.py [--rounds 3] [--only w9,chain,...] [--calls 9] [--fresh-cache]

Needs a Python with both packages (ferrotorch on PYTHONPATH, a release
build)."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from jit import resnet18  # noqa: E402  (the same ResNet-18 definition)


def timeit(f, n):
    f()
    ts = []
    for _ in range(n):
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts) * 1e3


def chain16(torch, x):
    """Sixteen pointwise ops, every one fusable by both compilers."""
    y = x * 1.1 + 0.3
    y = torch.sigmoid(y) * x
    y = torch.tanh(y) - 0.2
    y = y.abs() + 1.0
    y = torch.log(y) * 0.5
    y = torch.exp(y) - x
    y = torch.relu(y) + x * 0.25
    y = torch.sqrt(y.abs() + 1.0)
    return y


def figures(torch, only, calls=9):
    out = {}
    n = 16 * 1024 * 1024
    x = torch.randn(n)

    def w9(t):
        return t * torch.sigmoid(t) * 0.5 + torch.tanh(t)

    if "w9" in only:
        t = time.perf_counter()
        cw9 = torch.compile(w9)
        cw9(x)
        out["W9 first call (cold)"] = (time.perf_counter() - t) * 1e3
        out["W9 eager"] = timeit(lambda: w9(x), 7)
        out["W9 compiled"] = timeit(lambda: cw9(x), 7)
        out["16M copy (clone)"] = timeit(lambda: x.clone(), 7)
    if "chain" in only:
        c = torch.compile(lambda t: chain16(torch, t))
        c(x)
        out["16-op chain eager"] = timeit(lambda: chain16(torch, x), 5)
        out["16-op chain compiled"] = timeit(lambda: c(x), 5)
    if "norm" in only:
        a = torch.randn(4096, 1024)
        w, b = torch.randn(1024), torch.randn(1024)
        sm = torch.compile(lambda t: torch.softmax(t * 2.0 + 1.0, dim=-1))
        ln = torch.compile(lambda t: torch.nn.functional.layer_norm(
            torch.nn.functional.gelu(t), (1024,), w, b))
        sm(a)
        ln(a)
        out["softmax(2x+1) 4096x1024 compiled"] = timeit(lambda: sm(a), calls)
        out["layer_norm(gelu) 4096x1024 compiled"] = timeit(lambda: ln(a), calls)
    if "resnet" in only:
        net = resnet18(torch.nn)
        x1, x8 = torch.randn(1, 3, 224, 224), torch.randn(8, 3, 224, 224)
        cnet = torch.compile(net)
        with torch.no_grad():
            cnet(x1)
            cnet(x8)
            out["ResNet-18 b1 compiled"] = timeit(lambda: cnet(x1), 10)
            out["ResNet-18 b1 eager"] = timeit(lambda: net(x1), 10)
            out["ResNet-18 b8 compiled"] = timeit(lambda: cnet(x8), 3)
            out["ResNet-18 b8 eager"] = timeit(lambda: net(x8), 3)
    if "w8" in only:
        nn = torch.nn
        for compiled in (False, True):
            torch.manual_seed(0)
            net = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                                nn.Linear(512, 10))
            model = torch.compile(net) if compiled else net
            opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
            xb, yb = torch.randn(128, 784), torch.randint(0, 10, (128,))

            def step():
                loss = nn.functional.cross_entropy(model(xb), yb)
                opt.zero_grad()
                loss.backward()
                opt.step()

            step()
            out["W8 step " + ("compiled" if compiled else "eager")] = timeit(step, 20)
    return out


def child(lib_name, only, calls):
    import importlib
    import warnings

    warnings.simplefilter("ignore")
    torch = importlib.import_module(lib_name)
    torch.set_num_threads(2)
    torch.manual_seed(0)
    print(json.dumps(figures(torch, only, calls)))


def run(lib, only, fresh_cache=False, calls=9):
    env = dict(os.environ)
    if fresh_cache:
        # inductor's on-disk cache emptied: torch.compile's true cold start
        env["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="inductor-")
    p = subprocess.run([sys.executable, __file__, "--child", lib, ",".join(only), str(calls)],
                       check=True,
                       capture_output=True, text=True, env=env)
    return json.loads(p.stdout.strip().splitlines()[-1])


def main():
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2], sys.argv[3].split(","), int(sys.argv[4]))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", default="w9,chain,norm,resnet,w8")
    ap.add_argument("--calls", type=int, default=9,
                    help="timed calls per round for the softmax and layer-norm rows")
    ap.add_argument("--fresh-cache", action="store_true",
                    help="give torch an empty inductor cache in round 1 (a true cold start)")
    args = ap.parse_args()
    only = args.only.split(",")
    rows, first = {}, {}
    for r in range(args.rounds):
        for lib in ("torch", "ferrotorch"):
            for k, v in run(lib, only, args.fresh_cache and r == 0, args.calls).items():
                rows.setdefault(k, {}).setdefault(lib, []).append(v)
                if r == 0:
                    first.setdefault(k, {})[lib] = v
    print(f"{'figure (ms, median)':38s} {'torch':>10s} {'ferrotorch':>11s} {'torch/ft':>9s}")
    for k, r in rows.items():
        t, f = statistics.median(r["torch"]), statistics.median(r["ferrotorch"])
        if "cold" in k:
            t, f = first[k]["torch"], first[k]["ferrotorch"]
        print(f"{k:38s} {t:10.2f} {f:11.2f} {t / f:8.2f}x")


if __name__ == "__main__":
    main()

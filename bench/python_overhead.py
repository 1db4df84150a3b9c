#!/usr/bin/env python3
"""Issue 5's Python workloads side by side in one run: W5 (tiny ``a + b``
from Python, plain and with requires_grad) and W6 (the seeds/000
randomized-prior-functions loop, 50 members x 100 epochs), written exactly
as ``../shared/bench/torch_workloads.py`` writes them, run once with
``torch`` and once with ``ferrotorch`` in the same process.

Run with a Python that has both installed:
    python bench/python_overhead.py            # W5 and W6
    python bench/python_overhead.py w5         # W5 only
Each library runs in its own child process (importing torch changes how
the process allocates memory, which would tax whichever library shares the
process with it); the parent prints one line per workload: torch median,
ferrotorch median, ratio."""
import statistics
import sys
import time


def best(fn, reps=5):
    fn()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def w5(torch):
    a, b = torch.ones(1), torch.ones(1)
    n = 100000
    plain = best(lambda: [a + b for _ in range(n)], reps=3) / n
    ag, bg = torch.ones(1, requires_grad=True), torch.ones(1, requires_grad=True)
    grad = best(lambda: [ag + bg for _ in range(n)], reps=3) / n
    return plain * 1e6, grad * 1e6


def w6(torch):
    nn = torch.nn

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.l1, self.l2, self.l3 = nn.Linear(1, 20), nn.Linear(20, 20), nn.Linear(20, 1)
            for layer in (self.l1, self.l2, self.l3):
                nn.init.xavier_uniform_(layer.weight)

        def forward(self, x):
            return self.l3(nn.functional.selu(self.l2(nn.functional.selu(self.l1(x)))))

    class ModelWithPrior(nn.Module):
        def __init__(self, base, prior, scale=1.0):
            super().__init__()
            self.base_model, self.prior_model, self.prior_scale = base, prior, scale

        def forward(self, x):
            with torch.no_grad():
                p = self.prior_model(x).detach()
            return self.base_model(x) + self.prior_scale * p

    x = torch.linspace(-1, 1, 100).unsqueeze(1)
    y = torch.sin(3 * x) + 0.1 * torch.randn_like(x)

    def train_all():
        for _k in range(50):
            idx = torch.randint(0, len(x), (len(x),))
            xb, yb = x[idx], y[idx]
            model = ModelWithPrior(MLP(), MLP(), 1.0)
            opt = torch.optim.Adam(model.parameters(), lr=0.05)
            loss_fn = nn.MSELoss()
            for _ in range(100):
                model.train()
                loss = loss_fn(model(xb), yb)
                opt.zero_grad()
                loss.backward()
                opt.step()
    return best(train_all, reps=3) * 1e3


def child(name, which):
    import importlib
    import json

    lib = importlib.import_module(name)
    lib.manual_seed(0)
    lib.set_num_threads(2)
    out = {}
    out["w5"], out["w5_grad"] = w5(lib)
    if "w6" in which:
        out["w6"] = w6(lib)
    print(json.dumps(out))


def main():
    import json
    import subprocess

    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2], sys.argv[3:])
        return
    which = sys.argv[1:] or ["w5", "w6"]
    res = {}
    for name in ("torch", "ferrotorch"):
        got = subprocess.run([sys.executable, __file__, "--child", name, *which],
                             check=True, capture_output=True, text=True)
        res[name] = json.loads(got.stdout.strip().splitlines()[-1])
    rows = [("W5 tiny add (python eager)", "us/op", "w5"),
            ("W5 tiny add requires_grad", "us/op", "w5_grad"),
            ("W6 RPF 50x100 train (python)", "ms", "w6")]
    print(f"{'workload':34s} {'torch':>10s} {'ferrotorch':>11s} {'ratio':>7s}  unit")
    for label, unit, key in rows:
        if key in res["torch"]:
            t, f = res["torch"][key], res["ferrotorch"][key]
            print(f"{label:34s} {t:10.3f} {f:11.3f} {t / f:6.2f}x  {unit}", flush=True)


if __name__ == "__main__":
    main()

"""Hogwild training (seeds/000, "Shared Memory"; torch's mnist_hogwild):
one model whose parameters live in shared memory, trained by several
processes at once, each writing the same parameters without locks.

    PYTHONPATH=crates/ferrotorch-python/python python examples/python/hogwild.py \
        [--processes 4] [--steps 300]

The data is synthetic (a fixed random linear teacher with a nonlinearity,
10 classes), so the example needs no download. It prints the loss of the
shared model on a held-out set before and after training.
"""

import argparse

import ferrotorch as torch
import ferrotorch.multiprocessing as mp
import ferrotorch.nn as nn
import ferrotorch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(32, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def data(seed, n):
    g = torch.Generator().manual_seed(seed)
    teacher = torch.randn(32, 10, generator=torch.Generator().manual_seed(0))
    x = torch.randn(n, 32, generator=g)
    y = torch.tanh(x @ teacher).argmax(1)
    return x, y


def train(rank, model, steps, lr):
    # each process draws its own batches; all of them step the one model
    torch.manual_seed(100 + rank)
    x, y = data(rank + 1, 4096)
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.5)
    for step in range(steps):
        i = torch.randint(0, x.shape[0], (64,))
        opt.zero_grad()
        loss = F.cross_entropy(model(x[i]), y[i])
        loss.backward()
        opt.step()


def evaluate(model):
    x, y = data(12345, 2048)
    with torch.no_grad():
        return F.cross_entropy(model(x), y).item()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--processes", type=int, default=4)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--start-method", default="spawn")
    args = ap.parse_args()
    torch.manual_seed(0)
    model = Net()
    model.share_memory()  # the parameters move into shared memory, in place
    before = evaluate(model)
    ctx = mp.get_context(args.start_method)
    procs = [ctx.Process(target=train, args=(rank, model, args.steps, args.lr))
             for rank in range(args.processes)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    bad = [p.exitcode for p in procs if p.exitcode != 0]
    if bad:
        raise SystemExit(f"a training process failed: exit codes {bad}")
    after = evaluate(model)
    print(f"held-out loss before {before:.4f}, after {after:.4f} "
          f"({args.processes} processes x {args.steps} steps on one shared model)")


if __name__ == "__main__":
    main()

"""torch.amp cases run the same way under torch (fixtures/gen_amp.py) and
ferrotorch (test_amp.py)."""

import warnings

import numpy as np

R = np.random.default_rng(7)
X = R.normal(size=(8, 5)).astype(np.float32)
Y = R.integers(0, 3, size=(8,))


def train_autocast(L, dtype_name):
    L.manual_seed(0)
    model = L.nn.Sequential(L.nn.Linear(5, 16), L.nn.ReLU(), L.nn.Linear(16, 3))
    opt = L.optim.SGD(model.parameters(), lr=0.1)
    x, y = L.tensor(X), L.tensor(Y)
    losses, dtypes = [], []
    for _ in range(5):
        opt.zero_grad()
        with L.autocast("cpu", dtype=getattr(L, dtype_name)):
            out = model(x)
            loss = L.nn.functional.cross_entropy(out, y)
        dtypes = [str(out.dtype).split(".")[-1], str(loss.dtype).split(".")[-1]]
        loss.backward()
        opt.step()
        losses.append(float(loss))
    return {"losses": losses, "dtypes": dtypes, "w": [float(v) for v in model[0].weight.detach().reshape(-1)[:6]]}


def grad_scaler(L):
    L.manual_seed(0)
    model = L.nn.Linear(5, 3)
    opt = L.optim.SGD(model.parameters(), lr=0.05)
    scaler = L.amp.GradScaler("cpu", init_scale=2.0 ** 10, growth_interval=2)
    x, y = L.tensor(X), L.tensor(Y)
    scales, losses = [], []
    for step in range(6):
        opt.zero_grad()
        loss = L.nn.functional.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        if step == 2:  # an overflowing gradient: the step is skipped, the scale backs off
            model.weight.grad[0, 0] = float("inf")
        scaler.step(opt)
        scaler.update()
        scales.append(scaler.get_scale())
        losses.append(float(loss))
    return {"scales": scales, "losses": losses, "state": scaler.state_dict(),
            "w": [float(v) for v in model.weight.detach().reshape(-1)]}


def disabled_scaler(L):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        s = L.amp.GradScaler()
    return {"enabled": s.is_enabled(), "scale": s.get_scale(), "warned": any("not available" in str(m.message) for m in w),
            "state": s.state_dict()}


CASES = {"autocast bf16": lambda L: train_autocast(L, "bfloat16"),
         "autocast fp16": lambda L: train_autocast(L, "float16"),
         "grad_scaler": grad_scaler, "disabled_scaler": disabled_scaler}

"""Optimizer and scheduler cases run the same way under torch
(fixtures/gen_optim.py writes what torch does) and under ferrotorch
(test_optim_torch.py compares): the code below only uses torch's API, and
takes the library as an argument."""

import numpy as np

STEPS = 20

# (optimizer, keyword arguments, dtype)
OPTIMIZERS = [
    ("Adadelta", {}, "float64"),
    ("Adadelta", {"lr": 0.5, "rho": 0.8, "weight_decay": 0.1}, "float64"),
    ("Adadelta", {"maximize": True}, "float32"),
    ("Adamax", {}, "float64"),
    ("Adamax", {"lr": 0.01, "betas": (0.8, 0.99), "weight_decay": 0.05}, "float32"),
    ("NAdam", {}, "float64"),
    ("NAdam", {"lr": 0.01, "weight_decay": 0.1, "momentum_decay": 0.01}, "float64"),
    ("NAdam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True}, "float32"),
    ("RAdam", {}, "float64"),
    ("RAdam", {"lr": 0.01, "betas": (0.9, 0.9)}, "float64"),
    ("RAdam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True, "maximize": True}, "float32"),
    ("ASGD", {}, "float64"),
    ("ASGD", {"lr": 0.05, "lambd": 0.01, "alpha": 0.5, "t0": 5, "weight_decay": 0.01}, "float64"),
    ("ASGD", {"lr": 0.05, "t0": 3}, "float32"),
    ("Rprop", {}, "float64"),
    ("Rprop", {"lr": 0.05, "etas": (0.3, 1.5), "step_sizes": (1e-3, 0.2)}, "float32"),
    ("Rprop", {"maximize": True}, "float64"),
    ("Adafactor", {}, "float64"),
    ("Adafactor", {"lr": 0.05, "beta2_decay": -0.5, "d": 2.0, "weight_decay": 0.1}, "float32"),
    ("Adafactor", {"eps": (1e-10, 1e-2), "maximize": True}, "float64"),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True, "weight_decay": 0.01}, "float64"),
    ("Adam", {"lr": 0.01, "amsgrad": True}, "float64"),
    ("AdamW", {"lr": 0.01}, "float32"),
    ("RMSprop", {"lr": 0.01, "momentum": 0.5, "centered": True}, "float64"),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.01}, "float64"),
    ("LBFGS", {}, "float64"),
    ("LBFGS", {"lr": 0.5, "max_iter": 5, "history_size": 3}, "float64"),
    ("LBFGS", {"line_search_fn": "strong_wolfe"}, "float64"),
    ("LBFGS", {"line_search_fn": "strong_wolfe", "max_iter": 4, "history_size": 2}, "float64"),
]

# optimizers of one kind of parameter: an embedding table (SparseAdam; torch's
# with sparse=True) and a matrix (Muon)
SPECIAL = [
    ("SparseAdam", {}, "embedding"),
    ("SparseAdam", {"lr": 0.01, "betas": (0.8, 0.9), "maximize": True}, "embedding"),
    ("Muon", {}, "matrix"),
    ("Muon", {"lr": 0.01, "nesterov": False, "adjust_lr_fn": "match_rms_adamw"}, "matrix"),
]

# (name, scheduler factory source, optimizer, its kwargs): the factory is
# a lambda over (lib, opt) written as text so the fixture can name it
SCHEDULERS = [
    ("LambdaLR", "lambda L, o: L.LambdaLR(o, lambda e: 0.9 ** e)", "SGD", {"lr": 0.1}),
    ("MultiplicativeLR", "lambda L, o: L.MultiplicativeLR(o, lambda e: 0.95)", "SGD", {"lr": 0.1}),
    ("StepLR", "lambda L, o: L.StepLR(o, step_size=4, gamma=0.5)", "SGD", {"lr": 0.1}),
    ("MultiStepLR", "lambda L, o: L.MultiStepLR(o, milestones=[3, 7, 7, 12], gamma=0.3)", "SGD", {"lr": 0.1}),
    ("ConstantLR", "lambda L, o: L.ConstantLR(o, factor=0.25, total_iters=6)", "SGD", {"lr": 0.1}),
    ("LinearLR", "lambda L, o: L.LinearLR(o, start_factor=0.2, end_factor=0.9, total_iters=8)", "SGD", {"lr": 0.1}),
    ("ExponentialLR", "lambda L, o: L.ExponentialLR(o, gamma=0.9)", "SGD", {"lr": 0.1}),
    ("PolynomialLR", "lambda L, o: L.PolynomialLR(o, total_iters=10, power=2.0)", "SGD", {"lr": 0.1}),
    ("CosineAnnealingLR", "lambda L, o: L.CosineAnnealingLR(o, T_max=7, eta_min=0.001)", "SGD", {"lr": 0.1}),
    ("CosineAnnealingWarmRestarts", "lambda L, o: L.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2, eta_min=0.01)",
     "SGD", {"lr": 0.1}),
    ("CyclicLR triangular2, momentum", "lambda L, o: L.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=4, "
     "step_size_down=3, mode='triangular2')", "SGD", {"lr": 0.1, "momentum": 0.9}),
    ("CyclicLR exp_range, Adam", "lambda L, o: L.CyclicLR(o, base_lr=0.001, max_lr=0.01, step_size_up=5, "
     "mode='exp_range', gamma=0.9)", "Adam", {"lr": 0.01}),
    ("OneCycleLR", "lambda L, o: L.OneCycleLR(o, max_lr=0.1, total_steps=31)", "SGD", {"lr": 0.1, "momentum": 0.9}),
    ("OneCycleLR three-phase linear, Adam", "lambda L, o: L.OneCycleLR(o, max_lr=0.05, total_steps=31, "
     "anneal_strategy='linear', three_phase=True, pct_start=0.2)", "Adam", {"lr": 0.01}),
    ("SequentialLR", "lambda L, o: L.SequentialLR(o, [L.LinearLR(o, start_factor=0.1, total_iters=4), "
     "L.ExponentialLR(o, gamma=0.8), L.StepLR(o, 3)], milestones=[5, 12])", "SGD", {"lr": 0.1}),
    ("ChainedScheduler", "lambda L, o: L.ChainedScheduler([L.ConstantLR(o, factor=0.5, total_iters=4), "
     "L.ExponentialLR(o, gamma=0.9), L.StepLR(o, 5, gamma=0.5)])", "SGD", {"lr": 0.1}),
    ("ReduceLROnPlateau", "lambda L, o: L.ReduceLROnPlateau(o, patience=2, factor=0.5, cooldown=1, threshold=0.05)",
     "SGD", {"lr": 0.1}),
    ("SWALR", "lambda L, o: swa.SWALR(o, swa_lr=0.01, anneal_epochs=5)", "SGD", {"lr": 0.1}),
]
SCHED_STEPS = 30
# the metric ReduceLROnPlateau sees at each step
METRICS = [1.0, 0.9, 0.95, 0.96, 0.97, 0.8, 0.81, 0.82, 0.83, 0.84, 0.5, 0.6, 0.7, 0.8, 0.9] * 2


def problem(lib, dtype):
    """Two parameters of a small regression with a nonlinearity, and its
    loss as a function."""
    dt = getattr(lib, dtype)
    rng = np.random.default_rng(0)
    W = lib.tensor(rng.normal(size=(4, 3)), dtype=dt).requires_grad_(True)
    b = lib.tensor(rng.normal(size=(4,)), dtype=dt).requires_grad_(True)
    x = lib.tensor(rng.normal(size=(3, 8)), dtype=dt)
    y = lib.tensor(rng.normal(size=(4, 8)), dtype=dt)

    def loss():
        return ((lib.tanh(W @ x + b.unsqueeze(1)) - y) ** 2).mean() + 0.01 * (W * W).sum()

    return [W, b], loss


def run_optimizer(lib, name, kwargs, dtype, steps=STEPS):
    """The losses and the flattened parameters after each step."""
    params, loss_fn = problem(lib, dtype)
    opt = getattr(lib.optim, name)(params, **kwargs)
    losses, traj = [], []
    for _ in range(steps):
        def closure():
            opt.zero_grad()
            loss = loss_fn()
            loss.backward()
            return loss

        loss = opt.step(closure)
        losses.append(float(loss.detach()))
        traj.append([v for p in params for v in p.detach().reshape(-1).tolist()])
    return {"losses": losses, "params": traj}


def special_problem(lib, kind):
    rng = np.random.default_rng(1)
    if kind == "embedding":
        emb = lib.nn.Embedding(10, 4, sparse=lib.__name__ == "torch")
        with lib.no_grad():
            emb.weight.copy_(lib.tensor(rng.normal(size=(10, 4)), dtype=lib.float32))
        idx = lib.tensor([[1, 3, 3, 7], [0, 7, 2, 2]])
        target = lib.tensor(rng.normal(size=(2, 4, 4)), dtype=lib.float32)
        return [emb.weight], lambda: ((emb(idx) - target) ** 2).sum()
    W = lib.tensor(rng.normal(size=(6, 4)), dtype=lib.float32).requires_grad_(True)
    x = lib.tensor(rng.normal(size=(4, 5)), dtype=lib.float32)
    y = lib.tensor(rng.normal(size=(6, 5)), dtype=lib.float32)
    return [W], lambda: ((W @ x - y) ** 2).mean()


def run_special(lib, name, kwargs, kind, steps=STEPS):
    params, loss_fn = special_problem(lib, kind)
    opt = getattr(lib.optim, name)(params, **kwargs)
    losses, traj = [], []
    for _ in range(steps):
        opt.zero_grad()
        loss = loss_fn()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
        traj.append([v for p in params for v in p.detach().reshape(-1).tolist()])
    return {"losses": losses, "params": traj}


def run_scheduler(lib, factory, opt_name, opt_kwargs, steps=SCHED_STEPS):
    """Each group's lr (and momentum or beta1) after each step."""
    import warnings

    params, loss_fn = problem(lib, "float64")
    opt = getattr(lib.optim, opt_name)([params[0]], **opt_kwargs)
    opt.add_param_group({"params": [params[1]], "lr": opt_kwargs["lr"] * 0.5})
    sched = eval(factory, {"swa": lib.optim.swa_utils})(lib.optim.lr_scheduler, opt)
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(steps):
            opt.zero_grad()
            loss_fn().backward()
            opt.step()
            if type(sched).__name__ == "ReduceLROnPlateau":
                sched.step(METRICS[i])
            else:
                sched.step()
            row = []
            for g in opt.param_groups:
                row.append(float(g["lr"]))
                if "momentum" in g:
                    row.append(float(g["momentum"]))
                if "betas" in g:
                    row.append(float(g["betas"][0]))
            out.append(row)
    return {"lrs": out, "last_lr": [float(v) for v in sched.get_last_lr()]}

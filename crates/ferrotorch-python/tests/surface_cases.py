"""Smaller names of torch's library run the same way under torch
(fixtures/gen_surface.py) and ferrotorch (test_surface.py): optimizer
state swapping, Variable, anomaly switches, KinetoStepTracker, LinAlgError,
nn.utils.rnn.bind; each returns plain values."""

import warnings


def _vals(t):
    return [round(v, 6) for v in t.detach().reshape(-1).tolist()]


def swap_in_state(L):
    L.manual_seed(0)
    lin = L.nn.Linear(3, 2)
    opt = L.optim.Adam(lin.parameters(), lr=0.1)
    x = L.randn(4, 3)
    for _ in range(2):
        opt.zero_grad()
        lin(x).pow(2).sum().backward()
        opt.step()
    saved = opt.state_dict()
    shadow = {k: v.detach().clone().requires_grad_() for k, v in lin.named_parameters()}
    for p in shadow.values():
        p.grad = L.ones_like(p)
    before = _vals(lin.weight)
    with L.optim.swap_in_optimizer_params_and_state(opt, shadow, saved):
        opt.step()
        inside_step = int(opt.state[shadow["weight"]]["step"])
    after = _vals(lin.weight)
    errs = []
    for bad in [{"state": {}, "param_groups": []}, {"state": {99: {}}, "param_groups": saved["param_groups"]}]:
        try:
            with L.optim.swap_in_optimizer_params_and_state(opt, shadow, bad):
                pass
            errs.append(None)
        except RuntimeError as e:
            errs.append(str(e)[:60])
    return {"shadow_w": _vals(shadow["weight"]), "live_unchanged": before == after, "inside_step": inside_step,
            "live_step": int(opt.state[lin.weight]["step"]), "errs": errs}


def variable(L):
    V = L.autograd.Variable
    t = L.ones(2)
    v = V(t, requires_grad=True)
    (v * 3).sum().backward()
    return {"isinstance": isinstance(L.zeros(1), V), "type": type(v).__name__, "leaf": v.is_leaf,
            "grad": _vals(v.grad), "shares": v.data_ptr() == t.data_ptr(), "plain_rg": V(t).requires_grad}


def anomaly(L):
    a = L.autograd
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with a.detect_anomaly():
            inside = L.is_anomaly_enabled()
    after = L.is_anomaly_enabled()
    a.set_detect_anomaly(True)
    on = L.is_anomaly_enabled()
    with a.set_detect_anomaly(False):
        off_inside = L.is_anomaly_enabled()
    restored = L.is_anomaly_enabled()
    a.set_detect_anomaly(False)
    return {"inside": inside, "after": after, "on": on, "off_inside": off_inside, "restored": restored,
            "warned": [str(x.message)[:40] for x in w], "mt": a.is_multithreading_enabled()}


def step_tracker(L):
    K = L.autograd.profiler.KinetoStepTracker
    base = K.current_step()
    a = K.increment_step("A_case")
    b = K.increment_step("A_case")
    c = K.increment_step("B_case")
    gone = K.erase_step_count("B_case")
    return {"steps": [a - base, b - base, c - base], "gone": gone, "again": K.erase_step_count("B_case"),
            }


def linalg_errors(L):
    out = []
    for f in [lambda: L.linalg.inv(L.zeros(2, 2)), lambda: L.linalg.cholesky(L.tensor([[1.0, 2.0], [2.0, 1.0]])),
              lambda: L.linalg.solve(L.zeros(2, 2), L.ones(2))]:
        try:
            f()
            out.append(None)
        except L.linalg.LinAlgError as e:
            out.append([isinstance(e, RuntimeError), "singular" in str(e) or "positive-definite" in str(e)])
    return {"errors": out}


def rnn_bind(L):
    r = L.nn.utils.rnn
    packed = r.pack_sequence([L.ones(3, 1), L.ones(2, 1)])
    return {"bind_none": r.bind(None, lambda x: x + 1), "bind": r.bind(2, lambda x: x + 1),
            "base": isinstance(packed, r.PackedSequence_)}


CASES = {f.__name__: f for f in [swap_in_state, variable, anomaly, step_tracker, linalg_errors, rnn_bind]}


def run(L, name):
    return CASES[name](L)

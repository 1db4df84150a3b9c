"""ferrotorch.compile: torch.compile's semantics over the tracing JIT and
the native fuser. Values are checked against eager ferrotorch (itself
checked against NumPy and PyTorch elsewhere) and against NumPy."""

import warnings

import numpy as np
import pytest

import ferrotorch as torch
from ferrotorch import nn
from ferrotorch.nn import functional as F


def w9(x):
    return x * torch.sigmoid(x) * 0.5 + torch.tanh(x)


def stats():
    return torch._C._fusion_stats()


def test_w9_compiles_to_a_native_kernel_and_matches_numpy():
    cf = torch.compile(w9)
    x = torch.randn(4097)
    cf(x)  # the first call is the trace's own run
    runs = stats()[0]
    got = cf(x).numpy()
    assert stats()[0] > runs, "the fusion group did not run as native code"
    a = x.numpy().astype(np.float64)
    want = a / (1 + np.exp(-a)) * 0.5 + np.tanh(a)
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-7)


def test_the_first_call_runs_the_function_once():
    # the trace of the first call runs it: its in-place writes (and calls
    # on custom class objects) must not happen a second time
    def f(x):
        x.add_(1)
        return x * 2

    cf = torch.compile(f)
    x = torch.zeros(2)
    assert cf(x).tolist() == [2.0, 2.0] and x.tolist() == [1.0, 1.0]
    assert cf(x).tolist() == [4.0, 4.0] and x.tolist() == [2.0, 2.0]


def test_guards_recompile_on_shape_dtype_requires_grad_and_constants():
    calls = []

    def f(x, k):
        calls.append(1)
        return (x * k).exp()

    cf = torch.compile(f)
    x = torch.randn(3, 4)
    cf(x, 2.0)
    n = len(calls)
    cf(torch.randn(3, 4), 2.0)          # same signature: no retrace
    assert len(calls) == n
    cf(torch.randn(5), 2.0)             # new shape
    cf(x.double(), 2.0)                 # new dtype
    cf(x, 3.0)                          # a constant argument's value
    got = cf(x, 3.0)
    np.testing.assert_allclose(got.numpy(), np.exp(x.numpy() * 3.0), rtol=1e-6)
    assert len(cf._cache) == 4


def test_cache_limit_warns_and_runs_eagerly():
    cf = torch.compile(lambda x: x.sin() + 1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in range(1, torch._compile.cache_size_limit + 3):
            x = torch.randn(n)
            np.testing.assert_allclose(cf(x).numpy(), np.sin(x.numpy()) + 1, rtol=1e-6)
    assert len(cf._cache) == torch._compile.cache_size_limit
    assert any("cache_size_limit" in str(w.message) for w in caught)


def data_dependent(x):
    # .item() leaves the graph: the trace would freeze the value
    return x * x.sum().item()


def test_untraceable_code_runs_eagerly_or_fails_with_fullgraph():
    cf = torch.compile(data_dependent)
    x = torch.tensor([1.0, 2.0])
    assert cf(x).tolist() == [3.0, 6.0]
    y = torch.tensor([1.0, 5.0])
    assert cf(y).tolist() == [6.0, 30.0]   # eager: follows the new data
    strict = torch.compile(data_dependent, fullgraph=True)
    with pytest.raises(RuntimeError, match="fullgraph=True"):
        strict(x)


def test_decorator_forms_and_disable():
    @torch.compile
    def f(x):
        return x.relu()

    @torch.compile(fullgraph=True)
    def g(x):
        return x.abs()

    x = torch.tensor([-1.0, 2.0])
    assert f(x).tolist() == [0.0, 2.0]
    assert g(x).tolist() == [1.0, 2.0]
    h = torch.compile(w9, disable=True)
    assert h is w9
    with pytest.raises(ValueError, match="backend"):
        torch.compile(w9, backend="tvm")


class MLP(nn.Module):
    """An MLP with embeddings, the W8 shape of model."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(50, 16)
        self.fc1 = nn.Linear(16, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, idx):
        h = self.emb(idx).mean(dim=1)
        h = F.gelu(self.fc1(h))
        return self.fc2(h * torch.sigmoid(h))


def test_training_through_compile_gives_eager_parameters():
    torch.manual_seed(3)
    eager = MLP()
    compiled_src = MLP()
    compiled_src.load_state_dict(eager.state_dict())
    model = torch.compile(compiled_src)
    idx = torch.randint(0, 50, (32, 5))
    y = torch.randint(0, 10, (32,))
    oe = torch.optim.AdamW(eager.parameters(), lr=1e-2)
    oc = torch.optim.AdamW(model.parameters(), lr=1e-2)
    for _ in range(4):
        for net, opt in ((eager, oe), (model, oc)):
            opt.zero_grad()
            F.cross_entropy(net(idx), y).backward()
            opt.step()
    for (n, a), (_, b) in zip(eager.named_parameters(), compiled_src.named_parameters()):
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-5,
                                   atol=1e-6, err_msg=n)
    # eval() is guarded: a new graph, under no_grad its groups run natively
    model.eval()
    with torch.no_grad():
        out = model(idx)
    np.testing.assert_allclose(out.numpy(), eager.eval()(idx).detach().numpy(), rtol=1e-5,
                               atol=1e-6)


def test_non_contiguous_and_broadcast_inputs():
    cf = torch.compile(lambda a, b: torch.tanh(a) * b + a.exp())
    a = torch.randn(6, 8).t()                  # a transpose
    b = torch.randn(8, 1)                      # broadcast
    got = cf(a, b)
    an, bn = a.numpy(), b.numpy()
    np.testing.assert_allclose(got.numpy(), np.tanh(an) * bn + np.exp(an), rtol=2e-6)
    c = torch.randn(8, 12)[:, ::3]             # a stepped slice
    np.testing.assert_allclose(cf(c, b).numpy(),
                               np.tanh(c.numpy()) * bn + np.exp(c.numpy()), rtol=2e-6)


def test_fuser_switch_and_logging(capfd):
    x = torch.randn(100)
    torch._C._jit_set_texpr_fuser_enabled(False)
    try:
        runs = stats()[0]
        out = torch.compile(w9)(x)
        assert stats()[0] == runs
    finally:
        torch._C._jit_set_texpr_fuser_enabled(True)
    np.testing.assert_allclose(out.numpy(), w9(x).numpy(), rtol=1e-6)
    torch._logging.set_logs(graph_code=True, fusion=True)
    try:
        cf = torch.compile(lambda t: (t * 3).sigmoid())
        cf(torch.randn(7))
        cf(torch.randn(7))
    finally:
        torch._logging.set_logs(graph_code=False, fusion=False)
    err = capfd.readouterr().err
    assert "prim::FusionGroup" in err
    assert "compiled a kernel" in err and " ms" in err


def test_eval_no_grad_graphs_freeze_weights_and_follow_updates():
    torch.manual_seed(5)
    net = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                        nn.Conv2d(4, 2, 1))
    net.eval()
    model = torch.compile(net)
    x = torch.randn(2, 3, 8, 8)
    with torch.no_grad():
        got = model(x)
        np.testing.assert_allclose(got.numpy(), net(x).numpy(), rtol=1e-5, atol=1e-5)
        # batch norm folded into the convolution: no batch_norm node left
        plan = next(iter(model._compiled._cache.values()))
        assert "batch_norm" not in str(plan.script.graph)
        # a weight changed in place: the frozen graph is rebuilt
        net[0].weight.mul_(2)
        np.testing.assert_allclose(model(x).numpy(), net(x).numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["mlp", "gpt", "gru"])
def test_compiled_char_models_train_like_eager(name):
    # the character-level models of bench/char_models.py (an MLP over
    # embeddings, a nanoGPT-style transformer, a GRU), trained with AdamW:
    # compiled, every step's loss is eager's
    import pathlib
    import sys

    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[3] / "bench"))
    import char_models

    small = {
        "mlp": dict(batch=8, block=3, n_embd=8, hidden=32),
        "gpt": dict(batch=4, block=8, n_embd=16, n_head=2, n_layer=2),
        "gru": dict(batch=4, block=8, n_embd=8, hidden=16),
    }

    def train(compiled):
        torch.manual_seed(0)
        model, batch = char_models.MODELS[name](torch, **small[name])
        opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
        run = torch.compile(model) if compiled else model
        losses = [char_models.train_step(run, opt, *batch(i % 4)) for i in range(6)]
        return losses, run

    (eager, _), (compiled, run) = train(False), train(True)
    np.testing.assert_allclose(compiled, eager, rtol=2e-5, atol=1e-6)
    # traced and run as a graph, not eagerly: sizes in Python arithmetic
    # (math.sqrt(k.size(-1))) and cross_entropy's target check used to
    # make the trace unsound
    plans = list(run._compiled._cache.values())
    assert plans and all(hasattr(p, "script") for p in plans), [vars(p) for p in plans]


def test_keyword_arguments_are_bound_to_positions():
    calls = []

    def f(x, scale=2.0, *, shift):
        calls.append(1)
        return x * scale + shift

    cf = torch.compile(f)
    x = torch.randn(5)
    got = cf(x, shift=1.0)
    np.testing.assert_allclose(got.numpy(), x.numpy() * 2.0 + 1.0, rtol=1e-6)
    n = len(calls)
    cf(torch.randn(5), shift=1.0)             # the same signature: no retrace
    assert len(calls) == n
    np.testing.assert_allclose(cf(x, scale=3.0, shift=0.5).numpy(), x.numpy() * 3.0 + 0.5,
                               rtol=1e-6)
    assert all(hasattr(p, "script") for p in cf._cache.values())


def test_a_compiled_function_that_calls_a_model_still_trains_it():
    # the model's parameters are captured, not inputs: a trace would make
    # them constants and drop their gradients, so the function runs
    # eagerly (torch.compile traces through; torch.jit.trace refuses)
    torch.manual_seed(1)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    f = torch.compile(lambda x: model(x) * 2)
    x = torch.randn(5, 3)
    f(x).sum().backward()
    got = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    (model(x) * 2).sum().backward()
    for g, p in zip(got, model.parameters()):
        np.testing.assert_allclose(g.numpy(), p.grad.numpy(), rtol=1e-6)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_compiled_gradients_at_the_edges_are_eagers(dtype):
    # softplus / mish past their threshold (100, +inf): the smooth
    # branch's exp overflows, and its unused gradient (0 · inf) was NaN
    # in the compiled backward where eager's (PyTorch's) is g; relu at
    # NaN and number-bound clamps at their bounds are PyTorch's rules
    inf, nan = float("inf"), float("nan")
    vals = [nan, -inf, -100.0, -2.0, -1.0, 0.0, 0.5, 2.0, 3.0, 30.0, 100.0, inf] * 8

    def f(x):
        return (F.softplus(x) + F.softplus(x, 2.0, 3.0) * 2.0 + F.relu(x) * 3.0
                + torch.clamp(x, -1.0, 2.0) * 4.0 + F.hardtanh(x) * 5.0)

    (ye, ge), (yc, gc), _ = eager_and_compiled(f, vals, dtype)
    np.testing.assert_allclose(yc, ye, rtol=1e-6)
    # (f32 softplus at -100: a subnormal sigmoid in one, 0 in the other)
    np.testing.assert_allclose(gc, ge, rtol=1e-6, atol=1e-37)
    # at 100 and +inf: softplus passes g (1 + 2), relu 3, the clamps 0
    assert gc[10] == 6.0 and gc[11] == 6.0
    # at NaN: softplus NaN (PyTorch's), so the sum is NaN
    assert np.isnan(gc[0])


def eager_and_compiled(f, vals, dtype):
    """``f``'s values and gradients (for a unit output gradient) at
    ``vals``, eager and compiled (the compiled function's second call: its
    first is the traced eager run), and whether that call ran native
    code."""
    c = torch.compile(f)
    runs, native = [], None
    for k, fn in enumerate([f, c, c]):
        x = torch.tensor(vals, dtype=dtype, requires_grad=True)
        before = stats()[0]
        y = fn(x)
        (dx,) = torch.autograd.grad(y, x, torch.ones(len(vals), dtype=dtype))
        runs.append((y.detach().numpy(), dx.numpy()))
        if k == 2:
            native = stats()[0] > before
    return runs[0], runs[2], native


ACTIVATIONS = [
    ("leaky_relu", lambda x: F.leaky_relu(x, 0.1)),
    ("hardtanh", lambda x: F.hardtanh(x, -1.0, 2.0)),
    ("relu6", lambda x: F.relu6(x)),
    ("softplus", lambda x: F.softplus(x, 2.0, 3.0)),
    ("mish", lambda x: F.mish(x)),
    ("hardswish", lambda x: F.hardswish(x)),
    ("hardsigmoid", lambda x: F.hardsigmoid(x)),
    ("logsigmoid", lambda x: F.logsigmoid(x)),
    ("elu", lambda x: F.elu(x, 0.7)),
    ("selu", lambda x: F.selu(x)),
    ("celu", lambda x: F.celu(x, 0.5)),
    ("gelu", lambda x: F.gelu(x)),
    ("gelu_tanh", lambda x: F.gelu(x, approximate="tanh")),
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("name,act", ACTIVATIONS, ids=[a[0] for a in ACTIVATIONS])
def test_every_activation_row_compiles_to_eagers_values_and_gradients(name, act, dtype):
    # each activation row (Note [Activation rows]) lowers to native code
    # with its parameters, and the compiled chain rule over its value is
    # eager's backward formula (PyTorch's) at NaN, the infinities and the
    # branch points
    from edge_ops import VALUES
    vals = VALUES * 8

    def f(x):
        return act(x * 1.0) * 3.0 + 1.0

    (ye, ge), (yc, gc), native = eager_and_compiled(f, vals, dtype)
    assert native, f"{name} did not run as native code"
    tol = dict(rtol=2e-6, atol=1e-37) if dtype == torch.float32 else dict(rtol=1e-12, atol=0)
    np.testing.assert_allclose(yc, ye, **tol)
    np.testing.assert_allclose(gc, ge, **tol)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_compiled_clamp_with_tensor_bounds_is_eagers(dtype):
    # every combination of NaN, ±inf, below, equal and above for x, min
    # and max: ties halve the gradient, a NaN x passes it (to max too
    # where max < min), a NaN bound stops it past the other bound
    inf, nan = float("inf"), float("nan")
    vals = [nan, -inf, -1.0, 0.0, 1.0, inf]
    trip = [(a, b, c) for a in vals for b in vals for c in vals]
    cols = [torch.tensor([t[k] for t in trip], dtype=dtype) for k in range(3)]

    def f(x, lo, hi):
        return torch.clamp(x * 2.0, lo, hi) * 3.0 + torch.clamp(x, min=lo) * 5.0

    c = torch.compile(f)
    runs = []
    for fn in [f, c, c]:   # c's first call is the traced eager run
        ins = [t.clone().requires_grad_(True) for t in cols]
        y = fn(*ins)
        grads = torch.autograd.grad(y, ins, torch.ones(len(trip), dtype=dtype))
        runs.append([y.detach()] + list(grads))
    for e, k in zip(runs[0], runs[2]):
        np.testing.assert_array_equal(k.numpy(), e.numpy())
    # x = 0, min = 0, max = 1: 2x ties min (half of 3·2), x ties min (half of 5)
    i = trip.index((0.0, 0.0, 1.0))
    assert runs[2][1][i].item() == 3.0 + 2.5
    # x = NaN, min = 1, max = -1: max < min, x and max both take it
    i = 0 * 36 + 4 * 6 + 2   # (NaN never compares equal: by position)
    assert np.isnan(trip[i][0]) and trip[i][1:] == (1.0, -1.0)
    assert runs[2][1][i].item() == 6.0 + 5.0 and runs[2][3][i].item() == 3.0

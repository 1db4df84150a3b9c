"""Pointwise ops and activations at NaN, ±inf, ±0 and at their branch
points, forward and backward (finite and infinite output gradients),
against PyTorch's results stored by ``fixtures/gen_edge_grads.py``. Where
a NaN is, where an infinite gradient becomes 0 rather than NaN, and which
side of a branch point takes the gradient are all PyTorch's."""

import pytest

import ferrotorch as ft
from edge_fixture import dec, load, same
from edge_ops import REPEAT, VALUES, cases

DATA, CASES = load("edge_grads")
OPS = dict(cases(ft))
# ops whose values PyTorch computes differently at an edge for reasons of
# its own vector code, with the positions we leave as they are:
# gelu(inf) is NaN in PyTorch's vectorised erf path (inf·1 is inf)
FORWARD_EXCEPTIONS = {("gelu", VALUES.index(float("inf")) + len(VALUES) * k) for k in range(REPEAT)}


def check(name, what, got, want, rtol, skip=()):
    n = len(VALUES) * REPEAT
    bad = [(i, VALUES[i % len(VALUES)] if len(got) == n else i, g, w)
           for i, (g, w) in enumerate(zip(got, want))
           if i not in skip and not same(g, w, rtol)]
    assert not bad, f"{name} {what}: (index, x, ours, torch) {bad}"


def test_the_fixture_covers_every_case():
    assert set(OPS) == {c["op"] for c in DATA["cases"]}
    assert [repr(v) for v in dec(DATA["values"])] == [repr(v) for v in VALUES * REPEAT]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op", sorted(OPS))
def test_edge_values_and_gradients_match_torch(op, dtype):
    c = CASES[(op, dtype)]
    # gradients such as tanh's 1 - y² cancel: one ulp of y apart from
    # torch's is 1e-4 of them; branch and NaN mistakes are far larger
    rtol, grad_rtol = (2e-6, 1e-4) if dtype == "float32" else (1e-12, 1e-7)
    dt = getattr(ft, dtype)
    x = ft.tensor(VALUES * REPEAT, dtype=dt, requires_grad=True)
    y = OPS[op](x)
    assert list(y.shape) == c["shape"]
    skip = {i for (o, i) in FORWARD_EXCEPTIONS if o == op}
    check(op, "forward", y.detach().reshape(-1).tolist(), dec(c["out"]), rtol, skip)
    n = y.numel()
    for k, g in enumerate([ft.arange(1.0, n + 1, dtype=dt).reshape(y.shape),
                           ft.full(y.shape, float("inf"), dtype=dt)]):
        (dx,) = ft.autograd.grad(y, x, g, retain_graph=True)
        check(op, f"grad {['finite', 'inf'][k]}", dx.tolist(), dec(c["grads"][k]), grad_rtol)

"""Binary pointwise ops at every pair of edge values, values and both
operands' gradients against PyTorch's results stored by
``fixtures/gen_binary_edges.py``: where a NaN is, where a gradient is 0
rather than NaN (atan2 at the origin), which operand takes it (fmax of
two NaNs), and quotients that must not square a tiny divisor first."""

import pytest

import ferrotorch as ft
from edge_fixture import dec, load, same
from binary_edge_ops import XS, YS, cases

DATA, CASES = load("binary_edges")
OPS = dict(cases(ft))
INF = float("inf")
# where we differ from PyTorch on purpose, and why (x, y pairs):
# - logaddexp/logaddexp2 of two equal infinities: PyTorch's gradient
#   1 / (1 + exp(y - x)) is NaN there (inf - inf); ours shares it, 1/2 each;
# - binary_cross_entropy_with_logits at x = -inf: PyTorch's value is NaN
#   (its max trick computes inf - inf); ours is the limit, +inf.
SAME_INF = {(-INF, -INF), (INF, INF)}
DIFFER = {
    ("logaddexp", "gx"): SAME_INF, ("logaddexp", "gy"): SAME_INF,
    ("logaddexp2", "gx"): SAME_INF, ("logaddexp2", "gy"): SAME_INF,
    ("binary_ce_logits", "out"): {(-INF, y) for y in YS},
}


def test_the_fixture_covers_every_case():
    assert set(OPS) == {c["op"] for c in DATA["cases"]}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op", sorted(OPS))
def test_edge_pairs_match_torch(op, dtype):
    c = CASES[(op, dtype)]
    rtol = 2e-5 if dtype == "float32" else 1e-10
    dt = getattr(ft, dtype)
    x = ft.tensor(XS, dtype=dt, requires_grad=True)
    y = ft.tensor(YS, dtype=dt, requires_grad=True)
    r = OPS[op](x, y)
    g = ft.arange(1.0, r.numel() + 1, dtype=r.dtype).reshape(r.shape)
    gx, gy = ft.autograd.grad(r, [x, y], g, allow_unused=True)
    got = {"out": r.detach().reshape(-1).tolist(),
           "gx": None if gx is None else gx.tolist(),
           "gy": None if gy is None else gy.tolist()}
    for what in ["out", "gx", "gy"]:
        if c[what] is None:
            assert got[what] is None, (op, what)
            continue
        assert got[what] is not None, (op, what)
        want = dec(c[what])
        skip = DIFFER.get((op, what), set())
        bad = [(XS[i], YS[i], a, b) for i, (a, b) in enumerate(zip(got[what], want))
               if (XS[i], YS[i]) not in skip and not same(a, b, rtol)]
        assert not bad, f"{op} {dtype} {what}: (x, y, ours, torch) {bad}"

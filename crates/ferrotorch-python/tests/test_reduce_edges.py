"""Reductions, normalisations, scans and losses at edge rows (NaN, ±inf,
all -inf, ties, ±0, overflowing and underflowing squares), values and
gradients against PyTorch's results stored by
``fixtures/gen_reduce_edges.py``."""

import pytest

import ferrotorch as ft
from edge_fixture import dec, load, same
from reduce_edge_ops import ROWS, cases

DATA, CASES = load("reduce_edges")
OPS = dict(cases(ft))
# rows where we differ from PyTorch on purpose, and why:
# - ties (rows 4-9): which of equal elements topk/kthvalue return is
#   unspecified (PyTorch's own CPU and CUDA differ), so the gradient lands
#   on another of the tied elements;
# - float32 row 9 (±1e30): PyTorch's 2-norms square in float32 and
#   overflow to inf (normalize gives 0, the gradient 0); ours scale and
#   give the finite norm; its layer norm's variance overflows in both
#   (PyTorch NaN, ours 0);
# - float32 row 10 (1e-30, 1e-40): PyTorch's squares underflow and its
#   norm gradient is 0; ours keep the scale (x / |x|).
TIES = {4, 5, 6, 7, 8, 9}
DIFFER = {
    ("topk", "grad"): TIES, ("kthvalue", "grad"): TIES,
}
DIFFER_F32 = {
    ("norm2", "out"): {9}, ("norm2", "grad"): {9, 10},
    ("dist", "out"): {9}, ("dist", "grad"): {9, 10},
    ("normalize", "out"): {9}, ("normalize", "grad"): {9},
    ("layer_norm", "out"): {9}, ("layer_norm", "grad"): {9},
}


def test_the_fixture_covers_every_case():
    assert set(OPS) == {c["op"] for c in DATA["cases"]}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op", sorted(OPS))
def test_edge_rows_match_torch(op, dtype):
    c = CASES[(op, dtype)]
    rtol = 2e-5 if dtype == "float32" else 1e-10
    x = ft.tensor(ROWS, dtype=getattr(ft, dtype), requires_grad=True)
    y = OPS[op](x)
    assert list(y.shape) == c["shape"], op
    per_row = len(ROWS)
    for what, got in [("out", y.detach().double().reshape(-1).tolist())] + (
        [("grad", None)] if "grad" in c else []
    ):
        if what == "grad":
            g = ft.arange(1.0, y.numel() + 1, dtype=y.dtype).reshape(y.shape)
            (dx,) = ft.autograd.grad(y, x, g)
            got = dx.reshape(-1).tolist()
        want = dec(c[what])
        assert len(got) == len(want), (op, what)
        skip = set(DIFFER.get((op, what), ()))
        if dtype == "float32":
            skip |= DIFFER_F32.get((op, what), set())
        # positions map to rows when the tensor has one entry per element
        # or one per row
        if len(want) == per_row * 4:
            row = lambda i: i // 4  # noqa: E731
        elif len(want) == per_row:
            row = lambda i: i  # noqa: E731
        else:
            row = lambda i: -1  # noqa: E731
        bad = [(i, row(i), g, w) for i, (g, w) in enumerate(zip(got, want))
               if row(i) not in skip and not same(g, w, rtol)]
        assert not bad, f"{op} {dtype} {what}: (index, row, ours, torch) {bad}"

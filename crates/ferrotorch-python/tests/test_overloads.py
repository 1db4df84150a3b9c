"""Overloads torch's Python argument parser resolves (issue 25), each
against values worked out by hand."""

import math

import pytest

import ferrotorch as torch

X = [[1.0, 5.0, 2.0], [4.0, 0.0, 6.0]]


def pvar(xs, unbiased):
    m = sum(xs) / len(xs)
    return sum((v - m) ** 2 for v in xs) / (len(xs) - (1 if unbiased else 0))


def test_std_and_var_take_unbiased():
    x = torch.tensor(X)
    flat = [v for row in X for v in row]
    assert x.var(unbiased=False).item() == pytest.approx(pvar(flat, False))
    assert x.std(unbiased=True).item() == pytest.approx(math.sqrt(pvar(flat, True)))
    assert x.var(True).item() == pytest.approx(pvar(flat, True))  # std(Tensor, bool)
    cols = x.var(0, False).tolist()  # var.dim(self, dim, unbiased)
    assert cols == pytest.approx([pvar([r[j] for r in X], False) for j in range(3)])
    rows = torch.std(x, 1, True, True)
    assert rows.shape == (2, 1)
    assert rows.flatten().tolist() == pytest.approx([math.sqrt(pvar(r, True)) for r in X])
    v, m = torch.var_mean(x, unbiased=False)
    assert (v.item(), m.item()) == pytest.approx((pvar(flat, False), 3.0))
    s, m = torch.std_mean(x, dim=1, unbiased=True)
    assert s.tolist() == pytest.approx([math.sqrt(pvar(r, True)) for r in X])
    # correction= still wins where it is given
    assert x.var(correction=0).item() == pytest.approx(pvar(flat, False))


def test_max_and_min_of_two_tensors():
    x, y = torch.tensor(X), torch.full((2, 3), 3.0)
    assert x.max(y).tolist() == [[3.0, 5.0, 3.0], [4.0, 3.0, 6.0]]
    assert torch.min(x, torch.tensor([2.0, 2.0, 2.0])).tolist() == [[1.0, 2.0, 2.0], [2.0, 0.0, 2.0]]
    assert x.max().item() == 6.0 and x.max(1).values.tolist() == [5.0, 6.0]


def test_round_with_decimals():
    assert torch.round(torch.tensor([1.2345, -12.5, 155.0]), decimals=2).tolist() == pytest.approx(
        [1.23, -12.5, 155.0])
    # half to even at the rounding place: 12.5 -> 12
    assert torch.tensor([1234.5, 1250.0]).round(decimals=-2).tolist() == [1200.0, 1200.0]
    assert torch.round(torch.tensor([2.5]), decimals=0).tolist() == [2.0]
    x = torch.tensor([1.25, 2.5], requires_grad=True)
    torch.round(x, decimals=1).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0]


def test_nonzero_as_tuple():
    x = torch.tensor([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]])
    rows, cols = x.nonzero(as_tuple=True)
    assert rows.tolist() == [0, 0, 1] and cols.tolist() == [0, 2, 1]
    assert torch.nonzero(x).tolist() == [[0, 0], [0, 2], [1, 1]]
    assert [t.tolist() for t in torch.nonzero(torch.tensor(5.0), as_tuple=True)] == [[0]]
    assert [t.tolist() for t in torch.nonzero(torch.tensor(0.0), as_tuple=True)] == [[]]


def test_argsort_split_repeat_interleave_tensordot_and_creation_devices():
    x = torch.tensor([3.0, 1.0, 2.0, 1.0])
    assert torch.argsort(x, stable=True).tolist() == [1, 3, 2, 0]
    a, b = torch.arange(5.0).split([2, 3])
    assert a.tolist() == [0.0, 1.0] and b.tolist() == [2.0, 3.0, 4.0]
    assert torch.repeat_interleave(torch.tensor([1, 2]), 2, output_size=4).tolist() == [1, 1, 2, 2]
    m = torch.arange(6.0).reshape(2, 3)
    n = torch.arange(6.0).reshape(3, 2)
    assert torch.tensordot(m, n, dims=1).tolist() == torch.mm(m, n).tolist()
    assert torch.tensordot(m, n, dims=([1], [0])).tolist() == torch.mm(m, n).tolist()
    assert torch.tensordot(m, m, dims=2).item() == sum(v * v for v in range(6))
    assert torch.randn(2, 3, device="cpu").shape == (2, 3)
    assert torch.rand(4, device="cpu", dtype=torch.float64).dtype == torch.float64
    r = torch.randint(3, (5,), device="cpu")
    assert r.dtype == torch.int64 and all(0 <= v < 3 for v in r.tolist())

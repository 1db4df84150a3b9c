"""unique, mode, nanmedian, histc, histogram, quantile, gcd/lcm,
nextafter, frexp, the small creation ops and torch.signal.windows, against
NumPy (and hand-computed values where NumPy has no equivalent)."""

import math

import numpy as np
import pytest

import ferrotorch as torch
from ferrotorch.autograd import gradcheck

rng = np.random.default_rng(1)


def close(t, want, tol=1e-6):
    np.testing.assert_allclose(np.asarray(t.detach().numpy()), want, rtol=tol, atol=tol)


def test_unique_matches_numpy():
    a = rng.integers(-3, 4, (5, 6))
    u, inv, cnt = torch.unique(torch.tensor(a), return_inverse=True, return_counts=True)
    nu, ninv, ncnt = np.unique(a, return_inverse=True, return_counts=True)
    close(u, nu)
    close(inv, ninv.reshape(a.shape))
    close(cnt, ncnt)
    assert torch.unique(torch.tensor(a)).shape == nu.shape
    rows = np.array([[1, 2], [1, 2], [0, 5], [1, 2]])
    u, inv, cnt = torch.tensor(rows).unique(dim=0, return_inverse=True, return_counts=True)
    nu, ninv, ncnt = np.unique(rows, axis=0, return_inverse=True, return_counts=True)
    close(u, nu)
    close(inv, ninv.reshape(-1))
    close(cnt, ncnt)
    # NaNs are all distinct, as in torch
    assert torch.unique(torch.tensor([float("nan"), float("nan"), 1.0])).shape == (3,)


def test_unique_consecutive():
    x = torch.tensor([1, 1, 2, 2, 3, 1, 1, 2])
    u, inv, cnt = torch.unique_consecutive(x, return_inverse=True, return_counts=True)
    assert u.tolist() == [1, 2, 3, 1, 2]
    assert inv.tolist() == [0, 0, 1, 1, 2, 3, 3, 4]
    assert cnt.tolist() == [2, 2, 1, 2, 1]
    m = torch.tensor([[1, 1, 2], [3, 3, 4]])
    assert x.unique_consecutive().tolist() == [1, 2, 3, 1, 2]
    assert torch.unique_consecutive(m, dim=1).tolist() == [[1, 2], [3, 4]]


def test_mode_and_nanmedian():
    x = torch.tensor([[1, 2, 2, 3, 3, 0], [5, 5, 1, 1, 4, 4.0]])
    v, i = torch.mode(x, 1)
    # the smallest of the most frequent values, at its last occurrence
    assert v.tolist() == [2.0, 1.0] and i.tolist() == [2, 3]
    y = torch.tensor([[1.0, float("nan"), 3.0, 2.0], [4.0, 0.0, float("nan"), 8.0]])
    v, i = torch.nanmedian(y, 1)
    assert v.tolist() == [2.0, 4.0] and i.tolist() == [3, 0]
    assert torch.nanmedian(y).item() == 2.0  # the lower median of 0, 1, 2, 3, 4, 8
    g = torch.tensor(rng.standard_normal((3, 5)), requires_grad=True)
    assert gradcheck(lambda t: torch.nanmedian(t, 1)[0], (g,))
    assert gradcheck(lambda t: torch.mode(t, 0)[0], (g,))


def test_histc_and_histogram():
    x = rng.standard_normal(50)
    h = torch.histc(torch.tensor(x), bins=7, min=-1, max=1)
    close(h, np.histogram(x, bins=7, range=(-1, 1))[0])
    close(torch.histc(torch.tensor([1.0, 2, 1])), np.histogram([1, 2, 1], bins=100)[0])
    hist, edges = torch.histogram(torch.tensor(x), bins=5)
    nh, ne = np.histogram(x, bins=5)
    close(hist, nh)
    close(edges, ne)
    w = rng.random(50)
    hist, _ = torch.histogram(torch.tensor(x), torch.tensor([-2.0, 0.0, 0.5, 3.0], dtype=torch.float64),
                              weight=torch.tensor(w), density=True)
    close(hist, np.histogram(x, bins=[-2.0, 0.0, 0.5, 3.0], weights=w, density=True)[0])
    with pytest.raises(NotImplementedError):
        torch.histc(torch.tensor([1, 2]))


@pytest.mark.parametrize("interp", ["linear", "lower", "higher", "midpoint", "nearest"])
def test_quantile_matches_numpy(interp):
    a = rng.standard_normal((4, 7))
    q = np.array([0.0, 0.3, 0.5, 0.95, 1.0])
    got = torch.quantile(torch.tensor(a), torch.tensor(q), dim=1, keepdim=True, interpolation=interp)
    close(got, np.quantile(a, q, axis=1, keepdims=True, method=interp), 1e-12)
    close(torch.quantile(torch.tensor(a), 0.4, interpolation=interp),
          np.quantile(a, 0.4, method=interp), 1e-12)
    b = a.copy()
    b[1, 2] = np.nan
    close(torch.nanquantile(torch.tensor(b), torch.tensor(q), dim=1, interpolation=interp),
          np.nanquantile(b, q, axis=1, method=interp), 1e-12)
    assert math.isnan(torch.quantile(torch.tensor(b), 0.5, dim=1)[1].item())


def test_quantile_gradient_and_errors():
    x = torch.tensor(rng.standard_normal((3, 6)), requires_grad=True)
    q = torch.tensor([0.25, 0.8], dtype=torch.float64)
    assert gradcheck(lambda t: torch.quantile(t, q, dim=1), (x,))
    with pytest.raises(RuntimeError, match=r"range \[0, 1\]"):
        torch.quantile(torch.ones(3), 1.5)
    with pytest.raises(RuntimeError, match="interpolation"):
        torch.quantile(torch.ones(3), 0.5, interpolation="cubic")


def test_gcd_lcm_nextafter_frexp():
    a, b = rng.integers(-50, 50, 20), rng.integers(-50, 50, 20)
    close(torch.gcd(torch.tensor(a), torch.tensor(b)), np.gcd(a, b))
    close(torch.lcm(torch.tensor(a), torch.tensor(b)), np.lcm(a, b))
    with pytest.raises(NotImplementedError):
        torch.gcd(torch.ones(2), torch.ones(2))
    x, y = rng.standard_normal(10), rng.standard_normal(10)
    assert np.array_equal(np.asarray(torch.nextafter(torch.tensor(x), torch.tensor(y)).numpy()),
                          np.nextafter(x, y))
    x32 = x.astype(np.float32)
    assert np.array_equal(np.asarray(torch.nextafter(torch.tensor(x32), torch.tensor(y.astype(np.float32))).numpy()),
                          np.nextafter(x32, y.astype(np.float32)))
    v = np.array([0.0, 1.0, -3.5, 1e-310, 123.25, np.inf])
    m, e = torch.frexp(torch.tensor(v))
    nm, ne = np.frexp(v)
    close(m, nm, 0)
    assert e.dtype is torch.int32 and e.tolist() == ne.tolist()
    g = torch.tensor([3.0, -0.2, 7.5], dtype=torch.float64, requires_grad=True)
    assert gradcheck(lambda t: torch.frexp(t)[0], (g,))


def test_small_creation_ops():
    t = torch.empty_strided((2, 3), (1, 2))
    assert t.shape == (2, 3) and t.stride() == (1, 2)
    p = torch.empty_permuted((2, 3, 4), (2, 0, 1))
    assert p.shape == (2, 3, 4) and p.stride() == (3, 1, 6)  # dim 2 outermost, dim 1 innermost
    assert torch.scalar_tensor(3, dtype=torch.int64).tolist() == 3
    x = torch.arange(6.0).reshape(2, 3)
    assert torch.fill(x, 2.5).tolist() == [[2.5] * 3] * 2 and x[0, 0].item() == 0.0
    close(torch.constant_pad_nd(x, [1, 0], 9.0), np.pad(np.arange(6.0).reshape(2, 3), ((0, 0), (1, 0)), constant_values=9))
    r = torch.randint_like(x, 5)
    assert r.shape == x.shape and r.dtype is torch.float32 and 0 <= r.min().item() and r.max().item() < 5
    assert [c.shape for c in torch.unsafe_split(torch.arange(5), 2)] == [(2,), (2,), (1,)]
    assert torch.broadcast_shapes((2, 1), (3,), 1) == torch.Size([2, 3])
    with pytest.raises(RuntimeError, match="Shape mismatch"):
        torch.broadcast_shapes((2,), (3,))
    assert (True & torch.tensor([True, False])).tolist() == [True, False]
    assert torch.ones(2).cdouble().dtype is torch.complex128


def test_signal_windows_match_numpy():
    W = torch.signal.windows
    for M in (1, 6, 9):
        close(W.hann(M, dtype=torch.float64), np.hanning(M), 1e-12)
        close(W.hamming(M, dtype=torch.float64), np.hamming(M), 1e-12)
        close(W.blackman(M, dtype=torch.float64), np.blackman(M), 1e-12)
        close(W.bartlett(M, dtype=torch.float64), np.bartlett(M), 1e-12)
        close(W.kaiser(M, beta=4.0, dtype=torch.float64), np.kaiser(M, 4.0), 1e-9)
    n = np.arange(8.0)
    close(W.gaussian(8, std=2.0, dtype=torch.float64), np.exp(-((n - 3.5) / 2.0) ** 2 / 2), 1e-12)
    close(W.exponential(8, tau=3.0, dtype=torch.float64), np.exp(-np.abs(n - 3.5) / 3.0), 1e-12)
    close(W.cosine(8, dtype=torch.float64), np.sin(np.pi * (n + 0.5) / 8), 1e-12)
    close(W.hann(8, sym=False, dtype=torch.float64), np.hanning(9)[:-1], 1e-12)
    with pytest.raises(ValueError, match="non-negative window length"):
        W.hann(-1)


def test_nextafter_gradient_is_torchs():
    a = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    b = torch.tensor([2.0, 0.0], dtype=torch.float64, requires_grad=True)
    torch.nextafter(a, b).sum().backward()
    assert a.grad.tolist() == [1.0, 1.0] and (b.grad is None or b.grad.tolist() == [0.0, 0.0])


def test_gradient_matches_numpy():
    a = rng.standard_normal((4, 6))
    x = torch.tensor(a)
    for eo in (1, 2):
        for got, want in zip(torch.gradient(x, edge_order=eo), np.gradient(a, edge_order=eo)):
            close(got, want, 1e-12)
    coords = np.array([0.0, 1.0, 3.0, 4.5, 7.0, 7.5])
    for eo in (1, 2):
        (g,) = torch.gradient(x, spacing=[torch.tensor(coords)], dim=1, edge_order=eo)
        close(g, np.gradient(a, coords, axis=1, edge_order=eo), 1e-12)
    got = torch.gradient(x, spacing=(2.0, 0.5))
    for g, w in zip(got, np.gradient(a, 2.0, 0.5)):
        close(g, w, 1e-12)
    with pytest.raises(RuntimeError, match="edge_order"):
        torch.gradient(torch.ones(2), edge_order=2)
    xg = torch.tensor(a, requires_grad=True)
    assert gradcheck(lambda t: torch.gradient(t, dim=1)[0], (xg,))


def test_random_fills_follow_their_distributions():
    g = torch.Generator()
    g.manual_seed(0)
    n = 20000
    e = torch.empty(n, dtype=torch.float64).exponential_(2.0, generator=g)
    assert abs(e.mean().item() - 0.5) < 0.02 and e.min().item() >= 0
    geo = torch.empty(n).geometric_(0.25, generator=g)
    assert abs(geo.mean().item() - 4.0) < 0.15 and geo.min().item() >= 1
    c = torch.empty(n, dtype=torch.float64).cauchy_(1.0, 2.0, generator=g)
    assert abs(c.median().item() - 1.0) < 0.1
    ln = torch.empty(n, dtype=torch.float64).log_normal_(0.0, 0.5, generator=g)
    assert abs(ln.log().mean().item()) < 0.02 and abs(ln.log().std().item() - 0.5) < 0.02
    m = torch.normal(torch.full((n,), 3.0), 2.0, generator=g)
    assert abs(m.mean().item() - 3.0) < 0.1 and abs(m.std().item() - 2.0) < 0.1
    assert torch.normal(0.0, 1.0, (2, 3)).shape == (2, 3)
    with pytest.raises(RuntimeError, match="sigma"):
        torch.empty(2).cauchy_(0, -1)
    assert torch.promote_types(torch.int32, torch.float16) is torch.float16
    assert torch.iinfo(torch.int16).max == 32767


def test_index_reduce():
    x = torch.ones(3, 2)
    s = torch.tensor([[2.0, 3], [4, 5], [6, 7]])
    i = torch.tensor([0, 0, 2])
    close(x.index_reduce(0, i, s, "mean"), [[7 / 3, 3.0], [1, 1], [3.5, 4]])
    close(x.index_reduce(0, i, s, "mean", include_self=False), [[3, 4], [1, 1], [6, 7]])
    close(x.index_reduce(0, i, s, "prod", include_self=False), [[8, 15], [1, 1], [6, 7]])
    close(torch.index_reduce(x, 0, i, s, "amax"), [[4, 5], [1, 1], [6, 7]])
    close(x.index_reduce(0, i, s, "amin"), [[1, 1], [1, 1], [1, 1]])
    with pytest.raises(RuntimeError, match="reduce"):
        x.index_reduce(0, i, s, "sum")
    xs = torch.tensor(rng.standard_normal((3, 2)), requires_grad=True)
    ss = torch.tensor(rng.standard_normal((3, 2)), requires_grad=True)
    assert gradcheck(lambda a, b: a.index_reduce(0, i, b, "prod"), (xs, ss))

"""nonzero_static, as_strided_scatter, the native_* norms, histogramdd and
the randomized low-rank factorizations, against NumPy and closed forms."""

import numpy as np
import pytest

import ferrotorch as torch


def test_nonzero_static_pads_and_truncates():
    x = torch.tensor([[0, 1], [2, 0]])
    assert torch.nonzero_static(x, size=3).tolist() == [[0, 1], [1, 0], [-1, -1]]
    assert torch.nonzero_static(x, size=1, fill_value=9).tolist() == [[0, 1]]
    assert tuple(torch.nonzero_static(torch.tensor(1.0), size=2).shape) == (2, 0)


def test_as_strided_scatter_values_and_gradient():
    x = torch.zeros(3, 3, dtype=torch.float64, requires_grad=True)
    s = torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.float64, requires_grad=True)
    y = torch.as_strided_scatter(x, s, (2, 2), (1, 2), 1)
    # the view covers flat positions 1 + {0, 1, 2, 3} (stride (1, 2)): s column-major
    assert y.reshape(-1).tolist() == [0, 1, 3, 2, 4, 0, 0, 0, 0]
    gx, gs = torch.autograd.grad(y.sum(), [x, s])
    assert gx.reshape(-1).tolist() == [1, 0, 0, 0, 0, 1, 1, 1, 1]  # the uncovered positions
    assert gs.tolist() == [[1, 1], [1, 1]]
    assert torch.autograd.gradcheck(
        lambda a, b: torch.as_strided_scatter(a, b, (2, 2), (2, 1), 0),
        (torch.randn(3, 3, dtype=torch.float64, requires_grad=True),
         torch.randn(2, 2, dtype=torch.float64, requires_grad=True)))


def test_native_norms_return_their_statistics():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 3, 4))
    out, mean, rstd = torch.native_layer_norm(torch.tensor(a), (3, 4), None, None, 1e-5)
    np.testing.assert_allclose(mean.numpy().ravel(), a.reshape(2, -1).mean(1), rtol=1e-12)
    np.testing.assert_allclose(rstd.numpy().ravel(), 1 / np.sqrt(a.reshape(2, -1).var(1) + 1e-5),
                               rtol=1e-12)
    assert tuple(mean.shape) == (2, 1, 1)
    b = rng.standard_normal((4, 3, 5))
    rm, rv = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    out, sm, sv = torch.native_batch_norm(torch.tensor(b), None, None, rm, rv, True, 0.1, 1e-5)
    np.testing.assert_allclose(sm.numpy(), b.mean((0, 2)), rtol=1e-12)
    np.testing.assert_allclose(rm.numpy(), 0.1 * b.mean((0, 2)), rtol=1e-12)
    _, e1, e2 = torch.native_batch_norm(torch.tensor(b), None, None, rm, rv, False, 0.1, 1e-5)
    assert tuple(e1.shape) == (0,) and tuple(e2.shape) == (0,)
    _, gm, gr = torch.native_group_norm(torch.tensor(b), None, None, 4, 3, 5, 3, 1e-5)
    np.testing.assert_allclose(gm.numpy(), b.mean(2), rtol=1e-12)


def test_histogramdd_matches_numpy():
    rng = np.random.default_rng(1)
    pts = rng.random((200, 2))
    w = rng.random(200)
    for kw in [dict(bins=[3, 4]), dict(bins=5, range=[0.0, 1.0, 0.2, 0.8]),
               dict(bins=[2, 3], weight=True), dict(bins=[4, 4], density=True)]:
        weight = torch.tensor(w) if kw.pop("weight", False) else None
        got = torch.histogramdd(torch.tensor(pts), weight=weight, **kw)
        rng_ = kw.get("range")
        want, edges = np.histogramdd(pts, bins=kw["bins"], weights=None if weight is None else w,
                                     range=None if rng_ is None else [rng_[:2], rng_[2:]],
                                     density=kw.get("density", False))
        np.testing.assert_allclose(got.hist.numpy(), want, rtol=1e-12)
        for e, f in zip(got.bin_edges, edges):
            np.testing.assert_allclose(e.numpy(), f, rtol=1e-12)
    edges = [torch.tensor([0.0, 0.5, 1.0], dtype=torch.float64)] * 2
    got = torch.histogramdd(torch.tensor(pts), bins=edges)
    want, _ = np.histogramdd(pts, bins=[[0, 0.5, 1.0]] * 2)
    np.testing.assert_allclose(got.hist.numpy(), want)


def test_low_rank_factorizations_recover_a_low_rank_matrix():
    torch.manual_seed(0)
    a = torch.randn(30, 3, dtype=torch.float64) @ torch.randn(3, 20, dtype=torch.float64)
    U, S, V = torch.svd_lowrank(a, q=5)
    np.testing.assert_allclose((U * S) @ V.mT, a.numpy(), atol=1e-9)
    np.testing.assert_allclose(S[:3].numpy(), np.linalg.svd(a.numpy(), compute_uv=False)[:3],
                               rtol=1e-9)
    U, S, V = torch.pca_lowrank(a, q=3)
    c = a.numpy() - a.numpy().mean(0)
    np.testing.assert_allclose(S.numpy(), np.linalg.svd(c, compute_uv=False)[:3], rtol=1e-9)
    with pytest.raises(ValueError, match="not greater than min"):
        torch.pca_lowrank(a, q=50)

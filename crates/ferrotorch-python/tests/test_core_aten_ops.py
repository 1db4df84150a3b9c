"""The core ATen ops export's decompositions name (and PyTorch's .pt2
files call): values against NumPy, the saved statistics torch returns
beside them, and gradients by gradcheck."""

import numpy as np
import pytest

import ferrotorch as torch

aten = torch.ops.aten


def np_(t):
    return t.detach().numpy()


def test_softmax_and_log_softmax():
    x = torch.randn(3, 5, dtype=torch.float64)
    e = np.exp(np_(x) - np_(x).max(-1, keepdims=True))
    want = e / e.sum(-1, keepdims=True)
    assert np.allclose(np_(aten._softmax.default(x, -1, False)), want)
    assert np.allclose(np_(aten._log_softmax.default(x, 1, False)), np.log(want))
    x.requires_grad_(True)
    assert torch.autograd.gradcheck(lambda t: aten._softmax.default(t, 0, False), (x,))
    assert torch.autograd.gradcheck(lambda t: aten._log_softmax.default(t, 1, False), (x,))


def test_native_layer_norm_returns_mean_and_rstd():
    x = torch.randn(2, 3, 4, dtype=torch.float64)
    w, b = torch.randn(3, 4, dtype=torch.float64), torch.randn(3, 4, dtype=torch.float64)
    out, mean, rstd = aten.native_layer_norm.default(x, [3, 4], w, b, 1e-5)
    a = np_(x)
    m = a.mean(axis=(1, 2), keepdims=True)
    r = 1 / np.sqrt(a.var(axis=(1, 2), keepdims=True) + 1e-5)
    assert mean.shape == (2, 1, 1) and np.allclose(np_(mean), m) and np.allclose(np_(rstd), r)
    assert np.allclose(np_(out), (a - m) * r * np_(w) + np_(b))
    for t in (x, w, b):
        t.requires_grad_(True)
    assert torch.autograd.gradcheck(
        lambda x, w, b: aten.native_layer_norm.default(x, [3, 4], w, b, 1e-5)[0], (x, w, b))


def test_batch_norm_family():
    x = torch.randn(4, 3, 2, dtype=torch.float64)
    w, b = torch.rand(3, dtype=torch.float64) + 0.5, torch.randn(3, dtype=torch.float64)
    rm, rv = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    a = np_(x)
    bm, bv = a.mean(axis=(0, 2)), a.var(axis=(0, 2))
    norm = (a - bm[None, :, None]) / np.sqrt(bv[None, :, None] + 1e-5) * np_(w)[None, :, None] + np_(b)[None, :, None]
    out, mean, rstd, rm2, rv2 = aten._native_batch_norm_legit_functional.default(x, w, b, rm, rv, True, 0.1, 1e-5)
    assert np.allclose(np_(out), norm) and np.allclose(np_(mean), bm)
    assert np.allclose(np_(rstd), 1 / np.sqrt(bv + 1e-5))
    n = a.shape[0] * a.shape[2]
    assert np.allclose(np_(rm2), 0.1 * bm) and np.allclose(np_(rv2), 0.9 + 0.1 * bv * n / (n - 1))
    assert torch.equal(rm, torch.zeros(3, dtype=torch.float64))  # functional: inputs untouched
    out, _, _ = aten._native_batch_norm_legit.default(x, w, b, rm, rv, True, 0.1, 1e-5)
    assert np.allclose(np_(rm), 0.1 * bm)  # this one updates them in place
    ev, m0, r0 = aten._native_batch_norm_legit_no_training.default(x, w, b, rm, rv, 0.1, 1e-5)
    want = (a - np_(rm)[None, :, None]) / np.sqrt(np_(rv)[None, :, None] + 1e-5) * np_(w)[None, :, None] + np_(b)[None, :, None]
    assert np.allclose(np_(ev), want) and m0.numel() == 0 and r0.numel() == 0
    ns, _, _ = aten._native_batch_norm_legit.no_stats(x, w, b, True, 0.1, 1e-5)
    assert np.allclose(np_(ns), norm)
    nb, _, _ = aten.native_batch_norm.default(x, w, b, None, None, True, 0.1, 1e-5)
    assert np.allclose(np_(nb), norm)
    for t in (x, w, b):
        t.requires_grad_(True)
    assert torch.autograd.gradcheck(
        lambda x, w, b: aten._native_batch_norm_legit_functional.default(
            x, w, b, torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64),
            True, 0.1, 1e-5)[0], (x, w, b))


def test_native_dropout_mask_and_scale():
    torch.manual_seed(0)
    x = torch.ones(1000, dtype=torch.float64)
    out, mask = aten.native_dropout.default(x, 0.25, True)
    assert mask.dtype == torch.bool
    kept = np_(mask)
    assert np.allclose(np_(out)[kept], 1 / 0.75) and np.all(np_(out)[~kept] == 0)
    assert 0.65 < kept.mean() < 0.85
    same, ones = aten.native_dropout.default(x, 0.25, False)
    assert torch.equal(same, x) and bool(ones.all())
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        aten.native_dropout.default(x, 1.5, True)


def test_adaptive_pool_copy_and_unsafe_view():
    x = torch.arange(16.0, dtype=torch.float64).view(1, 1, 4, 4)
    out = aten._adaptive_avg_pool2d.default(x, [2, 2])
    assert np.allclose(np_(out), np_(x).reshape(2, 2, 2, 2).mean(axis=(1, 3)).reshape(1, 1, 2, 2))
    dst = torch.zeros(2, 3).t()  # (3, 2), strides (1, 3)
    src = torch.arange(2.0)
    got = aten.copy.default(dst, src)
    assert np.allclose(np_(got), np.broadcast_to(np_(src), (3, 2)))
    assert got.stride() == dst.stride() and torch.equal(dst, torch.zeros(3, 2))
    s = torch.randn(3, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda s: aten.copy.default(torch.zeros(2, 3, dtype=torch.float64), s), (s,))
    v = aten._unsafe_view.default(torch.arange(6.0).view(2, 3).t(), [6])
    assert v.tolist() == [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
    with pytest.raises(RuntimeError, match="output_size"):
        aten._adaptive_avg_pool2d.default(x, [2])

"""The remaining ``nn.functional`` names: in-place activations, the
``*_with_indices`` pools, ``lp_pool*``, ``gumbel_softmax``, ``conv_tbc``,
``linear_cross_entropy`` and ``multi_head_attention_forward``, each against
a NumPy or closed-form reference."""

import numpy as np
import pytest

import ferrotorch as torch
import ferrotorch.nn.functional as F


def test_inplace_activations_write_into_the_input():
    x = torch.tensor([-2.0, -0.5, 0.5, 3.0])
    assert F.relu_(x) is x and x.tolist() == [0.0, 0.0, 0.5, 3.0]
    y = torch.tensor([-2.0, 0.5])
    F.hardtanh_(y, -1.0, 1.0)
    assert y.tolist() == [-1.0, 0.5]
    z = torch.tensor([-1.0, 2.0])
    F.leaky_relu_(z, 0.5)
    assert z.tolist() == [-0.5, 2.0]
    t = torch.tensor([0.5, 2.0])
    F.threshold_(t, 1.0, -7.0)
    assert t.tolist() == [-7.0, 2.0]
    e = torch.tensor([-1.0], dtype=torch.float64)
    F.elu_(e)
    assert abs(e.item() - (np.exp(-1.0) - 1.0)) < 1e-12


def test_with_indices_aliases_return_pairs():
    x = torch.tensor([[[1.0, 5.0, 2.0, 4.0]]])
    v, i = F.max_pool1d_with_indices(x, 2)
    assert v.tolist() == [[[5.0, 4.0]]] and i.tolist() == [[[1, 3]]]
    v, i = F.adaptive_max_pool1d_with_indices(x, 1)
    assert v.tolist() == [[[5.0]]] and i.tolist() == [[[1]]]


def test_lp_pool_is_the_p_norm_of_each_window():
    a = np.arange(1.0, 17.0).reshape(1, 1, 4, 4)
    y = F.lp_pool2d(torch.tensor(a), 2, 2)
    want = np.sqrt((a.reshape(1, 1, 2, 2, 2, 2) ** 2).sum(axis=(3, 5)))
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-12)
    y1 = F.lp_pool1d(torch.tensor(a[0, 0]), 3.0, 2, stride=1)
    want1 = ((a[0, 0, :, :-1] ** 3 + a[0, 0, :, 1:] ** 3) ** (1 / 3))
    np.testing.assert_allclose(y1.numpy(), want1, rtol=1e-12)
    b = np.random.default_rng(0).random((1, 1, 2, 2, 2))
    y3 = F.lp_pool3d(torch.tensor(b), 2, 2)
    np.testing.assert_allclose(y3.numpy().ravel(), [np.sqrt((b ** 2).sum())], rtol=1e-12)


def test_gumbel_softmax():
    torch.manual_seed(0)
    logits = torch.randn(5, 4, dtype=torch.float64, requires_grad=True)
    soft = F.gumbel_softmax(logits, tau=0.5)
    np.testing.assert_allclose(soft.sum(-1).detach().numpy(), 1.0, rtol=1e-12)
    hard = F.gumbel_softmax(logits, hard=True)
    h = hard.detach().numpy()
    assert set(np.unique(h)) <= {0.0, 1.0} and (h.sum(-1) == 1).all()
    # straight-through: the one-hot forward carries the soft sample's gradient
    (hard * torch.arange(4.0, dtype=torch.float64)).sum().backward()
    assert logits.grad is not None and float(logits.grad.abs().sum()) > 0


def test_conv_tbc_against_numpy():
    rng = np.random.default_rng(1)
    x, w, b = rng.standard_normal((6, 2, 3)), rng.standard_normal((3, 3, 4)), rng.standard_normal(4)
    y = F.conv_tbc(torch.tensor(x), torch.tensor(w), torch.tensor(b), 1)
    xp = np.pad(x, ((1, 1), (0, 0), (0, 0)))
    want = np.stack([sum(xp[t + k] @ w[k] for k in range(3)) + b for t in range(6)])
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-10)
    with pytest.raises(RuntimeError, match="input channels"):
        F.conv_tbc(torch.randn(6, 2, 5), torch.randn(3, 3, 4), torch.randn(4))


def test_linear_cross_entropy_is_cross_entropy_of_the_logits():
    rng = np.random.default_rng(2)
    x, w, b = rng.standard_normal((5, 3)), rng.standard_normal((4, 3)), rng.standard_normal(4)
    t = np.array([0, 3, 1, 1, 2])
    got = F.linear_cross_entropy(torch.tensor(x), torch.tensor(w), torch.tensor(t),
                                 linear_bias=torch.tensor(b))
    z = x @ w.T + b
    lse = np.log(np.exp(z).sum(1))
    assert abs(got.item() - (lse - z[np.arange(5), t]).mean()) < 1e-12
    with pytest.raises(RuntimeError, match="dimensionality 1 or 2"):
        F.linear_cross_entropy(torch.randn(2, 2, 3), torch.tensor(w), torch.tensor(t))


def test_multi_head_attention_forward_is_the_module():
    torch.manual_seed(0)
    m = torch.nn.MultiheadAttention(8, 2, add_bias_kv=True, add_zero_attn=True)
    q, k = torch.randn(3, 2, 8), torch.randn(5, 2, 8)
    want, wts = m(q, k, k)
    got, gw = F.multi_head_attention_forward(
        q, k, k, 8, 2, m.in_proj_weight, m.in_proj_bias, m.bias_k, m.bias_v, True, 0.0,
        m.out_proj.weight, m.out_proj.bias, training=False)
    assert torch.allclose(got, want) and torch.allclose(gw, wts)
    # one head, no projections' bias: softmax(q k^T / sqrt(d)) v by hand
    eye = torch.eye(4)
    out, w = F.multi_head_attention_forward(
        q[:, :1, :4], k[:, :1, :4], k[:, :1, :4], 4, 1, torch.cat([eye, eye, eye]), None, None,
        None, False, 0.0, eye, None)
    qq, kk = q[:, 0, :4].numpy(), k[:, 0, :4].numpy()
    s = qq @ kk.T / 2.0
    p = np.exp(s - s.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    np.testing.assert_allclose(out[:, 0].detach().numpy(), p @ kk, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(w[0].detach().numpy(), p, rtol=1e-5, atol=1e-6)

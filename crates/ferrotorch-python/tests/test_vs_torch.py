"""Side-by-side checks against PyTorch itself (skipped without torch):
the same inputs through both libraries give the same values and reprs."""

import numpy as np
import pytest

import ferrotorch as ft
from conftest import HAVE_TORCH

pytestmark = pytest.mark.skipif(not HAVE_TORCH, reason="PyTorch is not installed")

if HAVE_TORCH:
    import torch


def both(a):
    return ft.tensor(a), torch.tensor(a)


def same(f, t, tol=1e-5):
    np.testing.assert_allclose(np.asarray(f.detach()), t.detach().numpy(), rtol=tol, atol=tol)


def test_losses_match_torch():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(6, 4)).astype(np.float32)
    y = np.array([0, 3, 1, 1, 2, 3])
    w = np.array([1.0, 2.0, 0.5, 1.5], dtype=np.float32)
    fx, tx = both(x)
    fy, ty = both(y)
    fw, tw = both(w)
    for kw in [{}, {"label_smoothing": 0.1}, {"ignore_index": 1}, {"reduction": "sum"}]:
        same(ft.nn.functional.cross_entropy(fx, fy, **kw), torch.nn.functional.cross_entropy(tx, ty, **kw))
        same(ft.nn.functional.cross_entropy(fx, fy, weight=fw, **kw),
             torch.nn.functional.cross_entropy(tx, ty, weight=tw, **kw))
    p = 1 / (1 + np.exp(-x))
    fp, tp = both(p)
    fq, tq = both((x > 0).astype(np.float32))
    same(ft.nn.functional.binary_cross_entropy(fp, fq), torch.nn.functional.binary_cross_entropy(tp, tq))
    same(ft.nn.functional.binary_cross_entropy_with_logits(fx, fq),
         torch.nn.functional.binary_cross_entropy_with_logits(tx, tq))
    same(ft.nn.functional.smooth_l1_loss(fx, fp), torch.nn.functional.smooth_l1_loss(tx, tp))


def test_activations_and_layers_match_torch():
    rng = np.random.default_rng(6)
    x = rng.normal(size=(2, 3, 6, 6)).astype(np.float32)
    fx, tx = both(x)
    for name in ["relu", "selu", "elu", "silu", "gelu", "softplus", "leaky_relu", "mish", "relu6"]:
        same(getattr(ft.nn.functional, name)(fx), getattr(torch.nn.functional, name)(tx))
    same(ft.nn.functional.log_softmax(fx, 1), torch.nn.functional.log_softmax(tx, 1))
    same(ft.nn.functional.avg_pool2d(fx, 2), torch.nn.functional.avg_pool2d(tx, 2))
    same(ft.nn.functional.layer_norm(fx, [6, 6]), torch.nn.functional.layer_norm(tx, [6, 6]))
    conv_f = ft.nn.Conv2d(3, 5, 3, stride=2, padding=1)
    conv_t = torch.nn.Conv2d(3, 5, 3, stride=2, padding=1)
    conv_t.load_state_dict({k: torch.tensor(v.numpy()) for k, v in conv_f.state_dict().items()})
    same(conv_f(fx), conv_t(tx), 1e-4)
    assert repr(conv_f) == repr(conv_t)
    bn_f, bn_t = ft.nn.BatchNorm2d(3), torch.nn.BatchNorm2d(3)
    same(bn_f(fx), bn_t(tx), 1e-4)
    same(bn_f.running_var, bn_t.running_var)
    assert repr(bn_f) == repr(bn_t)


def test_reprs_match_torch():
    cases = [[1.0, 2.5], [[1, 2], [3, 4]], [1e-8, 1.0], [True, False], [1e10, 1.0]]
    for c in cases:
        assert repr(ft.tensor(c)) == repr(torch.tensor(c))
    assert repr(ft.tensor([1.0], dtype=ft.float64)) == repr(torch.tensor([1.0], dtype=torch.float64))
    assert repr(ft.zeros(2, 3).shape) == repr(torch.zeros(2, 3).shape)
    for m_f, m_t in [(ft.nn.Linear(2, 3), torch.nn.Linear(2, 3)),
                     (ft.nn.Sequential(ft.nn.Linear(1, 2), ft.nn.SELU()),
                      torch.nn.Sequential(torch.nn.Linear(1, 2), torch.nn.SELU())),
                     (ft.nn.LayerNorm(4), torch.nn.LayerNorm(4)),
                     (ft.nn.Dropout(0.2), torch.nn.Dropout(0.2)),
                     (ft.nn.Embedding(5, 3, padding_idx=0), torch.nn.Embedding(5, 3, padding_idx=0))]:
        assert repr(m_f) == repr(m_t)


def test_adam_trajectory_matches_torch():
    w0 = np.random.default_rng(7).normal(size=(3, 2))
    pf = ft.nn.Parameter(ft.tensor(w0))
    pt = torch.nn.Parameter(torch.tensor(w0))
    of = ft.optim.AdamW([pf], lr=0.05, weight_decay=0.1, amsgrad=True)
    ot = torch.optim.AdamW([pt], lr=0.05, weight_decay=0.1, amsgrad=True)
    for _ in range(5):
        for p, o, lib in [(pf, of, ft), (pt, ot, torch)]:
            o.zero_grad()
            ((p * p).sum() + p.sin().sum()).backward()
            o.step()
    np.testing.assert_allclose(pf.detach().numpy(), pt.detach().numpy(), rtol=1e-12, atol=1e-12)

"""``torch.utils.checkpoint``, ``torch.nn.parallel`` and ``torch.accelerator``
used as programs use them: gradients through a checkpoint equal those
without one (both variants, dropout inside, autograd.grad), DataParallel is
transparent, and device selection picks the CPU."""

import warnings

import numpy as np
import pytest

import ferrotorch as ft
import ferrotorch.nn as nn
from ferrotorch.utils.checkpoint import checkpoint, checkpoint_sequential


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(6, 6)
        self.drop = nn.Dropout(0.3)

    def forward(self, x, scale=1.0):
        return self.drop(ft.tanh(self.lin(x))) * scale


def _grads(model, x, use, **kw):
    model.zero_grad()
    x = x.clone().requires_grad_(True)
    ft.manual_seed(7)
    y = use(model, x)
    (y ** 2).sum().backward()
    return [p.grad.clone() for p in model.parameters()] + [x.grad.clone()], y.detach()


@pytest.mark.parametrize("reentrant", [True, False])
def test_checkpoint_gradients_equal_the_plain_ones_with_dropout(reentrant):
    ft.manual_seed(0)
    model = nn.Sequential(Block(), Block())
    x = ft.randn(4, 6)
    want, y0 = _grads(model, x, lambda m, x: m[1](m[0](x)))
    got, y1 = _grads(model, x, lambda m, x: m[1](checkpoint(m[0], x, use_reentrant=reentrant)))
    assert ft.equal(y0, y1)
    for a, b in zip(got, want):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6, atol=1e-7)


def test_non_reentrant_checkpoint_takes_kwargs_and_serves_autograd_grad():
    ft.manual_seed(1)
    block = Block().eval()
    x = ft.randn(3, 6, requires_grad=True)
    y = checkpoint(block, x, use_reentrant=False, scale=2.0)
    gs = ft.autograd.grad(y.sum(), [block.lin.weight, x])
    y2 = block(x, scale=2.0)
    ws = ft.autograd.grad(y2.sum(), [block.lin.weight, x])
    for a, b in zip(gs, ws):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6, atol=1e-7)
    with pytest.raises(ValueError, match="Unexpected keyword arguments: scale"):
        checkpoint(block, x, use_reentrant=True, scale=2.0)


def test_checkpoint_warns_without_use_reentrant_and_checks_options():
    lin = nn.Linear(2, 2)
    x = ft.randn(1, 2, requires_grad=True)
    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed explicitly"):
        checkpoint(lin, x)
    with pytest.raises(ValueError, match="only supported when use_reentrant=False"):
        checkpoint(lin, x, use_reentrant=True, debug=True)


def test_checkpoint_sequential_matches_the_model():
    ft.manual_seed(2)
    model = nn.Sequential(nn.Linear(5, 5), nn.ReLU(), nn.Linear(5, 5), nn.Tanh(), nn.Linear(5, 1))
    x = ft.randn(8, 5)
    model.zero_grad()
    model(x).sum().backward()
    want = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    out = checkpoint_sequential(model, 2, x, use_reentrant=False)
    out.sum().backward()
    for p, w in zip(model.parameters(), want):
        np.testing.assert_allclose(np.asarray(p.grad), np.asarray(w), rtol=1e-6, atol=1e-7)


def test_data_parallel_is_the_module_on_the_cpu():
    ft.manual_seed(3)
    inner = nn.Linear(4, 2)
    dp = nn.DataParallel(inner)
    x = ft.randn(6, 4)
    assert ft.equal(dp(x), inner(x))
    assert list(dp.state_dict()) == ["module.weight", "module.bias"]
    assert dp.module is inner and dp.device_ids == []
    assert ft.equal(nn.parallel.data_parallel(inner, x), inner(x))


def test_scatter_gather_parallel_apply_on_the_cpu():
    ft.manual_seed(4)
    lin = nn.Linear(3, 2)
    x = ft.randn(7, 3)
    parts = nn.parallel.scatter(x, [0, 1, 2])
    assert [p.shape[0] for p in parts] == [3, 3, 1]
    reps = nn.parallel.replicate(lin, [0, 1, 2])
    outs = nn.parallel.parallel_apply(reps, parts)
    assert ft.allclose(nn.parallel.gather(outs, "cpu"), lin(x))


def test_device_selection_picks_the_cpu():
    use_accel = ft.accelerator.is_available()
    device = ft.accelerator.current_accelerator() if use_accel else ft.device("cpu")
    assert (use_accel, device, ft.accelerator.device_count()) == (False, ft.device("cpu"), 0)
    assert ft.accelerator.current_accelerator() is None
    with pytest.raises(RuntimeError, match="no accelerator is available"):
        ft.accelerator.set_device_index(0)
    with ft.accelerator.device_index(None):
        pass
    ft.accelerator.empty_cache()

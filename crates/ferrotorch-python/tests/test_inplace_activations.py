"""In-place activations (``inplace=True``, the ``F.*_`` forms) inside a
graph that trains: the node of an activation saves its input, which the
overwrite used to invalidate (a DCGAN discriminator's
``nn.LeakyReLU(0.2, inplace=True)`` after a Linear failed in backward).
The in-place results and gradients are the out-of-place ones, which
``test_edge_grads.py`` checks against PyTorch."""

import numpy as np
import pytest

import ferrotorch as torch
import ferrotorch.nn as nn
import ferrotorch.nn.functional as F

CASES = [
    ("relu6", lambda x, ip: F.relu6(x, inplace=ip)),
    ("hardtanh", lambda x, ip: F.hardtanh(x, -0.5, 1.5, inplace=ip)),
    ("elu", lambda x, ip: F.elu(x, 0.7, inplace=ip)),
    ("selu", lambda x, ip: F.selu(x, inplace=ip)),
    ("celu", lambda x, ip: F.celu(x, 0.5, inplace=ip)),
    ("leaky_relu", lambda x, ip: F.leaky_relu(x, 0.2, inplace=ip)),
    ("silu", lambda x, ip: F.silu(x, inplace=ip)),
    ("mish", lambda x, ip: F.mish(x, inplace=ip)),
    ("hardsigmoid", lambda x, ip: F.hardsigmoid(x, inplace=ip)),
    ("hardswish", lambda x, ip: F.hardswish(x, inplace=ip)),
    ("threshold", lambda x, ip: F.threshold(x, 0.3, -2.0, inplace=ip)),
]


@pytest.mark.parametrize("name,f", CASES, ids=[c[0] for c in CASES])
def test_in_place_activation_of_a_non_leaf_has_the_out_of_place_gradient(name, f):
    base = torch.linspace(-4.0, 4.0, 33)
    runs = []
    for ip in (False, True):
        w = base.clone().requires_grad_(True)
        h = w * 1.5                      # a non-leaf, as a layer's output
        y = f(h, ip)
        if ip:
            assert y is h                # the input, overwritten
        (y * torch.arange(33.0)).sum().backward()
        runs.append((y.detach().numpy().copy(), w.grad.numpy().copy()))
    (y0, g0), (y1, g1) = runs
    np.testing.assert_array_equal(y1, y0)
    np.testing.assert_allclose(g1, g0, rtol=1e-6, atol=1e-7)


def test_a_model_with_in_place_activations_trains_as_one_without():
    def model(ip):
        torch.manual_seed(3)
        return nn.Sequential(nn.Linear(6, 8), nn.LeakyReLU(0.2, inplace=ip), nn.Linear(8, 8),
                             nn.Hardtanh(inplace=ip), nn.Linear(8, 8), nn.ELU(inplace=ip),
                             nn.Linear(8, 1))
    x = torch.randn(5, 6)
    grads = []
    for ip in (False, True):
        m = model(ip)
        m(x).sum().backward()
        grads.append([p.grad.numpy().copy() for p in m.parameters()])
    for a, b in zip(*grads):
        np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-7)


def test_without_autograd_the_input_is_overwritten_without_a_copy():
    x = torch.linspace(-2.0, 2.0, 5)
    with torch.no_grad():
        y = F.leaky_relu(x, 0.5, inplace=True)
    assert y is x
    np.testing.assert_allclose(x.numpy(), [-1.0, -0.5, 0.0, 1.0, 2.0])

"""torch.special's incomplete gamma functions, Y0/Y1 and Ai: closed forms,
identities, gradients (gradcheck) and torch's not-differentiable cases."""

import math

import numpy as np
import pytest

import ferrotorch as torch


def t64(v):
    return torch.tensor(v, dtype=torch.float64)


def test_incomplete_gamma_closed_forms():
    x = np.array([0.05, 0.7, 2.0, 9.0, 40.0])
    np.testing.assert_allclose(torch.special.gammainc(t64([1.0] * 5), t64(x)).numpy(),
                               1 - np.exp(-x), rtol=1e-13)
    # P(2, x) = 1 - (1 + x) e^{-x}; Q = 1 - P
    np.testing.assert_allclose(torch.special.gammaincc(t64([2.0] * 5), t64(x)).numpy(),
                               (1 + x) * np.exp(-x), rtol=1e-12)
    erf = np.array([math.erf(math.sqrt(v)) for v in x])
    np.testing.assert_allclose(torch.igamma(t64([0.5] * 5), t64(x)).numpy(), erf, rtol=1e-12)
    assert torch.special.gammainc(t64([-1.0]), t64([1.0])).isnan().all()
    assert torch.special.gammainc(t64([0.0]), t64([1.0])).item() == 1.0
    assert t64([3.0]).igammac(t64([0.0])).item() == 1.0


def test_incomplete_gamma_gradient_in_x_only():
    a = t64([0.7, 2.5, 6.0])
    x = t64([0.4, 3.0, 5.5]).requires_grad_()
    assert torch.autograd.gradcheck(lambda v: torch.special.gammainc(a, v), (x,))
    assert torch.autograd.gradcheck(lambda v: torch.special.gammaincc(a, v), (x,))
    y = torch.special.gammainc(a.clone().requires_grad_(), x)
    with pytest.raises(RuntimeError, match="derivative for 'igamma: input' is not implemented"):
        y.sum().backward()


def test_bessel_y():
    # the Wronskian J1 Y0 - J0 Y1 = 2 / (pi x)
    x = t64([0.01, 0.5, 3.3, 12.0, 26.0, 80.0])
    j0, j1 = torch.special.bessel_j0(x), torch.special.bessel_j1(x)
    y0, y1 = torch.special.bessel_y0(x), torch.special.bessel_y1(x)
    np.testing.assert_allclose((j1 * y0 - j0 * y1).numpy(), 2 / (np.pi * x.numpy()), rtol=1e-12)
    assert torch.special.bessel_y0(t64([0.0])).item() == -math.inf
    assert torch.special.bessel_y1(t64([-1.0])).isnan().all()
    xs = t64([0.3, 2.0, 7.0, 30.0]).requires_grad_()
    assert torch.autograd.gradcheck(torch.special.bessel_y0, (xs,))
    assert torch.autograd.gradcheck(torch.special.bessel_y1, (xs,))


def test_airy_ai():
    # Ai'' = x Ai, checked by central differences across all three regions
    x = np.array([-12.0, -4.0, -2.05, -1.0, 0.0, 1.5, 2.05, 6.0])
    h = 1e-3
    f = lambda v: torch.special.airy_ai(t64(v)).numpy()  # noqa: E731
    second = (f(x + h) - 2 * f(x) + f(x - h)) / h ** 2
    np.testing.assert_allclose(second, x * f(x), atol=2e-6)
    assert abs(torch.special.airy_ai(t64([0.0])).item() - 0.3550280538878172) < 1e-15
    assert torch.special.airy_ai(t64([math.inf, -math.inf])).tolist() == [0.0, 0.0]
    # not differentiable, as torch
    y = torch.special.airy_ai(t64([1.0]).requires_grad_())
    assert not y.requires_grad

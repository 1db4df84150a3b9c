"""torch.autograd.forward_ad (Note [Forward AD over the tape]): tangents
against analytic derivatives and central differences in float64, the
levels and the errors torch raises."""

import math

import pytest

import ferrotorch as ft
import ferrotorch.autograd.forward_ad as fwAD


def test_tangent_of_an_elementwise_function_is_analytic():
    x = ft.tensor([0.3, -1.2, 2.0], dtype=ft.float64)
    t = ft.tensor([1.0, 0.5, -2.0], dtype=ft.float64)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, t)
        y = d.sin() * d ** 2
        primal, tangent = fwAD.unpack_dual(y)
    ref = [(math.cos(a) * a * a + 2 * a * math.sin(a)) * b for a, b in zip(x.tolist(), t.tolist())]
    assert tangent.tolist() == pytest.approx(ref, rel=1e-12)
    assert primal.tolist() == pytest.approx([math.sin(a) * a * a for a in x.tolist()], rel=1e-12)
    assert not primal.requires_grad and not tangent.requires_grad


def test_tangent_through_a_module_equals_central_differences():
    ft.manual_seed(0)
    net = ft.nn.Sequential(ft.nn.Linear(4, 6), ft.nn.Tanh(), ft.nn.Linear(6, 2)).double()
    x, t = ft.randn(3, 4, dtype=ft.float64), ft.randn(3, 4, dtype=ft.float64)
    w_t = ft.randn(6, 4, dtype=ft.float64)
    with fwAD.dual_level():
        out = net(fwAD.make_dual(x, t))
        jvp = fwAD.unpack_dual(out).tangent
    eps = 1e-6
    with ft.no_grad():
        fd = (net(x + eps * t) - net(x - eps * t)) / (2 * eps)
    assert ft.allclose(jvp, fd, atol=1e-8)
    # two dual inputs: the tangents add (a weight's tangent too)
    w = net[0].weight.detach()
    with fwAD.dual_level():
        dx, dw = fwAD.make_dual(x, t), fwAD.make_dual(w, w_t)
        y = ft.nn.functional.linear(dx, dw).tanh()
        jvp2 = fwAD.unpack_dual(y).tangent
    with ft.no_grad():
        f = lambda s: ft.nn.functional.linear(x + s * t, w + s * w_t).tanh()  # noqa: E731
        fd2 = (f(eps) - f(-eps)) / (2 * eps)
    assert ft.allclose(jvp2, fd2, atol=1e-8)


def test_levels_and_errors_are_torchs():
    x = ft.ones(2)
    with pytest.raises(RuntimeError, match="no level exists"):
        fwAD.make_dual(x, x)
    assert fwAD.unpack_dual(x) == (x, None)
    with fwAD.dual_level() as level:
        assert level == 0
        with pytest.raises(RuntimeError, match="Nested forward mode AD is not supported"):
            fwAD.enter_dual_level()
        with pytest.raises(RuntimeError, match=r"Tensor is of size \[2\] while the given forward gradient is of "
                                               r"size \[3\]"):
            fwAD.make_dual(x, ft.ones(3))
        with pytest.raises(ValueError, match="Expected primal to be floating point"):
            fwAD.make_dual(ft.ones(2, dtype=ft.int64), x)
        d = fwAD.make_dual(x, ft.full((2,), 3.0))
        out = d * 2
        assert fwAD.unpack_dual(d).tangent.tolist() == [3.0, 3.0]
        assert fwAD.unpack_dual(ft.ones(2) * 5).tangent is None  # no dual input
    # after the level the tangents are gone
    assert fwAD.unpack_dual(out).tangent is None
    assert isinstance(fwAD.unpack_dual(out), fwAD.UnpackedDualTensor)


def test_tangents_are_differentiable_when_the_primal_requires_grad():
    x = ft.tensor([0.5, 1.5], dtype=ft.float64, requires_grad=True)
    t = ft.ones(2, dtype=ft.float64)
    with fwAD.dual_level():
        jvp = fwAD.unpack_dual(fwAD.make_dual(x, t).exp()).tangent
    jvp.sum().backward()  # d/dx exp(x) = exp(x)
    assert x.grad.tolist() == pytest.approx([math.exp(0.5), math.exp(1.5)], rel=1e-12)

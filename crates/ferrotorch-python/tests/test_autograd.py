"""Autograd from Python: backward, grad, hooks, modes, custom Functions and
autograd.functional, checked against analytic derivatives."""

import math

import pytest

import ferrotorch as torch
from ferrotorch import autograd


def test_backward_accumulates_analytic_gradients():
    x = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64, requires_grad=True)
    y = (x.sin() * x).sum()
    y.backward()
    want = [math.cos(v) * v + math.sin(v) for v in [0.5, -1.0, 2.0]]
    assert all(abs(g - w) < 1e-12 for g, w in zip(x.grad.tolist(), want))
    assert y.grad_fn.name() == "SumBackward0" and x.is_leaf and not y.is_leaf
    (x * 2).sum().backward()
    assert abs(x.grad[0].item() - (want[0] + 2)) < 1e-12
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        z = (x * x).sum()
        z.backward()
        z.backward()


def test_grad_and_higher_order():
    x = torch.tensor(3.0, dtype=torch.float64, requires_grad=True)
    y = x ** 3
    (g,) = autograd.grad(y, x, create_graph=True)
    assert g.item() == 27.0
    (gg,) = autograd.grad(g, x)
    assert gg.item() == 18.0
    u = torch.tensor(1.0, requires_grad=True)
    assert autograd.grad((x * 2), [x, u], allow_unused=True)[1] is None


def test_hooks_and_retain_grad():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    h = x.register_hook(lambda g: g * 10)
    y = x * 3
    y.retain_grad()
    y.sum().backward()
    assert x.grad.tolist() == [30.0, 30.0] and y.grad.tolist() == [1.0, 1.0]
    h.remove()
    x.grad = None
    (x * 3).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


def test_no_grad_enable_grad_inference_mode():
    x = torch.ones(2, requires_grad=True)
    with torch.no_grad():
        assert not (x * 2).requires_grad and not torch.is_grad_enabled()
        with torch.enable_grad():
            assert (x * 2).requires_grad
    assert torch.is_grad_enabled()

    @torch.no_grad()
    def f():
        return x * 2

    assert not f().requires_grad
    with torch.inference_mode():
        assert torch.is_inference_mode_enabled() and not (x * 2).requires_grad
    assert not torch.is_inference_mode_enabled()
    torch.set_grad_enabled(False)
    assert not torch.is_grad_enabled()
    torch.set_grad_enabled(True)


class Cube(autograd.Function):
    @staticmethod
    def forward(ctx, x, k):
        ctx.save_for_backward(x)
        ctx.k = k
        return x ** 3 * k

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x ** 2 * ctx.k, None


def test_custom_function():
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    y = Cube.apply(x, 2.0)
    assert y.tolist() == [2.0, 16.0]
    assert y.grad_fn.name() == "CubeBackward"
    y.sum().backward()
    assert x.grad.tolist() == [6.0, 24.0]


def test_functional_jacobian_hessian_vjp_jvp_hvp():
    from ferrotorch.autograd.functional import hessian, hvp, jacobian, jvp, vjp

    x = torch.tensor([1.0, 2.0], dtype=torch.float64)
    f = lambda v: torch.stack([v[0] * v[1], v[1] ** 2])  # noqa: E731
    assert jacobian(f, x).tolist() == [[2.0, 1.0], [0.0, 4.0]]
    v = torch.tensor([1.0, 1.0], dtype=torch.float64)
    assert vjp(f, x, v)[1].tolist() == [2.0, 5.0]
    assert jvp(f, x, v)[1].tolist() == [3.0, 4.0]
    g = lambda v: (v[0] ** 2 * v[1]).sum()  # noqa: E731
    assert hessian(g, x).tolist() == [[4.0, 2.0], [2.0, 0.0]]
    assert hvp(g, x, v)[1].tolist() == [6.0, 2.0]


def test_grad_keeps_its_python_object():
    x = torch.ones(2, requires_grad=True)
    (x * 2).sum().backward()
    g = x.grad
    assert x.grad is g
    g.tag = "kept"
    assert x.grad.tag == "kept"
    (x * 2).sum().backward()  # accumulates in place: same tensor
    assert x.grad.tolist() == [4.0, 4.0]
    x.grad = None
    assert x.grad is None


def test_backward_into_given_inputs_only():
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    b = torch.tensor([3.0, 4.0], requires_grad=True)
    y = (a * b).sum()
    y.backward(inputs=[a], retain_graph=True)
    assert a.grad.tolist() == [3.0, 4.0] and b.grad is None
    autograd.backward(y, inputs=b)
    assert b.grad.tolist() == [1.0, 2.0] and a.grad.tolist() == [3.0, 4.0]
    with pytest.raises(RuntimeError, match="cannot be empty"):
        (a * 2).sum().backward(inputs=[])


def test_in_place_ops_and_graph_nodes_keep_their_python_identity():
    t = torch.ones(2)
    assert t.add_(1) is t and t.mul_(2) is t
    assert t.tolist() == [4.0, 4.0]
    assert t.zero_() is t and t.tolist() == [0.0, 0.0]
    x = torch.ones(2, requires_grad=True)
    y = x * 2
    z = y.sin()
    assert y.grad_fn is y.grad_fn
    assert z.grad_fn.next_functions[0][0] is y.grad_fn
    p = torch.nn.Parameter(torch.ones(2))
    q = p
    with torch.no_grad():
        p += 1
    assert p is q and isinstance(p, torch.nn.Parameter)
    assert p.tolist() == [2.0, 2.0]


def test_gradcheck_accepts_right_and_rejects_wrong_gradients():
    from ferrotorch.autograd import GradcheckError, gradcheck, gradgradcheck

    x = torch.tensor([[0.3, -1.2], [2.0, 0.5]], dtype=torch.float64, requires_grad=True)
    y = torch.tensor([0.7, -0.4], dtype=torch.float64, requires_grad=True)
    assert gradcheck(lambda a, b: (a.sin() * b, (a @ b).exp()), (x, y))
    assert gradgradcheck(lambda a, b: a.tanh() * b.pow(2), (x, y))
    assert gradcheck(lambda a: a.t().sin(), (x.t(),))  # a non-contiguous input

    class Wrong(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * a

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return g * a  # should be 2·a·g

    with pytest.raises(GradcheckError, match="Jacobian mismatch for output 0 with respect to input 0"):
        gradcheck(Wrong.apply, (x,))
    assert gradcheck(Wrong.apply, (x,), raise_exception=False) is False


def test_masked_gradients_select_instead_of_multiplying():
    # relu, clamp and maximum pass no gradient where their mask is off,
    # even an infinite one (sqrt'(0) = inf): torch selects, and inf * 0
    # would be NaN
    x = torch.tensor([-1.0, 2.0], requires_grad=True)
    torch.relu(-x).sqrt().sum().backward()
    assert x.grad.tolist() == [-0.5, 0.0]
    y = torch.tensor([-1.0, 2.0], requires_grad=True)
    (-y).clamp(min=0).sqrt().sum().backward()
    assert y.grad.tolist() == [-0.5, 0.0]
    z = torch.tensor([-1.0, 2.0], requires_grad=True)
    torch.maximum(-z, torch.zeros(2)).sqrt().sum().backward()
    assert z.grad.tolist() == [-0.5, 0.0]

"""torch.autograd.graph (Note [Graph hooks]): saved-tensor hooks and their
helpers, node hooks, final callbacks, multi-grad hooks, node-creation
hooks, increment_version, gradient edges and is_grads_batched, checked
against analytic gradients. The file passes under torch 2.15 unchanged
but for its imports (``sed 's/import ferrotorch as ft/import torch as
ft/; s/from ferrotorch.autograd/from torch.autograd/'``), the messages
included."""

import math

import pytest

import ferrotorch as ft
from ferrotorch.autograd import graph


def test_saved_tensor_hooks_pack_and_unpack_what_backward_uses():
    packed = []

    def pack(t):
        packed.append(tuple(t.shape))
        return ("boxed", t * 3)

    def unpack(p):
        assert p[0] == "boxed"
        return p[1] / 3

    x = ft.tensor([0.5, 1.0, 2.0], requires_grad=True)
    with graph.saved_tensors_hooks(pack, unpack):
        y = (x * x).sum()
    assert packed == [(3,), (3,)]  # mul saves both operands
    y.backward()
    assert x.grad.tolist() == pytest.approx([1.0, 2.0, 4.0])
    # backward computes with what unpack returns: d(a*b)/da = b = ones
    x.grad = None
    with graph.saved_tensors_hooks(lambda t: t, lambda t: ft.ones_like(t)):
        y = (x * x).sum()
    y.backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]
    # the innermost pair applies; the ops inside pack save plainly
    seen = []
    with graph.saved_tensors_hooks(lambda t: seen.append("outer") or t, lambda t: t):
        with graph.saved_tensors_hooks(lambda t: seen.append("inner") or (t.exp() * 1).log(), lambda t: t):
            z = x.sin().sum()
    assert seen == ["inner"]
    (g,) = ft.autograd.grad(z, x)
    assert g.tolist() == pytest.approx([math.cos(v) for v in (0.5, 1.0, 2.0)], rel=1e-6)


def test_hook_errors_and_disabled_hooks():
    x = ft.ones(2, requires_grad=True)

    class Boom(Exception):
        pass

    def bad_pack(t):
        raise Boom("pack failed")

    with pytest.raises(Boom, match="pack failed"):
        with graph.saved_tensors_hooks(bad_pack, lambda t: t):
            x.sin()
    with graph.saved_tensors_hooks(lambda t: t, lambda t: "not a tensor"):
        y = x.sin().sum()
    with pytest.raises(TypeError, match="unpack_hook expected to be a Tensor"):
        y.backward()
    with graph.disable_saved_tensors_hooks("hooks are off here"):
        with pytest.raises(RuntimeError, match="hooks are off here"):
            with graph.save_on_cpu():
                pass
    with graph.save_on_cpu():  # allowed again outside
        y = (x.exp() * 2).sum()
    y.backward()
    assert x.grad.tolist() == pytest.approx([2 * math.e] * 2)


def test_allow_mutation_on_saved_tensors_uses_the_saved_value():
    x = ft.tensor([0.3, 0.7], requires_grad=True)
    a = x.clone()
    y = a.sin()
    a.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    with graph.allow_mutation_on_saved_tensors():
        a = x.clone()
        y = a.sin()
        a.mul_(2)
        y.sum().backward()
    assert x.grad.tolist() == pytest.approx([math.cos(0.3), math.cos(0.7)], rel=1e-6)


def test_increment_version_invalidates_a_saved_tensor():
    x = ft.tensor([1.0, 2.0], requires_grad=True)
    a = x * 1
    y = a.exp()  # saves its output
    graph.increment_version(y)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_node_hooks_see_and_replace_gradients():
    x = ft.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * ft.full((3,), 2.0)
    z = y.sum()
    calls = []
    L = lambda gs: [g.tolist() if g is not None else None for g in gs]  # noqa: E731

    def pre(grad_outputs):
        calls.append(("pre", L(grad_outputs)))
        return (grad_outputs[0] * 10,)

    def post(grad_inputs, grad_outputs):
        calls.append(("post", L(grad_inputs), L(grad_outputs)))
        return (grad_inputs[0] + 1, None)

    assert isinstance(y.grad_fn, graph.Node)
    h1 = y.grad_fn.register_prehook(pre)
    h2 = y.grad_fn.register_hook(post)
    z.backward(retain_graph=True)
    # the prehook scaled dL/dy to 10; MulBackward gives 20 per element; the post hook adds 1
    assert calls == [("pre", [[1.0, 1.0, 1.0]]), ("post", [[20.0, 20.0, 20.0], None], [[10.0, 10.0, 10.0]])]
    assert x.grad.tolist() == [21.0, 21.0, 21.0]
    h1.remove()
    h2.remove()
    x.grad = None
    z.backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0] and len(calls) == 2
    with pytest.raises(RuntimeError, match=r"has returned an incorrect number of values \(got 2, but expected 1\)"):
        w = x * 3
        w.grad_fn.register_prehook(lambda g: (g[0], g[0]))
        w.sum().backward()


def test_queue_callback_runs_after_backward_in_order():
    order = []
    x = ft.ones(2, requires_grad=True)

    def hook(g):
        graph.queue_callback(lambda: order.append(("cb1", x.grad is not None)))
        graph.queue_callback(lambda: order.append(("cb2",)))
        order.append(("hook",))

    (x * 2).register_hook(hook)
    y = x * 2
    y.register_hook(hook)
    y.sum().backward()
    assert order == [("hook",), ("cb1", True), ("cb2",)]
    with pytest.raises(RuntimeError, match="Final callbacks can only be installed during backward pass"):
        graph.queue_callback(lambda: None)


def test_register_multi_grad_hook_all_and_any():
    a = ft.rand(2, 3, requires_grad=True)
    b = ft.rand(2, 3, requires_grad=True)
    c = a * b
    d = a * b
    got = []
    h = graph.register_multi_grad_hook((a, b, c, d), lambda grads: got.append([g is not None for g in grads]))
    c.sum().backward(retain_graph=True)
    c.sum().backward(inputs=(a,), retain_graph=True) if False else None
    (c.sum() + d.sum()).backward()
    assert got == [[True, True, True, False], [True, True, True, True]]
    h.remove()
    firsts = []
    x = ft.ones(2, requires_grad=True)
    u, v = x * 2, x * 3
    graph.register_multi_grad_hook((u, v), lambda g: firsts.append(g.tolist()), mode="any")
    (u.sum() + 4 * v.sum()).backward(retain_graph=True)
    (u.sum() + 4 * v.sum()).backward()
    assert len(firsts) == 2 and firsts[0] in ([1.0, 1.0], [4.0, 4.0])
    with pytest.raises(ValueError, match="Expects mode to be one of"):
        graph.register_multi_grad_hook((u,), print, mode="some")


def test_node_creation_hook_sees_every_node():
    names = []
    x = ft.ones(3, requires_grad=True)
    with graph.node_creation_hook(lambda n: names.append(n.name())):
        with graph.node_creation_hook(lambda n: names.append("inner:" + n.name())):
            y = (x.sin() * 2).sum()
        z = x.exp()
    assert names == ["torch::autograd::AccumulateGrad", "inner:torch::autograd::AccumulateGrad", "SinBackward0", "inner:SinBackward0", "MulBackward0", "inner:MulBackward0", "SumBackward0",
                     "inner:SumBackward0", "ExpBackward0"]
    x2 = ft.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="Creating a new autograd node from inside a node creation hook is not supported"):
        with graph.node_creation_hook(lambda n: x2 * 2):
            x2.cos()
    assert y.grad_fn is not None and z.grad_fn is not None


def test_gradient_edges_stand_for_tensors_in_grad():
    x = ft.tensor([1.0, 2.0], requires_grad=True)
    a = x * 3
    b = a.exp()
    out = b.sum()
    edge = graph.get_gradient_edge(a)
    assert edge.node is a.grad_fn and edge.output_nr == 0 and isinstance(edge, graph.GradientEdge)
    # the gradient flowing into a (dL/da = exp(a)), and into the leaf's accumulator
    (ga, gx) = ft.autograd.grad(out, (edge, graph.get_gradient_edge(x)), retain_graph=True)
    assert ga.tolist() == pytest.approx([math.exp(3.0), math.exp(6.0)], rel=1e-6)
    assert gx.tolist() == pytest.approx([3 * math.exp(3.0), 3 * math.exp(6.0)], rel=1e-6)
    (gb_edge, gx2) = ft.autograd.grad(out, (graph.get_gradient_edge(b), x))  # mixed with a tensor
    assert gb_edge.tolist() == [1.0, 1.0] and gx2.tolist() == pytest.approx(gx.tolist())
    with pytest.raises(RuntimeError, match="not possible to get the gradient edge"):
        graph.get_gradient_edge(ft.ones(2))


def test_is_grads_batched_gives_one_product_per_row():
    x = ft.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x ** 2
    eye = ft.eye(3)
    (jac,) = ft.autograd.grad(y, x, eye, is_grads_batched=True)
    assert jac.tolist() == [[2.0, 0.0, 0.0], [0.0, 4.0, 0.0], [0.0, 0.0, 6.0]]

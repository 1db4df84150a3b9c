"""vmap with batching rules (Note [Batching rules] in func/_batched.py),
checked against torch's values (fixtures/vmap.json from
fixtures/gen_vmap.py): per-example gradients, ensembles, the ops with
rules, in/out dims, nesting, chunking and the transforms composed; the
fallback's warning and the errors torch raises inside a vmap."""

import warnings

import pytest

import ferrotorch as ft
import vmap_cases as C
from fixture_compare import close, load

FIX = load("vmap")


@pytest.mark.parametrize("name", list(C.CASES))
def test_vmap_case_is_torchs(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # float32 initial weights agree to their last bit or so; the math is float64
        close(C.CASES[name](ft), FIX[name], name, rel=3e-6, abs=1e-7)


def test_ops_with_rules_run_once_and_others_warn_once():
    calls = []

    def f(a):
        calls.append(type(a).__name__)
        return ft.tanh(a @ a.t()).sum(0).softmax(0)

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback: no warning
        out = ft.func.vmap(f)(ft.randn(6, 3, 4))
    assert calls == ["BatchedTensor"] and out.shape == (6, 3)
    with pytest.warns(UserWarning, match="batching rule for aten::trace"):
        ft.func.vmap(lambda a: ft.trace(a))(ft.randn(5, 3, 3))


def test_errors_inside_vmap_are_torchs():
    vmap = ft.func.vmap
    with pytest.raises(RuntimeError, match=r"calling \.item\(\)"):
        vmap(lambda a: a.sum().item())(ft.ones(3, 2))
    with pytest.raises(RuntimeError, match="data-dependent control flow"):
        vmap(lambda a: a if a.sum() > 0 else -a)(ft.ones(3, 2))
    with pytest.raises(RuntimeError, match="vmapped over but `self` not being vmapped"):
        vmap(lambda a: ft.zeros(2).add_(a))(ft.ones(3, 2))
    with pytest.raises(RuntimeError, match="randomness error mode"):
        vmap(lambda a: ft.nn.functional.dropout(a, 0.5))(ft.ones(3, 2))
    with pytest.raises(ValueError, match="must only return Tensors"):
        vmap(lambda a: 3)(ft.ones(3, 2))
    with pytest.raises(ValueError, match="same size in the mapped dimension"):
        vmap(lambda a, b: a + b)(ft.ones(2, 3), ft.ones(3, 3))


def test_per_sample_gradients_equal_a_loop_of_grads():
    fn, F = ft.func, ft.nn.functional
    ft.manual_seed(3)
    model = ft.nn.Sequential(ft.nn.Linear(6, 8), ft.nn.ReLU(), ft.nn.Linear(8, 4))
    params = {k: v.detach() for k, v in model.named_parameters()}
    x, y = ft.randn(10, 6), ft.randint(0, 4, (10,))

    def loss(p, xi, yi):
        return F.cross_entropy(fn.functional_call(model, p, (xi.unsqueeze(0),)), yi.unsqueeze(0))

    g = fn.vmap(fn.grad(loss), in_dims=(None, 0, 0))(params, x, y)
    for i in range(10):
        gi = fn.grad(loss)(params, x[i], y[i])
        for k in gi:
            assert ft.allclose(gi[k], g[k][i], atol=1e-6), k
    # and with the parameters under ordinary autograd: the per-example
    # gradients are differentiable (a penalty on their norm trains)
    w = {k: v.clone().requires_grad_(True) for k, v in params.items()}
    g = fn.vmap(fn.grad(loss), in_dims=(None, 0, 0))(w, x, y)
    penalty = sum((v ** 2).sum() for v in g.values())
    penalty.backward()
    assert all(w[k].grad is not None and w[k].grad.abs().sum() > 0 for k in w)

"""torch.func as torch's: per-sample gradients (vmap of grad through
functional_call), model ensembling (stack_module_state), Jacobians and
Hessians by either mode and nested, jvp/vjp/linearize, rearrange
(fixtures/func.json from fixtures/gen_func.py)."""

import json
import os

import pytest

import ferrotorch as ft
import func_cases as C

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "fixtures", "func.json")) as f:
    FIX = json.load(f)["cases"]


def _close(a, b, path):
    if isinstance(b, dict):
        assert set(a) == set(b), path
        for k in b:
            _close(a[k], b[k], f"{path}.{k}")
    elif isinstance(b, list) and b and isinstance(b[0], list):
        for x, y in zip(a, b):
            _close(x, y, path)
    elif isinstance(b, list) and b and isinstance(b[0], float):
        # float32 initial weights agree to their last bit or so; the math is float64
        assert a == pytest.approx(b, rel=3e-6, abs=1e-8), path
    else:
        assert a == b, path


@pytest.mark.parametrize("name", list(C.CASES))
def test_func_case_is_torchs(name):
    _close(C.CASES[name](ft), FIX[name], name)


def test_func_errors_and_randomness():
    F = ft.func
    with pytest.raises(RuntimeError, match="Expected f\\(\\*args\\) to return a scalar Tensor"):
        F.grad(lambda x: x * 2)(ft.ones(3))
    with pytest.raises(ValueError, match="same size in the mapped dimension"):
        F.vmap(lambda a, b: a + b)(ft.ones(2, 3), ft.ones(3, 3))
    with pytest.raises(RuntimeError, match="randomness error mode"):
        F.vmap(lambda a: a + ft.rand(1))(ft.ones(2, 3))
    same = F.vmap(lambda a: a + ft.rand(()), randomness="same")(ft.zeros(4))
    assert ft.allclose(same, same[0].expand(4))
    diff = F.vmap(lambda a: a + ft.rand(()), randomness="different")(ft.zeros(4))
    assert not ft.allclose(diff, diff[0].expand(4))


def test_grad_does_not_touch_dot_grad_and_composes_with_autograd():
    w = ft.tensor([1.0, 2.0], requires_grad=True)
    g = ft.func.grad(lambda x: (x ** 3).sum())(w)
    assert w.grad is None and g.tolist() == [3.0, 12.0]
    g.sum().backward()  # through the gradient: d/dw Σ 3w² = 6w
    assert w.grad.tolist() == [6.0, 12.0]

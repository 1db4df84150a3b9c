"""nn.Module's state-dict machinery and hooks as torch's: _metadata with
versions, _load_from_state_dict overrides (how modules rename keys), the
four state-dict hooks, extra state, forward hooks with kwargs and
always_call, full backward hooks with the gradients torch gives."""

from collections import OrderedDict

import numpy as np
import pytest

import ferrotorch as ft
import ferrotorch.nn as nn


def test_state_dict_metadata_and_versions():
    m = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
    sd = m.state_dict()
    assert isinstance(sd, OrderedDict)
    assert sd._metadata[""] == {"version": 1} and "0" in sd._metadata and "1" in sd._metadata


def test_load_from_state_dict_override_renames_old_keys():
    class Renamed(nn.Linear):
        _version = 2

        def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing, unexpected, errors):
            if local_metadata.get("version", 1) < 2 and prefix + "w" in state_dict:
                state_dict[prefix + "weight"] = state_dict.pop(prefix + "w")
            super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing, unexpected, errors)

    m = Renamed(2, 2)
    old = OrderedDict(w=ft.ones(2, 2), bias=ft.zeros(2))
    old._metadata = OrderedDict({"": {"version": 1}})
    m.load_state_dict(old)
    assert ft.equal(m.weight, ft.ones(2, 2))


def test_state_dict_hooks_run_where_torchs_do():
    m = nn.Linear(2, 1)
    calls = []
    m.register_state_dict_pre_hook(lambda mod, prefix, keep_vars: calls.append(("pre", prefix)))
    m.register_state_dict_post_hook(lambda mod, sd, prefix, meta: calls.append(("post", sorted(sd))))
    m.state_dict(prefix="x.")
    assert calls == [("pre", "x."), ("post", ["x.bias", "x.weight"])]

    def pre(mod, sd, prefix, meta, strict, missing, unexpected, errors):
        sd[prefix + "bias"] = sd.pop(prefix + "b")

    m.register_load_state_dict_pre_hook(pre)
    keys = []
    m.register_load_state_dict_post_hook(lambda mod, incompatible: keys.append(list(incompatible.missing_keys)))
    m.load_state_dict({"weight": ft.ones(1, 2), "b": ft.full((1,), 3.0)})
    assert m.bias.item() == 3.0 and keys == [[]]
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: "weight"'):
        m.load_state_dict({"b": ft.zeros(1)})


def test_extra_state_round_trips():
    class WithExtra(nn.Module):
        def __init__(self):
            super().__init__()
            self.steps = 5

        def get_extra_state(self):
            return {"steps": self.steps}

        def set_extra_state(self, state):
            self.steps = state["steps"]

    a, b = WithExtra(), WithExtra()
    b.steps = 0
    assert list(a.state_dict()) == ["_extra_state"]
    b.load_state_dict(a.state_dict())
    assert b.steps == 5


def test_forward_hooks_with_kwargs_and_always_call():
    class Scaled(nn.Module):
        def forward(self, x, scale=1.0):
            if scale < 0:
                raise ValueError("negative")
            return x * scale

    m = Scaled()
    m.register_forward_pre_hook(lambda mod, args, kwargs: (args, {"scale": kwargs.get("scale", 1.0) * 2}),
                                with_kwargs=True)
    seen = []
    m.register_forward_hook(lambda mod, args, kwargs, out: seen.append(kwargs["scale"]), with_kwargs=True,
                            always_call=True)
    assert m(ft.ones(1), scale=3.0).item() == 6.0
    with pytest.raises(ValueError):
        m(ft.ones(1), scale=-1.0)
    assert seen == [6.0, -2.0]


def test_full_backward_hooks_see_torchs_gradients():
    ft.manual_seed(0)
    lin = nn.Linear(3, 2)
    got = {}
    lin.register_full_backward_pre_hook(lambda mod, gout: got.update(pre=gout[0].clone()))
    lin.register_full_backward_hook(lambda mod, gin, gout: got.update(gin=gin[0].clone(), gout=gout[0].clone()))
    x = ft.randn(4, 3, requires_grad=True)
    (lin(x) * 2).sum().backward()
    np.testing.assert_allclose(np.asarray(got["gout"]), np.full((4, 2), 2.0))
    np.testing.assert_allclose(np.asarray(got["pre"]), np.full((4, 2), 2.0))
    want = np.full((4, 2), 2.0) @ np.asarray(lin.weight.detach())
    np.testing.assert_allclose(np.asarray(got["gin"]), want, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(x.grad), want, rtol=1e-6)


def test_backward_hook_may_replace_grad_input():
    lin = nn.Linear(2, 2)
    lin.register_full_backward_hook(lambda mod, gin, gout: (gin[0] * 0,))
    x = ft.randn(3, 2, requires_grad=True)
    lin(x).sum().backward()
    assert ft.equal(x.grad, ft.zeros(3, 2))
    with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks and full backward hooks"):
        lin.register_backward_hook(lambda *a: None)


def test_get_buffer_set_submodule_to_empty():
    m = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
    assert m.get_buffer("1.running_mean") is m[1].running_mean
    m.set_submodule("0", nn.Linear(2, 2, bias=False))
    assert m[0].bias is None
    with pytest.raises(AttributeError, match="is not a buffer"):
        m.get_buffer("0.weight")
    e = nn.Linear(3, 4).to_empty(device="cpu")
    assert e.weight.shape == (4, 3)

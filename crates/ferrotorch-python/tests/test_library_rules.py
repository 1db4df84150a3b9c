"""torch.library's rules beside kernels (Note [Custom op rules]):
register_vmap (the rule runs once on the physical batch; an op without
one loops with torch's warning) and register_autocast; fallthrough_kernel.
The file passes under torch 2.15 unchanged but for its imports."""

import warnings

import pytest

import ferrotorch as torch
from ferrotorch.library import custom_op

calls = []


@custom_op("ft_rules::scale_rows", mutates_args=())
def scale_rows(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    calls.append(tuple(x.shape))
    return x * w.unsqueeze(-1)


@scale_rows.register_fake
def _(x, w):
    return torch.empty_like(x)


def _scale_rows_vmap(info, in_dims, x, w):
    # move the mapped dims first, give every example its own w, one call
    x = x.movedim(in_dims[0], 0) if in_dims[0] is not None else x.expand(info.batch_size, *x.shape)
    w = w.movedim(in_dims[1], 0) if in_dims[1] is not None else w.expand(info.batch_size, *w.shape)
    b, r, c = x.shape
    out = scale_rows(x.reshape(b * r, c), w.reshape(b * r))
    return out.reshape(b, r, c), 0


torch.library.register_vmap("ft_rules::scale_rows", _scale_rows_vmap)


@custom_op("ft_rules::plain_double", mutates_args=())
def plain_double(x: torch.Tensor) -> torch.Tensor:
    calls.append(tuple(x.shape))
    return x * 2


@plain_double.register_fake
def _(x):
    return torch.empty_like(x)


@custom_op("ft_rules::dtype_of", mutates_args=())
def dtype_of(x: torch.Tensor) -> torch.Tensor:
    return x + torch.zeros((), dtype=x.dtype)


@dtype_of.register_fake
def _(x):
    return torch.empty_like(x)


def test_a_registered_vmap_rule_runs_once_on_the_batch():
    x = torch.arange(24.0).reshape(4, 2, 3)
    w = torch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]])
    calls.clear()
    out = torch.vmap(lambda a, b: torch.ops.ft_rules.scale_rows(a, b))(x, w)
    assert calls == [(8, 3)]
    assert torch.equal(out, x * w.unsqueeze(-1))
    calls.clear()
    out = torch.vmap(scale_rows, in_dims=(0, None))(x, w[0])  # the custom op object, w unmapped
    assert calls == [(8, 3)] and torch.equal(out, x * w[0].unsqueeze(-1))


def test_an_op_without_a_rule_runs_per_example_with_the_warning():
    x = torch.arange(6.0).reshape(3, 2)
    calls.clear()
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        out = torch.vmap(plain_double)(x)
    assert calls == [(2,), (2,), (2,)] and torch.equal(out, x * 2)
    assert any("performance drop" in str(w.message) and "plain_double" in str(w.message) for w in got)


def test_register_autocast_casts_floating_inputs():
    torch.library.register_autocast("ft_rules::dtype_of", "cpu", torch.float64)
    x = torch.ones(3)
    assert dtype_of(x).dtype == torch.float32
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert dtype_of(x).dtype == torch.float64
        assert torch.ops.ft_rules.dtype_of(x).dtype == torch.float64
    with pytest.raises(RuntimeError, match="device type at start of device string: tpu"):
        torch.library.register_autocast("ft_rules::dtype_of", "tpu", torch.float16)


def test_fallthrough_kernel_registers_nothing():
    lib = torch.library.Library("ft_rules_ft", "DEF")
    lib.define("ident(Tensor x) -> Tensor")
    lib.impl("ident", lambda x: x.clone(), "CPU")
    lib.impl("ident", torch.library.fallthrough_kernel, "AutogradCPU")
    x = torch.ones(2)
    assert torch.equal(torch.ops.ft_rules_ft.ident(x), x)

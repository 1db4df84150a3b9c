"""Fractional max pooling, conv_transpose3d and the bicubic/antialiased
interpolation modes against PyTorch's values and gradients
(fixtures/pools.json, written by fixtures/gen_pools.py), plus the
properties that hold without a reference: conv_transpose3d is conv3d's
adjoint, bicubic reproduces linear ramps, error cases."""

import json
import pathlib

import numpy as np
import pytest

import ferrotorch as torch
import ferrotorch.nn.functional as F

CASES = json.loads((pathlib.Path(__file__).parent / "fixtures" / "pools.json").read_text())


def _fn(case):
    name, kw = case["name"], dict(case["kwargs"])
    for k in ("output_size", "output_ratio", "size", "stride", "padding", "output_padding",
              "dilation", "kernel_size"):
        if isinstance(kw.get(k), list):
            kw[k] = tuple(kw[k])
    if name.startswith("fractional"):
        samples = torch.tensor(case["samples"], dtype=torch.float64)
        return lambda x: getattr(F, name)(x, _random_samples=samples, **kw)
    return lambda *xs: getattr(F, name)(*xs, **kw)


@pytest.mark.parametrize("case", CASES, ids=[f"{c['name']}-{i}" for i, c in enumerate(CASES)])
def test_matches_torch(case):
    xs = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in case["inputs"]]
    out = _fn(case)(*xs)
    outs = out if isinstance(out, tuple) else (out,)
    assert len(outs) == len(case["outs"])
    for got, want in zip(outs, case["outs"]):
        np.testing.assert_allclose(got.detach().numpy(), np.array(want), rtol=1e-10, atol=1e-10)
    loss = (outs[0] * torch.tensor(case["weight"], dtype=torch.float64)).sum()
    for g, want in zip(torch.autograd.grad(loss, xs), case["grads"]):
        np.testing.assert_allclose(g.numpy(), np.array(want), rtol=1e-10, atol=1e-10)


def test_conv_transpose3d_is_the_adjoint_of_conv3d():
    rng = np.random.default_rng(0)
    x = torch.tensor(rng.standard_normal((2, 4, 7, 6, 5)))
    w = torch.tensor(rng.standard_normal((6, 2, 3, 2, 3)))
    kw = dict(stride=(2, 1, 2), padding=(1, 0, 1), dilation=(1, 2, 1), groups=2)
    y = F.conv3d(x, w, **kw)
    g = torch.tensor(rng.standard_normal(tuple(y.shape)))
    back = F.conv_transpose3d(g, w, output_padding=(0, 0, 0), **kw)
    assert tuple(back.shape) == tuple(x.shape)
    assert abs((y * g).sum().item() - (x * back).sum().item()) < 1e-9


def test_bicubic_keeps_a_linear_ramp_away_from_the_border():
    ramp = torch.arange(12.0, dtype=torch.float64).reshape(1, 1, 1, 12).expand(1, 1, 3, 12)
    y = F.interpolate(ramp, size=(3, 23), mode="bicubic", align_corners=True)
    # align_corners maps output j to input j * 11 / 22 = j / 2
    np.testing.assert_allclose(y[0, 0, 1, 2:-2].numpy(), np.arange(2, 21) / 2, atol=1e-12)
    const = F.interpolate(torch.full((1, 1, 4, 5), 3.0), scale_factor=0.4, mode="bicubic",
                          antialias=True)
    np.testing.assert_allclose(const.numpy(), 3.0, atol=1e-6)


def test_fractional_pool_with_a_seed_matches_the_explicit_samples():
    x = torch.randn(2, 3, 9, 9)
    torch.manual_seed(7)
    a = F.fractional_max_pool2d(x, 3, output_size=4)
    torch.manual_seed(7)
    b = F.fractional_max_pool2d(x, 3, output_size=4, _random_samples=torch.rand(2, 3, 2))
    assert torch.equal(a, b)
    pool = torch.nn.FractionalMaxPool2d(3, output_ratio=0.5, return_indices=True)
    v, i = pool(x)
    assert tuple(v.shape) == (2, 3, 4, 4) and i.dtype == torch.int64
    assert torch.equal(x.flatten(2).gather(2, i.flatten(2)).reshape(v.shape), v)


def test_errors():
    x = torch.randn(1, 3, 9, 9)
    with pytest.raises(RuntimeError, match="pool height 3 too large relative to input height 9"):
        F.fractional_max_pool2d(x, 3, output_size=8)
    with pytest.raises(ValueError, match="either an output_size or an output_ratio"):
        F.fractional_max_pool2d(x, 3)
    with pytest.raises(RuntimeError, match=r"_random_samples.size\(2\) equals to 2; got 3"):
        F.fractional_max_pool2d(x, 3, output_size=2, _random_samples=torch.rand(1, 3, 3))
    with pytest.raises(ValueError, match="Anti-alias option is restricted"):
        F.interpolate(torch.randn(1, 2, 5), size=3, mode="linear", antialias=True)


def test_conv_transpose_modules():
    m = torch.nn.ConvTranspose3d(4, 6, 3, stride=2, groups=2, output_padding=1)
    assert tuple(m.weight.shape) == (4, 3, 3, 3, 3)
    assert repr(m) == ("ConvTranspose3d(4, 6, kernel_size=(3, 3, 3), stride=(2, 2, 2), "
                       "output_padding=(1, 1, 1), groups=2)")
    x = torch.randn(2, 4, 3, 4, 5)
    y = m(x)
    assert tuple(y.shape) == (2, 6, 8, 10, 12)
    assert torch.allclose(y, F.conv_transpose3d(x, m.weight, m.bias, 2, 0, 1, 2))
    # output_size picks the output padding, as torch's
    assert tuple(m(x, output_size=(7, 9, 11)).shape) == (2, 6, 7, 9, 11)
    m1 = torch.nn.ConvTranspose1d(2, 3, 4, stride=3)
    assert tuple(m1(torch.randn(5, 2, 7)).shape) == (5, 3, 22)

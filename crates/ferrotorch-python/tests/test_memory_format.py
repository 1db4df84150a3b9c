"""``memory_format``: channels-last strides from contiguous(), to(), clone()
and the *_like factories, torch's rank and preserve_format rules, and
that every consumer computes the same values from either layout."""

import numpy as np
import pytest

import ferrotorch as torch
import ferrotorch.nn.functional as F


def test_the_four_formats_are_named_as_torch():
    assert repr(torch.channels_last) == "torch.channels_last"
    assert isinstance(torch.contiguous_format, torch.memory_format)
    assert {str(f) for f in (torch.contiguous_format, torch.preserve_format,
                             torch.channels_last, torch.channels_last_3d)} == {
        "torch.contiguous_format", "torch.preserve_format", "torch.channels_last",
        "torch.channels_last_3d"}


def test_channels_last_strides():
    x = torch.randn(2, 3, 4, 5)
    # N, H, W, C order: C innermost, then W (stride C), H (stride W*C)
    want = (60, 1, 15, 3)
    y = x.contiguous(memory_format=torch.channels_last)
    assert y.stride() == want
    assert not y.is_contiguous() and y.is_contiguous(memory_format=torch.channels_last)
    assert x.to(memory_format=torch.channels_last).stride() == want
    assert x.double(memory_format=torch.channels_last).stride() == want
    assert x.clone(memory_format=torch.channels_last).stride() == want
    assert torch.empty_like(x, memory_format=torch.channels_last).stride() == want
    assert torch.zeros_like(x, memory_format=torch.channels_last).stride() == want
    # preserve_format keeps the layout; contiguous_format restores row-major
    assert y.clone().stride() == want and (y + 1).stride() == want
    assert y.contiguous().stride() == (60, 20, 5, 1)
    assert np.array_equal(y.numpy(), x.numpy())
    z = torch.randn(2, 3, 4, 5, 6).contiguous(memory_format=torch.channels_last_3d)
    assert z.stride() == (360, 1, 90, 18, 3)


def test_already_in_format_returns_self():
    y = torch.randn(2, 3, 4, 5).contiguous(memory_format=torch.channels_last)
    assert y.contiguous(memory_format=torch.channels_last).data_ptr() == y.data_ptr()
    assert y.to(memory_format=torch.channels_last).data_ptr() == y.data_ptr()
    assert y.to(torch.float32, False, True, memory_format=torch.channels_last).data_ptr() \
        != y.data_ptr()  # copy=True
    # size-1 dims' strides are not looked at
    assert torch.randn(2, 1, 4, 1).is_contiguous(memory_format=torch.channels_last)


def test_errors_as_torch():
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
        torch.randn(2, 3).contiguous(memory_format=torch.channels_last)
    with pytest.raises(RuntimeError, match="preserve memory format is unsupported"):
        torch.randn(3, 4).t().contiguous(memory_format=torch.preserve_format)
    x = torch.randn(3, 4)
    assert x.contiguous(memory_format=torch.preserve_format).data_ptr() == x.data_ptr()


def test_consumers_agree_across_layouts():
    torch.manual_seed(0)
    x = torch.randn(2, 3, 6, 6, dtype=torch.float64)
    xc = x.contiguous(memory_format=torch.channels_last).requires_grad_()
    x.requires_grad_()
    w = torch.randn(4, 3, 3, 3, dtype=torch.float64)
    outs = []
    for inp in (x, xc):
        y = F.max_pool2d(F.conv2d(inp, w, padding=1).relu(), 2)
        y = F.batch_norm(y, None, None, training=True)
        y.pow(2).sum().backward()
        outs.append(y.detach().numpy())
    assert np.allclose(outs[0], outs[1], atol=1e-12)
    assert np.allclose(x.grad.numpy(), xc.grad.numpy(), atol=1e-12)
    # an in-place update through the channels-last layout
    xc2 = xc.detach().clone(memory_format=torch.channels_last)
    xc2.mul_(2).add_(1)
    assert np.allclose(xc2.numpy(), 2 * x.detach().numpy() + 1)
    assert torch.autograd.gradcheck(
        lambda t: t.contiguous(memory_format=torch.channels_last).sin(),
        (torch.randn(1, 2, 3, 3, dtype=torch.float64, requires_grad=True),))


def test_randint_like_keeps_the_layout_and_fills_memory_in_order():
    # torch 2.15 after manual_seed(0): randint_like of a transposed 3x4
    # has the input's strides, and its memory holds randint's stream
    x = torch.zeros(3, 4).t()
    torch.manual_seed(0)
    a = torch.randint_like(x, 100)
    assert a.stride() == (1, 4) and a.dtype == torch.float32
    assert a.tolist() == [[44, 63, 97], [39, 79, 83], [33, 27, 1], [60, 3, 66]]
    torch.manual_seed(0)
    assert torch.randint_like(x, 100, memory_format=torch.contiguous_format).stride() == (3, 1)
    x4 = torch.zeros(2, 3, 4, 5).to(memory_format=torch.channels_last)
    assert torch.randint_like(x4, 5).stride() == (60, 1, 15, 3)
    assert torch.randint_like(torch.zeros(2, 3, 4, 5), 5, memory_format=torch.channels_last).stride() == (60, 1, 15, 3)
    r = torch.randint_like(torch.zeros(50, dtype=torch.int32), 3, 9)
    assert r.dtype == torch.int32 and 3 <= r.min().item() and r.max().item() < 9

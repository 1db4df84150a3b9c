"""torch's aliases, in-place forms, in-place view ops and small queries
(``_tensor_surface.py``), against NumPy and closed forms, with torch's
errors."""

import math

import numpy as np
import pytest

import ferrotorch as torch


def test_aliases_are_the_ops():
    x = torch.tensor([0.25, 0.5])
    np.testing.assert_allclose(torch.arccos(x).numpy(), np.arccos([0.25, 0.5]), rtol=1e-6)
    np.testing.assert_allclose(x.arctan2(torch.tensor([1.0, -1.0])).numpy(),
                               np.arctan2([0.25, 0.5], [1.0, -1.0]), rtol=1e-6)
    assert torch.clip(torch.tensor([-2.0, 3.0]), -1, 1).tolist() == [-1.0, 1.0]
    assert torch.divide(torch.tensor([7.0]), 2, rounding_mode="floor").tolist() == [3.0]
    assert torch.tensor([1, 2]).greater_equal(2).tolist() == [False, True]
    assert torch.moveaxis(torch.zeros(2, 3, 4), 0, -1).shape == (3, 4, 2)
    assert torch.zeros(2, 3).swapaxes(0, 1).shape == (3, 2)
    assert torch.fix(torch.tensor([-1.5, 1.5])).tolist() == [-1.0, 1.0]
    assert torch.ger(torch.tensor([1.0, 2.0]), torch.tensor([3.0])).tolist() == [[3.0], [6.0]]


def test_inplace_forms_write_and_return_self():
    x = torch.zeros(3, 4)
    assert x.scatter_(1, torch.tensor([[0], [2], [3]]), 1.0) is x
    assert x.numpy().nonzero()[1].tolist() == [0, 2, 3]
    y = torch.zeros(2, 3)
    y.index_add_(0, torch.tensor([1, 1]), torch.ones(2, 3))
    assert y.tolist() == [[0.0] * 3, [2.0] * 3]
    t = torch.ones(3, 3)
    t.tril_()
    assert t.tolist() == [[1, 0, 0], [1, 1, 0], [1, 1, 1]]
    c = torch.tensor([1.0, 2.0, 3.0])
    c.lt_(2.5)
    assert c.tolist() == [1.0, 1.0, 0.0] and c.dtype == torch.float32
    s = torch.tensor([1.0, 2.0])
    s.clamp_min_(1.5).square_()
    assert s.tolist() == [2.25, 4.0]
    m = torch.zeros(4)
    m.masked_scatter_(torch.tensor([True, False, True, False]), torch.tensor([7.0, 8.0]))
    assert m.tolist() == [7.0, 0.0, 8.0, 0.0]
    assert torch.sinc_(torch.tensor([0.0])).tolist() == [1.0]


def test_inplace_errors_as_torch():
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        torch.zeros(3, dtype=torch.int64).sinc_()
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        torch.zeros(3).multiply_(torch.ones(2, 3))
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        torch.zeros(3, requires_grad=True).sinc_()
    assert not torch.can_cast(torch.float64, torch.int32)
    assert torch.can_cast(torch.int32, torch.float32) and not torch.can_cast(torch.int8, torch.bool)


def test_inplace_forms_differentiate_through_the_old_value():
    w = torch.tensor([0.3, 1.7], dtype=torch.float64, requires_grad=True)
    v = w * 1
    v.sinc_()
    v.sum().backward()
    def dsinc(a):
        p = math.pi * a
        return (p * math.cos(p) - math.sin(p)) / (math.pi * a * a)
    np.testing.assert_allclose(w.grad.numpy(), [dsinc(0.3), dsinc(1.7)], rtol=1e-10)
    assert torch.autograd.gradcheck(lambda a: (a * 1).cumsum_(0), (w,))


def test_view_inplace_ops():
    x = torch.arange(6.0).reshape(2, 3)
    ptr = x.data_ptr()
    x.t_()
    assert x.shape == (3, 2) and x.data_ptr() == ptr and x.tolist() == [[0, 3], [1, 4], [2, 5]]
    x.unsqueeze_(0)
    assert x.shape == (1, 3, 2)
    x.squeeze_()
    assert x.shape == (3, 2)
    x.transpose_(0, 1)
    assert x.tolist() == [[0, 1, 2], [3, 4, 5]]
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        torch.zeros(3, requires_grad=True).unsqueeze_(0)
    w = torch.zeros(3, requires_grad=True) * 2
    w.unsqueeze_(0)
    assert w.shape == (1, 3) and w.grad_fn is not None


def test_resize_and_set_and_detach():
    a = torch.arange(6.0)
    a.resize_(2, 2)
    assert a.tolist() == [[0, 1], [2, 3]]
    a.resize_(3, 3)
    assert a.reshape(-1)[:6].tolist() == [0, 1, 2, 3, 4, 5] and a.shape == (3, 3)
    b = torch.zeros(1)
    b.resize_as_(torch.zeros(2, 2))
    assert b.shape == (2, 2)
    src = torch.arange(4.0)
    d = torch.zeros(1)
    d.set_(src)
    assert d.data_ptr() == src.data_ptr() and d.is_set_to(src)
    with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
        torch.zeros(2, requires_grad=True).resize_(4)
    g = torch.zeros(2, requires_grad=True) * 2
    g.detach_()
    assert not g.requires_grad and g.grad_fn is None


def test_fill_diagonal_and_random():
    m = torch.zeros(7, 3)
    m.fill_diagonal_(5, wrap=True)
    want = np.zeros((7, 3))
    for p in range(0, 21, 4):
        want[p // 3, p % 3] = 5
    assert np.array_equal(m.numpy(), want)
    n = torch.zeros(7, 3).fill_diagonal_(5)
    assert n.numpy().sum() == 15
    cube = torch.zeros(3, 3, 3).fill_diagonal_(1)
    assert cube.sum().item() == 3 and cube[2, 2, 2].item() == 1
    r = torch.zeros(1000).random_(2, 5)
    assert set(r.unique().tolist()) == {2.0, 3.0, 4.0}
    assert torch.zeros(10, dtype=torch.uint8).random_().max().item() <= 255


def test_queries():
    x = torch.zeros(2, 3, dtype=torch.float64)
    assert x.nbytes == 48 and x.itemsize == 8 and x.get_device() == -1
    assert x.is_signed() and not torch.zeros(1, dtype=torch.uint8).is_signed()
    assert x.is_same_size(torch.ones(2, 3)) and not torch.is_same_size(x, torch.ones(3, 2))
    assert torch.tensor([2.0]).is_nonzero() and not torch.tensor(0).is_nonzero()
    with pytest.raises(RuntimeError, match="more than one value is ambiguous"):
        x.is_nonzero()
    assert torch.zeros(2, 3).t().dim_order() == (1, 0)
    v = torch.tensor([1.0, 2.0])
    v.apply_(lambda e: e * 10)
    assert v.tolist() == [10.0, 20.0]
    v.map_(torch.tensor([1.0]), lambda a, b: a + b)
    assert v.tolist() == [11.0, 21.0]


def test_top_level_names_of_functional_ops():
    # torch.cosine_similarity, torch.pairwise_distance, torch.pixel_shuffle,
    # ... are the functional ops under torch's top-level names
    import ferrotorch.nn.functional as F
    for name in ["cosine_similarity", "pairwise_distance", "pdist", "pixel_shuffle",
                 "pixel_unshuffle", "channel_shuffle", "hardshrink", "bilinear", "conv3d",
                 "conv_transpose1d", "avg_pool1d", "max_pool1d", "adaptive_avg_pool1d",
                 "rms_norm"]:
        assert getattr(torch, name) is getattr(F, name), name
    a = torch.tensor([[3.0, 4.0], [1.0, 0.0]])
    b = torch.tensor([[0.0, 0.0], [0.0, 1.0]])
    np.testing.assert_allclose(torch.pairwise_distance(a, b).numpy(),
                               [5.0, math.sqrt(2.0)], rtol=1e-5)
    np.testing.assert_allclose(torch.cosine_similarity(a, a + 1.0).numpy(),
                               [(12 + 20) / (5 * math.sqrt(41)), 2 / math.sqrt(5)], rtol=1e-6)


def test_top_level_nn_names_take_aten_signatures():
    # torch.kl_div & co. take an int reduction (0 none, 1 mean, 2 sum),
    # the alpha dropouts a required `train`, adaptive_max_pool1d returns
    # its indices, and the in-place activations write their input
    import ferrotorch.nn.functional as F
    torch.manual_seed(0)
    lp = torch.randn(4, 3).log_softmax(-1)
    t = torch.randn(4, 3).softmax(-1)
    for r, s in [(0, "none"), (1, "mean"), (2, "sum")]:
        np.testing.assert_allclose(torch.kl_div(lp, t, r).numpy(),
                                   (t * (t.log() - lp)).numpy().mean() if r == 1 else
                                   F.kl_div(lp, t, reduction=s).numpy(), rtol=1e-5)
    with pytest.raises(TypeError, match="reduction"):
        torch.kl_div(lp, t, "mean")
    a, b = torch.tensor([0.5, 2.0, -1.0, 0.0]), torch.tensor([1.0, 1.0, 1.0, 1.0])
    y = torch.tensor([1.0, -1.0, 1.0, -1.0])
    # max(0, -y (a - b) + 0.5): 1.0, 1.5, 2.5, 0
    assert torch.margin_ranking_loss(a, b, y, 0.5, 2).item() == pytest.approx(5.0)
    assert torch.hinge_embedding_loss(a, y, 1.0, 0).tolist() == [0.5, 0.0, -1.0, 1.0]
    v, i = torch.adaptive_max_pool1d(torch.tensor([[[1.0, 3.0, 2.0, 0.0]]]), 2)
    assert v.tolist() == [[[3.0, 2.0]]] and i.tolist() == [[[1, 2]]]
    x = torch.randn(5)
    assert torch.equal(torch.alpha_dropout(x, 0.5, False), x)
    z = torch.tensor([-1.0, 0.5])
    torch.threshold_(z, 0.0, 9.0)
    assert z.tolist() == [9.0, 0.5]
    w = torch.tensor([-1.0, 2.0])
    torch.selu_(w)
    np.testing.assert_allclose(w.numpy(), [1.0507009873554805 * 1.6732632423543772 * (math.exp(-1) - 1),
                                          1.0507009873554805 * 2.0], rtol=1e-6)

"""The module forms of the rest of nn.functional: each equals its function
with the options it was built with, has torch's parameters and buffers,
and checks its arguments as torch's constructor does."""

import numpy as np
import pytest

import ferrotorch as torch
import ferrotorch.nn as nn
import ferrotorch.nn.functional as F

rng = np.random.default_rng(7)


def T(*s):
    return torch.tensor(rng.standard_normal(s))


def same(a, b):
    np.testing.assert_allclose(np.asarray(a.detach().numpy()), np.asarray(b.detach().numpy()), rtol=1e-12, atol=1e-12)


def test_modules_equal_their_functions():
    x4, x3, a, b = T(2, 8, 4, 4), T(2, 3, 9), T(3, 5), T(3, 5)
    same(nn.PixelShuffle(2)(x4), F.pixel_shuffle(x4, 2))
    same(nn.PixelUnshuffle(2)(x4), F.pixel_unshuffle(x4, 2))
    same(nn.Softshrink(0.2)(x4), F.softshrink(x4, 0.2))
    same(nn.CosineSimilarity(dim=0)(a, b), F.cosine_similarity(a, b, dim=0))
    same(nn.AvgPool1d(3, 2, 1)(x3), F.avg_pool1d(x3, 3, 2, 1))
    same(nn.Unfold(2, stride=2)(x4), F.unfold(x4, 2, stride=2))
    same(nn.Upsample(scale_factor=2, mode="nearest")(x4), F.interpolate(x4, scale_factor=2))
    same(nn.ReflectionPad2d((1, 2, 0, 1))(x4), F.pad(x4, [1, 2, 0, 1], "reflect"))
    same(nn.ConstantPad1d(2, 3.5)(x3), F.pad(x3, [2, 2], value=3.5))
    same(nn.TripletMarginLoss(margin=0.5, reduction="sum")(a, b, T(3, 5) * 0 + a),
         F.triplet_margin_loss(a, b, a, margin=0.5, reduction="sum"))
    same(nn.MultiMarginLoss(p=2)(a, torch.tensor([0, 2, 4])), F.multi_margin_loss(a, torch.tensor([0, 2, 4]), p=2))
    same(nn.Softmax2d()(x4), F.softmax(x4, -3))
    r = nn.RReLU()
    r.eval()
    same(r(x4), F.leaky_relu(x4, (1 / 8 + 1 / 3) / 2))


def test_norm_layers_have_torchs_state():
    inn = nn.InstanceNorm2d(4, affine=True, track_running_stats=True)
    assert sorted(inn.state_dict()) == ["bias", "running_mean", "running_var", "weight"]
    x = torch.randn(2, 4, 3, 3)
    y = inn(x)
    m = x.mean((2, 3), keepdim=True)
    v = x.var((2, 3), unbiased=False, keepdim=True)
    same(y, (x - m) / (v + 1e-5).sqrt())
    assert inn.running_mean.abs().sum().item() > 0  # updated in training
    bn = nn.BatchNorm3d(3)
    assert "num_batches_tracked" in bn.state_dict()
    assert bn(torch.randn(2, 3, 2, 2, 2)).shape == (2, 3, 2, 2, 2)


def test_constructor_arguments_are_checked():
    with pytest.raises(TypeError, match="unexpected keyword"):
        nn.PixelShuffle(2, scale=3)
    with pytest.raises(TypeError, match="unexpected keyword"):
        nn.MarginRankingLoss(magin=1.0)
    assert nn.HingeEmbeddingLoss(2.0).margin == 2.0 and nn.SoftMarginLoss(reduction="sum").reduction == "sum"

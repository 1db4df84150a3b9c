"""conv3d and the 3-D pools against direct NumPy loops, with gradcheck."""

import numpy as np

import ferrotorch as torch
import ferrotorch.nn.functional as F
from ferrotorch.autograd import gradcheck

rng = np.random.default_rng(5)


def close(t, want, tol=1e-9):
    np.testing.assert_allclose(np.asarray(t.detach().numpy()), want, rtol=tol, atol=tol)


def conv3d_ref(x, w, b, stride, pad):
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad), (pad, pad)))
    n, c, d, h, ww = x.shape
    o, _, kd, kh, kw = w.shape
    od, oh, ow = (d - kd) // stride + 1, (h - kh) // stride + 1, (ww - kw) // stride + 1
    out = np.zeros((n, o, od, oh, ow))
    for i in range(od):
        for j in range(oh):
            for k in range(ow):
                patch = x[:, :, i * stride:i * stride + kd, j * stride:j * stride + kh, k * stride:k * stride + kw]
                out[:, :, i, j, k] = np.einsum("ncdhw,ocdhw->no", patch, w)
    return out + b[None, :, None, None, None]


def test_conv3d_matches_direct_convolution():
    x, w, b = rng.standard_normal((2, 3, 5, 4, 6)), rng.standard_normal((4, 3, 2, 3, 2)), rng.standard_normal(4)
    for stride, pad in [(1, 0), (2, 1)]:
        got = F.conv3d(torch.tensor(x), torch.tensor(w), torch.tensor(b), stride=stride, padding=pad)
        close(got, conv3d_ref(x, w, b, stride, pad))
    xs = torch.tensor(rng.standard_normal((1, 2, 3, 3, 3)), requires_grad=True)
    ws = torch.tensor(rng.standard_normal((2, 2, 2, 2, 2)), requires_grad=True)
    assert gradcheck(lambda a, k: F.conv3d(a, k, padding=1, stride=2), (xs, ws))


def pool_ref(x, k, s, f):
    n, c, d, h, w = x.shape
    od, oh, ow = (d - k) // s + 1, (h - k) // s + 1, (w - k) // s + 1
    out = np.zeros((n, c, od, oh, ow))
    for i in range(od):
        for j in range(oh):
            for m in range(ow):
                out[:, :, i, j, m] = f(x[:, :, i * s:i * s + k, j * s:j * s + k, m * s:m * s + k], axis=(2, 3, 4))
    return out


def test_pools_match_direct_windows():
    x = rng.standard_normal((2, 3, 6, 5, 7))
    close(F.max_pool3d(torch.tensor(x), 2, 2), pool_ref(x, 2, 2, np.max))
    close(F.avg_pool3d(torch.tensor(x), 3, 2), pool_ref(x, 3, 2, np.mean))
    # padded, not counting the padding: a corner window averages its 8 cells
    a = F.avg_pool3d(torch.tensor(x), 3, 2, 1, count_include_pad=False)
    close(a[..., 0, 0, 0], x[:, :, :2, :2, :2].mean((2, 3, 4)))
    # depth 6 -> 3 bins of 2, height 5 -> 1 bin, width 7 -> 7
    bins = [x[:, :, 2 * i:2 * i + 2].mean((2, 3)) for i in range(3)]
    close(F.adaptive_avg_pool3d(torch.tensor(x), (3, 1, 7)), np.stack(bins, 2)[:, :, :, None, :])
    close(F.adaptive_max_pool3d(torch.tensor(x), 1), x.max((2, 3, 4), keepdims=True))
    xs = torch.tensor(rng.standard_normal((1, 1, 4, 4, 4)), requires_grad=True)
    assert gradcheck(lambda t: F.avg_pool3d(t, 2, 1, ceil_mode=True), (xs,))
    assert gradcheck(lambda t: F.max_pool3d(t, 2, 2), (xs,))


def test_modules_wrap_the_functions():
    nn = torch.nn
    conv = nn.Conv3d(2, 4, 3, padding=1, bias=True)
    x = torch.randn(1, 2, 4, 4, 4)
    y = conv(x)
    assert y.shape == (1, 4, 4, 4, 4)
    close(y, np.asarray(F.conv3d(x, conv.weight, conv.bias, padding=1).detach().numpy()))
    assert len(list(conv.parameters())) == 2
    pool = nn.MaxPool3d(2, return_indices=True)
    v, i = pool(x)
    assert v.shape == (1, 2, 2, 2, 2)
    assert nn.MaxUnpool3d(2)(v, i).shape == x.shape
    assert nn.AvgPool3d(2)(x).shape == (1, 2, 2, 2, 2)
    assert nn.AdaptiveAvgPool3d((1, 2, 3))(x).shape == (1, 2, 1, 2, 3)
    assert nn.AdaptiveMaxPool3d(1)(x).shape == (1, 2, 1, 1, 1)
    bag = nn.EmbeddingBag(10, 3, mode="sum")
    out = bag(torch.tensor([1, 2, 3, 4]), torch.tensor([0, 2]))
    close(out, np.asarray(bag.weight.detach()[[1, 3]].numpy()) + np.asarray(bag.weight.detach()[[2, 4]].numpy()))
    ctc = nn.CTCLoss()
    lp = torch.randn(6, 2, 4).log_softmax(2)
    assert ctc(lp, torch.tensor([[1, 2], [3, 3]]), torch.tensor([6, 6]), torch.tensor([2, 2])).dim() == 0
    emb = nn.Embedding(3, 2, max_norm=1.0)
    with torch.no_grad():
        emb.weight.copy_(torch.tensor([[3.0, 4.0], [0.1, 0.0], [6.0, 8.0]]))
    emb(torch.tensor([0]))
    close(emb.weight.detach()[0], [0.6, 0.8], 1e-6)


def test_adaptive_max_pool3d_indices_point_at_the_maxima():
    x = torch.tensor(rng.standard_normal((2, 3, 5, 6, 7)))
    v, i = F.adaptive_max_pool3d(x, (2, 3, 4), return_indices=True)
    flat = np.asarray(x.numpy()).reshape(2, 3, -1)
    picked = np.take_along_axis(flat, np.asarray(i.numpy()).reshape(2, 3, -1), 2)
    close(v, picked.reshape(2, 3, 2, 3, 4))
    # bins [0,3), [2,5) along depth, ...: the first bin's maximum
    close(v[..., 0, 0, 0], np.asarray(x.numpy())[:, :, 0:3, 0:2, 0:2].max((2, 3, 4)))

"""affine_grid, grid_sample, max_unpool and embedding_bag: identities
(identity transforms reproduce the input, unpooling inverts pooling),
hand-computed values, NumPy references and gradcheck."""

import numpy as np
import pytest

import ferrotorch as torch
import ferrotorch.nn.functional as F
from ferrotorch.autograd import gradcheck

rng = np.random.default_rng(2)


def close(t, want, tol=1e-9):
    np.testing.assert_allclose(np.asarray(t.detach().numpy()), want, rtol=tol, atol=tol)


def test_affine_grid_of_the_identity_is_the_pixel_grid():
    eye = torch.tensor([[[1.0, 0, 0], [0, 1.0, 0]]], dtype=torch.float64)
    g = F.affine_grid(eye, (1, 1, 3, 4), align_corners=True)
    close(g[0, :, :, 0], np.tile(np.linspace(-1, 1, 4), (3, 1)))
    close(g[0, :, :, 1], np.tile(np.linspace(-1, 1, 3)[:, None], (1, 4)))
    g = F.affine_grid(eye, (1, 1, 2, 2), align_corners=False)
    close(g[0, 0, 0], [-0.5, -0.5])
    # a translation moves every position
    shift = torch.tensor([[[1.0, 0, 0.25], [0, 1.0, -0.5]]], dtype=torch.float64)
    close(F.affine_grid(shift, (1, 1, 3, 4)) - F.affine_grid(eye, (1, 1, 3, 4)),
          np.broadcast_to([0.25, -0.5], (1, 3, 4, 2)))
    g3 = F.affine_grid(torch.eye(3, 4, dtype=torch.float64).unsqueeze(0), (1, 1, 2, 3, 4), align_corners=True)
    assert g3.shape == (1, 2, 3, 4, 3)
    close(g3[0, 1, 2, 3], [1.0, 1.0, 1.0])
    with pytest.raises(ValueError):
        F.affine_grid(torch.zeros(1, 3, 3), (1, 1, 2, 2))


@pytest.mark.parametrize("align", [False, True])
def test_grid_sample_identity_and_hand_values(align):
    x = torch.tensor(rng.standard_normal((2, 3, 4, 5)))
    grid = F.affine_grid(torch.tensor([[[1.0, 0, 0], [0, 1.0, 0]]] * 2, dtype=torch.float64),
                         (2, 3, 4, 5), align_corners=align)
    for mode in ("bilinear", "nearest"):
        close(F.grid_sample(x, grid, mode=mode, align_corners=align), np.asarray(x.numpy()))
    # halfway between two pixels: their mean; outside with zeros padding: 0
    img = torch.tensor([[[[1.0, 3.0]]]], dtype=torch.float64)
    pts = torch.tensor([[[[0.0, 0.0], [5.0, 0.0]]]], dtype=torch.float64)
    out = F.grid_sample(img, pts, align_corners=True)
    close(out, [[[[2.0, 0.0]]]])
    close(F.grid_sample(img, pts, padding_mode="border", align_corners=True), [[[[2.0, 3.0]]]])


def test_grid_sample_gradients():
    x = torch.tensor(rng.standard_normal((1, 2, 3, 4)), requires_grad=True)
    g = torch.tensor(rng.uniform(-0.9, 0.9, (1, 2, 3, 2)), requires_grad=True)
    for pm in ("zeros", "border", "reflection"):
        assert gradcheck(lambda a, b: F.grid_sample(a, b, padding_mode=pm, align_corners=False), (x, g))


def test_max_unpool_inverts_max_pool():
    x = torch.tensor(rng.standard_normal((2, 3, 4, 6)))
    v, i = F.max_pool2d(x, 2, return_indices=True)
    u = F.max_unpool2d(v, i, 2)
    a = np.asarray(x.numpy())
    want = np.where(a == np.repeat(np.repeat(np.asarray(v.numpy()), 2, 2), 2, 3), a, 0)
    close(u, want)
    assert F.max_unpool2d(v, i, 2, output_size=(5, 7)).shape == (2, 3, 5, 7)
    v1, i1 = F.max_pool1d(x[0], 2, return_indices=True)
    assert F.max_unpool1d(v1, i1, 2).shape == (3, 4, 6)
    with pytest.raises(ValueError):
        F.max_unpool2d(v, i, 2, output_size=(9, 9))


def test_embedding_bag_matches_numpy():
    w = rng.standard_normal((10, 3))
    W = torch.tensor(w, requires_grad=True)
    idx = [1, 2, 4, 5, 4, 3, 2, 9]
    inp, off = torch.tensor(idx), torch.tensor([0, 4])
    bags = [idx[:4], idx[4:]]
    close(F.embedding_bag(inp, W, off, mode="sum"), [w[b].sum(0) for b in bags])
    close(F.embedding_bag(inp, W, off, mode="mean"), [w[b].mean(0) for b in bags])
    close(F.embedding_bag(inp, W, off, mode="max"), [w[b].max(0) for b in bags])
    psw = rng.standard_normal(8)
    close(F.embedding_bag(inp, W, off, mode="sum", per_sample_weights=torch.tensor(psw)),
          [(w[idx[:4]] * psw[:4, None]).sum(0), (w[idx[4:]] * psw[4:, None]).sum(0)])
    close(F.embedding_bag(torch.tensor([[1, 2], [3, 0]]), W, mode="mean", padding_idx=0),
          [w[[1, 2]].mean(0), w[3]])
    assert gradcheck(lambda t: F.embedding_bag(inp, t, off, mode="mean"), (W,))


def test_max_norm_renormalizes_the_looked_up_rows_in_place():
    # F.embedding ignored max_norm before: rows must be scaled to the norm
    w = torch.tensor([[3.0, 4.0], [0.3, 0.4], [6.0, 8.0]])
    out = F.embedding(torch.tensor([0, 1]), w, max_norm=1.0)
    close(out, [[0.6, 0.8], [0.3, 0.4]], 1e-6)
    close(w, [[0.6, 0.8], [0.3, 0.4], [6.0, 8.0]], 1e-6)  # row 2 was not looked up
    w2 = torch.tensor([[3.0, 4.0], [6.0, 8.0]])
    out = F.embedding_bag(torch.tensor([0, 1]), w2, torch.tensor([0]), mode="sum", max_norm=2.0)
    close(out, [[2.4, 3.2]], 1e-6)


def test_grid_sample_identity_grid_reproduces_the_input_in_every_mode():
    torch.manual_seed(0)
    x2 = torch.randn(2, 3, 5, 6, dtype=torch.float64)
    theta2 = torch.tensor([[[1.0, 0, 0], [0, 1.0, 0]]] * 2, dtype=torch.float64)
    g2 = F.affine_grid(theta2, (2, 3, 5, 6), align_corners=True)
    for mode in ("bilinear", "nearest", "bicubic"):
        y = F.grid_sample(x2, g2, mode=mode, align_corners=True)
        assert torch.allclose(y, x2, atol=1e-12), mode
    x3 = torch.randn(1, 2, 3, 4, 5, dtype=torch.float64)
    theta3 = torch.tensor([[[1.0, 0, 0, 0], [0, 1.0, 0, 0], [0, 0, 1.0, 0]]], dtype=torch.float64)
    g3 = F.affine_grid(theta3, (1, 2, 3, 4, 5), align_corners=False)
    for mode in ("bilinear", "nearest"):
        y = F.grid_sample(x3, g3, mode=mode, align_corners=False)
        assert torch.allclose(y, x3, atol=1e-12), mode
    with pytest.raises(RuntimeError, match="bicubic interpolation only supports 4D input"):
        F.grid_sample(x3, g3, mode="bicubic")


def test_grid_sample_bicubic_and_trilinear_gradients():
    torch.manual_seed(1)
    x = torch.randn(1, 2, 4, 5, dtype=torch.float64, requires_grad=True)
    g = (torch.rand(1, 3, 3, 2, dtype=torch.float64) * 2.4 - 1.2).requires_grad_()
    for pad in ("zeros", "border", "reflection"):
        assert torch.autograd.gradcheck(
            lambda a, b: F.grid_sample(a, b, mode="bicubic", padding_mode=pad), (x, g)), pad
    x3 = torch.randn(1, 1, 3, 3, 4, dtype=torch.float64, requires_grad=True)
    g3 = (torch.rand(1, 2, 2, 2, 3, dtype=torch.float64) * 2 - 1).requires_grad_()
    assert torch.autograd.gradcheck(
        lambda a, b: F.grid_sample(a, b, padding_mode="reflection", align_corners=True), (x3, g3))
    # torch's integer-coded entry point
    assert torch.equal(torch.grid_sampler(x, g, 2, 1, False),
                       F.grid_sample(x, g, mode="bicubic", padding_mode="border"))

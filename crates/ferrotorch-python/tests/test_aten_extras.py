"""ATen's underscore ops at the top level and linalg.matrix_sqrth/polar,
against closed forms and NumPy."""

import numpy as np
import pytest

import ferrotorch as torch


def test_softmax_backward_data_is_the_softmax_gradient():
    x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    y = torch.softmax(x, 1)
    g = torch.randn(3, 4, dtype=torch.float64)
    (want,) = torch.autograd.grad(y, x, g)
    got = torch._softmax_backward_data(g, y.detach(), 1, torch.float64)
    assert torch.allclose(got, want, atol=1e-12)


def test_chunk_cat():
    a, b = torch.arange(6.0).reshape(2, 3), torch.arange(4.0).reshape(2, 2)
    # a's rows cut in chunks of 2 (zero-padded), b's in chunks of 1
    assert torch._chunk_cat([a, b], 1, 2).tolist() == [[[0, 1, 0], [2, 0, 1]],
                                                        [[3, 4, 2], [5, 0, 3]]]
    out = torch._chunk_cat([torch.arange(5.0), torch.arange(3.0)], 0, 2)
    assert out.tolist() == [[0, 1, 2, 0, 1], [3, 4, 0, 2, 0]]


def test_masked_index_pair():
    x = torch.arange(5.0)
    mask = torch.tensor([True, False, True])
    idx = torch.tensor([4, 99, 0])
    assert torch._unsafe_masked_index(x, mask, [idx], -1.0).tolist() == [4.0, -1.0, 0.0]
    acc = torch._unsafe_masked_index_put_accumulate(torch.zeros(5), mask, [torch.tensor([1, 1, 1])],
                                                     torch.tensor([1.0, 2.0, 3.0]))
    assert acc.tolist() == [0.0, 4.0, 0.0, 0.0, 0.0]


def test_pool_and_dropout_backward_helpers():
    x = torch.tensor([[[[1.0, 5.0], [3.0, 2.0]]]])
    _, idx = torch.nn.functional.max_pool2d(x, 2, return_indices=True)
    g = torch.max_pool2d_with_indices_backward(torch.tensor([[[[7.0]]]]), x, 2, 2, 0, 1, False, idx)
    assert g.tolist() == [[[[0.0, 7.0], [0.0, 0.0]]]]
    assert torch.native_dropout_backward(torch.ones(3), torch.tensor([True, False, True]),
                                         2.0).tolist() == [2.0, 0.0, 2.0]


def test_matrix_sqrth_and_polar():
    rng = np.random.default_rng(3)
    m = rng.standard_normal((4, 4))
    spd = m @ m.T + 4 * np.eye(4)
    x = torch.linalg.matrix_sqrth(torch.tensor(spd)).numpy()
    np.testing.assert_allclose(x @ x, spd, rtol=1e-10)
    np.testing.assert_allclose(x, x.T, atol=1e-12)
    a = rng.standard_normal((5, 3)) + 1j * rng.standard_normal((5, 3))
    u, h = torch.linalg.polar(torch.tensor(a))
    u, h = u.numpy(), h.numpy()
    np.testing.assert_allclose(u @ h, a, atol=1e-12)
    np.testing.assert_allclose(np.conj(u.T) @ u, np.eye(3), atol=1e-12)
    assert np.all(np.linalg.eigvalsh(h) > 0)
    with pytest.raises(RuntimeError, match="at least as many rows as columns"):
        torch.linalg.polar(torch.randn(2, 4))
    assert torch.autograd.gradcheck(
        lambda t: torch.linalg.matrix_sqrth(t @ t.mT + 3 * torch.eye(3, dtype=torch.float64)),
        (torch.randn(3, 3, dtype=torch.float64, requires_grad=True),))


def test_segment_reduce():
    x = torch.arange(6.0)
    lengths = torch.tensor([2, 0, 4])
    assert torch.segment_reduce(x, "sum", lengths=lengths).tolist() == [1.0, 0.0, 14.0]
    assert torch.segment_reduce(x, "max", offsets=torch.tensor([0, 2, 2, 6])).tolist() == \
        [1.0, float("-inf"), 5.0]
    # mean divides by the length; initial starts every segment and fills the empty one
    got = torch.segment_reduce(x, "mean", lengths=lengths, initial=7.0).tolist()
    assert got == [4.0, 7.0, 21.0 / 4]
    assert torch.segment_reduce(x, "prod", lengths=torch.tensor([3, 3])).tolist() == [0.0, 60.0]
    rows = torch.segment_reduce(torch.arange(12.0).reshape(2, 6), "sum",
                                lengths=torch.tensor([[2, 4], [3, 3]]), axis=1)
    assert rows.tolist() == [[1.0, 14.0], [21.0, 30.0]]
    with pytest.raises(RuntimeError, match="sum to data.size"):
        torch.segment_reduce(x, "sum", lengths=torch.tensor([1, 1]))
    w = torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda t: torch.segment_reduce(t, "mean", lengths=torch.tensor([1, 3])), (w,))


def test_safe_softmax_zeros_dead_rows_in_value_and_gradient():
    inf = float("inf")
    x = torch.tensor([[-inf, -inf, -inf], [1.0, 2.0, -inf]], dtype=torch.float64, requires_grad=True)
    y = torch._safe_softmax(x, 1)
    e = np.exp([1.0, 2.0])
    np.testing.assert_allclose(y.detach().numpy(), [[0, 0, 0], [e[0] / e.sum(), e[1] / e.sum(), 0]])
    (y * torch.tensor([[1.0, 2, 3], [4, 5, 6]], dtype=torch.float64)).sum().backward()
    assert not np.isnan(x.grad.numpy()).any()
    assert x.grad[0].tolist() == [0, 0, 0]
    # the same through torch.ops.aten, as torch names it
    assert torch.equal(torch.ops.aten._safe_softmax.default(x.detach(), 1), y.detach())


def test_flash_attention_for_cpu_output_and_logsumexp():
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal(s) for s in [(2, 3, 4), (2, 5, 4), (2, 5, 6)])
    out, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
        torch.tensor(q), torch.tensor(k), torch.tensor(v), is_causal=True)
    s = q @ k.transpose(0, 2, 1) / 2.0  # scale 1/sqrt(4)
    s = np.where(np.tril(np.ones((3, 5), bool)), s, -np.inf)
    m = s.max(-1, keepdims=True)
    want_lse = (m + np.log(np.exp(s - m).sum(-1, keepdims=True)))[..., 0]
    p = np.exp(s - want_lse[..., None])
    np.testing.assert_allclose(lse.numpy(), want_lse, rtol=1e-12)
    np.testing.assert_allclose(out.numpy(), p @ v, rtol=1e-12)
    assert not lse.requires_grad


def test_max_pool2d_backward_result_is_in_the_inputs_graph():
    x = torch.randn(1, 1, 4, 4, dtype=torch.float64, requires_grad=True)
    out, idx = torch.nn.functional.max_pool2d(x, 2, return_indices=True)
    g = torch.max_pool2d_with_indices_backward(torch.ones_like(out), x, [2, 2], [2, 2], [0, 0], [1, 1], False, idx)
    assert g.requires_grad  # torch: in x's graph, with a zero derivative
    (gx,) = torch.autograd.grad(g.sum(), x)
    assert gx.abs().sum().item() == 0
    assert g.sum().item() == 4

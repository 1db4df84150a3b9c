"""Issue 25's list of ops known to be wrong, each checked against torch's
behaviour written out by hand (values, dtypes, gradients, errors)."""

import pytest

import ferrotorch as torch
import ferrotorch.nn.functional as F


def test_frac_records_a_graph_with_gradient_one():
    x = torch.tensor([1.5, -2.25, 3.0], dtype=torch.float64, requires_grad=True)
    y = torch.frac(x)
    assert y.grad_fn is not None and y.requires_grad
    assert y.tolist() == [0.5, -0.25, 0.0]
    y.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0, 1.0]
    assert torch.autograd.gradcheck(torch.frac, (torch.tensor([0.3, -1.7], dtype=torch.float64,
                                                              requires_grad=True),))


@pytest.mark.parametrize("mode", ["floor", "trunc"])
def test_div_with_a_rounding_mode_records_zero_gradients(mode):
    a = torch.tensor([1.5, -2.5, 7.0], requires_grad=True)
    b = torch.tensor([2.0, 2.0, -3.0], requires_grad=True)
    y = torch.div(a, b, rounding_mode=mode)
    assert y.requires_grad and y.grad_fn is not None
    want = [0.0, -2.0, -3.0] if mode == "floor" else [0.0, -1.0, -2.0]
    assert y.tolist() == want
    (y * torch.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert a.grad.tolist() == [0.0, 0.0, 0.0] and b.grad.tolist() == [0.0, 0.0, 0.0]
    s = torch.div(a, 2, rounding_mode=mode)
    assert s.requires_grad
    assert torch.floor_divide(a, b).requires_grad


def test_searchsorted_out_int32():
    seq = torch.tensor([1.0, 2.0, 3.0])
    out = torch.searchsorted(seq, torch.tensor([2.5, 0.0]), out_int32=True)
    assert out.dtype == torch.int32 and out.tolist() == [2, 0]
    assert torch.searchsorted(seq, torch.tensor([2.5])).dtype == torch.int64


def test_where_as_a_method_and_a_non_bool_condition():
    x, y = torch.tensor([1.0, 2.0, 3.0]), torch.tensor([9.0, 9.0, 9.0])
    cond = torch.tensor([True, False, True])
    assert x.where(cond, y).tolist() == [1.0, 9.0, 3.0]
    assert x.where(cond, 0.0).tolist() == [1.0, 0.0, 3.0]
    with pytest.raises(RuntimeError, match="where expected condition to be a boolean tensor"):
        x.where(torch.tensor([1, 0, 1]), y)
    with pytest.raises(RuntimeError, match="boolean tensor, but got a tensor with dtype Long"):
        torch.where(torch.tensor([1, 0, 1]), x, y)


def test_batch_norm_edge_shapes():
    # an empty batch is an empty result; exactly one value per channel is
    # refused in training, as torch does
    out = F.batch_norm(torch.ones(2, 3, 0), None, None, training=True)
    assert out.shape == (2, 3, 0)
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when training"):
        F.batch_norm(torch.ones(1, 3), None, None, training=True)
    x = torch.tensor([[1.0, 4.0], [3.0, 8.0]])
    y = F.batch_norm(x, None, None, training=True)
    # (x - mean) / sqrt(var + eps): column variances 1 and 4
    a, b = 1 / (1 + 1e-5) ** 0.5, 2 / (4 + 1e-5) ** 0.5
    assert y.flatten().tolist() == pytest.approx([-a, -b, a, b], rel=1e-6)
    g = F.group_norm(torch.tensor([[1.0, 3.0, 5.0, 9.0]]), 2)
    assert [round(v, 4) for v in g.flatten().tolist()] == [-1.0, 1.0, -1.0, 1.0]


def test_avg_pool2d_divisor_override():
    x = torch.arange(16.0).reshape(1, 1, 4, 4)
    # window sums 10, 18, 42, 50
    assert F.avg_pool2d(x, 2, divisor_override=2).flatten().tolist() == [5.0, 9.0, 21.0, 25.0]
    assert F.avg_pool2d(x, 2, divisor_override=-2).flatten().tolist() == [-5.0, -9.0, -21.0, -25.0]
    with pytest.raises(RuntimeError, match="divisor must be not zero"):
        F.avg_pool2d(x, 2, divisor_override=0)


def test_the_rest_of_the_list_stays_right():
    # sum/mean over an empty dim list of a 0-d tensor
    assert torch.tensor(3.0).sum(dim=[]).item() == 3.0
    assert torch.tensor(3.0).mean(dim=[]).item() == 3.0
    # clamp's gradient for tensor bounds (ties go to the input)
    x = torch.tensor([0.0, 1.0, 2.0, 3.0], requires_grad=True)
    lo = torch.tensor([0.5, 0.5, 2.5, 0.5], requires_grad=True)
    hi = torch.tensor([2.0, 2.0, 2.5, 2.5], requires_grad=True)
    torch.clamp(x, lo, hi).sum().backward()
    assert (x.grad.tolist(), lo.grad.tolist(), hi.grad.tolist()) == (
        [0.0, 1.0, 0.0, 0.0], [1.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0])
    # prod's gradient with zeros: no NaN
    p = torch.tensor([[0.0, 2.0, 3.0], [1.0, 2.0, 3.0]], requires_grad=True)
    p.prod(1).sum().backward()
    assert p.grad.tolist() == [[6.0, 0.0, 0.0], [6.0, 3.0, 2.0]]
    # as_strided on a partial view: offsets are the storage's
    v = torch.arange(12.0)[2:]
    assert v.as_strided((2, 2), (1, 2)).tolist() == [[2.0, 4.0], [3.0, 5.0]]
    assert v.as_strided((2, 2), (1, 2), 1).tolist() == [[1.0, 3.0], [2.0, 4.0]]
    # nll_loss of one sample is 0-d
    loss = F.nll_loss(torch.tensor([-1.0, -2.0, -0.5]), torch.tensor(1))
    assert loss.shape == () and loss.item() == 2.0
    # gather takes int32 or int64 indices only
    src = torch.arange(6.0).reshape(2, 3)
    assert torch.gather(src, 1, torch.tensor([[0], [2]], dtype=torch.int32)).tolist() == [[0.0], [5.0]]
    with pytest.raises(RuntimeError, match="Expected dtype int32/int64 for index"):
        torch.gather(src, 1, torch.tensor([[0], [2]], dtype=torch.int16))
    # negative pads crop
    assert F.pad(torch.arange(10.0).reshape(2, 5), (-1, 2)).tolist() == [
        [1.0, 2.0, 3.0, 4.0, 0.0, 0.0], [6.0, 7.0, 8.0, 9.0, 0.0, 0.0]]


@pytest.mark.parametrize("op", ["sum", "mean", "std", "var"])
def test_reductions_of_a_0d_tensor_over_dim_0_differentiate(op):
    # found by bench/opinfo_diff.py: backward indexed the 0-d tensor's
    # (empty) shape and panicked
    x = torch.tensor(2.0, dtype=torch.float64, requires_grad=True)
    kwargs = {"correction": 0} if op in ("std", "var") else {}
    for dim, keepdim in ((0, True), (-1, False)):
        x.grad = None
        y = getattr(x, op)(dim=dim, keepdim=keepdim, **kwargs)
        assert y.shape == (1,) * 0 or y.shape == ()
        y.backward()
        want = {"sum": 1.0, "mean": 1.0, "std": 0.0, "var": 0.0}[op]
        assert x.grad.item() == want or (op == "std" and x.grad.isnan().item())


def test_matmul_folding_with_an_empty_inner_dimension():
    # found by bench/opinfo_diff.py: the fold to rows used reshape(-1, 0)
    y = torch.matmul(torch.ones(2, 3, 0), torch.ones(0, 4))
    assert y.shape == (2, 3, 4) and y.sum().item() == 0.0
    assert torch.matmul(torch.ones(2, 3, 0), torch.ones(0)).shape == (2, 3)


def test_found_by_the_opinfo_run():
    # view of a 0-d tensor
    assert torch.tensor(3.0).view(1).tolist() == [3.0]
    assert torch.tensor(3.0).view(1, 1).shape == (1, 1)
    assert torch.ones(1).view(()).shape == ()
    # take_along_dim counts negative indices from the end
    x = torch.arange(10.0).reshape(2, 5)
    idx = torch.tensor([[-1, 0], [-5, 2]])
    assert torch.take_along_dim(x, idx, 1).tolist() == [[4.0, 0.0], [5.0, 7.0]]
    # nll_loss of one unbatched sample, unreduced, is 0-d
    loss = F.nll_loss(torch.tensor([-1.0, -2.0, -0.5]), torch.tensor(2), reduction="none")
    assert loss.shape == () and loss.item() == 0.5


def test_clamp_gradient_when_min_exceeds_max():
    # found by bench/opinfo_diff.py: where min > max the result is max, and
    # the gradient goes to max alone (torch's clamp_backward_min_max)
    x = torch.tensor([0.0, 1.0, 2.0, 3.0, 5.0], dtype=torch.float64, requires_grad=True)
    lo = torch.tensor([0.5, 1.5, 1.0, 4.0, 1.0], dtype=torch.float64, requires_grad=True)
    hi = torch.tensor([2.0, 1.0, 3.0, 2.0, 4.0], dtype=torch.float64, requires_grad=True)
    y = torch.clamp(x, lo, hi)
    assert y.tolist() == [0.5, 1.0, 2.0, 2.0, 4.0]
    y.sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 1.0, 0.0, 0.0]
    assert lo.grad.tolist() == [1.0, 0.0, 0.0, 0.0, 0.0]
    assert hi.grad.tolist() == [0.0, 1.0, 0.0, 1.0, 1.0]
    # equal bounds: the gradient goes to min, as in torch
    x, lo, hi = (torch.tensor([2.0], requires_grad=True) for _ in range(3))
    with torch.no_grad():
        lo.fill_(2.5)
        hi.fill_(2.5)
    torch.clamp(x, lo, hi).sum().backward()
    assert (x.grad.item(), lo.grad.item(), hi.grad.item()) == (0.0, 1.0, 0.0)


def test_as_strided_gradient_adds_up_overlapping_uses():
    # found by bench/opinfo_diff.py: a view that reaches one element
    # several times gave it one use's gradient instead of their sum
    x = torch.arange(4.0, dtype=torch.float64, requires_grad=True)
    y = x.as_strided((2, 2), (1, 1))  # [[x0, x1], [x1, x2]]
    assert y.tolist() == [[0.0, 1.0], [1.0, 2.0]]
    (y * torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.float64)).sum().backward()
    assert x.grad.tolist() == [1.0, 5.0, 4.0, 0.0]
    z = torch.arange(3.0, dtype=torch.float64, requires_grad=True)
    z.as_strided((3,), (0,), 1).sum().backward()  # three uses of z[1]
    assert z.grad.tolist() == [0.0, 3.0, 0.0]
    # the diagonal (no overlap) is unchanged
    m = torch.ones(3, 3, dtype=torch.float64, requires_grad=True)
    m.diagonal().sum().backward()
    assert m.grad.tolist() == [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]


# --- session 21: found by the OpInfo run (each failed before its fix) ----

def test_linspace_with_one_step_is_start():
    assert torch.linspace(-2.0, 5.0, 1).tolist() == [-2.0]
    assert torch.logspace(1.0, 3.0, 1).tolist() == [10.0]


def test_integer_linspace_truncates_its_endpoints_first():
    # torch casts 0.5 and 9.7 to 0 and 9, then steps by 1.5
    assert torch.linspace(0.5, 9.7, 7, dtype=torch.int64).tolist() == [0, 1, 3, 4, 6, 7, 9]
    assert torch.logspace(-0.3, 0.7, 3, dtype=torch.int64).tolist() == [1, 1, 1]


def test_pad_with_negative_amounts_crops_in_every_mode():
    x = torch.arange(4.0).reshape(1, 1, 4)
    F = torch.nn.functional
    # circular crops first and wraps what is left: [1, 2, 3] + [1]
    assert F.pad(x, (-1, 1), mode="circular").tolist() == [[[1.0, 2.0, 3.0, 1.0]]]
    assert F.pad(x, (1, -1), mode="circular").tolist() == [[[2.0, 0.0, 1.0, 2.0]]]
    assert F.pad(x, (-1, 1), mode="replicate").tolist() == [[[1.0, 2.0, 3.0, 3.0]]]
    assert F.pad(x, (-1, 1), mode="reflect").tolist() == [[[1.0, 2.0, 3.0, 2.0]]]


def test_empty_uint8_index_gathers_nothing():
    x = torch.arange(5.0)
    assert tuple(torch.gather(x, 0, torch.zeros(0, dtype=torch.uint8)).shape) == (0,)
    with pytest.raises(RuntimeError, match="int32/int64"):
        torch.gather(x, 0, torch.zeros(2, dtype=torch.uint8))


def test_scatter_with_the_old_reduce_argument():
    x = torch.ones(2, 3)
    idx = torch.tensor([[0, 1, 0]])
    src = torch.tensor([[2.0, 3.0, 4.0]])
    assert x.scatter(0, idx, src, reduce="add").tolist() == [[3.0, 1.0, 5.0], [1.0, 4.0, 1.0]]
    assert x.scatter(0, idx, src, reduce="multiply").tolist() == [[2.0, 1.0, 4.0], [1.0, 3.0, 1.0]]
    assert x.scatter(0, idx, 5.0, reduce="add").tolist() == [[6.0, 1.0, 6.0], [1.0, 6.0, 1.0]]


def test_p_norm_subgradient_at_zero_is_zero():
    for p in (0.5, 1, -1, -2, 3.5):
        z = torch.zeros(3, dtype=torch.float64, requires_grad=True)
        torch.linalg.norm(z, p).backward()
        assert z.grad.tolist() == [0.0, 0.0, 0.0], p


def test_int_overload_is_not_taken_for_a_list():
    # hsplit(x, 2) is two equal sections, not a split at index 2
    x = torch.arange(6.0)
    assert [t.tolist() for t in torch.hsplit(x, 2)] == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    assert [t.tolist() for t in x.hsplit([2])] == [[0.0, 1.0], [2.0, 3.0, 4.0, 5.0]]


def test_meshgrid_xy_swaps_the_first_two_grids():
    a, b = torch.arange(3.0), torch.arange(2.0)
    gx, gy = torch.meshgrid(a, b, indexing="xy")
    assert tuple(gx.shape) == (2, 3) and gx.tolist() == [[0.0, 1.0, 2.0], [0.0, 1.0, 2.0]]
    assert gy.tolist() == [[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]]


def test_nearest_interpolate_uses_the_given_scale_factor():
    # torch maps output j to floor(j / 1.5) with scale_factor=1.5 (not in/out)
    x = torch.arange(4.0).reshape(1, 1, 4)
    y = torch.nn.functional.interpolate(x, scale_factor=1.5, mode="nearest")
    assert y.tolist() == [[[0.0, 0.0, 1.0, 2.0, 2.0, 3.0]]]


def test_tensordot_broadcasts_size_one_contracted_dims():
    # torch sums the other side's dimension when one side has size 1
    a = torch.ones(1, 1, 1, dtype=torch.float64, requires_grad=True)
    b = torch.arange(4.0, dtype=torch.float64).reshape(2, 1, 2)
    y = torch.tensordot(a, b, dims=([0, 1], [2, 0]))
    assert tuple(y.shape) == (1, 1) and y.tolist() == [[6.0]]
    y.sum().backward()
    assert a.grad.tolist() == [[[6.0]]]
    with pytest.raises(RuntimeError, match="contracted dimensions need to match"):
        torch.tensordot(torch.ones(2, 3), torch.ones(3, 3), dims=([0], [0]))


def test_gather_with_an_empty_index_of_any_rank():
    x = torch.arange(5.0, dtype=torch.float64, requires_grad=True)
    y = torch.gather(x, 0, torch.zeros(2, 0, dtype=torch.uint8))
    assert tuple(y.shape) == (2, 0) and y.dtype == torch.float64
    y.sum().backward()
    assert x.grad.tolist() == [0.0] * 5


def test_gather_and_scatter_on_a_zero_dim_self():
    x = torch.tensor(3.0, dtype=torch.float64, requires_grad=True)
    y = torch.gather(x, 0, torch.zeros(1, dtype=torch.int64))
    assert y.tolist() == [3.0]
    (y * 2).sum().backward()
    assert x.grad.item() == 2.0
    z = torch.tensor(1.0).scatter_add(0, torch.zeros(1, dtype=torch.int64), torch.tensor([4.0]))
    assert z.item() == 5.0


def test_cat_of_legacy_empty_tensors_stays_in_the_graph():
    a = torch.zeros(0, requires_grad=True)
    b = torch.zeros(0, requires_grad=True)
    y = torch.cat([a, b])
    assert y.requires_grad and y.grad_fn is not None and tuple(y.shape) == (0,)
    ga, gb = torch.autograd.grad(y.sum(), [a, b])
    assert tuple(ga.shape) == (0,) and tuple(gb.shape) == (0,)


def test_scatter_reduce_prod_gradient_with_zeros():
    # self [2, 0, 3]; src [0, 5, 4, 7] scattered to [0, 0, 1, 2]
    x = torch.tensor([2.0, 0.0, 3.0], dtype=torch.float64, requires_grad=True)
    src = torch.tensor([0.0, 5.0, 4.0, 7.0], dtype=torch.float64, requires_grad=True)
    idx = torch.tensor([0, 0, 1, 2])
    y = x.scatter_reduce(0, idx, src, "prod")
    assert y.tolist() == [0.0, 0.0, 21.0]
    y.sum().backward()
    # d/dself: the product of the others at the target; d/dsrc likewise
    assert x.grad.tolist() == [0.0, 4.0, 7.0]
    assert src.grad.tolist() == [10.0, 0.0, 0.0, 3.0]
    assert torch.autograd.gradcheck(
        lambda a, b: a.scatter_reduce(0, idx, b, "prod", include_self=False), (x, src))


def test_k_dimensional_nll_and_cross_entropy_keep_the_target_shape():
    # (N, C, d1, d2) logits, (N, d1, d2) targets: reduction='none' is (N, d1, d2)
    x = torch.tensor([[[[0.0, 1.0]], [[2.0, 0.0]]]])  # (1, 2, 1, 2)
    y = torch.tensor([[[1, 0]]])
    loss = F.cross_entropy(x, y, reduction="none")
    assert tuple(loss.shape) == (1, 1, 2)
    lse0 = float(torch.log(torch.exp(torch.tensor(0.0)) + torch.exp(torch.tensor(2.0))))
    lse1 = float(torch.log(torch.exp(torch.tensor(1.0)) + torch.exp(torch.tensor(0.0))))
    assert abs(loss[0, 0, 0].item() - (lse0 - 2.0)) < 1e-6
    assert abs(loss[0, 0, 1].item() - (lse1 - 1.0)) < 1e-6
    assert tuple(F.nll_loss(x, y, reduction="none").shape) == (1, 1, 2)


# torch's generated bindings return `Tensor[]` results as tuples (PyTorch
# 2.15: `type(torch.split(x, 1)) is tuple`); `torch.ops.aten` returns lists
@pytest.mark.parametrize("call", [
    lambda t, x: t.split(x, 1),
    lambda t, x: x.split(1),
    lambda t, x: x.split([1, 1]),
    lambda t, x: x.split_with_sizes([1, 1]),
    lambda t, x: t.unsafe_split(x, 1),
    lambda t, x: t.unbind(x),
    lambda t, x: x.unbind(1),
    lambda t, x: x.chunk(2),
    lambda t, x: t.tensor_split(x, 2),
    lambda t, x: t.hsplit(x, 3),
    lambda t, x: t.vsplit(x, 2),
    lambda t, x: t.unravel_index(t.tensor([5, 1]), (2, 3)),
    lambda t, x: t.broadcast_tensors(x, x[0]),
    lambda t, x: t.meshgrid(t.arange(2), t.arange(3), indexing="ij"),
])
def test_tensor_list_results_are_tuples(call):
    x = torch.arange(6.0).reshape(2, 3)
    out = call(torch, x)
    assert type(out) is tuple and all(isinstance(o, torch.Tensor) for o in out)
    assert len(out) >= 2


def test_tensor_list_values_and_aten_lists():
    import numpy as np
    x = torch.arange(6.0).reshape(2, 3)
    parts = torch.split(x, 1, dim=1)
    for p, want in zip(parts, np.split(x.numpy(), 3, axis=1)):
        np.testing.assert_array_equal(p.numpy(), want)
    rows, cols = torch.unravel_index(torch.tensor([5, 1]), (2, 3))
    assert rows.tolist() == [1, 0] and cols.tolist() == [2, 1]
    assert type(torch.ops.aten.split.Tensor(x, 1)) is list
    assert type(torch.ops.aten.unbind.int(x)) is list


def test_where_with_only_a_condition_is_nonzero_as_tuple():
    c = torch.tensor([[0.0, 1.0], [2.0, 0.0]]) > 0
    rows, cols = torch.where(c)
    assert rows.tolist() == [0, 1] and cols.tolist() == [1, 0]
    assert type(torch.where(c)) is tuple
    assert [t.tolist() for t in torch.where(torch.tensor(True))] == [[0]]
    x = torch.tensor([1.0, -2.0])
    assert torch.where(x > 0, x, -x).tolist() == [1.0, 2.0]
    assert torch.where(x > 0, x, other=0.0).tolist() == [1.0, 0.0]
    assert x.where(x > 0, 5.0).tolist() == [1.0, 5.0]

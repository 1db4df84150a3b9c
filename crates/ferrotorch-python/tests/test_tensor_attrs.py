"""The rest of Tensor's attributes behave as torch's CPU build: device and
layout predicates, as_subclass, the deprecated resize/resize_as and
TypedStorage, module_load, map2_, nonzero_static, output_nr and
post-accumulate-grad hooks (values here are analytic: what torch 2.15
prints for the same calls)."""

import math
import warnings

import pytest

import ferrotorch as ft


def test_a_strided_cpu_tensor_answers_its_predicates_as_torchs():
    x = ft.ones(2, 3)
    for flag in ["is_meta", "is_nested", "is_sparse", "is_quantized", "is_mkldnn", "is_xpu", "is_mps"]:
        assert getattr(x, flag) is False, flag
    assert x.is_distributed() is False
    assert x.name is None
    assert x.grad_dtype == ft.float32
    assert x.const_data_ptr() == x.data_ptr()
    with pytest.warns(UserWarning, match="volatile was removed"):
        assert x.volatile is False
    with pytest.raises(AssertionError, match="Torch not compiled with XPU enabled"):
        x.xpu()
    with pytest.raises(RuntimeError, match="ipu"):
        x.ipu()
    with pytest.raises(RuntimeError, match="accelerator"):
        x.pin_memory()


def test_as_subclass_keeps_data_and_graph_without_calling_init():
    class Tagged(ft.Tensor):
        def __init__(self, *a, **k):
            raise AssertionError("as_subclass must not call __init__")

    x = ft.arange(3.0, requires_grad=True)
    y = (x * 2).as_subclass(Tagged)
    assert type(y) is Tagged
    assert y.tolist() == [0.0, 2.0, 4.0]
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]
    with pytest.raises(TypeError, match="does not inherit from Tensor"):
        x.as_subclass(int)


def test_deprecated_resize_is_a_view_of_the_same_element_count():
    x = ft.arange(6.0).reshape(2, 3)
    with pytest.warns(UserWarning, match="non-inplace resize is deprecated"):
        y = x.t().resize(3, 2)
    assert y.tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
    with pytest.warns(UserWarning, match="non-inplace resize_as is deprecated"):
        assert x.resize_as(ft.zeros(6)).tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError, match=r"requested resize to 4 \(4 elements in total\), but the given tensor "
                                               r"has a size of 2x3 \(6 elements\)"):
            x.resize(4)


def test_typed_storage_sees_and_writes_the_tensors_bytes():
    x = ft.arange(6.0).reshape(2, 3)[:, 1:]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = x.storage()
        assert (len(s), s.size(), s.dtype, s.element_size(), s.nbytes()) == (6, 6, ft.float32, 4, 24)
        assert s.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
        assert s[4] == 4.0
        s[1] = 7.0
        assert x[0, 0].item() == 7.0
        assert s.data_ptr() == x.data_ptr() - x.storage_offset() * 4
        assert x.storage_type() is ft.FloatStorage
        assert s.type() == "torch.FloatStorage"
        assert repr(s).endswith("[torch.storage.TypedStorage(dtype=torch.float32, device=cpu) of size 6]")
        assert ft.FloatStorage([1, 2]).tolist() == [1.0, 2.0]
        assert ft.TypedStorage(3).size() == 3
        with pytest.raises(IndexError):
            s[6]
    with pytest.warns(UserWarning, match="TypedStorage is deprecated"):
        x.storage().size()


def test_module_load_map2_and_small_ops():
    x = ft.zeros(2, 3)
    out = x.module_load(ft.ones(2, 3))
    assert x.tolist() == [[1.0] * 3] * 2 and out.data_ptr() == x.data_ptr()
    assert x.module_load(ft.full((2, 3), 5.0), assign=True).tolist() == [[5.0] * 3] * 2
    z = ft.ones(3)
    z.map2_(ft.arange(3.0), ft.tensor([10.0]), lambda a, b, c: a + b * c)
    assert z.tolist() == [1.0, 11.0, 21.0]
    m = ft.tensor([[0.0, 1.0], [2.0, 0.0]])
    assert m.nonzero_static(size=3).tolist() == [[0, 1], [1, 0], [-1, -1]]
    assert ft.tensor([-1.0, 0.2, 0.7]).hardshrink(0.5).tolist() == [-1.0, 0.0, pytest.approx(0.7)]
    assert [t.tolist() for t in ft.arange(4).unsafe_split_with_sizes([1, 3])] == [[0], [1, 2, 3]]
    assert ft.zeros(3).as_strided_scatter(ft.ones(2), (2,), (2,)).tolist() == [1.0, 0.0, 1.0]
    assert m.to_dense() is m
    a = ft.tensor([0.5, 1.5])
    a.igamma_(ft.tensor([1.0, 2.0]))
    # P(1/2, x) = erf(√x); P(3/2, x) = erf(√x) - 2√(x/π) e^-x
    assert a.tolist() == pytest.approx([math.erf(1.0), math.erf(2 ** 0.5) - 2 * (2 / math.pi) ** 0.5 * math.exp(-2)],
                                       rel=1e-6)


def test_output_nr_names_the_output_of_its_node():
    x = ft.randn(4, requires_grad=True)
    a, b = x.split(2)
    assert (x.output_nr, a.output_nr, b.output_nr) == (0, 0, 1)


def test_post_accumulate_grad_hook_gets_the_parameter_after_its_grad_is_set():
    lin = ft.nn.Linear(3, 2)
    seen = []
    opts = {p: ft.optim.SGD([p], lr=0.1) for p in lin.parameters()}

    def step(p):
        seen.append((p is lin.weight or p is lin.bias, p.grad.clone()))
        opts[p].step()
        opts[p].zero_grad()

    handles = [p.register_post_accumulate_grad_hook(step) for p in lin.parameters()]
    w0 = lin.weight.detach().clone()
    x = ft.ones(1, 3)
    lin(x).sum().backward()
    assert len(seen) == 2 and all(ok for ok, _ in seen)
    assert ft.allclose(lin.weight.detach(), w0 - 0.1 * ft.ones(2, 3))
    assert lin.weight.grad is None
    for h in handles:
        h.remove()
    lin(x).sum().backward()
    assert len(seen) == 2
    with pytest.raises(RuntimeError, match="post accumulate grad hooks cannot be registered on non-leaf"):
        (lin.weight * 2).register_post_accumulate_grad_hook(step)

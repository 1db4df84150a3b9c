"""Tensors from Python: creation, dtypes, ops as functions and methods,
operators and indexing, checked against NumPy."""

import math
import pickle

import numpy as np
import pytest

import ferrotorch as torch


def close(t, a, tol=1e-6):
    np.testing.assert_allclose(np.asarray(t.detach()), a, rtol=tol, atol=tol)


def test_constructors_take_varargs_or_a_tuple():
    assert torch.zeros(2, 3).shape == torch.zeros((2, 3)).shape == torch.Size([2, 3])
    assert repr(torch.ones(2, 3).shape) == "torch.Size([2, 3])"
    assert torch.full((2,), 7).dtype is torch.int64
    assert torch.full((2,), 7.0).dtype is torch.float32
    close(torch.arange(5), np.arange(5))
    close(torch.arange(1, 2, 0.25), np.arange(1, 2, 0.25))
    close(torch.linspace(0, 1, 5), np.linspace(0, 1, 5))
    close(torch.eye(3, 2), np.eye(3, 2))
    assert torch.zeros(2, dtype=torch.float64, requires_grad=True).requires_grad
    assert torch.zeros_like(torch.ones(2, dtype=torch.int32)).dtype is torch.int32


def test_tensor_infers_dtypes_as_torch():
    assert torch.tensor([1, 2]).dtype is torch.int64
    assert torch.tensor([1, 2.5]).dtype is torch.float32
    assert torch.tensor([True, False]).dtype is torch.bool
    assert torch.tensor([[1, 2], [3, 4]], dtype=torch.float64).dtype is torch.float64
    assert torch.tensor(np.arange(3, dtype=np.int32)).dtype is torch.int32
    assert torch.tensor(3.5).dim() == 0
    assert torch.tensor([]).shape == (0,)
    with pytest.raises(ValueError):
        torch.tensor([[1, 2], [3]])


def test_metadata():
    t = torch.zeros(2, 3, 4)
    assert t.size() == (2, 3, 4) and t.size(-1) == 4 and t.dim() == 3 and t.ndim == 3
    assert t.stride() == (12, 4, 1) and t.numel() == 24 and t.storage_offset() == 0
    v = t.transpose(0, 2)
    assert not v.is_contiguous() and v.data_ptr() == t.data_ptr()
    assert v.untyped_storage().data_ptr() == t.untyped_storage().data_ptr()
    assert v.untyped_storage().nbytes() == 96
    assert t[1].storage_offset() == 12
    assert t.T.shape == (4, 3, 2) and t.mT.shape == (2, 4, 3)
    assert t.dtype == torch.float32 and str(t.device) == "cpu"
    assert t.element_size() == 4
    with pytest.raises(IndexError):
        t.size(3)


def test_ops_as_functions_and_methods_match_numpy():
    a = np.array([[0.5, -1.25, 2.0], [3.0, 0.1, -0.7]], dtype=np.float32)
    t = torch.tensor(a)
    close(torch.exp(t), np.exp(a))
    close(t.exp(), np.exp(a))
    close(t.sum(), a.sum())
    close(t.sum(1), a.sum(1))
    close(t.sum(dim=0, keepdim=True), a.sum(0, keepdims=True))
    close(t.mean(0), a.mean(0))
    close(torch.matmul(t, t.T), a @ a.T, 1e-5)
    close(t.clamp(min=0), np.clip(a, 0, None))
    close(torch.softmax(t, 1), np.exp(a) / np.exp(a).sum(1, keepdims=True))
    close(torch.cat([t, t], 1), np.concatenate([a, a], 1))
    close(torch.stack([t, t]), np.stack([a, a]))
    close(t.view(3, 2), a.reshape(3, 2))
    close(t.permute(1, 0), a.T)
    close(t.reshape(-1), a.reshape(-1))
    values, indices = t.max(1)
    close(values, a.max(1))
    assert indices.tolist() == a.argmax(1).tolist()
    close(torch.where(t > 0, t, torch.zeros_like(t)), np.where(a > 0, a, 0))


def test_operators_match_numpy_with_torch_promotion():
    a = np.array([1.0, -2.0, 3.5], dtype=np.float32)
    t = torch.tensor(a)
    close(t + 1, a + 1)
    close(1 + t, 1 + a)
    close(2 - t, 2 - a)
    close(t * t, a * a)
    close(1 / t, 1 / a)
    close(t // 2, a // 2)
    close(t % 2, np.fmod(a, 2) + (np.fmod(a, 2) < 0) * 2)
    close(t ** 2, a ** 2)
    close(2 ** t, 2 ** a)
    close(-t, -a)
    close(abs(t), abs(a))
    assert (t > 0).dtype is torch.bool and (t > 0).tolist() == [True, False, True]
    i = torch.tensor([6, 3])
    assert (i & 5).tolist() == [4, 1] and (i | 1).tolist() == [7, 3] and (i ^ 1).tolist() == [7, 2]
    assert (~torch.tensor([True, False])).tolist() == [False, True]
    # an int tensor and a Python float give the default float dtype
    assert (torch.tensor([1, 2]) * 1.5).dtype is torch.float32
    m = torch.ones(2, 3)
    assert (m @ torch.ones(3, 4)).shape == (2, 4)
    s = t.clone()
    before = s.data_ptr()
    s += 1
    s *= 2
    assert s.data_ptr() == before
    close(s, (a + 1) * 2)


def test_indexing_matches_numpy():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    t = torch.tensor(a)
    for key in [1, -1, (0, 2), slice(None, None, 2), (slice(None), slice(1, 3), slice(None, None, 3)),
                (Ellipsis, 1), (None, 0), ([0, 1], [2, 0]), (1, [0, 2])]:
        close(t[key], a[key])
    mask = a > 10
    close(t[torch.tensor(mask)], a[mask])
    close(t[np.array([1, 0])], a[np.array([1, 0])])
    t[0, :, 1] = 100.0
    a[0, :, 1] = 100.0
    close(t, a)
    t[t > 50] = -1.0
    a[a > 50] = -1.0
    close(t, a)
    v = t[1]
    assert v.data_ptr() == t.data_ptr() + 12 * 4


def test_conversions():
    t = torch.tensor([[1.5, 2.0], [3.0, 4.0]])
    assert t.tolist() == [[1.5, 2.0], [3.0, 4.0]]
    assert torch.tensor(7).item() == 7 and isinstance(torch.tensor(7).item(), int)
    assert float(torch.tensor(2.5)) == 2.5 and int(torch.tensor(3)) == 3
    assert len(t) == 2 and [r.tolist() for r in t] == [[1.5, 2.0], [3.0, 4.0]]
    assert bool(torch.tensor(1)) is True
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(t)
    assert t.to(torch.int64).dtype is torch.int64 and t.double().dtype is torch.float64
    assert t.to("cpu") is t
    assert list(range(10))[torch.tensor(3)] == 3


def test_repr_matches_torch():
    assert repr(torch.tensor([1.0, 2.0])) == "tensor([1., 2.])"
    assert repr(torch.tensor([1, 2], dtype=torch.int32)) == "tensor([1, 2], dtype=torch.int32)"
    x = torch.tensor([1.0], requires_grad=True)
    assert repr(x) == "tensor([1.], requires_grad=True)"
    assert repr(x * 2) == "tensor([2.], grad_fn=<MulBackward0>)"
    assert repr(torch.float16) == "torch.float16"


def test_pickle_and_save_load(tmp_path):
    t = torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.float64)
    u = pickle.loads(pickle.dumps(t))
    assert u.dtype is torch.float64 and u.tolist() == t.tolist()
    obj = {"w": t, "n": [torch.arange(3), 5], "name": "x", "b": torch.ones(2, dtype=torch.bfloat16)}
    torch.save(obj, tmp_path / "x.pt")
    back = torch.load(tmp_path / "x.pt")
    assert back["w"].tolist() == t.tolist() and back["n"][0].tolist() == [0, 1, 2]
    assert back["n"][1] == 5 and back["name"] == "x" and back["b"].dtype is torch.bfloat16
    # into file objects: an empty BytesIO adopts the bytes, the rest are
    # written at their position; each reads back, and stays writable
    import io

    # (each torch.save file has its own serialization id, as torch's do,
    # so files of one object differ in those bytes)
    for f, head in ((io.BytesIO(), b""), (io.BytesIO(b"head"), b"head")):
        f.seek(0, io.SEEK_END)
        torch.save(obj, f)
        size = len(f.getvalue()) - len(head)
        assert f.getvalue()[:len(head)] == head and f.tell() == len(head) + size
        f.seek(len(head))
        assert torch.load(f)["w"].tolist() == t.tolist()
        f.write(b"tail")
        assert f.getvalue()[len(head) + size:] == b"tail"
    (tmp_path / "bad.pt").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{")
    with pytest.raises(RuntimeError):
        torch.load(tmp_path / "bad.pt")


def test_random_is_seeded():
    torch.manual_seed(3)
    a = torch.randn(4)
    torch.manual_seed(3)
    assert torch.randn(4).tolist() == a.tolist()
    r = torch.randint(0, 5, (1000,))
    assert 0 <= r.min().item() and r.max().item() < 5
    assert sorted(torch.randperm(6).tolist()) == list(range(6))


def test_module_level_switches():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    assert torch.get_num_threads() == 1
    torch.set_num_threads(n)
    assert torch.get_default_dtype() is torch.float32
    assert math.isclose(torch.tensor([0.1]).item(), 0.1, rel_tol=1e-6)


def test_named_results():
    t = torch.tensor([[1.0, 4.0], [3.0, 2.0]])
    r = t.max(0)
    assert r.values.tolist() == [3.0, 4.0] and r.indices.tolist() == [1, 0]
    values, indices = torch.sort(t, 1)
    assert values.tolist() == [[1.0, 4.0], [2.0, 3.0]] and indices.tolist() == [[0, 1], [1, 0]]
    assert repr(r) == ("torch.return_types.max(\nvalues=tensor([3., 4.]),\n"
                       "indices=tensor([1, 0]))")
    assert type(t.max()) is torch.Tensor


def test_finfo():
    assert torch.finfo(torch.float32).eps == 2.0 ** -23
    assert torch.finfo(torch.float16).max == 65504.0 and torch.finfo(torch.float16).min == -65504.0
    assert torch.finfo().eps == 2.0 ** -23
    with pytest.raises(TypeError, match="floating point"):
        torch.finfo(torch.int64)

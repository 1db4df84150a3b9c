"""Zero-copy exchange with NumPy and NumPy's dispatch protocols."""

import gc

import numpy as np
import pytest

import ferrotorch as torch


def test_from_numpy_shares_memory_and_keeps_the_array_alive():
    a = np.arange(6, dtype=np.float64).reshape(2, 3)
    t = torch.from_numpy(a)
    assert t.data_ptr() == a.ctypes.data and t.dtype is torch.float64
    t[0, 1] = 50.0
    assert a[0, 1] == 50.0
    a[1, 2] = -1.0
    assert t[1, 2].item() == -1.0
    del a
    gc.collect()
    assert t.tolist() == [[0.0, 50.0, 2.0], [3.0, 4.0, -1.0]]


def test_from_numpy_honours_strides():
    a = np.arange(12, dtype=np.int32).reshape(3, 4)[:, ::2]
    t = torch.from_numpy(a)
    assert t.stride() == (4, 2) and t.tolist() == a.tolist()
    with pytest.raises(ValueError, match="negative"):
        torch.from_numpy(np.arange(4)[::-1])
    with pytest.raises(TypeError):
        torch.from_numpy(np.arange(4, dtype=np.uint16))
    z = np.arange(6, dtype=np.complex128)[::2] * 1j
    assert torch.from_numpy(z).tolist() == z.tolist()  # strided complex
    with pytest.raises(TypeError):
        torch.from_numpy([1, 2])


def test_numpy_shares_memory():
    t = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    a = t.numpy()
    assert a.ctypes.data == t.data_ptr() and a.dtype == np.float32
    a[0, 0] = 9.0
    assert t[0, 0].item() == 9.0
    tt = t.t()
    assert np.asarray(tt).strides == (4, 12)
    with pytest.raises(RuntimeError, match="requires grad"):
        torch.ones(2, requires_grad=True).numpy()
    assert torch.ones(2, requires_grad=True).numpy(force=True).tolist() == [1.0, 1.0]


def test_tensor_copies_and_as_tensor_shares():
    a = np.ones(3, dtype=np.float32)
    assert torch.tensor(a).data_ptr() != a.ctypes.data
    assert torch.as_tensor(a).data_ptr() == a.ctypes.data


def test_numpy_functions_return_tensors():
    t = torch.tensor([1.0, 2.0, 3.0])
    for r, want in [(np.add(t, 1), [2.0, 3.0, 4.0]), (np.multiply(t, t), [1.0, 4.0, 9.0]),
                    (np.sum(t), 6.0), (np.mean(t), 2.0), (np.exp(t), np.exp([1.0, 2.0, 3.0])),
                    (np.concatenate([t, t]), [1.0, 2.0, 3.0] * 2)]:
        assert isinstance(r, torch.Tensor)
        np.testing.assert_allclose(r.numpy(), want, rtol=1e-6)
    assert isinstance(np.sum(torch.ones(2, 3), axis=1), torch.Tensor)
    assert np.sum(torch.ones(2, 3), axis=1).tolist() == [3.0, 3.0]

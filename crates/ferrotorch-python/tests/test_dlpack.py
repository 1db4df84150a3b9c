"""DLPack exchange with NumPy and PyTorch in both directions, no copies."""

import numpy as np
import pytest

import ferrotorch as torch
from conftest import needs_torch


def test_numpy_to_ferrotorch_shares_memory():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)[:, 1::2]
    t = torch.from_dlpack(a)
    assert t.data_ptr() == a.ctypes.data and t.stride() == (4, 2)
    t[0, 0] = -5.0
    assert a[0, 0] == -5.0
    assert t.tolist() == a.tolist()


def test_ferrotorch_to_numpy_shares_memory():
    t = torch.arange(6, dtype=torch.int64).reshape(2, 3)[1:]
    a = np.from_dlpack(t)
    assert a.ctypes.data == t.data_ptr() and a.dtype == np.int64
    a[0, 0] = 99
    assert t[0, 0].item() == 99
    assert torch.ones(2).__dlpack_device__() == (1, 0)


def test_capsules_versioned_and_legacy():
    t = torch.ones(3)
    assert "dltensor_versioned" in repr(t.__dlpack__(max_version=(1, 0)))
    legacy = t.__dlpack__()
    assert "dltensor" in repr(legacy)
    u = torch.from_dlpack(legacy)
    assert u.data_ptr() == t.data_ptr()
    with pytest.raises(BufferError):
        torch.from_dlpack(legacy)  # already consumed
    copied = torch.from_dlpack(t.__dlpack__(max_version=(1, 0), copy=True))
    assert copied.data_ptr() != t.data_ptr() and copied.tolist() == [1.0, 1.0, 1.0]


def test_read_only_and_unsupported():
    a = np.arange(3.0)
    a.flags.writeable = False
    t = torch.from_dlpack(a)
    assert t.tolist() == [0.0, 1.0, 2.0] and t.data_ptr() != a.ctypes.data
    with pytest.raises(BufferError):
        torch.from_dlpack(np.ones(2, dtype=np.uint16))
    # complex arrays come across as complex tensors, sharing memory
    z = np.array([1 + 2j, -3j], dtype=np.complex64)
    tz = torch.from_dlpack(z)
    assert tz.dtype is torch.complex64 and tz.tolist() == [1 + 2j, -3j]
    assert np.from_dlpack(torch.tensor([1 - 1j], dtype=torch.complex128)).tolist() == [1 - 1j]
    with pytest.raises(BufferError):
        torch.ones(2).__dlpack__(dl_device=(2, 0))
    with pytest.raises(RuntimeError, match="require gradient"):
        torch.ones(2, requires_grad=True).__dlpack__()


@needs_torch
def test_pytorch_both_ways():
    import torch as pt
    from torch.utils import dlpack as ptd

    p = pt.arange(6, dtype=pt.float64).reshape(2, 3).t()
    f = torch.from_dlpack(p)
    assert f.data_ptr() == p.data_ptr() and f.stride() == p.stride()
    f[0, 1] = 42.0
    assert p[0, 1].item() == 42.0
    g = torch.from_dlpack(ptd.to_dlpack(pt.ones(2)))  # a legacy capsule
    assert g.tolist() == [1.0, 1.0]
    back = pt.from_dlpack(torch.arange(4, dtype=torch.int32))
    assert back.dtype == pt.int32 and back.tolist() == [0, 1, 2, 3]
    src = torch.zeros(3)
    q = pt.from_dlpack(src)
    q[1] = 7.0
    assert src[1].item() == 7.0 and q.data_ptr() == src.data_ptr()
    bf = pt.from_dlpack(torch.ones(2, dtype=torch.bfloat16))
    assert bf.dtype == pt.bfloat16

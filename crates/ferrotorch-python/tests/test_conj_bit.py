"""The lazy conjugate bit (Note [The conjugate bit]): torch.conj returns a
view of the same memory, marked; ops see the conjugated values; writes go
both ways; numpy/DLPack refuse the mark as torch does."""

import numpy as np
import pytest

import ferrotorch as torch


def z():
    return torch.tensor([1 + 2j, 3 - 1j, -2 + 0.5j])


def test_conj_is_a_marked_view():
    x = z()
    c = x.conj()
    assert c.is_conj() and not x.is_conj()
    assert c.data_ptr() == x.data_ptr()
    assert c.tolist() == [1 - 2j, 3 + 1j, -2 - 0.5j]
    assert repr(c) == repr(torch.tensor([1 - 2j, 3 + 1j, -2 - 0.5j]))
    r = c.resolve_conj()
    assert not r.is_conj() and r.data_ptr() != x.data_ptr()
    assert not c.conj().is_conj() and c.conj().tolist() == x.tolist()
    # real tensors have no bit
    assert not torch.tensor([1.0]).conj().is_conj()


def test_ops_read_the_values():
    x = z()
    c, v = x.conj(), np.conj(np.array(x.tolist()))
    np.testing.assert_allclose((c * c + 1).numpy(), v * v + 1)
    np.testing.assert_allclose(c.sum().item(), v.sum())
    np.testing.assert_allclose(c.abs().numpy(), np.abs(v))
    np.testing.assert_allclose(torch.matmul(c.unsqueeze(0), x.unsqueeze(1)).item(), v @ np.array(x.tolist()))
    assert c[1].item() == 3 + 1j
    # views keep the mark and the memory
    t = c.unsqueeze(0).transpose(0, 1)
    assert t.is_conj() and t.data_ptr() == x.data_ptr()
    assert t.reshape(-1).tolist() == c.tolist()
    assert c.real.tolist() == [1.0, 3.0, -2.0] and c.imag.tolist() == [-2.0, 1.0, -0.5]


def test_writes_go_both_ways():
    x = z()
    c = x.conj()
    x[0] = 5 + 5j
    assert c[0].item() == 5 - 5j
    c.mul_(2)  # lands in x, conjugated
    assert x.tolist() == [10 + 10j, 6 - 2j, -4 + 1j]
    assert c.tolist() == [10 - 10j, 6 + 2j, -4 - 1j]
    c[1] = 1j
    assert x[1].item() == -1j


def test_gradients_through_the_view():
    w = torch.tensor([1 + 1j, 2j], requires_grad=True)
    y = w.conj()
    (y * torch.tensor([1j, 2.0 + 0j])).real.sum().backward()
    # L = Re(i conj(w0)) + Re(2 conj(w1)) = Im(w0) + 2 Re(w1): grad = dL/dRe + i dL/dIm
    assert w.grad.tolist() == [1j, 2 + 0j]
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        torch.tensor([1j], requires_grad=True).conj().mul_(2)


def test_exports_refuse_the_mark():
    c = z().conj()
    with pytest.raises(RuntimeError, match="conjugate bit set"):
        c.numpy()
    with pytest.raises(BufferError, match="conjugate bit"):
        c.__dlpack__()
    with pytest.raises(RuntimeError, match="view_as_real doesn't work on unresolved conjugated"):
        torch.view_as_real(c)
    np.testing.assert_allclose(c.resolve_conj().numpy(), np.conj(np.array(z().tolist())))


def test_a_live_conjugated_view_changes_nothing_else():
    # while one lives, ferrotorch's own calls take the dispatcher's road:
    # they must still compute (eig's gradient pads complex tensors) and the
    # user-facing complex checks still apply
    keep = torch.tensor([1j]).conj()
    a = torch.tensor(np.random.default_rng(0).standard_normal((3, 3)), requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: torch.linalg.eig(t)[1].abs(), (a,))
    x = torch.randn(4, 3, requires_grad=True)
    torch.nn.functional.mse_loss(torch.nn.Linear(3, 2)(x), torch.zeros(4, 2)).backward()
    assert x.grad is not None and tuple(x.grad.shape) == (4, 3)
    with pytest.raises(RuntimeError, match='"max" not implemented'):
        torch.max(keep)
    assert keep.is_conj()

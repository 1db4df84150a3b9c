"""In-place ops on views, complex tensors and conjugated views under
autograd, against gradients PyTorch 2.15 computes for the same programs
(the values were printed by torch and are written here as literals).

Each of these gave a silently wrong gradient or none before:
- complex arithmetic results were views of a temporary real tensor, so an
  in-place op on them rewrote that temporary's history with the view's
  layout read in the wrong element size (imaginary parts of gradients lost);
- a complex in-place op, or one whose result dtype differs from the
  target's, ignored that the other operand requires grad;
- a view taken before its base entered the graph stayed out of it;
- in-place ops on a conjugated view that requires grad were refused, and
  using a conjugated view after an in-place write to its base failed."""

import pytest

import ferrotorch as torch


def cl(t):
    return [complex(round(v.real, 6), round(v.imag, 6)) for v in t.reshape(-1).tolist()]


A = torch.tensor([1j, 2], dtype=torch.complex128)


@pytest.mark.parametrize("name,f,want", [
    ("mul_2", lambda x: x.mul_(2), [-2j, 4]),
    ("mul_t", lambda x: x.mul_(torch.tensor(2 + 0j, dtype=torch.complex128)), [-2j, 4]),
    ("add_0", lambda x: x.add_(0), [-1j, 2]),
    ("neg_", lambda x: x.neg_(), [1j, -2]),
    ("mul_1j", lambda x: x.mul_(1j), [-1, -2j]),
])
def test_complex_inplace_keeps_imaginary_gradients(name, f, want):
    w = torch.tensor([1 + 1j, 2 - 1j], dtype=torch.complex128, requires_grad=True)
    x = w * 1
    assert x._base is None  # torch's arithmetic results are not views
    f(x)
    (x * A).real.sum().backward()
    assert cl(w.grad) == want


def test_inplace_with_a_grad_operand_records():
    b = torch.zeros(2, dtype=torch.complex64)
    v = torch.ones(2, dtype=torch.complex64, requires_grad=True)
    b.mul_(v)
    assert b.requires_grad
    f = torch.zeros(2)  # float32 += float64: the result is cast back
    g = torch.ones(2, dtype=torch.float64, requires_grad=True)
    f.add_(g)
    f.sum().backward()
    assert g.grad.tolist() == [1.0, 1.0]


def test_a_view_follows_its_base_into_the_graph():
    b = torch.zeros(3)
    s = b[0:2]
    v = torch.ones(3, requires_grad=True)
    b.add_(v)
    assert s.requires_grad
    (s * 2).sum().backward()
    assert v.grad.tolist() == [2.0, 2.0, 0.0]
    b = torch.zeros(3)
    s = b[0:2]
    v = torch.ones(3, requires_grad=True)
    b.add_(v)
    s.mul_(2)  # torch refuses this one (it takes s for a leaf); the gradient is the math's
    b.sum().backward()
    assert v.grad.tolist() == [2.0, 2.0, 1.0]


def test_views_of_another_dtype_written_in_place():
    w = torch.tensor([[1.0, 2.0], [3.0, -1.0]], requires_grad=True)
    x = w * 1.5
    z = torch.view_as_complex(x)
    z.mul_(torch.tensor([1j, 2 - 1j]))
    (x * torch.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
    assert x.tolist() == [[-3.0, 1.5], [7.5, -7.5]]
    assert w.grad.tolist() == [[3.0, -1.5], [3.0, 16.5]]
    w = torch.tensor([1 + 2j, 3 - 1j], requires_grad=True)
    x = w * (1 - 1j)
    torch.view_as_real(x)[:, 0].mul_(3)
    (x * torch.tensor([1j, 2])).real.sum().backward()
    assert cl(w.grad) == [1 - 1j, 6 + 6j]


def test_inplace_on_a_conjugated_view():
    m = torch.tensor([2 + 1j, 1j], dtype=torch.complex128)
    for which, want in [("x", [-3 - 4j, 4 + 2j]), ("c", [3 + 4j, 4 + 2j])]:
        w = torch.tensor([1 + 1j, 2 - 1j], dtype=torch.complex128, requires_grad=True)
        x = w * (1 + 2j)
        c = x.conj()
        c.mul_(m)
        assert c.is_conj() and cl(x) == [1 + 7j, 3 - 4j]
        ((x if which == "x" else c) * A).real.sum().backward()
        assert cl(w.grad) == want, which
    # the base does not require grad, the operand does
    b = torch.tensor([1 + 1j, 2 - 1j], dtype=torch.complex128)
    v = torch.tensor([0.5 + 2j, -1j], dtype=torch.complex128, requires_grad=True)
    b.conj().add_(v)
    assert b.requires_grad and cl(b) == [1.5 - 1j, 2]
    (b * A).real.sum().backward()
    assert cl(v.grad) == [1j, 2]
    # a row of a conjugated view
    w = torch.tensor([[1 + 1j, 2 - 1j], [3j, 4]], dtype=torch.complex128, requires_grad=True)
    x = w.clone()
    x.conj()[0].mul_(1j)
    (x.abs() ** 2).sum().backward()
    assert cl(x) == [1 - 1j, -1 - 2j, 3j, 4]
    assert cl(w.grad) == [2 + 2j, 4 - 2j, 6j, 8]


def test_a_conjugated_view_after_its_base_is_written():
    for which, want in [("x", [-4 - 2j, 4 - 8j]), ("c", [4 + 2j, 4 - 8j])]:
        w = torch.tensor([1 + 1j, 2 - 1j], dtype=torch.complex128, requires_grad=True)
        x = w * (1 + 2j)
        c = x.conj()
        x.mul_(2)
        ((x if which == "x" else c) * A).real.sum().backward()
        assert cl(w.grad) == want, which

"""Complex inputs to torch.linalg: det, slogdet, logdet, cholesky, qr,
eigh/eigvalsh, svd/svdvals, solve_triangular — values against NumPy (LAPACK)
and gradients by gradcheck through the real and imaginary parts (Note
[Complex factorization derivatives])."""

import numpy as np
import pytest

import ferrotorch as torch

rng = np.random.default_rng(7)


def crand(*shape):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


A = crand(2, 3, 3)
HPD = A @ np.conj(np.swapaxes(A, -1, -2)) + 3 * np.eye(3)
TALL, WIDE = crand(4, 3), crand(2, 4)


def close(a, b, tol=1e-10):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


def test_values_match_numpy():
    t = torch.tensor(A)
    close(torch.linalg.det(t).numpy(), np.linalg.det(A))
    sign, logabs = torch.linalg.slogdet(t)
    s2, l2 = np.linalg.slogdet(A)
    close(sign.numpy(), s2)
    close(logabs.numpy(), l2)
    assert logabs.dtype == torch.float64 and sign.dtype == torch.complex128
    close(torch.logdet(t).numpy(), np.log(np.linalg.det(A)))
    L = torch.linalg.cholesky(torch.tensor(HPD)).numpy()
    close(L, np.linalg.cholesky(HPD))
    close(torch.linalg.cholesky(torch.tensor(HPD), upper=True).numpy(),
          np.conj(np.swapaxes(L, -1, -2)))
    for m in (TALL, WIDE, A):
        q, r = torch.linalg.qr(torch.tensor(m))
        close(q.numpy() @ r.numpy(), m)
        d = np.diagonal(r.numpy(), 0, -2, -1)
        assert np.all(d.imag == 0)  # LAPACK's R: a real diagonal
    w, v = torch.linalg.eigh(torch.tensor(HPD))
    close(w.numpy(), np.linalg.eigvalsh(HPD))
    close((v.numpy() * w.numpy()[..., None, :]) @ np.conj(np.swapaxes(v.numpy(), -1, -2)), HPD)
    u, s, vh = torch.linalg.svd(torch.tensor(TALL), full_matrices=False)
    close(s.numpy(), np.linalg.svd(TALL, compute_uv=False))
    close((u.numpy() * s.numpy()) @ vh.numpy(), TALL)
    close(torch.linalg.svdvals(torch.tensor(WIDE)).numpy(), np.linalg.svd(WIDE, compute_uv=False))
    tri = np.tril(A[0]) + 2 * np.eye(3)
    x = torch.linalg.solve_triangular(torch.tensor(tri), torch.tensor(TALL[:3]), upper=False)
    close(tri @ x.numpy(), TALL[:3])


def _through_parts(f, z):
    """gradcheck of the real loss f(complex(re, im))."""
    re = torch.tensor(z.real.copy(), requires_grad=True)
    im = torch.tensor(z.imag.copy(), requires_grad=True)
    return torch.autograd.gradcheck(lambda a, b: f(torch.complex(a, b)), (re, im))


W = torch.tensor(crand(3, 3))


def hermitian(z):
    return z @ z.mH + 3 * torch.eye(3, dtype=torch.complex128)


@pytest.mark.parametrize("name,f,z", [
    ("det", lambda z: (torch.linalg.det(z) * (1 + 2j)).real, A[0]),
    ("slogdet", lambda z: (lambda s, l: (s * (0.3 - 1j)).real + l)(*torch.linalg.slogdet(z)), A[0]),
    ("cholesky", lambda z: (torch.linalg.cholesky(hermitian(z)) * W).real.sum(), A[0]),
    ("qr", lambda z: (lambda q, r: (q * W[:, :3]).real.sum() + (r * W).imag.sum())(
        *torch.linalg.qr(z)), A[0]),
    ("qr_wide", lambda z: (lambda q, r: (q * W[:2, :2]).real.sum() + (r * W[:2, :3]).imag.sum())(
        *torch.linalg.qr(z)), A[0][:2]),
    ("eigvalsh", lambda z: (torch.linalg.eigvalsh(hermitian(z)) *
                            torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)).sum(), A[0]),
    ("eigh", lambda z: (lambda w, v: (v.abs() ** 2 * W.real).sum() + w.sum())(
        *torch.linalg.eigh(hermitian(z))), A[0]),
    ("svd", lambda z: (lambda u, s, vh: ((u @ vh) * W).real.sum() + s.sum())(
        *torch.linalg.svd(z, full_matrices=False)), A[0]),
    ("solve_triangular", lambda z: (torch.linalg.solve_triangular(
        z.tril() + 3 * torch.eye(3, dtype=torch.complex128), W, upper=False) * W).real.sum(), A[0]),
])
def test_gradients(name, f, z):
    assert _through_parts(f, z), name


def test_errors():
    with pytest.raises(RuntimeError, match="not positive-definite"):
        torch.linalg.cholesky(torch.tensor(-np.eye(2) + 0j))
    with pytest.raises(RuntimeError, match="Expected a floating point or complex tensor"):
        torch.linalg.det(torch.tensor([[1, 2], [3, 4]]))


def test_row_copies_of_complex128_read_whole_elements():
    # index_select/flip/gather copied 16-byte elements as 8-byte ones (half
    # of each element, the rest uninitialised)
    a = np.array([[1 + 1j, 2 - 3j, 0.5j], [3j, 4 - 1j, -2 + 0j]])
    t = torch.tensor(a)
    np.testing.assert_array_equal(t.flip(0).numpy(), a[::-1])
    np.testing.assert_array_equal(t.flip(1).numpy(), a[:, ::-1])
    np.testing.assert_array_equal(t.index_select(1, torch.tensor([2, 0])).numpy(), a[:, [2, 0]])
    idx = np.array([[1, 0, 1], [0, 0, 1]])
    np.testing.assert_array_equal(t.gather(0, torch.tensor(idx)).numpy(),
                                  np.take_along_axis(a, idx, 0))
    assert torch.linalg.vecdot(t, t.flip(0)).numpy().tolist() == \
        (np.conj(a) * a[::-1]).sum(-1).tolist()


def test_norms_inverses_and_products_of_complex_matrices():
    a = A[0]
    t = torch.tensor(a)
    close(torch.linalg.pinv(t).numpy(), np.linalg.pinv(a))
    assert torch.linalg.matrix_rank(t).item() == np.linalg.matrix_rank(a)
    close(torch.linalg.cond(t).numpy(), np.linalg.cond(a))
    for ord_ in ("fro", "nuc", 2, -2, 1, -1, np.inf):
        close(torch.linalg.matrix_norm(t, ord_).numpy(), np.linalg.norm(a, ord_))
    close(torch.linalg.vector_norm(t, 3, dim=0).numpy(), (np.abs(a) ** 3).sum(0) ** (1 / 3))
    close(torch.linalg.inv_ex(t)[0].numpy(), np.linalg.inv(a))
    close(torch.linalg.solve_ex(t, torch.tensor(TALL[:3]))[0].numpy(), np.linalg.solve(a, TALL[:3]))
    close(torch.linalg.matrix_power(t, -2).numpy(), np.linalg.matrix_power(a, -2))
    # exp(A) for a diagonalisable A: V exp(Λ) V⁻¹
    lam, vec = np.linalg.eig(a)
    close(torch.linalg.matrix_exp(t).numpy(), vec @ np.diag(np.exp(lam)) @ np.linalg.inv(vec), 1e-9)
    close(torch.linalg.cross(t, t.flip(0)).numpy(), np.cross(a, a[::-1]))
    close(torch.cholesky_inverse(torch.linalg.cholesky(torch.tensor(HPD[0]))).numpy(),
          np.linalg.inv(HPD[0]))
    assert _through_parts(lambda z: torch.linalg.matrix_norm(z, "nuc"), a)
    assert _through_parts(lambda z: (torch.linalg.pinv(z) * W).real.sum(), a)


def test_eig_of_a_complex_matrix():
    a = A[1]
    lam, vec = torch.linalg.eig(torch.tensor(a))
    close(np.sort_complex(lam.numpy()), np.sort_complex(np.linalg.eigvals(a)))
    v = vec.numpy()
    close(a @ v, v * lam.numpy())
    close(np.linalg.norm(v, axis=0), np.ones(3))
    # zgeev's gauge: each column's largest component is real
    k = np.abs(v).argmax(0)
    assert np.allclose(v[k, range(3)].imag, 0, atol=1e-12)
    assert _through_parts(
        lambda z: (lambda l, vv: (vv.abs() * W.real).sum() + (l * l).real.sum())(
            *torch.linalg.eig(z)), a)


def test_lu_householder_and_lstsq_of_complex_matrices():
    a, b = A[0], TALL[:3, :2]
    lu, piv = torch.linalg.lu_factor(torch.tensor(a))
    p, l, u = torch.linalg.lu(torch.tensor(a))
    close(p.numpy() @ l.numpy() @ u.numpy(), a)
    # zgetrf's pivot: the largest |re| + |im| in the column
    assert piv[0].item() == int(np.argmax(np.abs(a[:, 0].real) + np.abs(a[:, 0].imag))) + 1
    close(torch.linalg.lu_solve(lu, piv, torch.tensor(b)).numpy(), np.linalg.solve(a, b))
    close(torch.linalg.lu_solve(lu, piv, torch.tensor(b), adjoint=True).numpy(),
          np.linalg.solve(np.conj(a.T), b))
    v, tau = torch.geqrf(torch.tensor(TALL))
    q = torch.linalg.householder_product(v, tau).numpy()
    close(np.conj(q.T) @ q, np.eye(3))
    close(q @ np.triu(v.numpy()[:3]), TALL)
    x = torch.linalg.lstsq(torch.tensor(TALL), torch.tensor(crand(4, 2))).solution
    assert tuple(x.shape) == (3, 2)
    rhs = crand(4, 2)
    close(torch.linalg.lstsq(torch.tensor(TALL), torch.tensor(rhs)).solution.numpy(),
          np.linalg.lstsq(TALL, rhs, rcond=None)[0])
    assert _through_parts(lambda z: (torch.linalg.lu_factor(z)[0] * W).real.sum(), a)
    assert _through_parts(
        lambda z: (torch.linalg.lstsq(z, torch.tensor(rhs)).solution * W[:, :2]).imag.sum(), TALL)


def test_vander_of_complex_points():
    z = np.array([1 + 1j, 0.5 - 2j, -1j])
    close(torch.linalg.vander(torch.tensor(z), N=4).numpy(), np.vander(z, 4, increasing=True))
    assert _through_parts(lambda t: (torch.linalg.vander(t, N=3) * W).real.sum(), z)

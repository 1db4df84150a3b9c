"""torch.linalg.ldl_factor / ldl_factor_ex / ldl_solve against PyTorch's
LAPACK results (fixtures/ldl.json, written by fixtures/gen_ldl.py) and
against A X = B itself."""

import json
import pathlib

import numpy as np
import pytest

import ferrotorch as torch

CASES = json.loads((pathlib.Path(__file__).parent / "fixtures" / "ldl.json").read_text())["cases"]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_factor_and_solve_match_lapack(case, dtype):
    dt = getattr(torch, dtype)
    tol = 1e-10 if dtype == "float64" else 1e-4
    A = torch.tensor(case["A"], dtype=dt)
    LD, piv = torch.linalg.ldl_factor(A)
    assert piv.dtype == torch.int32 and LD.dtype == dt
    np.testing.assert_array_equal(piv.numpy(), case["pivots"])
    np.testing.assert_allclose(LD.numpy(), case["LD"], rtol=tol, atol=tol)
    X = torch.linalg.ldl_solve(LD, piv, torch.tensor(case["B"], dtype=dt))
    np.testing.assert_allclose(X.numpy(), case["X"], rtol=100 * tol, atol=100 * tol)
    # and X solves the system
    a, b = np.array(case["A"]), np.array(case["B"])
    np.testing.assert_allclose(a @ X.numpy().astype(np.float64), b, atol=1e3 * tol)
    LD2, piv2, info = torch.linalg.ldl_factor_ex(A)
    assert torch.equal(LD2, LD) and torch.equal(piv2, piv)
    assert info.shape == A.shape[:-2] and not info.any()


def test_upper_triangle_is_not_read_and_batches_broadcast():
    a = np.array(CASES[1]["A"])
    noisy = a + np.triu(np.full_like(a, 9.0), 1)  # torch reads only the lower triangle
    LD, piv = torch.linalg.ldl_factor(torch.tensor(noisy))
    np.testing.assert_allclose(LD.numpy(), CASES[1]["LD"], atol=1e-10)
    b = np.random.default_rng(0).standard_normal((2, a.shape[0], 3))
    X = torch.linalg.ldl_solve(LD, piv, torch.tensor(b))
    assert X.shape == (2, a.shape[0], 3)
    np.testing.assert_allclose(np.einsum("ij,bjk->bik", a, X.numpy()), b, atol=1e-9)
    # hermitian=True is the same factorization for real matrices
    LDh, pivh = torch.linalg.ldl_factor(torch.tensor(a), hermitian=True)
    assert torch.equal(pivh, piv)


def test_singular_and_bad_inputs():
    z = torch.zeros(2, 2)
    LD, piv, info = torch.linalg.ldl_factor_ex(z)
    assert info.item() == 1 and piv.tolist() == [1, 2]
    with pytest.raises(RuntimeError, match=r"D\[1, 1\] is zero"):
        torch.linalg.ldl_factor(z)
    with pytest.raises(RuntimeError, match="must be batches of square matrices"):
        torch.linalg.ldl_factor(torch.randn(3, 2))
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        torch.linalg.ldl_factor(torch.randn(3))
    with pytest.raises(NotImplementedError, match="Expected a floating point or complex tensor as input. Got Long"):
        torch.linalg.ldl_factor(torch.ones(3, 3, dtype=torch.int64))
    LD, piv = torch.linalg.ldl_factor(torch.eye(3, dtype=torch.float64))
    with pytest.raises(RuntimeError, match="each A matrix is 3 by 3 but each b matrix is 4 by 2"):
        torch.linalg.ldl_solve(LD, piv, torch.randn(4, 2, dtype=torch.float64))
    with pytest.raises(RuntimeError, match="Expected LD.shape"):
        torch.linalg.ldl_solve(LD, piv[:2], torch.randn(3, 2, dtype=torch.float64))
    with pytest.raises(RuntimeError, match="Expected b and A to have the same dtype"):
        torch.linalg.ldl_solve(LD, piv, torch.randn(3, 2))
    with pytest.raises(RuntimeError, match="Pivots given to ldl_solve must all satisfy"):
        torch.linalg.ldl_solve(LD, torch.tensor([7, 1, 1], dtype=torch.int32), torch.randn(3, 2, dtype=torch.float64))
    with pytest.raises(IndexError):
        torch.linalg.ldl_solve(LD, piv, torch.randn(3, dtype=torch.float64))
    e, p = torch.linalg.ldl_factor(torch.randn(0, 0))
    assert e.shape == (0, 0) and p.shape == (0,)


CCASES = json.loads((pathlib.Path(__file__).parent / "fixtures" / "ldl.json").read_text())["complex"]


def cx(pairs):
    a = np.array(pairs)
    return a[..., 0] + 1j * a[..., 1]


@pytest.mark.parametrize("case", CCASES, ids=[c["name"] for c in CCASES])
@pytest.mark.parametrize("dtype", ["complex128", "complex64"])
def test_complex_symmetric_and_hermitian_match_lapack(case, dtype):
    # zsytrf (hermitian=False) and zhetrf (hermitian=True), as torch calls them
    dt = getattr(torch, dtype)
    tol = 1e-10 if dtype == "complex128" else 1e-4
    h = case["hermitian"]
    A = torch.tensor(cx(case["A"])).to(dt)
    LD, piv = torch.linalg.ldl_factor(A, hermitian=h)
    assert LD.dtype == dt
    np.testing.assert_array_equal(piv.numpy(), case["pivots"])
    np.testing.assert_allclose(LD.numpy(), cx(case["LD"]), rtol=tol, atol=tol)
    X = torch.linalg.ldl_solve(LD, piv, torch.tensor(cx(case["B"])).to(dt), hermitian=h)
    np.testing.assert_allclose(X.numpy(), cx(case["X"]), rtol=100 * tol, atol=100 * tol)
    np.testing.assert_allclose(cx(case["A"]) @ X.numpy().astype(np.complex128), cx(case["B"]), atol=1e3 * tol)

"""Complex tensors, torch.fft, windows and stft/istft against NumPy (an
independent reference), with gradcheck of every transform through the
real view of its complex values (torch's own gradcheck does the same)."""

import numpy as np
import pytest

import ferrotorch as torch
from ferrotorch.autograd import gradcheck

rng = np.random.default_rng(0)


def cplx(*shape):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def close(t, want, tol=1e-10):
    # numpy() refuses a conjugated view, as torch's (its memory is unconjugated)
    got = np.asarray(t.detach().resolve_conj().numpy())
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


# --- complex tensors ----------------------------------------------------

def test_creation_dtypes_and_promotion():
    z = torch.tensor([1 + 2j, 3])
    assert z.dtype is torch.complex64 and z.is_complex() and not z.is_floating_point()
    assert torch.tensor([1j], dtype=torch.complex128).dtype is torch.cdouble
    assert torch.zeros(2, dtype=torch.cfloat).tolist() == [0j, 0j]
    assert torch.complex64.is_complex and torch.complex64.to_real() is torch.float32
    assert torch.float64.to_complex() is torch.complex128
    f64 = torch.ones(2, dtype=torch.float64)
    assert (f64 * torch.ones(2, dtype=torch.complex64)).dtype is torch.complex128
    assert (torch.ones(2) * 1j).dtype is torch.complex64
    assert (torch.arange(3) + 1j).dtype is torch.complex64
    with pytest.raises(TypeError, match="must be real number, not complex"):
        torch.tensor([1j], dtype=torch.float32)


def test_printing_as_torch():
    assert repr(torch.tensor([1 + 2j, -3.5 - 1j])) == "tensor([ 1.0000+2.j, -3.5000-1.j])"
    assert repr(torch.tensor([1 + 0j], dtype=torch.complex128)) == \
        "tensor([1.+0.j], dtype=torch.complex128)"


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_binary_arithmetic_matches_numpy(op):
    a, b = cplx(3, 4), cplx(4)
    got = getattr(torch, op)(torch.tensor(a), torch.tensor(b))
    close(got, getattr(np, {"sub": "subtract", "mul": "multiply", "div": "divide"}.get(op, op))(a, b))
    # with a real operand and a Python complex
    close(torch.tensor(a) * torch.tensor(b.real), a * b.real)
    close(torch.tensor(b.real) - (2 - 1j), b.real - (2 - 1j))


@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "sin", "cos", "tan", "sinh", "cosh",
                                  "tanh", "reciprocal", "abs", "angle", "log10", "expm1"])
def test_unary_ops_match_numpy(name):
    z = cplx(5)
    ref = {"reciprocal": lambda v: 1 / v, "angle": np.angle}.get(name, getattr(np, name))
    close(getattr(torch, name)(torch.tensor(z)), ref(z), 1e-9)


def test_views_conj_and_constructors():
    z = torch.tensor(cplx(2, 3))
    r = torch.view_as_real(z)
    assert r.shape == (2, 3, 2) and r.dtype is torch.float64
    r[0, 0, 1] = 7.0  # the same memory
    assert z[0, 0].item().imag == 7.0
    z.real = torch.zeros(2, 3, dtype=torch.float64)
    z.imag.mul_(2)
    assert (z.real == 0).all().item()
    back = torch.view_as_complex(torch.view_as_real(z))
    close(back, np.asarray(z.numpy()))
    with pytest.raises(RuntimeError, match="last dimension of size 2"):
        torch.view_as_complex(torch.ones(3, 3, dtype=torch.float64))
    with pytest.raises(RuntimeError, match="non-complex"):
        torch.ones(2).imag
    w = cplx(4)
    close(torch.tensor(w).conj(), np.conj(w))
    close(torch.tensor(w.reshape(2, 2)).mH, np.conj(w.reshape(2, 2)).T)
    close(torch.complex(torch.tensor(w.real), torch.tensor(w.imag)), w)
    close(torch.polar(torch.tensor(np.abs(w)), torch.tensor(np.angle(w))), w)
    close(torch.sgn(torch.tensor(w)), w / np.abs(w))


def test_reductions_products_and_numpy_exchange():
    a, b = cplx(3, 4), cplx(4, 2)
    close(torch.tensor(a).sum(), a.sum())
    close(torch.tensor(a).mean(dim=0), a.mean(0))
    close(torch.tensor(a) @ torch.tensor(b), a @ b)
    close(torch.vdot(torch.tensor(a[0]), torch.tensor(a[1])), np.vdot(a[0], a[1]))
    for dt in (np.complex64, np.complex128):
        n = a.astype(dt)
        t = torch.from_numpy(n)  # shares memory
        n[0, 0] = 5 - 5j
        assert t[0, 0].item() == 5 - 5j
        assert np.asarray(t.numpy()).dtype == dt
    assert torch.tensor([1 + 2j]).tolist() == [1 + 2j] and complex(torch.tensor(2 - 1j)) == 2 - 1j


def test_ops_without_complex_meaning_are_refused():
    z = torch.tensor([1 + 1j])
    for f in (lambda: z.max(), lambda: z < 1, lambda: torch.sort(z), lambda: z.floor(),
              lambda: torch.clamp(z, 0, 1)):
        with pytest.raises(NotImplementedError, match="not implemented for 'ComplexFloat'"):
            f()
    with pytest.raises(TypeError):
        float(z[0])


def as_real_fn(f):
    """f over complex inputs, seen through real views (gradcheck is real)."""
    def g(*xs):
        out = f(*[torch.view_as_complex(x) for x in xs])
        return torch.view_as_real(out) if out.is_complex() else out
    return g


def real_pairs(*shape):
    return torch.tensor(rng.standard_normal((*shape, 2)), requires_grad=True)


@pytest.mark.parametrize("name, f", [
    ("mul", lambda a, b: a * b), ("div", lambda a, b: a / b), ("pow", lambda a, b: a ** b),
    ("exp", lambda a, b: a.exp() + b), ("log", lambda a, b: a.log() * b),
    ("abs", lambda a, b: (a * b).abs()), ("angle", lambda a, b: torch.angle(a - b)),
    ("matmul", lambda a, b: a.reshape(2, 2) @ b.reshape(2, 2)), ("sum", lambda a, b: (a * b).sum()),
    ("real_imag", lambda a, b: a.real * b.imag), ("conj", lambda a, b: a.conj() * b),
])
def test_complex_gradients(name, f):
    assert gradcheck(as_real_fn(f), (real_pairs(4), real_pairs(4)))


def test_gradient_is_torchs_convention():
    z = torch.tensor([1 + 2j, -0.5 + 3j], requires_grad=True)
    (z.abs() ** 2).sum().backward()  # d|z|²: 2z
    close(z.grad, np.array([2 + 4j, -1 + 6j]), 1e-6)


# --- torch.fft ----------------------------------------------------------

NORMS = [None, "backward", "ortho", "forward"]


@pytest.mark.parametrize("norm", NORMS)
def test_one_dim_transforms_match_numpy(norm):
    x, z = rng.standard_normal((3, 10)), cplx(3, 10)
    close(torch.fft.fft(torch.tensor(z), norm=norm), np.fft.fft(z, norm=norm))
    close(torch.fft.ifft(torch.tensor(z), n=7, dim=0, norm=norm), np.fft.ifft(z, n=7, axis=0, norm=norm))
    close(torch.fft.fft(torch.tensor(x), n=13, norm=norm), np.fft.fft(x, n=13, norm=norm))
    close(torch.fft.rfft(torch.tensor(x), norm=norm), np.fft.rfft(x, norm=norm))
    close(torch.fft.irfft(torch.tensor(z), norm=norm), np.fft.irfft(z, norm=norm))
    close(torch.fft.irfft(torch.tensor(z), n=9, norm=norm), np.fft.irfft(z, n=9, norm=norm))
    close(torch.fft.hfft(torch.tensor(z), norm=norm), np.fft.hfft(z, norm=norm))
    close(torch.fft.ihfft(torch.tensor(x), norm=norm), np.fft.ihfft(x, norm=norm))


@pytest.mark.parametrize("norm", NORMS)
def test_multi_dim_transforms_match_numpy(norm):
    x, z = rng.standard_normal((4, 6, 5)), cplx(4, 6, 5)
    close(torch.fft.fft2(torch.tensor(z), norm=norm), np.fft.fft2(z, norm=norm))
    close(torch.fft.ifftn(torch.tensor(z), s=(3, 8), norm=norm), np.fft.ifftn(z, s=(3, 8), axes=(-2, -1), norm=norm))
    close(torch.fft.fftn(torch.tensor(z), dim=(0, 2), norm=norm), np.fft.fftn(z, axes=(0, 2), norm=norm))
    close(torch.fft.rfftn(torch.tensor(x), norm=norm), np.fft.rfftn(x, norm=norm))
    close(torch.fft.rfft2(torch.tensor(x), s=(5, 7), norm=norm), np.fft.rfft2(x, s=(5, 7), norm=norm))
    close(torch.fft.irfftn(torch.tensor(z), s=(6, 8), dim=(0, 1), norm=norm),
          np.fft.irfftn(z, s=(6, 8), axes=(0, 1), norm=norm))
    close(torch.fft.irfft2(torch.tensor(z), norm=norm), np.fft.irfft2(z, norm=norm))


def test_float32_frequencies_and_shifts():
    x = rng.standard_normal(64).astype(np.float32)
    y = torch.fft.rfft(torch.tensor(x))
    assert y.dtype is torch.complex64
    close(y, np.fft.rfft(x.astype(np.float64)), 1e-4)
    assert torch.fft.fft(torch.tensor([1, 2, 3])).dtype is torch.complex64
    close(torch.fft.fftfreq(7, d=0.5), np.fft.fftfreq(7, d=0.5).astype(np.float32), 1e-7)
    close(torch.fft.rfftfreq(8, dtype=torch.float64), np.fft.rfftfreq(8))
    a = rng.standard_normal((4, 5))
    close(torch.fft.fftshift(torch.tensor(a)), np.fft.fftshift(a))
    close(torch.fft.ifftshift(torch.tensor(a), dim=1), np.fft.ifftshift(a, axes=1))


def test_fft_errors_name_the_problem():
    with pytest.raises(TypeError, match="rfft expects a real input tensor, but got ComplexFloat"):
        torch.fft.rfft(torch.tensor([1j, 2]))
    with pytest.raises(RuntimeError, match='Invalid normalization mode: "bad"'):
        torch.fft.fft(torch.ones(4), norm="bad")
    with pytest.raises(RuntimeError, match="Invalid number of data points"):
        torch.fft.fft(torch.ones(4), n=0)
    with pytest.raises(RuntimeError, match="unique"):
        torch.fft.fftn(torch.ones(4, 4), dim=(0, 0))


@pytest.mark.parametrize("name, f, shape, cin", [
    ("fft", lambda a: torch.fft.fft(a, norm="ortho"), (6,), True),
    ("ifft_n", lambda a: torch.fft.ifft(a, n=8), (6,), True),
    ("fft2", lambda a: torch.fft.fft2(a), (3, 4), True),
    ("rfft", lambda a: torch.fft.rfft(a), (7,), False),
    ("rfftn", lambda a: torch.fft.rfftn(a, norm="forward"), (3, 6), False),
    ("irfft", lambda a: torch.fft.irfft(a, n=8), (5,), True),
    ("irfft_odd", lambda a: torch.fft.irfft(a, n=7), (4,), True),
    ("irfftn", lambda a: torch.fft.irfftn(a), (3, 4), True),
    ("hfft", lambda a: torch.fft.hfft(a), (4,), True),
    ("ihfft", lambda a: torch.fft.ihfft(a), (6,), False),
])
def test_transform_gradients(name, f, shape, cin):
    if cin:
        assert gradcheck(as_real_fn(f), (real_pairs(*shape),))
    else:
        assert gradcheck(lambda a: torch.view_as_real(f(a)),
                         (torch.tensor(rng.standard_normal(shape), requires_grad=True),))


# --- windows and the short-time transform ---------------------------------

def test_windows_match_numpy():
    for n in (1, 5, 8):
        close(torch.hann_window(n, periodic=False, dtype=torch.float64), np.hanning(n))
        close(torch.hamming_window(n, periodic=False, dtype=torch.float64), np.hamming(n))
        close(torch.blackman_window(n, periodic=False, dtype=torch.float64), np.blackman(n), 1e-9)
        close(torch.bartlett_window(n, periodic=False, dtype=torch.float64), np.bartlett(n))
        close(torch.kaiser_window(n, False, 5.0, dtype=torch.float64), np.kaiser(n, 5.0), 1e-9)
        # periodic: the symmetric window of n + 1 points without its last
        close(torch.hann_window(n, dtype=torch.float64), np.hanning(n + 1)[:-1] if n > 1 else [1.0])
    assert torch.hann_window(0).shape == (0,) and torch.hann_window(4).dtype is torch.float32


def stft_ref(x, n_fft, hop, win, center=True):
    if center:
        x = np.pad(x, n_fft // 2, mode="reflect")
    frames = [x[i:i + n_fft] * win for i in range(0, len(x) - n_fft + 1, hop)]
    return np.fft.rfft(np.array(frames), axis=1).T


def test_stft_matches_numpy_and_istft_inverts_it():
    x = rng.standard_normal(200)
    win = np.hanning(33)[:-1]
    s = torch.stft(torch.tensor(x), 32, hop_length=8, window=torch.tensor(win), return_complex=True)
    close(s, stft_ref(x, 32, 8, win))
    batch = torch.stft(torch.tensor(np.stack([x, 2 * x])), 32, hop_length=8, window=torch.tensor(win),
                       return_complex=True)
    close(batch[1], 2 * stft_ref(x, 32, 8, win))
    close(torch.stft(torch.tensor(x), 16, hop_length=5, center=False, return_complex=True),
          stft_ref(x, 16, 5, np.ones(16), center=False))
    y = torch.istft(s, 32, hop_length=8, window=torch.tensor(win), length=200)
    close(y, x)
    with pytest.raises(RuntimeError, match="return_complex"):
        torch.stft(torch.tensor(x), 32)
    with pytest.raises(RuntimeError, match="window overlap add"):
        torch.istft(s, 32, hop_length=8, window=torch.zeros(32, dtype=torch.float64))


def test_stft_gradients():
    win = torch.hann_window(8, dtype=torch.float64)
    x = torch.tensor(rng.standard_normal(30), requires_grad=True)
    assert gradcheck(lambda a: torch.view_as_real(torch.stft(a, 8, hop_length=2, window=win,
                                                             return_complex=True)), (x,))
    spec = torch.stft(torch.tensor(rng.standard_normal(30)), 8, hop_length=2, window=win,
                      return_complex=True)
    pairs = torch.view_as_real(spec).detach().clone().requires_grad_(True)
    assert gradcheck(lambda p: torch.istft(torch.view_as_complex(p), 8, hop_length=2, window=win),
                     (pairs,))


# --- linalg.eig -------------------------------------------------------------

def test_eig_reconstructs_and_matches_numpy_eigenvalues():
    a = rng.standard_normal((4, 4))
    L, V = torch.linalg.eig(torch.tensor(a))
    assert L.dtype is torch.complex128 and V.dtype is torch.complex128
    lv, vv = np.asarray(L.numpy()), np.asarray(V.numpy())
    np.testing.assert_allclose(a @ vv, vv * lv, atol=1e-10)  # A V = V diag(L)
    np.testing.assert_allclose(np.linalg.norm(vv, axis=0), 1.0, atol=1e-12)
    np.testing.assert_allclose(np.sort_complex(lv), np.sort_complex(np.linalg.eigvals(a)), atol=1e-10)
    close(torch.linalg.eigvals(torch.tensor(a)), lv)
    # batched, and float32 gives complex64
    b = torch.tensor(rng.standard_normal((2, 3, 3)).astype(np.float32))
    assert torch.linalg.eig(b)[0].shape == (2, 3) and torch.linalg.eigvals(b).dtype is torch.complex64


def test_eig_gradients():
    # gauge-invariant functions of the eigenvectors, as torch's own tests use
    a = torch.tensor(rng.standard_normal((3, 3)), requires_grad=True)
    assert gradcheck(lambda t: torch.view_as_real(torch.linalg.eigvals(t)).sum(-1), (a,))
    assert gradcheck(lambda t: torch.linalg.eig(t)[1].abs(), (a,))


def test_complex_solve_and_inv_match_numpy():
    a = cplx(3, 3) + 3 * np.eye(3)
    b = cplx(3, 2)
    close(torch.linalg.solve(torch.tensor(a), torch.tensor(b)), np.linalg.solve(a, b))
    close(torch.linalg.solve(torch.tensor(a), torch.tensor(b[:, 0])), np.linalg.solve(a, b[:, 0]))
    close(torch.linalg.solve(torch.tensor(a), torch.tensor(b.T), left=False), b.T @ np.linalg.inv(a))
    close(torch.linalg.inv(torch.tensor(a)), np.linalg.inv(a))
    batch = cplx(2, 3, 3) + 3 * np.eye(3)
    close(torch.linalg.inv(torch.tensor(batch)), np.linalg.inv(batch))
    # a real matrix with a complex right-hand side
    close(torch.linalg.solve(torch.tensor(a.real), torch.tensor(b)), np.linalg.solve(a.real, b))
    assert gradcheck(as_real_fn(lambda m, v: torch.linalg.solve(m.reshape(2, 2) + 2, v)),
                     (real_pairs(4), real_pairs(2)))

"""complex32 (``torch.chalf``): storage, casts, promotion, printing, views,
exchange and arithmetic (Note [complex32]), against NumPy computing in
complex64 and rounding the parts to float16 once, and torch's own
printed values and promotion table."""

import io
import math

import numpy as np
import pytest

import ferrotorch as torch


def c32(values):
    return torch.tensor(values, dtype=torch.complex64).to(torch.chalf)


def parts(t):
    """(re, im) of a complex32 tensor as a float64 NumPy array [..., 2]."""
    return torch.view_as_real(t.detach().resolve_conj()).float().numpy().astype(np.float64)


def ref(z):
    """A complex64 NumPy result as complex32 stores it: each part to float16."""
    z = np.asarray(z, dtype=np.complex64)
    with np.errstate(over="ignore"):  # beyond 65504 is inf, as in torch
        return np.stack([z.real.astype(np.float16), z.imag.astype(np.float16)], -1).astype(np.float64)


def close(t, z, ulps=1):
    """Within ``ulps`` float16 steps of the reference, part by part."""
    want = ref(z)
    got = parts(t)
    assert got.shape == want.shape
    step = np.maximum(np.abs(want), 6.1e-5) * 2.0 ** -10
    assert np.all(np.abs(got - want) <= ulps * step + 1e-7), (got, want)


A = [[1 + 2j, -0.5j, 3.25], [0.25 - 1j, 2 - 1j, -1.5 + 0.75j]]
B = [[0.5 - 1j, 2 + 0.5j, -1j], [1.5, -0.25 + 2j, 0.75 - 0.5j]]


def test_dtype_facts():
    assert torch.chalf is torch.complex32
    x = c32([1 + 2j, 3 - 4j])
    assert x.dtype == torch.complex32
    assert str(x.dtype) == "torch.complex32"
    assert x.element_size() == 4
    assert x.is_complex() and not x.is_floating_point()
    assert x.real.dtype == torch.float16 and x.imag.dtype == torch.float16
    assert x.abs().dtype == torch.float16 and x.angle().dtype == torch.float16
    f = torch.finfo(torch.chalf)
    assert f.eps == 2.0 ** -10 and f.max == 65504.0 and f.dtype == "float16"  # a string, as torch's


def test_printing_matches_torch():
    # torch 2.15's repr of the same values
    x = torch.tensor([1e4 + 1j, 3.14159 - 2j]).chalf()
    assert repr(x) == "tensor([1.0000e+04+1.j, 3.1406e+00-2.j], dtype=torch.complex32)"
    assert repr(c32([1 + 2j])) == "tensor([1.+2.j], dtype=torch.complex32)"
    assert x.tolist() == [(10000 + 1j), (3.140625 - 2j)]
    assert x[1].item() == 3.140625 - 2j


def test_casts_round_each_part_to_half():
    z = np.array([0.1 + 0.2j, 70000 - 1e-8j, -3.3 + 65504j], dtype=np.complex128)
    x = torch.tensor(z).to(torch.complex32)
    np.testing.assert_array_equal(parts(x)[:2], ref(z)[:2])
    assert math.isinf(parts(x)[1, 0])  # 70000 overflows float16, as torch
    back = x.to(torch.complex128).numpy()
    np.testing.assert_array_equal(back, ref(z)[..., 0] + 1j * ref(z)[..., 1])
    # complex -> real keeps the real part; real -> complex32 a zero imaginary part
    np.testing.assert_array_equal(x.to(torch.float32).numpy(), ref(z)[..., 0].astype(np.float32))
    h = torch.tensor([1.5, -2.0], dtype=torch.half).to(torch.chalf)
    np.testing.assert_array_equal(parts(h), [[1.5, 0.0], [-2.0, 0.0]])


def test_creation():
    assert parts(torch.zeros(2, dtype=torch.chalf)).tolist() == [[0, 0], [0, 0]]
    assert parts(torch.ones(2, dtype=torch.chalf)).tolist() == [[1, 0], [1, 0]]
    assert parts(torch.full((2,), 1 + 2j, dtype=torch.chalf)).tolist() == [[1, 2], [1, 2]]
    # no overflow check, as c10's complex<Half> conversion
    assert math.isinf(parts(torch.full((1,), 1e6, dtype=torch.chalf))[0, 0])
    e = torch.empty(3, dtype=torch.chalf)
    assert e.dtype == torch.chalf and e.shape == (3,)


def test_random_streams_match_torch():
    # torch fills the (re, im) view: normal with std 1/sqrt(2), uniform parts
    torch.manual_seed(0)
    z = torch.randn(3, dtype=torch.chalf)
    # printed by torch 2.15 after torch.manual_seed(0)
    np.testing.assert_array_equal(
        parts(z), np.array([[1.0898, -0.2075], [-1.5410, 0.4019], [-0.7671, -0.9888]],
                           dtype=np.float16).astype(np.float64))
    torch.manual_seed(3)
    a = torch.randn(40, dtype=torch.complex64)
    torch.manual_seed(3)
    b = torch.view_as_complex(torch.randn(40, 2) / math.sqrt(2))
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6)
    torch.manual_seed(4)
    u = torch.rand(50, dtype=torch.chalf)
    p = parts(u)
    assert p.min() >= 0 and p.max() < 1 and p[:, 1].std() > 0.1


def test_promotion_as_torch():
    # torch.promote_types / result_type (torch 2.15)
    pt = torch.promote_types
    assert pt(torch.chalf, torch.float32) == torch.complex64
    assert pt(torch.chalf, torch.float16) == torch.complex32
    assert pt(torch.chalf, torch.bfloat16) == torch.complex64
    assert pt(torch.chalf, torch.float64) == torch.complex128
    assert pt(torch.chalf, torch.int64) == torch.complex32
    assert pt(torch.float16, torch.complex64) == torch.complex64
    h = torch.ones(2, dtype=torch.half)
    assert torch.result_type(h, 1j) == torch.complex32
    assert (h * 1j).dtype == torch.complex32
    assert (h * torch.tensor(1j, dtype=torch.complex128)).dtype == torch.complex32
    x = c32([1, 2])
    assert (x + torch.ones(2)).dtype == torch.complex64
    assert (x + 1.5).dtype == torch.complex32
    assert (torch.ones((), dtype=torch.chalf) * torch.ones(2, dtype=torch.int32)).dtype == torch.complex32
    assert torch.result_type(x, torch.ones(2, dtype=torch.float64)) == torch.complex128
    with pytest.raises(TypeError, match="result_type"):
        torch.result_type(x, "a")


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_binary_against_numpy(op):
    a, b = np.array(A, np.complex64), np.array(B, np.complex64)
    # the reference rounds the inputs to complex32 first, as the tensors are
    a = ref(a)[..., 0] + 1j * ref(a)[..., 1]
    b = ref(b)[..., 0] + 1j * ref(b)[..., 1]
    got = getattr(torch, op)(c32(A), c32(B))
    assert got.dtype == torch.complex32
    close(got, getattr(np, {"sub": "subtract", "mul": "multiply", "div": "divide"}.get(op, op))(
        a.astype(np.complex64), b.astype(np.complex64)))


@pytest.mark.parametrize("op", ["exp", "log", "sqrt", "sin", "cos", "tanh", "reciprocal", "neg", "square"])
def test_unary_against_numpy(op):
    a = ref(np.array(A, np.complex64))
    a = (a[..., 0] + 1j * a[..., 1]).astype(np.complex64)
    f = {"reciprocal": lambda z: 1 / z, "neg": np.negative, "square": np.square}.get(op, getattr(np, op, None))
    got = getattr(torch, op)(c32(A))
    assert got.dtype == torch.complex32
    close(got, f(a), ulps=2)


def test_reductions_and_products():
    a = ref(np.array(A, np.complex64))
    a = (a[..., 0] + 1j * a[..., 1]).astype(np.complex64)
    x = c32(A)
    close(x.sum(), a.sum(), ulps=2)
    close(x.mean(1), a.mean(1), ulps=2)
    close(x @ x.mT, a @ a.T, ulps=2)
    assert x.abs().dtype == torch.float16
    np.testing.assert_allclose(x.abs().float().numpy(), np.abs(a), rtol=1e-3)
    assert torch.equal(x == x, torch.ones(2, 3, dtype=torch.bool))


def test_views_share_memory():
    x = c32(A)
    r = torch.view_as_real(x)
    assert r.dtype == torch.float16 and r.shape == (2, 3, 2)
    r[0, 0, 1] = -7.0
    assert x[0, 0].item() == 1 - 7j
    x.imag[1, 2] = 4.0
    assert x[1, 2].item() == -1.5 + 4j
    h = torch.zeros(2, 2, dtype=torch.half)
    z = torch.view_as_complex(h)
    assert z.dtype == torch.chalf and z.shape == (2,)
    z[1] = 3 - 1j
    assert h[1].tolist() == [3.0, -1.0]
    assert torch.complex(h[:, 0], h[:, 1]).dtype == torch.chalf
    assert torch.polar(torch.ones(2, dtype=torch.half), torch.zeros(2, dtype=torch.half)).dtype == torch.chalf
    c = x.conj()
    assert c.is_conj() and c.dtype == torch.chalf
    np.testing.assert_array_equal(parts(c)[..., 1], -parts(x)[..., 1])


def test_movement_ops_keep_elements():
    x = c32(A)
    np.testing.assert_array_equal(parts(x.t().contiguous()), parts(x).transpose(1, 0, 2))
    np.testing.assert_array_equal(parts(torch.cat([x, x])), np.concatenate([parts(x)] * 2))
    np.testing.assert_array_equal(parts(x.flip(1)), parts(x)[:, ::-1])
    np.testing.assert_array_equal(parts(x[:, 1]), parts(x)[:, 1])
    m = x.real > 0
    np.testing.assert_array_equal(parts(x.masked_fill(m, 0)), np.where(m.numpy()[..., None], 0, parts(x)))


def test_exchange():
    x = c32(A)
    with pytest.raises(TypeError, match="Got unsupported ScalarType ComplexHalf"):
        x.numpy()
    y = torch.from_dlpack(torch.utils.dlpack.to_dlpack(x))
    assert y.dtype == torch.chalf
    y[0, 0] = 5
    assert x[0, 0].item() == 5  # shared memory
    for dt in (torch.complex32, torch.complex128, torch.complex64):
        z = c32(A).to(dt)
        f = io.BytesIO()
        torch.save({"z": z, "row": z[1], "conj": z.conj()}, f)
        f.seek(0)
        got = torch.load(f)
        assert got["z"].dtype == dt
        assert torch.equal(got["z"], z) and torch.equal(got["row"], z[1])
        assert torch.equal(got["conj"].resolve_conj(), z.conj().resolve_conj())


def test_conj_view_saved_with_its_base_keeps_its_conjugation():
    # The conjugated view shares x's storage, offset, shape and strides; save
    # used to take it for x itself and load it unconjugated.
    x = torch.tensor([1 + 2j, 3 - 4j])
    f = io.BytesIO()
    torch.save({"x": x, "c": x.conj()}, f)
    f.seek(0)
    got = torch.load(f)
    assert got["c"].resolve_conj().tolist() == [1 - 2j, 3 + 4j]
    assert got["x"].tolist() == [1 + 2j, 3 - 4j]


def test_autograd_through_complex32():
    # L = sum |z|^2 has torch's gradient 2z
    z = c32([1 + 2j, 3 - 1j]).requires_grad_()
    (z * z.conj()).real.sum().backward()
    assert z.grad.dtype == torch.chalf
    assert z.grad.tolist() == [2 + 4j, 6 - 2j]
    w = c32([0.5 + 0.25j]).requires_grad_()
    w.exp().abs().sum().backward()  # |e^w| = e^{Re w}: gradient e^{Re w} + 0i
    g = w.grad.item()
    # (the forward rounds e^w to complex32, so the parts carry half-precision noise)
    assert abs(g.real - math.exp(0.5)) < 2e-3 and abs(g.imag) < 2e-3


def test_fft_and_linalg():
    a = ref(np.array(A, np.complex64))
    a = (a[..., 0] + 1j * a[..., 1]).astype(np.complex64)
    y = torch.fft.fft(c32(A))
    assert y.dtype == torch.complex64  # like float16, transformed in (complex) float32
    np.testing.assert_allclose(y.numpy(), np.fft.fft(a), rtol=1e-5, atol=1e-5)
    for f in (torch.linalg.inv, torch.linalg.det, torch.linalg.svd):
        with pytest.raises(NotImplementedError, match="Low precision dtypes not supported. Got ComplexHalf"):
            f(torch.eye(2).to(torch.chalf))
    with pytest.raises(NotImplementedError, match="Low precision dtypes not supported. Got Half"):
        torch.linalg.solve(torch.eye(2).half(), torch.eye(2).half())


def test_ormqr_checks_shapes_before_reading_them():
    # 1-D inputs used to underflow a dimension index (a panic in debug builds)
    with pytest.raises(RuntimeError, match="input must have at least 2 dimensions"):
        torch.ormqr(torch.randn(4), torch.randn(4), torch.randn(4))
    with pytest.raises(RuntimeError, match="other must have at least 2 dimensions"):
        torch.ormqr(torch.randn(3, 3), torch.randn(3), torch.randn(3))
    with pytest.raises(RuntimeError, match=r"tau.shape\[-1\] must be equal to min"):
        torch.ormqr(torch.randn(3, 3), torch.randn(2), torch.randn(3, 3))
    with pytest.raises(RuntimeError, match=r"other.shape\[-2\] must be equal to input.shape\[-2\]"):
        torch.ormqr(torch.randn(3, 3), torch.randn(3), torch.randn(4, 3))

"""``torch.signal.windows``: SciPy-style window functions, symmetric by
default (``sym=False`` gives the periodic window of spectral analysis),
each a formula over the sample positions ``n = 0 .. M-1`` written with
ferrotorch ops."""

import math

import ferrotorch as _ft

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine",
           "general_hamming", "hamming", "hann", "kaiser", "nuttall"]


def _checks(name, M, dtype, layout):
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    if layout is not None and "strided" not in str(layout):
        raise ValueError(f"{name} is implemented for strided tensors only, got: {layout}")
    if dtype is not None and dtype not in (_ft.float32, _ft.float64):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: {dtype}")


def _positions(M, dtype):
    return _ft.arange(M, dtype=_ft.float64), dtype or _ft.get_default_dtype()


def _span(M, sym):
    """The denominator of the sample spacing: M - 1 (symmetric) or M."""
    return M - 1 if sym else M


def _finish(w, dtype, requires_grad):
    return w.to(dtype).requires_grad_(requires_grad)


def _trivial(M, dtype, requires_grad):
    """M of 0 or 1: an empty window, or a single 1."""
    dtype = dtype or _ft.get_default_dtype()
    return _ft.ones(M, dtype=dtype).requires_grad_(requires_grad)


def exponential(M, *, center=None, tau=1.0, sym=True, dtype=None, layout=None, device=None,
                requires_grad=False):
    """``exp(-|n - center| / tau)``, centred by default."""
    _checks("exponential", M, dtype, layout)
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    if M == 0:
        return _trivial(0, dtype, requires_grad)
    if center is None:
        center = (M if not sym and M > 1 else M - 1) / 2.0
    n, dt = _positions(M, dtype)
    return _finish(_ft.exp(-_ft.abs(n - center) / tau), dt, requires_grad)


def cosine(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """``sin(π (n + ½) / M)`` (``M + 1`` for the periodic window)."""
    _checks("cosine", M, dtype, layout)
    if M == 0:
        return _trivial(0, dtype, requires_grad)
    n, dt = _positions(M, dtype)
    width = M + 1 if not sym and M > 1 else M
    return _finish(_ft.sin(math.pi * (n + 0.5) / width), dt, requires_grad)


def gaussian(M, *, std=1.0, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """``exp(-((n - c) / std)² / 2)`` about the centre ``c``."""
    _checks("gaussian", M, dtype, layout)
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    if M == 0:
        return _trivial(0, dtype, requires_grad)
    n, dt = _positions(M, dtype)
    c = (M if not sym and M > 1 else M - 1) / 2.0
    return _finish(_ft.exp(-(((n - c) / std) ** 2) / 2), dt, requires_grad)


def kaiser(M, *, beta=12.0, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """``I0(β √(1 - x²)) / I0(β)`` with ``x`` running from -1."""
    _checks("kaiser", M, dtype, layout)
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    if M <= 1:
        return _trivial(M, dtype, requires_grad)
    n, dt = _positions(M, dtype)
    x = (-1 + 2 * n / _span(M, sym)).clamp(max=1.0)
    arg = beta * _ft.sqrt((1 - x * x).clamp(min=0.0))
    return _finish(_ft.i0(arg) / _ft.i0(_ft.tensor(beta, dtype=_ft.float64)), dt, requires_grad)


def general_cosine(M, *, a, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """``Σ_k (-1)^k a_k cos(2π k n / (M - 1))``."""
    _checks("general_cosine", M, dtype, layout)
    if M <= 1:
        return _trivial(M, dtype, requires_grad)
    if not isinstance(a, (list, tuple)):
        raise TypeError("Coefficients must be a list/tuple")
    if not a:
        raise ValueError("Coefficients cannot be empty")
    n, dt = _positions(M, dtype)
    w = _ft.zeros(M, dtype=_ft.float64)
    for k, ak in enumerate(a):
        w = w + (-1) ** k * ak * _ft.cos(2 * math.pi * k * n / _span(M, sym))
    return _finish(w, dt, requires_grad)


def general_hamming(M, *, alpha=0.54, sym=True, dtype=None, layout=None, device=None,
                    requires_grad=False):
    """``α - (1 - α) cos(2π n / (M - 1))``."""
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def hamming(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The Hamming window (``general_hamming`` with α = 0.54)."""
    return general_hamming(M, alpha=0.54, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def hann(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The Hann window (``general_hamming`` with α = 0.5)."""
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def blackman(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The Blackman window (coefficients 0.42, 0.5, 0.08)."""
    _checks("blackman", M, dtype, layout)
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def nuttall(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The minimum 4-term Blackman–Harris window of Nuttall."""
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym,
                          dtype=dtype, layout=layout, device=device, requires_grad=requires_grad)


def bartlett(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The triangular window ``1 - |x|`` with ``x`` running from -1."""
    _checks("bartlett", M, dtype, layout)
    if M <= 1:
        return _trivial(M, dtype, requires_grad)
    n, dt = _positions(M, dtype)
    return _finish(1 - _ft.abs(-1 + 2 * n / _span(M, sym)), dt, requires_grad)

"""The rest of torch's random in-place fills (``cauchy_``,
``exponential_``, ``geometric_``, ``log_normal_``) by inverse transform of
``uniform_`` draws, ``torch.normal``'s overloads, and ``torch.gradient``
(central differences, NumPy's formulas for uneven spacing)."""

import math

import ferrotorch as _ft

Tensor = _ft.Tensor


def _uniform_like(t, generator):
    return _ft.empty_like(t, dtype=_ft.float64).uniform_(0, 1, generator=generator)


def _fill_from(self, values):
    with _ft.no_grad():
        self.copy_(values.to(self.dtype))
    return self


def cauchy_(self, median=0, sigma=1, *, generator=None):
    """Fill with Cauchy draws, ``median + sigma·tan(π(u - ½))``."""
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
    u = _uniform_like(self, generator)
    return _fill_from(self, median + sigma * _ft.tan(math.pi * (u - 0.5)))


def exponential_(self, lambd=1, *, generator=None):
    """Fill with exponential draws of rate ``lambd``."""
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
    u = _uniform_like(self, generator)
    return _fill_from(self, -_ft.log1p(-u) / lambd)


def geometric_(self, p, *, generator=None):
    """Fill with the number of Bernoulli(p) trials up to the first success."""
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    u = _uniform_like(self, generator)
    return _fill_from(self, _ft.ceil(_ft.log1p(-u) / math.log1p(-p)).clamp(min=1))


def log_normal_(self, mean=1, std=2, *, generator=None):
    """Fill with ``exp`` of normal draws."""
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
    z = _ft.empty_like(self, dtype=_ft.float64).normal_(mean, std, generator=generator)
    return _fill_from(self, _ft.exp(z))


def normal(mean, std=1.0, size=None, *, generator=None, out=None, dtype=None, layout=None,
           device=None, pin_memory=False, requires_grad=False):
    """``torch.normal``: tensor means and/or standard deviations
    (broadcast), or numbers with a ``size``."""
    if out is not None:
        raise TypeError("normal: out= is not supported")
    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        if size is not None:
            raise TypeError("normal() received an invalid combination of arguments: a size goes with numbers only")
        m = mean if isinstance(mean, Tensor) else _ft.tensor(float(mean), dtype=std.dtype)
        s = std if isinstance(std, Tensor) else _ft.tensor(float(std), dtype=m.dtype)
        if (s < 0).any().item():
            raise RuntimeError("normal expects all elements of std >= 0.0")
        shape = _ft.broadcast_shapes(m.shape, s.shape)
        z = _ft.empty(shape, dtype=_ft.promote_types(m.dtype, s.dtype)).normal_(0, 1, generator=generator)
        return m + s * z
    if size is None:
        raise TypeError("normal() missing required argument 'size' when mean and std are numbers")
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    t = _ft.empty(tuple(size), dtype=dtype).normal_(mean, std, generator=generator)
    return t.requires_grad_(requires_grad)


def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """``torch.gradient``: the derivative estimate along each of ``dim``
    (all by default) by central differences inside and one-sided ones
    (``edge_order`` 1 or 2) at the ends; ``spacing`` is one number, one
    per dim, or the coordinates of each dim's samples."""
    if edge_order not in (1, 2):
        raise RuntimeError(f"torch.gradient only supports edge_order=1 and edge_order=2, but got {edge_order}")
    if spacing is None:
        spacing = 1
    dims = list(range(input.dim())) if dim is None else ([dim] if isinstance(dim, int) else list(dim))
    dims = [d % input.dim() for d in dims]
    if isinstance(spacing, (int, float)) or (isinstance(spacing, Tensor) and spacing.dim() == 0):
        spacing = [float(spacing)] * len(dims)
    spacing = list(spacing)
    if len(spacing) == 1 and len(dims) > 1:
        spacing = spacing * len(dims)
    if len(spacing) != len(dims):
        raise RuntimeError(
            f"torch.gradient expected spacing to be unspecified, a scalar or a list of length {len(dims)}, "
            f"but got a list of length {len(spacing)}")
    out = []
    for d, h in zip(dims, spacing):
        n = input.shape[d]
        if n < edge_order + 1:
            raise RuntimeError(
                f"torch.gradient expected each dimension size to be at least edge_order+1")
        f = input if input.is_floating_point() else input.to(_ft.get_default_dtype())
        sl = lambda a, b: f.narrow(d, a, b - a)  # noqa: E731
        if isinstance(h, Tensor) and h.dim() == 1:
            x = h.to(f.dtype)
            shape = [1] * f.dim()
            shape[d] = -1
            dx = (x[1:] - x[:-1])
            hl, hr = dx[:-1].view(shape), dx[1:].view(shape)
            interior = (hl ** 2 * sl(2, n) - hr ** 2 * sl(0, n - 2) + (hr ** 2 - hl ** 2) * sl(1, n - 1)) \
                / (hl * hr * (hl + hr))
            h0, h1 = float(dx[0]), float(dx[1]) if n > 2 else float(dx[0])
            hm, hn = float(dx[-1]), float(dx[-2]) if n > 2 else float(dx[-1])
        else:
            h = float(h)
            interior = (sl(2, n) - sl(0, n - 2)) / (2 * h)
            h0 = h1 = hm = hn = h
        if edge_order == 1:
            first = (sl(1, 2) - sl(0, 1)) / h0
            last = (sl(n - 1, n) - sl(n - 2, n - 1)) / hm
        else:
            # NumPy's second-order one-sided formulas (uneven spacing)
            a = -(2 * h0 + h1) / (h0 * (h0 + h1))
            b = (h0 + h1) / (h0 * h1)
            c = -h0 / (h1 * (h0 + h1))
            first = a * sl(0, 1) + b * sl(1, 2) + c * sl(2, 3)
            a = hm / (hn * (hn + hm))
            b = -(hm + hn) / (hn * hm)
            c = (2 * hm + hn) / (hm * (hn + hm))
            last = a * sl(n - 3, n - 2) + b * sl(n - 2, n - 1) + c * sl(n - 1, n)
        out.append(_ft.cat([first, interior, last], d))
    return tuple(out)


def install():
    Tensor.cauchy_ = cauchy_
    Tensor.exponential_ = exponential_
    Tensor.geometric_ = geometric_
    Tensor.log_normal_ = log_normal_

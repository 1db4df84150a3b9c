"""``F.interpolate``'s separable modes written as one interpolation matrix
per spatial axis: ``bicubic`` (Keys' cubic convolution with ``A = -0.75``,
border indices clamped, as torch's ``upsample_bicubic2d``) and
``antialias=True`` for ``bilinear``/``bicubic`` (torch's
``_upsample_*2d_aa``: the filter is widened by the scale when shrinking,
``A = -0.5`` for cubic, and each output's weights are normalised). The
matrix is built in float64 (Python floats) from the sizes alone and applied with
``matmul``, so the result records a graph and its gradient is the
transposed matrix, as torch's backward kernels compute. Used by
``interpolate``."""

import math

import ferrotorch as _ft


def _scale(in_size, out_size, align_corners, scale_factor):
    """torch's ``area_pixel_compute_scale``."""
    if align_corners:
        return (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
    if scale_factor is not None and scale_factor > 0:
        return 1.0 / scale_factor
    return in_size / out_size


def _cubic1(x, a):
    return ((a + 2) * x - (a + 3)) * x * x + 1


def _cubic2(x, a):
    return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a


def _bicubic_matrix(in_size, out_size, scale, align_corners):
    m = [[0.0] * in_size for _ in range(out_size)]
    a = -0.75
    for o in range(out_size):
        real = scale * o if align_corners else scale * (o + 0.5) - 0.5
        i0 = math.floor(real)
        t = real - i0
        ws = (_cubic2(t + 1, a), _cubic1(t, a), _cubic1(1 - t, a), _cubic2(2 - t, a))
        for k, w in enumerate(ws):
            m[o][min(max(i0 - 1 + k, 0), in_size - 1)] += w
    return m


def _aa_filter(kind, x):
    x = abs(x)
    if kind == "bilinear":
        return max(0.0, 1.0 - x)
    a = -0.5
    if x < 1.0:
        return _cubic1(x, a)
    if x < 2.0:
        return _cubic2(x, a)
    return 0.0


def _aa_matrix(kind, in_size, out_size, scale):
    m = [[0.0] * in_size for _ in range(out_size)]
    interp = 2 if kind == "bilinear" else 4
    support = interp * 0.5 * scale if scale >= 1.0 else interp * 0.5
    invscale = 1.0 / scale if scale >= 1.0 else 1.0
    for o in range(out_size):
        center = scale * (o + 0.5)
        lo = max(int(center - support + 0.5), 0)
        hi = min(int(center + support + 0.5), in_size)
        ws = [_aa_filter(kind, (j - center + 0.5) * invscale) for j in range(lo, hi)]
        total = sum(ws)
        if total != 0.0:
            ws = [w / total for w in ws]
        m[o][lo:hi] = ws
    return m


def resample(input, out, scales, mode, align_corners, antialias):
    """``input`` (``N, C, H, W``) resized to ``out`` by ``mode``
    (``"bilinear"`` or ``"bicubic"``), one matrix per spatial axis."""
    if input.dim() != 4:
        raise NotImplementedError(
            f"interpolate: mode '{mode}' needs a 4-D input, got a {input.dim()}-D input")
    y = input
    for axis, (n_in, n_out, sf) in enumerate(zip(input.shape[2:], out, scales)):
        scale = _scale(n_in, n_out, align_corners, sf)
        if antialias:
            m = _aa_matrix(mode, n_in, n_out, scale)
        else:
            m = _bicubic_matrix(n_in, n_out, scale, align_corners)
        w = _ft.tensor(m, dtype=_ft.float64).t().contiguous().to(input.dtype)
        d = 2 + axis
        y = y.movedim(d, -1).matmul(w).movedim(-1, d)
    return y

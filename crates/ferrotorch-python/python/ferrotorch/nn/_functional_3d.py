"""Volumetric ``nn.functional`` ops as compositions of the 2-D kernels and
views (so they record graphs and have gradients): ``conv3d`` (a sum of
``conv2d`` over the kernel's depth), ``max_pool3d``/``avg_pool3d`` (windows
from ``unfold``), and the adaptive 3-D pools (one axis at a time: a box
mean or maximum is the mean or maximum over each of its axes in turn).
Re-exported by ``functional``."""

import math

import ferrotorch as _ft


def _triple(v):
    return tuple(v) if isinstance(v, (list, tuple)) else (v, v, v)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """``F.conv3d`` for ``(N, C, D, H, W)`` (or unbatched) inputs."""
    from . import functional as F

    unbatched = input.dim() == 4
    if unbatched:
        input = input.unsqueeze(0)
    if input.dim() != 5 or weight.dim() != 5:
        raise RuntimeError(
            f"Expected 4D (unbatched) or 5D (batched) input to conv3d, but got input of size: {list(input.shape)}")
    sd, sh, sw = _triple(stride)
    dd, dh, dw = _triple(dilation)
    kd = weight.shape[2]
    if isinstance(padding, str):
        if padding == "valid":
            padding = 0
        elif padding == "same":
            if (sd, sh, sw) != (1, 1, 1):
                raise ValueError("padding='same' is not supported for strided convolutions")
            pads = []
            for k, d in reversed(list(zip(weight.shape[2:], (dd, dh, dw)))):
                total = d * (k - 1)
                pads += [total // 2, total - total // 2]
            input = F.pad(input, pads)
            padding = 0
        else:
            raise ValueError(f"Invalid padding string '{padding}', should be one of ['valid', 'same']")
    pd, ph, pw = _triple(padding)
    if pd:
        input = F.pad(input, [0, 0, 0, 0, pd, pd])
    depth = input.shape[2]
    out_d = (depth - dd * (kd - 1) - 1) // sd + 1
    if out_d <= 0:
        raise RuntimeError("conv3d: the kernel is larger than the (padded) input in depth")
    slices = []
    for od in range(out_d):
        acc = None
        for k in range(kd):
            part = F.conv2d(input[:, :, od * sd + k * dd], weight[:, :, k], None, (sh, sw), (ph, pw),
                            (dh, dw), groups)
            acc = part if acc is None else acc + part
        slices.append(acc)
    out = _ft.stack(slices, 2)
    if bias is not None:
        out = out + bias.view(1, -1, 1, 1, 1)
    return out.squeeze(0) if unbatched else out


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """``F.conv_transpose3d``, the adjoint of ``conv3d``: input depth slice
    ``i`` through kernel depth ``k`` lands on output depth ``i*s + k*d - p``
    (a ``conv_transpose2d`` over height and width)."""
    from . import functional as F

    unbatched = input.dim() == 4
    if unbatched:
        input = input.unsqueeze(0)
    if input.dim() != 5 or weight.dim() != 5:
        raise RuntimeError(
            "Expected 4D (unbatched) or 5D (batched) input to conv_transpose3d, but got input of "
            f"size: {list(input.shape)}")
    sd, sh, sw = _triple(stride)
    pd, ph, pw = _triple(padding)
    od_, oh, ow = _triple(output_padding)
    dd, dh, dw = _triple(dilation)
    depth, kd = input.shape[2], weight.shape[2]
    out_d = (depth - 1) * sd - 2 * pd + dd * (kd - 1) + od_ + 1
    if out_d <= 0:
        raise RuntimeError(f"conv_transpose3d: the output depth {out_d} is not positive")
    slices = [None] * out_d
    for i in range(depth):
        plane = input[:, :, i]
        for k in range(kd):
            j = i * sd + k * dd - pd
            if not 0 <= j < out_d:
                continue
            part = F.conv_transpose2d(plane, weight[:, :, k], None, (sh, sw), (ph, pw), (oh, ow),
                                      groups, (dh, dw))
            slices[j] = part if slices[j] is None else slices[j] + part
    shape = next(s for s in slices if s is not None).shape if any(
        s is not None for s in slices) else None
    if shape is None:
        shape = F.conv_transpose2d(input[:, :, 0], weight[:, :, 0], None, (sh, sw), (ph, pw),
                                   (oh, ow), groups, (dh, dw)).shape
    zero = _ft.zeros(tuple(shape), dtype=input.dtype)
    out = _ft.stack([zero if s is None else s for s in slices], 2)
    if bias is not None:
        out = out + bias.view(1, -1, 1, 1, 1)
    return out.squeeze(0) if unbatched else out


def _windows(x, k, s, d, dims):
    """``x`` (padded) with a trailing window axis per pooled dim."""
    for dim, kk, ss, dl in zip(dims, k, s, d):
        span = dl * (kk - 1) + 1
        x = x.unfold(dim, span, ss)
        if dl > 1:
            x = x[..., ::dl]
    return x


def _pool_geometry(shape, k, s, p, d, ceil_mode):
    """Output sizes and the extra right padding ceil mode needs."""
    outs, extra = [], []
    for n, kk, ss, pp, dl in zip(shape, k, s, p, d):
        span = dl * (kk - 1) + 1
        num = n + 2 * pp - span
        o = (math.ceil(num / ss) if ceil_mode else num // ss) + 1
        if ceil_mode and (o - 1) * ss >= n + pp:
            o -= 1  # the last window must start inside the input or left padding
        outs.append(o)
        extra.append(max(0, (o - 1) * ss + span - (n + 2 * pp)))
    return outs, extra


def _pool_argmax(flat):
    """Where torch's pooling kernels put a window's index: the first
    maximum, or the window's last NaN (they take every NaN they meet,
    where ``argmax`` stops at the first)."""
    nan = flat.isnan()
    last_nan = flat.shape[-1] - 1 - nan.flip(-1).to(_ft.int64).argmax(-1)
    return _ft.where(nan.any(-1), last_nan, flat.argmax(-1))


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """``F.max_pool3d``; with ``return_indices`` also each maximum's flat
    index into its ``D·H·W`` input volume (the first maximum of a window)."""
    unbatched = input.dim() == 4
    x = input.unsqueeze(0) if unbatched else input
    k = _triple(kernel_size)
    s = _triple(stride if stride not in (None, []) else kernel_size)
    p, d = _triple(padding), _triple(dilation)
    if any(pp * 2 > kk for pp, kk in zip(p, k)):
        raise RuntimeError("pad should be at most half of effective kernel size")
    outs, extra = _pool_geometry(x.shape[2:], k, s, p, d, ceil_mode)
    pads = []
    for pp, ee in reversed(list(zip(p, extra))):
        pads += [pp, pp + ee]
    x = _ft.nn.functional.pad(x, pads, value=float("-inf"))
    w = _windows(x, k, s, d, (2, 3, 4))
    out = w.amax((-3, -2, -1))[:, :, :outs[0], :outs[1], :outs[2]]
    if return_indices:
        vol = input.shape[-3:]
        where = _ft.arange(vol[0] * vol[1] * vol[2]).view(*vol).to(_ft.float64)
        where = _ft.nn.functional.pad(where, pads, value=-1.0)
        iw = _windows(where.unsqueeze(0).unsqueeze(0), k, s, d, (2, 3, 4))
        flat = w.flatten(-3)
        pos = _pool_argmax(flat).unsqueeze(-1)
        idx = iw.flatten(-3).expand(*flat.shape).gather(-1, pos).squeeze(-1).to(_ft.int64)
        idx = idx[:, :, :outs[0], :outs[1], :outs[2]]
        return (out.squeeze(0), idx.squeeze(0)) if unbatched else (out, idx)
    return out.squeeze(0) if unbatched else out


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """``F.avg_pool3d``: window sums over the number of elements counted
    (padding included unless ``count_include_pad=False``; never the part of a
    ceil-mode window past the padding)."""
    unbatched = input.dim() == 4
    x = input.unsqueeze(0) if unbatched else input
    k = _triple(kernel_size)
    s = _triple(stride if stride not in (None, []) else kernel_size)
    p = _triple(padding)
    if any(pp * 2 > kk for pp, kk in zip(p, k)):
        raise RuntimeError("pad should be at most half of effective kernel size")
    outs, extra = _pool_geometry(x.shape[2:], k, s, p, (1, 1, 1), ceil_mode)
    pads = []
    for pp, ee in reversed(list(zip(p, extra))):
        pads += [pp, pp + ee]
    sums = _windows(_ft.nn.functional.pad(x, pads), k, s, (1, 1, 1), (2, 3, 4)).sum((-3, -2, -1))
    sums = sums[:, :, :outs[0], :outs[1], :outs[2]]
    if divisor_override is not None:
        out = sums / divisor_override
    else:
        ones = _ft.ones(tuple(x.shape[2:]), dtype=x.dtype)
        inner = []
        for pp, ee in reversed(list(zip(p, extra))):
            inner += [pp, pp + ee]
        if count_include_pad:
            # padding counts, the ceil-mode overhang does not
            lo_hi = []
            for pp in reversed(p):
                lo_hi += [pp, pp]
            counted = _ft.nn.functional.pad(ones, lo_hi, value=1.0)
            tail = []
            for ee in reversed(extra):
                tail += [0, ee]
            counted = _ft.nn.functional.pad(counted, tail, value=0.0)
        else:
            counted = _ft.nn.functional.pad(ones, inner, value=0.0)
        div = _windows(counted.unsqueeze(0).unsqueeze(0), k, s, (1, 1, 1), (2, 3, 4)).sum((-3, -2, -1))
        out = sums / div[:, :, :outs[0], :outs[1], :outs[2]]
    return out.squeeze(0) if unbatched else out


def _adaptive_axis(x, dim, size, reduce):
    n = x.shape[dim]
    parts = []
    for i in range(size):
        lo, hi = (i * n) // size, -((-(i + 1) * n) // size)
        parts.append(reduce(x.narrow(dim, lo, hi - lo), dim))
    return _ft.stack(parts, dim)


def _adaptive3d(input, output_size, reduce):
    unbatched = input.dim() == 4
    x = input.unsqueeze(0) if unbatched else input
    sizes = _triple(output_size)
    sizes = [x.shape[2 + i] if s is None else s for i, s in enumerate(sizes)]
    for i, size in enumerate(sizes):
        x = _adaptive_axis(x, 2 + i, size, reduce)
    return x.squeeze(0) if unbatched else x


def adaptive_avg_pool3d(input, output_size):
    """``F.adaptive_avg_pool3d``: bins ``[⌊i·n/o⌋, ⌈(i+1)·n/o⌉)`` per axis."""
    return _adaptive3d(input, output_size, lambda t, d: t.mean(d))


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """``F.adaptive_max_pool3d``; with ``return_indices`` also each
    maximum's flat index into its ``D·H·W`` input volume (the first maximum
    of a bin, as torch)."""
    out = _adaptive3d(input, output_size, lambda t, d: t.amax(d))
    if not return_indices:
        return out
    unbatched = input.dim() == 4
    x = input.unsqueeze(0) if unbatched else input
    n, c, d, h, w = x.shape
    od, oh, ow = out.shape[-3:]

    def bins(size, o):
        return [((i * size) // o, -((-(i + 1) * size) // o)) for i in range(o)]

    flat_all = _ft.arange(d * h * w).view(d, h, w)
    picks = []
    for d0, d1 in bins(d, od):
        for h0, h1 in bins(h, oh):
            for w0, w1 in bins(w, ow):
                block = x[:, :, d0:d1, h0:h1, w0:w1].reshape(n, c, -1)
                where = flat_all[d0:d1, h0:h1, w0:w1].reshape(-1)
                picks.append(where[_pool_argmax(block)])
    idx = _ft.stack(picks, -1).view(n, c, od, oh, ow)
    return (out, idx.squeeze(0)) if unbatched else (out, idx)

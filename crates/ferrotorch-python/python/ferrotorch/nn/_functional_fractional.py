"""``F.fractional_max_pool2d``/``3d`` (Graham, "Fractional Max-Pooling"):
each plane's pooling windows start at pseudo-random offsets drawn from one
uniform sample per spatial axis, with torch's interval formula, so the
same ``_random_samples`` (or the same seed) give torch's windows. The
windows' elements are gathered and reduced with ``max`` over the last
dimension, so the result records a graph and the gradient reaches each
window's first maximum, as torch's does. Re-exported by ``functional``."""

import ferrotorch as _ft

_AXES = {2: ("height", "width"), 3: ("time", "height", "width")}


def _tuple(v, n):
    return tuple(v) if isinstance(v, (list, tuple)) else (v,) * n


def _intervals(samples, in_size, out_size, pool):
    """Window starts, (N, C, out_size), computed in the samples' dtype as
    torch computes them: ``int((i + u) * a) - int(u * a)`` with
    ``a = (in_size - pool) / (out_size - 1)``, the last at ``in_size - pool``."""
    import numpy as np  # here, not at import: NumPy is optional for the package
    ft = samples.dtype.type
    seq = np.empty(samples.shape + (out_size,), dtype=np.int64)
    if out_size > 1:
        alpha = ft(in_size - pool) / ft(out_size - 1)
        i = np.arange(out_size - 1).astype(samples.dtype)
        u = samples[..., None]
        seq[..., :-1] = ((i + u) * alpha).astype(np.int64) - (u * alpha).astype(np.int64)
    if out_size > 0:
        seq[..., -1] = in_size - pool
    return seq


def _fractional_max_pool(nd, input, kernel_size, output_size, output_ratio, return_indices,
                         _random_samples):
    import numpy as np  # here, not at import: NumPy is optional for the package

    name = f"fractional_max_pool{nd}d"
    if output_size is None and output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an output_ratio")
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(
            f"{name}(): Expected {nd + 1}D or {nd + 2}D tensor, but got: {list(input.shape)}")
    kernel = _tuple(kernel_size, nd)
    spatial = list(input.shape[-nd:])
    if output_size is None:
        ratio = _tuple(output_ratio, nd)
        output_size = [int(s * r) for s, r in zip(spatial, ratio)]
    out = list(_tuple(output_size, nd))
    unbatched = input.dim() == nd + 1
    x = input.unsqueeze(0) if unbatched else input
    n, c = x.shape[0], x.shape[1]
    if _random_samples is None:
        _random_samples = _ft.rand(n, c, nd, dtype=input.dtype)
    if tuple(_random_samples.shape[:2]) != (n, c) or _random_samples.dim() != 3:
        raise RuntimeError(f"{name}(): Expect _random_samples to have the shape ({n}, {c}, {nd}); "
                           f"got {list(_random_samples.shape)}.")
    if _random_samples.shape[2] != nd:
        raise RuntimeError(
            f"Expect _random_samples.size(2) equals to {nd}; got {_random_samples.shape[2]}.")
    where = name + ("_out()" if nd == 3 else "()")
    for axis, s, o, k in zip(_AXES[nd], spatial, out, kernel):
        if o + k - 1 > s:
            raise RuntimeError(f"{where}: pool {axis} {k} too large relative to input {axis} {s}")
    u = _random_samples.detach().numpy()
    # torch's sample order: 2-D planes hold (w, h); 3-D planes hold (t, h, w)
    axis_sample = [1, 0] if nd == 2 else [0, 1, 2]
    starts = [_intervals(u[..., axis_sample[a]], spatial[a], out[a], kernel[a]) for a in range(nd)]
    # flat input index of every (output position, window offset): (N, C, *out, *kernel)
    strides = [int(np.prod(spatial[a + 1:])) for a in range(nd)]
    flat = np.zeros((n, c) + tuple(out) + tuple(kernel), dtype=np.int64)
    for a in range(nd):
        shape = [n, c] + [1] * (2 * nd)
        shape[2 + a] = out[a]
        pos = starts[a].reshape(shape)
        kshape = [1] * (2 + 2 * nd)
        kshape[2 + nd + a] = kernel[a]
        flat = flat + (pos + np.arange(kernel[a]).reshape(kshape)) * strides[a]
    window = int(np.prod(kernel))
    flat = flat.reshape(n, c, -1, window)
    idx = _ft.from_numpy(flat.reshape(n, c, -1))
    vals = x.flatten(2).gather(2, idx).reshape(n, c, -1, window)
    values, arg = vals.max(-1)
    values = values.reshape([n, c] + out)
    if unbatched:
        values = values.squeeze(0)
    if not return_indices:
        return values
    indices = _ft.from_numpy(flat).gather(-1, arg.unsqueeze(-1)).reshape([n, c] + out)
    return values, indices.squeeze(0) if unbatched else indices


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    """``F.fractional_max_pool2d`` for ``(N, C, H, W)`` or ``(C, H, W)`` input."""
    return _fractional_max_pool(2, input, kernel_size, output_size, output_ratio,
                                return_indices, _random_samples)


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    """``F.fractional_max_pool3d`` for ``(N, C, T, H, W)`` or ``(C, T, H, W)`` input."""
    return _fractional_max_pool(3, input, kernel_size, output_size, output_ratio,
                                return_indices, _random_samples)


# torch's `*_with_indices` names
fractional_max_pool2d_with_indices = fractional_max_pool2d
fractional_max_pool3d_with_indices = fractional_max_pool3d

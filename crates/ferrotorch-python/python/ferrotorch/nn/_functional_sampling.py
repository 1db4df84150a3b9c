"""Sampling and scattering in ``nn.functional``, written as compositions of
ops (so they record graphs and have gradients): ``affine_grid``,
``grid_sample`` (bilinear and nearest, 4-D), ``max_unpool1d/2d/3d`` and
``embedding_bag``. Re-exported by ``functional``."""

import ferrotorch as _ft


# --- affine grids and sampling -------------------------------------------

def _base_coords(n, align_corners, dtype):
    """The normalized sample positions of ``n`` pixels in [-1, 1]."""
    if n <= 1:
        return _ft.zeros(n, dtype=dtype)
    idx = _ft.arange(n, dtype=dtype)
    if align_corners:
        return idx * (2.0 / (n - 1)) - 1.0
    return (idx * 2.0 + 1.0) / n - 1.0


def affine_grid(theta, size, align_corners=None):
    """``F.affine_grid``: the sampling grid of affine maps ``theta``
    (``N×2×3`` for 4-D ``size``, ``N×3×4`` for 5-D) over the output size."""
    align_corners = bool(align_corners)
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = list(size)
    if len(size) == 4:
        if theta.dim() != 3 or tuple(theta.shape[1:]) != (2, 3):
            raise ValueError(
                f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {size}. Got {list(theta.shape)}.")
        n, _, h, w = size
        xs = _base_coords(w, align_corners, theta.dtype).view(1, w).expand(h, w)
        ys = _base_coords(h, align_corners, theta.dtype).view(h, 1).expand(h, w)
        base = _ft.stack([xs, ys, _ft.ones(h, w, dtype=theta.dtype)], -1).view(1, h * w, 3)
        return base.matmul(theta.transpose(1, 2)).view(n, h, w, 2)
    if len(size) == 5:
        if theta.dim() != 3 or tuple(theta.shape[1:]) != (3, 4):
            raise ValueError(
                f"Expected a batch of 3D affine matrices of shape Nx3x4 for size {size}. Got {list(theta.shape)}.")
        n, _, d, h, w = size
        xs = _base_coords(w, align_corners, theta.dtype).view(1, 1, w).expand(d, h, w)
        ys = _base_coords(h, align_corners, theta.dtype).view(1, h, 1).expand(d, h, w)
        zs = _base_coords(d, align_corners, theta.dtype).view(d, 1, 1).expand(d, h, w)
        base = _ft.stack([xs, ys, zs, _ft.ones(d, h, w, dtype=theta.dtype)], -1).view(1, d * h * w, 4)
        return base.matmul(theta.transpose(1, 2)).view(n, d, h, w, 3)
    raise NotImplementedError(
        f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, respectively. Got size {size}.")


def _unnormalize(g, n, align_corners):
    if align_corners:
        return (g + 1.0) * ((n - 1) / 2.0)
    return ((g + 1.0) * n - 1.0) / 2.0


def _reflect_coords(x, n, align_corners):
    if align_corners:
        return _reflect2(x, 0, 2 * (n - 1))
    return _reflect2(x, -1, 2 * n - 1).clamp(0, n - 1)


def _reflect2(x, twice_low, twice_high):
    """torch's reflect_coordinates on doubled bounds."""
    if twice_low == twice_high:
        return _ft.zeros_like(x)
    lo = twice_low / 2.0
    span = (twice_high - twice_low) / 2.0
    x = (x - lo).abs()
    flips = _ft.floor(x / span)
    extra = x - flips * span
    even = _ft.remainder(flips, 2) == 0
    return _ft.where(even, extra + lo, span - extra + lo)


def _pad(x, n, padding_mode, align_corners):
    """An unnormalized coordinate moved inside by the padding mode (torch's
    compute_coordinates; ``zeros`` leaves it, and reads outside give 0)."""
    if padding_mode == "border":
        return x.clamp(0, n - 1)
    if padding_mode == "reflection":
        return _reflect_coords(x, n, align_corners)
    return x


def _coords(g, n, padding_mode, align_corners):
    return _pad(_unnormalize(g, n, align_corners), n, padding_mode, align_corners)


def _cubic_weights(t):
    """Keys' cubic convolution weights (A = -0.75) of the four taps at
    offsets -1, 0, 1, 2 for the fractional position ``t``."""
    a = -0.75

    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """``F.grid_sample``: ``input`` (N, C, H, W) or (N, C, D, H, W) read at
    the normalized (x, y[, z]) positions of ``grid`` (N, Ho, Wo, 2) or
    (N, Do, Ho, Wo, 3); ``bilinear`` (trilinear for 5-D), ``nearest`` or
    ``bicubic`` (4-D) interpolation, with zeros, border or reflection
    padding. Gathers and weights, so it records a graph for both inputs."""
    align_corners = bool(align_corners)
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(
            f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(
            "nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or 'reflection', "
            f"but got: '{padding_mode}'")
    if input.dim() not in (4, 5):
        raise RuntimeError(
            f"grid_sampler(): expected 4D or 5D input and grid with same number of dimensions, but got "
            f"input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    nd = input.dim() - 2
    if mode == "bicubic" and nd != 2:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if grid.dim() != input.dim() or grid.shape[-1] != nd or grid.shape[0] != input.shape[0]:
        raise RuntimeError(
            f"grid_sampler(): expected grid to have size {nd} in last dimension and the same batch "
            f"size as input, but got grid with sizes {list(grid.shape)}")
    n, c = input.shape[0], input.shape[1]
    sizes = list(input.shape[2:])  # (H, W) or (D, H, W)
    out = list(grid.shape[1:-1])
    total = 1
    for o in out:
        total *= o
    strides = [1] * nd
    for a in range(nd - 2, -1, -1):
        strides[a] = strides[a + 1] * sizes[a + 1]
    flat = input.reshape(n, c, -1)
    # grid component k addresses the k-th spatial dim from the last (x: W)
    comp = [grid[..., nd - 1 - a] for a in range(nd)]

    def read(pos):
        """input at integer positions (one (N, *out) tensor per axis), 0 outside."""
        inside, lin = None, None
        for a, p in enumerate(pos):
            ok = (p >= 0) & (p <= sizes[a] - 1)
            inside = ok if inside is None else inside & ok
            term = p.clamp(0, sizes[a] - 1) * strides[a]
            lin = term if lin is None else lin + term
        idx = lin.to(_ft.int64).reshape(n, 1, total).expand(n, c, total)
        vals = flat.gather(2, idx).reshape(n, c, *out)
        return _ft.where(inside.unsqueeze(1), vals, _ft.zeros((), dtype=input.dtype))

    if mode == "nearest":
        return read([_ft.round(_coords(comp[a], sizes[a], padding_mode, align_corners))
                     for a in range(nd)])
    if mode == "bilinear":
        xs = [_coords(comp[a], sizes[a], padding_mode, align_corners) for a in range(nd)]
        lo = [_ft.floor(x) for x in xs]
        frac = [x - f for x, f in zip(xs, lo)]
        result = None
        for corner in range(2 ** nd):
            bits = [(corner >> (nd - 1 - a)) & 1 for a in range(nd)]
            w = None
            for a, b in enumerate(bits):
                wa = frac[a] if b else 1 - frac[a]
                w = wa if w is None else w * wa
            term = read([lo[a] + bits[a] for a in range(nd)]) * w.unsqueeze(1)
            result = term if result is None else result + term
        return result
    # bicubic: taps around the unnormalized position, each tap moved by the padding
    xs = [_unnormalize(comp[a], sizes[a], align_corners) for a in range(nd)]
    lo = [_ft.floor(x) for x in xs]
    wy, wx = _cubic_weights(xs[0] - lo[0]), _cubic_weights(xs[1] - lo[1])
    result = None
    for i in range(4):
        yi = _pad(lo[0] - 1 + i, sizes[0], padding_mode, align_corners)
        row = None
        for j in range(4):
            xj = _pad(lo[1] - 1 + j, sizes[1], padding_mode, align_corners)
            term = read([yi, xj]) * wx[j].unsqueeze(1)
            row = term if row is None else row + term
        term = row * wy[i].unsqueeze(1)
        result = term if result is None else result + term
    return result


_MODES = {0: "bilinear", 1: "nearest", 2: "bicubic"}
_PADDINGS = {0: "zeros", 1: "border", 2: "reflection"}


def grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):
    """``torch.grid_sampler``: ``grid_sample`` with torch's integer codes
    (mode 0 bilinear, 1 nearest, 2 bicubic; padding 0 zeros, 1 border, 2
    reflection)."""
    return grid_sample(input, grid, _MODES[interpolation_mode], _PADDINGS[padding_mode],
                       align_corners)


grid_sampler_2d = grid_sampler
grid_sampler_3d = grid_sampler


# --- unpooling ------------------------------------------------------------

def _tuple(v, n):
    return tuple(v) if isinstance(v, (list, tuple)) else (v,) * n


def _max_unpool(input, indices, kernel_size, stride, padding, output_size, nd):
    k = _tuple(kernel_size, nd)
    s = _tuple(stride if stride is not None else kernel_size, nd)
    p = _tuple(padding, nd)
    spatial = list(input.shape[-nd:])
    default = [(spatial[i] - 1) * s[i] - 2 * p[i] + k[i] for i in range(nd)]
    if output_size is not None:
        out = list(output_size)[-nd:]
        for i in range(nd):
            lo, hi = default[i] - s[i], default[i] + s[i]
            if not (lo < out[i] < hi):
                raise ValueError(
                    f"invalid output_size {list(output_size)} (dim {i} must be between {lo} and {hi})")
    else:
        out = default
    lead = list(input.shape[:-nd])
    size = 1
    for o in out:
        size *= o
    flat_in = input.reshape(*lead, -1)
    flat_idx = indices.reshape(*lead, -1)
    if flat_idx.numel() and (flat_idx.min().item() < 0 or flat_idx.max().item() >= size):
        raise RuntimeError(f"Found an invalid max index: {flat_idx.max().item()} (output volumes are of size {size})")
    zeros = _ft.zeros(*lead, size, dtype=input.dtype)
    return zeros.scatter(-1, flat_idx, flat_in).reshape(*lead, *out)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """``F.max_unpool1d``: ``max_pool1d`` undone, zeros elsewhere."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 1)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """``F.max_unpool2d``: each value put back at its ``max_pool2d`` index."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 2)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """``F.max_unpool3d``."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 3)


# --- embedding bags -------------------------------------------------------

def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False,
                  mode="mean", sparse=False, per_sample_weights=None, include_last_offset=False,
                  padding_idx=None):
    """``F.embedding_bag``: sums, means or maxima of bags of embeddings,
    bags given by the rows of a 2-D ``input`` or by ``offsets`` into a 1-D
    one; ``padding_idx`` entries are left out of every bag."""
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"mode has to be one of sum, mean or max, got {mode}")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(
            f"embedding_bag: per_sample_weights was not None. per_sample_weights is only supported for mode='sum' (got mode='{mode}'). Please open a feature request on GitHub.")
    if max_norm is not None:
        from .functional import _embedding_renorm_
        _embedding_renorm_(weight, input, max_norm, norm_type)
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch of fixed length sequences.")
        b, length = input.shape
        offsets = _ft.arange(0, b * length, length) if length else _ft.zeros(b, dtype=_ft.int64)
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}")
    offs = [int(o) for o in offsets.tolist()]
    n = input.shape[0]
    if include_last_offset:
        bounds = list(zip(offs[:-1], offs[1:]))
    else:
        bounds = list(zip(offs, offs[1:] + [n]))
    bag = _ft.zeros(n, dtype=_ft.int64)
    for i, (lo, hi) in enumerate(bounds):
        if lo < 0 or hi > n or lo > hi:
            raise RuntimeError(f"embedding_bag: offsets {offs} do not index the {n} inputs")
        bag[lo:hi] = i
    keep = _ft.ones(n, dtype=_ft.bool) if padding_idx is None else input != (padding_idx % weight.shape[0])
    rows = weight.index_select(0, input)
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.unsqueeze(1)
    rows = rows * keep.unsqueeze(1).to(rows.dtype)
    nb, dim = len(bounds), weight.shape[1]
    if mode == "max":
        fill = _ft.full((n, dim), float("-inf"), dtype=rows.dtype)
        rows = _ft.where(keep.unsqueeze(1), rows, fill)
        out = _ft.full((nb, dim), float("-inf"), dtype=rows.dtype).scatter_reduce(
            0, bag.unsqueeze(1).expand(n, dim), rows, "amax", include_self=True)
        # empty bags give zeros
        return _ft.where(out == float("-inf"), _ft.zeros_like(out), out)
    out = _ft.zeros(nb, dim, dtype=rows.dtype).index_add(0, bag, rows)
    if mode == "mean":
        counts = _ft.zeros(nb, dtype=rows.dtype).index_add(0, bag, keep.to(rows.dtype))
        out = out / counts.clamp(min=1).unsqueeze(1)
    return out

"""``nn.init``: in-place initialisers with torch's formulas and defaults.
They draw from the default generator (``ferrotorch.manual_seed``)."""

import math

from .. import _C
from ..autograd.grad_mode import no_grad


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for ``nonlinearity``."""
    linear = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
              "conv_transpose2d", "conv_transpose3d"]
    if nonlinearity in linear or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor):
    dimensions = tensor.dim()
    if dimensions < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    num_input_fmaps = tensor.size(1)
    num_output_fmaps = tensor.size(0)
    receptive = 1
    for s in tuple(tensor.shape)[2:]:
        receptive *= s
    return num_input_fmaps * receptive, num_output_fmaps * receptive


def _fan(tensor, mode):
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    """Fill with U(a, b)."""
    with no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    """Fill with N(mean, std²)."""
    with no_grad():
        return tensor.normal_(mean, std, generator=generator)


def constant_(tensor, val):
    """Fill with ``val``."""
    with no_grad():
        return tensor.fill_(val)


def ones_(tensor):
    """Fill with 1."""
    return constant_(tensor, 1.0)


def zeros_(tensor):
    """Fill with 0."""
    return constant_(tensor, 0.0)


def xavier_uniform_(tensor, gain=1.0, generator=None):
    """Glorot uniform: U(-a, a), a = gain·sqrt(6 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    a = math.sqrt(3.0) * std
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    """Glorot normal: N(0, gain²·2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """He uniform: U(-b, b), b = gain·sqrt(3 / fan)."""
    if 0 in tuple(tensor.shape):
        return tensor
    fan = _fan(tensor, mode)
    gain = calculate_gain(nonlinearity, a)
    bound = math.sqrt(3.0) * gain / math.sqrt(fan)
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """He normal: N(0, gain² / fan)."""
    if 0 in tuple(tensor.shape):
        return tensor
    fan = _fan(tensor, mode)
    gain = calculate_gain(nonlinearity, a)
    return normal_(tensor, 0.0, gain / math.sqrt(fan), generator)


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """N(mean, std²) truncated to [a, b], by rejection as torch 2.15 draws
    it: normal draws redrawn outside [a, b] when the interval holds more
    than 30 % of the mass, else uniform proposals on [a, b] accepted with
    the density's ratio to its peak (so the same draws from the same seed)."""
    import ferrotorch as ft

    def norm_cdf(x):
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    if (mean < a - 2 * std) or (mean > b + 2 * std):
        import warnings

        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The distribution of values may "
                      "be incorrect.", stacklevel=2)
    with no_grad():
        p = norm_cdf((b - mean) / std) - norm_cdf((a - mean) / std)
        if p > 0.3:
            # the bounds as the tensor's dtype holds them
            lo = tensor.new_tensor(a).item()
            hi = tensor.new_tensor(b).item()
            result = tensor.normal_(mean, std, generator=generator)
            while True:
                outside = (result < lo) | (result > hi)
                if not outside.any():
                    break
                result = ft.where(outside, ft.empty_like(result).normal_(mean, std, generator=generator), result)
            if result is not tensor:
                tensor.copy_(result)
            return tensor
        mode = max(a, min(mean, b))
        log_peak = -0.5 * ((mode - mean) / std) ** 2

        def log_ratio(x):
            return x.sub(mean).div_(std).pow_(2).mul_(-0.5).sub_(log_peak)

        tensor.uniform_(a, b, generator=generator)
        cand = log_ratio(tensor)
        pending = ft.empty_like(tensor).uniform_(generator=generator).log_().gt(cand)
        result = tensor
        while pending.any():
            proposals = ft.empty_like(tensor).uniform_(a, b, generator=generator)
            result = ft.where(pending, proposals, result)
            again = ft.empty_like(tensor).uniform_(generator=generator).log_().gt(log_ratio(proposals))
            pending = ft.where(pending, again, pending)
        if result is not tensor:
            tensor.copy_(result)
    return tensor


def orthogonal_(tensor, gain=1, generator=None):
    """A (semi-)orthogonal matrix from the QR of a Gaussian one, its signs
    fixed by R's diagonal, times ``gain``."""
    import ferrotorch as ft

    if tensor.dim() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.size(0)
    cols = tensor.numel() // rows
    flat = tensor.new_empty((rows, cols)).normal_(0, 1, generator=generator)
    if rows < cols:
        flat = flat.t()
    q, r = ft.linalg.qr(flat)
    q = q * ft.diag(r, 0).sign()
    if rows < cols:
        q = q.t()
    with no_grad():
        tensor.view_as(q).copy_(q)
        tensor.mul_(gain)
    return tensor


def dirac_(tensor, groups=1):
    """The identity of a convolution: a 1 at the centre of each (in, out)
    channel pair, per group."""
    dims = tensor.dim()
    if dims not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tensor.shape
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    per = sizes[0] // groups
    with no_grad():
        tensor.zero_()
        centre = tuple(s // 2 for s in sizes[2:])
        for g in range(groups):
            for d in range(min(per, sizes[1])):
                tensor[(g * per + d, d) + centre] = 1
    return tensor


def eye_(tensor):
    """The identity matrix (2-D tensors)."""
    import ferrotorch as ft

    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    with no_grad():
        tensor.copy_(ft.eye(tensor.shape[0], tensor.shape[1], dtype=tensor.dtype))
    return tensor


def sparse_(tensor, sparsity, std=0.01, generator=None):
    """N(0, std²) with a ``sparsity`` fraction of each column zeroed (rows
    chosen by ``randperm``, as torch's)."""
    import ferrotorch as ft

    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    num_zeros = int(math.ceil(sparsity * rows))
    with no_grad():
        tensor.normal_(0, std, generator=generator)
        for c in range(cols):
            zero = ft.randperm(rows)[:num_zeros]
            tensor[zero, c] = 0
    return tensor


def _deprecated(fn):
    name = fn.__name__[:-1]

    def f(*args, **kwargs):
        import warnings

        warnings.warn(f"`nn.init.{name}` is now deprecated in favor of `nn.init.{fn.__name__}`.", FutureWarning,
                      stacklevel=2)
        return fn(*args, **kwargs)

    f.__name__ = name
    f.__doc__ = f"Deprecated: ``{fn.__name__}``."
    return f


uniform = _deprecated(uniform_)
normal = _deprecated(normal_)
constant = _deprecated(constant_)
eye = _deprecated(eye_)
dirac = _deprecated(dirac_)
xavier_uniform = _deprecated(xavier_uniform_)
xavier_normal = _deprecated(xavier_normal_)
kaiming_uniform = _deprecated(kaiming_uniform_)
kaiming_normal = _deprecated(kaiming_normal_)
orthogonal = _deprecated(orthogonal_)
sparse = _deprecated(sparse_)

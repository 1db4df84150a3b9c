"""The rest of torch's ``nn.functional`` names, as torch writes them: the
in-place activations (``relu_``, ``elu_``, ...), the ``*_with_indices``
pools, ``lp_pool1d/2d/3d``, ``gumbel_softmax``, ``conv_tbc`` and
``linear_cross_entropy``. Re-exported by ``functional``."""

import ferrotorch as _ft


def _fn(name):
    from . import functional

    return getattr(functional, name)


def relu_(input):
    return _fn("relu")(input, inplace=True)


def elu_(input, alpha=1.0):
    return _fn("elu")(input, alpha, inplace=True)


def celu_(input, alpha=1.0):
    return _fn("celu")(input, alpha, inplace=True)


def selu_(input):
    return _fn("selu")(input, inplace=True)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return _fn("hardtanh")(input, min_val, max_val, inplace=True)


def leaky_relu_(input, negative_slope=0.01):
    return _fn("leaky_relu")(input, negative_slope, inplace=True)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    return _fn("rrelu")(input, lower, upper, training, inplace=True)


def threshold_(input, threshold, value):
    return _fn("threshold")(input, threshold, value, inplace=True)


def _with_indices(name):
    def f(input, *args, return_indices=False, **kwargs):
        return _fn(name)(input, *args, return_indices=True, **kwargs)

    f.__name__ = f"{name}_with_indices"
    f.__doc__ = f"``{name}(..., return_indices=True)``: ``(values, indices)``."
    return f


max_pool1d_with_indices = _with_indices("max_pool1d")
max_pool2d_with_indices = _with_indices("max_pool2d")
max_pool3d_with_indices = _with_indices("max_pool3d")
adaptive_max_pool1d_with_indices = _with_indices("adaptive_max_pool1d")
adaptive_max_pool2d_with_indices = _with_indices("adaptive_max_pool2d")
adaptive_max_pool3d_with_indices = _with_indices("adaptive_max_pool3d")


def _lp_pool(nd, input, norm_type, kernel_size, stride, ceil_mode):
    k = tuple(kernel_size) if isinstance(kernel_size, (list, tuple)) else (kernel_size,) * nd
    pool = _fn(f"avg_pool{nd}d")
    if stride is not None:
        out = pool(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    else:
        out = pool(input.pow(norm_type), kernel_size, padding=0, ceil_mode=ceil_mode)
    n = 1
    for v in k:
        n *= v
    return (_ft.sign(out) * _fn("relu")(_ft.abs(out))).mul(n).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Power-average pooling: ``(sum over the window of x^p)^(1/p)``."""
    return _lp_pool(1, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Power-average pooling over ``(N, C, H, W)``."""
    return _lp_pool(2, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Power-average pooling over ``(N, C, D, H, W)``."""
    return _lp_pool(3, input, norm_type, kernel_size, stride, ceil_mode)


def gumbel_softmax(logits, tau=1, hard=False, eps=1e-10, dim=-1):
    """Samples of the Gumbel-softmax distribution; ``hard=True`` returns
    one-hot samples whose gradient is the soft sample's (straight-through)."""
    gumbels = -_ft.empty_like(logits).exponential_().log()
    y_soft = ((logits + gumbels) / tau).softmax(dim)
    if not hard:
        return y_soft
    index = y_soft.max(dim, keepdim=True)[1]
    y_hard = _ft.zeros_like(logits).scatter_(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


def conv_tbc(input, weight, bias, pad=0):
    """1-D convolution over ``(time, batch, channels)`` input with a
    ``(kernel, in, out)`` weight."""
    if input.dim() != 3 or weight.dim() != 3 or bias.dim() != 1:
        raise RuntimeError("conv_tbc: input must be 3-D (T, B, C), weight 3-D (K, C_in, C_out) "
                           f"and bias 1-D; got {list(input.shape)}, {list(weight.shape)}, "
                           f"{list(bias.shape)}")
    if input.shape[2] != weight.shape[1]:
        raise RuntimeError("Input dim 2 (input channels) is not == dim 1 in the weight tensor")
    out = _fn("conv1d")(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, padding=pad)
    return out.permute(2, 0, 1)


def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None,
                         reduction="mean", ignore_index=None, label_smoothing=0.0, options=None):
    """``cross_entropy(linear(input, linear_weight, linear_bias), target, ...)``;
    a ``(C, d1, ..., in)`` weight gives K-dimensional logits ``(N, C, d1, ...)``.
    The chunked ``options`` change only memory use, so they are accepted and
    the loss computed at once."""
    if input.dim() not in (1, 2):
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.dim()}")
    if linear_weight.dim() < 2:
        raise RuntimeError(
            f"expected linear_weight with dimensionality at least 2, got {linear_weight.dim()}")
    in_features = input.shape[-1]
    if in_features != linear_weight.shape[-1]:
        raise RuntimeError(
            "expected equal input and linear_weight last dimensions (in_features), "
            f"got {in_features} and {linear_weight.shape[-1]}, respectively")
    classes, out_features = linear_weight.shape[0], tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (classes, *out_features):
        raise RuntimeError(f"expected linear_bias shape {(classes, *out_features)}, "
                           f"got {tuple(linear_bias.shape)}")
    if out_features and input.dim() == 1:
        raise RuntimeError(
            f"K-dimensional loss defined by linear_weight shape {tuple(linear_weight.shape)} "
            f"requires batched input, (N, {in_features}), got unbatched input with shape "
            f"{tuple(input.shape)}")
    logits_shape = (*input.shape[:-1], classes, *out_features)
    if tuple(target.shape) == logits_shape and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains probabilities")
    if out_features:
        n = classes
        for v in out_features:
            n *= v
        linear_weight = linear_weight.reshape(n, in_features)
        if linear_bias is not None:
            linear_bias = linear_bias.reshape(n)
    logits = _fn("linear")(input, linear_weight, linear_bias).reshape(logits_shape)
    return _fn("cross_entropy")(logits, target, weight,
                                ignore_index=-100 if ignore_index is None else ignore_index,
                                reduction=reduction, label_smoothing=label_smoothing)

"""The rest of ``nn.functional``, written as torch writes them (compositions
of ops, so every one records a graph and has gradients): shrinkage
activations, pixel and channel shuffles, distances, the margin, embedding
and NLL-family losses, instance and local response norm, the 1-D pools and
transposed convolution (through their 2-D kernels), and ``interpolate``.
Re-exported by ``functional``."""

import math

from .. import _C

_call = _C._call_op


from .functional import _reduce  # noqa: E402  (defined before functional imports this module)
from .functional import _fp32_under_autocast  # noqa: E402


def _where(c, a, b):
    return _call("where", (c, a, b))


# --- activations ---------------------------------------------------------

def hardshrink(input, lambd=0.5):
    # as torch's vector loops: a NaN stays NaN and takes no gradient
    return _where(input.abs() > lambd, input, (input * 0.0).detach())


def softshrink(input, lambd=0.5):
    if lambd < 0:
        raise RuntimeError(f"lambda must be greater or equal to 0, but found to be {lambd}.")
    # torch's middle branch is x * 0 (a NaN stays NaN) with no gradient
    middle = (input * 0.0).detach()
    return _where(input > lambd, input - lambd, _where(input < -lambd, input + lambd, middle))


def tanhshrink(input):
    return input - input.tanh()


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    if not training:
        out = _call("leaky_relu", (input, (lower + upper) / 2))
    else:
        from .. import rand

        a = rand(tuple(input.shape), dtype=input.dtype) * (upper - lower) + lower
        out = _where(input >= 0, input, input * a)
    if inplace:
        input.copy_(out)
        return input
    return out


# --- shuffles ------------------------------------------------------------

def pixel_shuffle(input, upscale_factor):
    r = upscale_factor
    *lead, c, h, w = input.shape
    if c % (r * r) != 0:
        raise RuntimeError(
            f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square "
            f"of upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    oc = c // (r * r)
    n = len(lead)
    x = input.reshape(*lead, oc, r, r, h, w)
    x = x.permute(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return x.reshape(*lead, oc, h * r, w * r)


def pixel_unshuffle(input, downscale_factor):
    r = downscale_factor
    *lead, c, h, w = input.shape
    if h % r != 0 or w % r != 0:
        raise RuntimeError(
            f"pixel_unshuffle expects height and width to be divisible by downscale_factor, "
            f"but got {h} and {w} with downscale_factor={r}")
    n = len(lead)
    x = input.reshape(*lead, c, h // r, r, w // r, r)
    x = x.permute(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    return x.reshape(*lead, c * r * r, h // r, w // r)


def channel_shuffle(input, groups):
    n, c, *rest = input.shape
    if groups <= 0 or c % groups != 0:
        raise RuntimeError(
            f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups.")
    x = input.reshape(n, groups, c // groups, *rest).transpose(1, 2)
    return x.reshape(n, c, *rest)


native_channel_shuffle = channel_shuffle


# --- distances -----------------------------------------------------------

def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    x1, x2 = _call("broadcast_tensors", ([x1, x2],))
    n1 = x1.norm(2, [dim], True).clamp_min(eps)
    n2 = x2.norm(2, [dim], True).clamp_min(eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    d = x1 - x2 + eps
    dim = max(x1.dim(), x2.dim()) - 1
    if dim < 0:
        return d.abs() if not keepdim else d.abs()
    return d.norm(p, [dim], keepdim)


def pdist(input, p=2):
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    n = input.size(0)
    from .. import triu_indices

    i, j = triu_indices(n, n, 1).unbind(0)
    return (input.index_select(0, i) - input.index_select(0, j)).norm(p, [1], False)


# --- losses --------------------------------------------------------------

@_fp32_under_autocast
def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                        reduction="mean"):
    return _reduce((-target * (input1 - input2) + margin).clamp_min(0), reduction)


@_fp32_under_autocast
def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,
                         reduction="mean"):
    out_margin = _where(target != 1, (margin - input).clamp_min(0), 0.0)
    out_self = _where(target != -1, input, 0.0)
    return _reduce(out_margin + out_self, reduction)


@_fp32_under_autocast
def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    return _reduce((-target * input).exp().log1p(), reduction)


@_fp32_under_autocast
def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction="mean"):
    from .functional import logsigmoid

    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.dim() - 1
    loss = loss.sum(class_dim) / input.size(class_dim)
    return _reduce(loss, reduction)


@_fp32_under_autocast
def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                          reduction="mean"):
    d = input1.dim() - 1
    eps = 1e-12
    prod = (input1 * input2).sum(d)
    m1 = (input1 * input1).sum(d) + eps
    m2 = (input2 * input2).sum(d) + eps
    cos = prod / (m1 * m2).sqrt()
    pos = _where(target == 1, 1 - cos, 0.0)
    neg = _where(target == -1, (cos - margin).clamp_min(0), 0.0)
    return _reduce(pos + neg, reduction)


@_fp32_under_autocast
def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,
                     reduce=None, reduction="mean"):
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        stirling = target * target.log() - target + 0.5 * (2 * math.pi * target).log()
        loss = loss + _where(target > 1, stirling, 0.0)
    return _reduce(loss, reduction)


@_fp32_under_autocast
def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    if isinstance(var, (int, float)):
        from .. import full as _full

        var = _full(tuple(input.shape), float(var), dtype=input.dtype)
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif not (tuple(input.shape[:-1]) == tuple(var.shape[:-1]) and var.size(-1) == 1):
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    if (var < 0).any():
        raise ValueError("var has negative entry/entries")
    # clamped for stability without changing the gradient (torch clamps in place under no_grad)
    var = var + (var.clamp_min(eps) - var).detach()
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


@_fp32_under_autocast
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    d_ap = pairwise_distance(anchor, positive, p, eps)
    d_an = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_an = _call("minimum", (d_an, pairwise_distance(positive, negative, p, eps)))
    return _reduce((margin + d_ap - d_an).clamp_min(0), reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None,
                                      margin=1.0, swap=False, reduction="mean"):
    dist = distance_function or pairwise_distance
    d_ap, d_an = dist(anchor, positive), dist(anchor, negative)
    if swap:
        d_an = _call("minimum", (d_an, dist(positive, negative)))
    return _reduce((margin + d_ap - d_an).clamp_min(0), reduction)


@_fp32_under_autocast
def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None,
                      reduce=None, reduction="mean"):
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    unbatched = input.dim() <= 1
    x = input.reshape(1, -1) if unbatched else input
    t = target.reshape(-1)
    c = x.size(1)
    xy = x.gather(1, t.unsqueeze(1))
    z = (margin - xy + x).clamp_min(0)
    if p == 2:
        z = z * z
    if weight is not None:
        z = z * weight.index_select(0, t).unsqueeze(1)
    from .functional import one_hot

    z = z.masked_fill(one_hot(t, c) > 0, 0.0)
    loss = z.sum(1) / c
    if unbatched:
        loss = loss.reshape(())
    return _reduce(loss, reduction)


@_fp32_under_autocast
def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    unbatched = input.dim() <= 1
    x = input.reshape(1, -1) if unbatched else input
    t = target.reshape(x.shape)
    c = x.size(1)
    # targets are the class indices before the first -1 of each row
    from .. import tensor, float32

    rows = t.tolist()
    is_target = []
    listed = []
    for row in rows:
        mark, lst = [0.0] * c, [0.0] * c
        for k in row:
            if k < 0:
                break
            mark[k] = 1.0
            lst[k] += 1.0  # a class listed twice counts twice, as torch
        is_target.append(mark)
        listed.append(lst)
    is_t = tensor(is_target, dtype=float32).to(x.dtype)
    times = tensor(listed, dtype=float32).to(x.dtype)
    # sum over j in targets, i not in targets of max(0, 1 - (x_j - x_i))
    pair = (1 - (x.unsqueeze(2) - x.unsqueeze(1))).clamp_min(0)
    mask = times.unsqueeze(2) * (1 - is_t).unsqueeze(1)
    loss = (pair * mask).sum((1, 2)) / c
    if unbatched:
        loss = loss.reshape(())
    return _reduce(loss, reduction)


# --- normalization -------------------------------------------------------

def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    dims = list(range(2, input.dim()))
    shape = [1, -1] + [1] * len(dims)
    if use_input_stats:
        mean = input.mean(dims, keepdim=True)
        var = input.var(dims, unbiased=False, keepdim=True)
        if running_mean is not None:
            from ..autograd import no_grad

            with no_grad():
                n = 1
                for d in dims:
                    n *= input.size(d)
                m = mean.detach().reshape(input.size(0), -1).mean(0)
                v = var.detach().reshape(input.size(0), -1).mean(0) * (n / max(n - 1, 1))
                running_mean.mul_(1 - momentum).add_(m * momentum)
                running_var.mul_(1 - momentum).add_(v * momentum)
    else:
        mean = running_mean.reshape(shape)
        var = running_var.reshape(shape)
    out = (input - mean) / (var + eps).sqrt()
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    if input.dim() < 3:
        raise ValueError(
            f"Expected 3D or higher dimensionality input (got {input.dim()} dimensions)")
    if input.numel() == 0:
        return input
    from .functional import avg_pool2d, pad

    n, c = input.size(0), input.size(1)
    div = (input * input).reshape(n, 1, c, -1)
    div = pad(div, (0, 0, size // 2, (size - 1) // 2))
    div = avg_pool2d(div, (size, 1), stride=1).reshape(input.shape)
    return input / (div * alpha + k) ** beta


# --- 1-D pools and transposed convolution through the 2-D kernels ---------

def _one(v):
    return v[0] if isinstance(v, (tuple, list)) else v


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    from .functional import avg_pool2d

    k = _one(kernel_size)
    s = k if stride is None or stride == [] or stride == () else _one(stride)
    out = avg_pool2d(input.unsqueeze(-2), (1, k), (1, s), (0, _one(padding)), ceil_mode,
                     count_include_pad)
    return out.squeeze(-2)


def adaptive_avg_pool1d(input, output_size):
    from .functional import adaptive_avg_pool2d

    return adaptive_avg_pool2d(input.unsqueeze(-2), (1, _one(output_size))).squeeze(-2)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    from .functional import adaptive_max_pool2d

    out, idx = adaptive_max_pool2d(input.unsqueeze(-2), (1, _one(output_size)), True)
    out, idx = out.squeeze(-2), idx.squeeze(-2)
    return (out, idx) if return_indices else out


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    from .functional import conv_transpose2d

    out = conv_transpose2d(input.unsqueeze(-2), weight.unsqueeze(-2), bias, (1, _one(stride)),
                           (0, _one(padding)), (0, _one(output_padding)), groups,
                           (1, _one(dilation)))
    return out.squeeze(-2)


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Channel-wise dropout of ``(N, C, D, H, W)`` or unbatched ``(C, D, H,
    W)`` input; other ranks warn and proceed, as torch's."""
    import warnings

    from .functional import _unbatched_feature_dropout

    dim = input.dim()
    if dim not in (4, 5):
        warnings.warn(f"dropout3d: Received a {dim}-D input to dropout3d, which is deprecated and will result in an "
                      "error in a future release. To retain the behavior and silence this warning, please use "
                      "dropout instead. Note that dropout3d exists to provide channel-wise dropout on inputs with 3 "
                      "spatial dimensions, a channel dimension, and an optional batch dimension (i.e. 4D or 5D "
                      "inputs).", stacklevel=2)
    return _unbatched_feature_dropout(input, p, training, inplace, dim == 5)


# --- interpolate ---------------------------------------------------------

def _out_size(input, size, scale_factor):
    sp = input.dim() - 2
    if size is not None:
        return [size] * sp if isinstance(size, int) else list(size)
    if scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    sf = [scale_factor] * sp if isinstance(scale_factor, (int, float)) else list(scale_factor)
    return [int(math.floor(input.size(i + 2) * f)) for i, f in enumerate(sf)]


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """``F.interpolate``: ``nearest`` and ``nearest-exact`` (1 to 3
    spatial dims), ``linear`` (3-D), ``bilinear`` (4-D), ``trilinear``
    (5-D), ``bicubic`` (4-D), ``area`` (adaptive average pooling), and
    ``antialias=True`` for ``bilinear``/``bicubic``
    (``_functional_resample``)."""
    if mode in ("nearest", "nearest-exact", "area") and align_corners is not None:
        raise ValueError("align_corners option can only be set with the interpolating modes: "
                         "linear | bilinear | bicubic | trilinear")
    out = _out_size(input, size, scale_factor)
    sp = input.dim() - 2
    if scale_factor is not None and not recompute_scale_factor:
        sc = [float(scale_factor)] * sp if isinstance(scale_factor, (int, float)) else [float(f) for f in scale_factor]
    else:
        sc = [None] * sp
    if antialias and (mode not in ("bilinear", "bicubic") or input.dim() != 4):
        raise ValueError("Anti-alias option is restricted to bilinear and bicubic modes and "
                         "requires a 4-D tensor as input")
    if mode == "bicubic" or antialias:
        from ._functional_resample import resample

        if input.dim() != 4:
            raise NotImplementedError(f"Got {input.dim()}D input, but bicubic mode needs 4D input")
        return resample(input, out, sc, mode, bool(align_corners), antialias)
    if mode in ("nearest", "nearest-exact"):
        op2, op3 = (("upsample_nearest2d", "upsample_nearest3d") if mode == "nearest"
                    else ("_upsample_nearest_exact2d", "_upsample_nearest_exact3d"))
        if input.dim() == 3:
            return _call(op2, (input.unsqueeze(2), [1, out[0]], None, sc[0])).squeeze(2)
        if input.dim() == 4:
            return _call(op2, (input, out, sc[0], sc[1]))
        if input.dim() == 5:
            return _call(op3, (input, out, sc[0], sc[1], sc[2]))
        raise ValueError(f"interpolate: expected a 3-D, 4-D or 5-D input, got {input.dim()}-D")
    if mode == "area":
        if input.dim() == 3:
            return adaptive_avg_pool1d(input, out)
        from .functional import adaptive_avg_pool2d

        return adaptive_avg_pool2d(input, out)
    ac = bool(align_corners)
    if mode == "linear" and input.dim() == 3:
        y = _call("upsample_bilinear2d", (input.unsqueeze(2), [1, out[0]], ac, None, sc[0]))
        return y.squeeze(2)
    if mode == "bilinear" and input.dim() == 4:
        return _call("upsample_bilinear2d", (input, out, ac, sc[0], sc[1]))
    if mode == "trilinear" and input.dim() == 5:
        return _call("upsample_trilinear3d", (input, out, ac, sc[0], sc[1], sc[2]))
    raise NotImplementedError(
        f"interpolate: mode '{mode}' for {input.dim()}-D input is not implemented")


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# --- im2col --------------------------------------------------------------

def _pair(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """``F.unfold`` (im2col): ``[N, C, H, W]`` to ``[N, C·kh·kw, L]``, one
    column per sliding block."""
    if input.dim() not in (3, 4):
        raise RuntimeError(f"Input Error: Only 3D or 4D input Tensors are supported (got {input.dim()}D)")
    batched = input.dim() == 4
    x = input if batched else input.unsqueeze(0)
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = map(_pair, (kernel_size, dilation, padding, stride))
    from .functional import pad
    from .. import stack

    x = pad(x, (pw, pw, ph, ph)) if (ph or pw) else x
    n, c, h, w = x.shape
    oh = (h - dh * (kh - 1) - 1) // sh + 1
    ow = (w - dw * (kw - 1) - 1) // sw + 1
    if oh <= 0 or ow <= 0:
        raise RuntimeError(
            f"Given input with spatial size ({h - 2 * ph}, {w - 2 * pw}), kernel_size=({kh}, {kw}), "
            f"dilation=({dh}, {dw}), padding=({ph}, {pw}), calculated shape of the array of sliding "
            f"blocks as ({oh}, {ow}), but its components must be at least one.")
    blocks = []
    for i in range(kh):
        for j in range(kw):
            r0, c0 = i * dh, j * dw
            blocks.append(x[:, :, r0:r0 + sh * (oh - 1) + 1:sh, c0:c0 + sw * (ow - 1) + 1:sw])
    out = stack(blocks, 2).reshape(n, c * kh * kw, oh * ow)
    return out if batched else out.squeeze(0)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """``F.fold`` (col2im), the adjoint of ``unfold``: overlapping blocks are summed."""
    if input.dim() not in (2, 3):
        raise RuntimeError(f"Input Error: Only unbatched (2D) or batched (3D) input Tensors are supported (got {input.dim()}D)")
    batched = input.dim() == 3
    x = input if batched else input.unsqueeze(0)
    (H, W), (kh, kw), (dh, dw), (ph, pw), (sh, sw) = map(
        _pair, (output_size, kernel_size, dilation, padding, stride))
    n, ckk, length = x.shape
    if ckk % (kh * kw) != 0:
        raise RuntimeError(
            f"Expected size of input's dimension 1 to be divisible by the product of kernel_size, "
            f"but got input.size(1)={ckk} and kernel_size=({kh}, {kw})")
    c = ckk // (kh * kw)
    hp, wp = H + 2 * ph, W + 2 * pw
    oh = (hp - dh * (kh - 1) - 1) // sh + 1
    ow = (wp - dw * (kw - 1) - 1) // sw + 1
    if oh * ow != length:
        raise RuntimeError(
            f"Given output_size=({H}, {W}), kernel_size=({kh}, {kw}), dilation=({dh}, {dw}), "
            f"padding=({ph}, {pw}), stride=({sh}, {sw}), expected size of input's dimension 2 to "
            f"match the calculated number of sliding blocks {oh} * {ow} = {oh * ow}, but got "
            f"input.size(2)={length}.")
    from .. import zeros

    cols = x.reshape(n, c, kh * kw, oh, ow)
    acc = zeros((n, c, hp, wp), dtype=x.dtype)
    for i in range(kh):
        for j in range(kw):
            r0, c0 = i * dh, j * dw
            block = cols[:, :, i * kw + j]
            row = zeros((n, c, oh, wp), dtype=x.dtype).slice_scatter(
                block, 3, c0, c0 + sw * (ow - 1) + 1, sw)
            acc = acc + zeros((n, c, hp, wp), dtype=x.dtype).slice_scatter(
                row, 2, r0, r0 + sh * (oh - 1) + 1, sh)
    out = acc[:, :, ph:ph + H, pw:pw + W]
    return out if batched else out.squeeze(0)

"""``nn.functional``: the stateless layer functions. Each is a thin call
into a native kernel (or a short composition of them)."""

import math

from .. import _C

_call = _C._call_op


def _inplace(x, out, inplace):
    if inplace:
        x.copy_(out)
        return x
    return out


def _act(name, input, args, inplace):
    """Activation op ``name`` of ``input`` and ``args``; with ``inplace``
    its result overwrites ``input``. Its autograd node saves its input, so
    where autograd records the op it reads a copy: the overwrite would
    otherwise invalidate what backward reads (as PyTorch's in-place
    kernels save their result instead)."""
    if not inplace:
        return _call(name, (input,) + args)
    src = input.clone() if input.requires_grad and _C.is_grad_enabled() else input
    input.copy_(_call(name, (src,) + args))
    return input


def relu(input, inplace=False):
    if inplace:
        return input.relu_()  # one aten::relu_ in traces, as torch
    return _call("relu", (input,))


def relu6(input, inplace=False):
    return _act("relu6", input, (), inplace)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    return _act("hardtanh", input, (min_val, max_val), inplace)


def elu(input, alpha=1.0, inplace=False):
    return _act("elu", input, (alpha,), inplace)


def selu(input, inplace=False):
    return _act("selu", input, (), inplace)


def celu(input, alpha=1.0, inplace=False):
    return _act("celu", input, (alpha,), inplace)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    return _act("leaky_relu", input, (negative_slope,), inplace)


def gelu(input, approximate="none"):
    return _call("gelu", (input,), {"approximate": approximate})


def silu(input, inplace=False):
    return _act("silu", input, (), inplace)


def mish(input, inplace=False):
    return _act("mish", input, (), inplace)


def softplus(input, beta=1.0, threshold=20.0):
    return _call("softplus", (input, beta, threshold))


def tanh(input):
    return input.tanh()


def sigmoid(input):
    return input.sigmoid()


def logsigmoid(input):
    return _call("log_sigmoid", (input,))


def hardsigmoid(input, inplace=False):
    return _act("hardsigmoid", input, (), inplace)


def hardswish(input, inplace=False):
    return _act("hardswish", input, (), inplace)


def softsign(input):
    return _call("softsign", (input,))


def glu(input, dim=-1):
    return _call("glu", (input, dim))


def prelu(input, weight):
    return _call("prelu", (input, weight))


def threshold(input, threshold, value, inplace=False):
    return _act("threshold", input, (threshold, value), inplace)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    return softmax(-input, dim, _stacklevel, dtype)


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = 0 if input.dim() in (0, 1, 3) else 1
    return _call("softmax", (input, dim, dtype))


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = 0 if input.dim() in (0, 1, 3) else 1
    return _call("log_softmax", (input, dim, dtype))


def linear(input, weight, bias=None):
    """``input @ weight.T + bias`` (one ``addmm`` for 2-D input with a bias)."""
    return _call("linear", (input, weight, bias))


def bilinear(input1, input2, weight, bias=None):
    # any leading dims (none for one sample) are the batch
    lead = tuple(input1.shape[:-1])
    x1 = input1.reshape(-1, input1.size(-1))
    x2 = input2.reshape(-1, input2.size(-1))
    out = _call("einsum", ("bi,oij,bj->bo", [x1, weight, x2]))
    out = out.reshape(*lead, weight.size(0))
    return out if bias is None else out + bias


def dropout(input, p=0.5, training=True, inplace=False):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    return _inplace(input, _call("dropout", (input, p, training)), inplace)


def _embedding_renorm_(weight, input, max_norm, norm_type):
    """torch's ``embedding_renorm_``: the rows of ``weight`` that ``input``
    looks up and whose ``norm_type``-norm exceeds ``max_norm`` are scaled,
    in place and without recording, to norm ``max_norm``."""
    import ferrotorch as _ft

    with _ft.no_grad():
        idx = _ft.unique(input.reshape(-1))
        rows = weight.index_select(0, idx)
        norms = _ft.linalg.vector_norm(rows, norm_type, dim=1, keepdim=True)
        scale = _ft.where(norms > max_norm, max_norm / (norms + 1e-7), _ft.ones_like(norms))
        weight[idx] = rows * scale


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    if max_norm is not None:
        _embedding_renorm_(weight, input, max_norm, norm_type)
    if padding_idx is None:
        padding_idx = -1
    elif padding_idx < 0:
        padding_idx = weight.size(0) + padding_idx
    return _call("embedding", (weight, input, padding_idx, scale_grad_by_freq, sparse))


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    return _call("layer_norm", (input, list(normalized_shape), weight, bias, eps))


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    return _call("group_norm", (input, num_groups, weight, bias, eps))


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    if input.dim() == 1 and input.numel() == 0:
        return input.clone()  # torch passes an empty 1-D input through
    return _call("batch_norm", (input, weight, bias, running_mean, running_var, training,
                                momentum, eps, False))


def _string_padding(name, input, weight, stride, padding, dilation, nsp):
    """(input, padding) for ``padding='valid'|'same'``: 'same' pads so the
    output keeps the input's size (stride 1); an odd total goes to the
    right, as torch, by padding the input first."""
    if padding == "valid":
        return input, 0
    if padding != "same":
        raise ValueError(f"Invalid padding string '{padding}', should be one of {{'valid', 'same'}}")
    strides = [stride] * nsp if isinstance(stride, int) else list(stride)
    if any(s != 1 for s in strides):
        raise RuntimeError("padding='same' is not supported for strided convolutions")
    dil = [dilation] * nsp if isinstance(dilation, int) else list(dilation)
    ks = list(weight.shape[2:])
    total = [d * (k - 1) for d, k in zip(dil, ks)]
    sym = [t // 2 for t in total]
    extra = [t - 2 * s for t, s in zip(total, sym)]
    if any(extra):
        pads = []
        for e in reversed(extra):
            pads += [0, e]
        input = pad(input, pads)
    return input, sym


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    if isinstance(padding, str):
        input, padding = _string_padding("conv1d", input, weight, stride, padding, dilation, 1)
    return _call("conv1d", (input, weight, bias, stride, padding, dilation, groups))


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    if isinstance(padding, str):
        input, padding = _string_padding("conv2d", input, weight, stride, padding, dilation, 2)
    return _call("conv2d", (input, weight, bias, stride, padding, dilation, groups))


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    stride = [] if stride is None else stride
    if return_indices:
        return _call("max_pool2d_with_indices", (input, kernel_size, stride, padding, dilation,
                                                 ceil_mode))
    return _call("max_pool2d", (input, kernel_size, stride, padding, dilation, ceil_mode))


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    stride = [] if stride is None else stride
    return _call("avg_pool2d", (input, kernel_size, stride, padding, ceil_mode,
                                count_include_pad, divisor_override))


def _adaptive_size(input, output_size, n):
    """``output_size`` with ``None`` entries (keep that input size) filled in."""
    if isinstance(output_size, int):
        return [output_size] * n
    return [input.size(input.dim() - n + i) if s is None else s for i, s in enumerate(output_size)]


def adaptive_avg_pool2d(input, output_size):
    return _call("adaptive_avg_pool2d", (input, _adaptive_size(input, output_size, 2)))


def one_hot(tensor, num_classes=-1):
    return _call("one_hot", (tensor, num_classes))


def pad(input, pad, mode="constant", value=None):
    return _call("pad", (input, list(pad), mode, value))


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    denom = input.norm(p, dim, True).clamp(eps)
    return input / denom


# ---- losses ----

def _fp32_under_autocast(fn):
    """Run a loss written here in Python (not a dispatcher op, so the core's
    autocast key does not see it) in float32 under CPU autocast, as torch's
    autocast float32 list runs these losses (Note [Autocast at the
    dispatcher])."""
    import functools

    def up(v):
        if isinstance(v, _C.Tensor) and repr(v.dtype) in ("torch.bfloat16", "torch.float16"):
            return v.float()
        return v

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if _C._autocast_is_enabled():
            args = tuple(up(a) for a in args)
            kwargs = {k: up(v) for k, v in kwargs.items()}
        return fn(*args, **kwargs)

    return wrapper


def _reduce(loss, reduction):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _check_sizes(name, input, target):
    """torch's warning for differing sizes; both broadcast, as torch's."""
    if tuple(input.shape) != tuple(target.shape):
        import warnings

        warnings.warn(
            f"Using a target size ({target.shape}) that is different to the input size "
            f"({input.shape}). This will likely lead to incorrect results due to broadcasting. "
            "Please ensure they have the same size.", stacklevel=4)
        return _call("broadcast_tensors", ([input, target],))
    return input, target


_REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}


def _weighted(loss, weight, input, reduction, mean_by_weight):
    """torch 2.15's ``weight=`` of the regression losses: the unreduced loss
    times ``weight`` (of ``input``'s size); its mean divides by
    ``weight.sum()`` for mse/l1 and by the count for huber."""
    if weight.size() != input.size():
        raise ValueError("Weights and input must have the same size.")
    w = loss * weight
    if reduction == "mean" and mean_by_weight:
        return w.sum() / weight.sum()
    return _reduce(w, reduction)


def _regression(name, input, target, reduction, weight, extra=(), mean_by_weight=True):
    """``name``'s op (its backward is PyTorch's formula), weighted when asked."""
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    input, target = _check_sizes(name, input, target)
    if weight is None:
        return _call(name, (input, target, _REDUCTIONS[reduction]) + extra)
    loss = _call(name, (input, target, 0) + extra)
    return _weighted(loss, weight, input, reduction, mean_by_weight)


@_fp32_under_autocast
def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    return _regression("mse_loss", input, target, reduction, weight)


@_fp32_under_autocast
def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    return _regression("l1_loss", input, target, reduction, weight)


@_fp32_under_autocast
def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    # its gradient is PyTorch's clamp(d / beta, -1, 1): ±g at infinite d
    return _regression("smooth_l1_loss", input, target, reduction, None, (float(beta),))


@_fp32_under_autocast
def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    return _regression("huber_loss", input, target, reduction, weight, (float(delta),),
                       mean_by_weight=False)


@_fp32_under_autocast
def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    unbatched = input.dim() == 1
    if unbatched:
        input, target = input.unsqueeze(0), target.unsqueeze(0)
    # K-dimensional loss: reduction='none' gives the target's shape (N, d1, ...)
    out_shape = tuple(target.shape)
    if input.dim() > 2:
        # (N, C, d1, ...) -> (N*d1*..., C)
        c = input.size(1)
        input = input.movedim(1, -1).reshape(-1, c)
        target = target.reshape(-1)
    valid = target != ignore_index
    # torch checks targets inside its kernel, where a tracer does not see
    # it; here the check reads data back into Python, so while tracing it
    # is left to gather, which checks its indices too
    if not _C._jit_is_tracing():
        bad = ((target < 0) | (target >= input.size(1))) & valid
        if bad.any():
            raise IndexError(f"Target {int(target[bad][0])} is out of bounds.")
    safe = _call("where", (valid, target, 0))
    picked = -input.gather(1, safe.unsqueeze(1)).squeeze(1)
    w = valid.to(input.dtype)
    if weight is not None:
        w = w * weight.index_select(0, safe)
    loss = picked * w
    if reduction == "mean":
        return loss.sum() / w.sum()
    if unbatched and reduction == "none":
        return loss.squeeze(0)  # one unbatched sample: a 0-d loss, as torch
    if reduction == "none":
        return loss.reshape(out_shape)
    return _reduce(loss, reduction)


@_fp32_under_autocast
def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    class_dim = 0 if input.dim() == 1 else 1
    logp = log_softmax(input, class_dim)
    if target.is_floating_point():
        # class probabilities
        if label_smoothing > 0:
            n = input.size(class_dim)
            target = target * (1 - label_smoothing) + label_smoothing / n
        w = logp if weight is None else logp * weight.reshape(
            [-1 if i == class_dim else 1 for i in range(input.dim())])
        return _reduce(-(w * target).sum(class_dim), reduction)
    loss = nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)
    if label_smoothing > 0:
        n = input.size(class_dim)
        smooth = -logp.sum(class_dim) if weight is None else -(logp * weight.reshape(
            [-1 if i == class_dim else 1 for i in range(input.dim())])).sum(class_dim)
        valid = (target != ignore_index).to(input.dtype)
        smooth = smooth * valid
        if reduction == "mean":
            denom = valid.sum() if weight is None else (weight.index_select(
                0, _call("where", (target != ignore_index, target, 0)).reshape(-1)) *
                valid.reshape(-1)).sum()
            smooth = smooth.sum() / denom
        else:
            smooth = _reduce(smooth, reduction)
        loss = loss * (1 - label_smoothing) + smooth * (label_smoothing / n)
    return loss


@_fp32_under_autocast
def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    if input.shape != target.shape:
        raise ValueError(
            f"Using a target size ({target.shape}) that is different to the input size "
            f"({input.shape}) is deprecated. Please ensure they have the same size.")
    if ((input < 0) | (input > 1) | input.isnan()).any():
        raise RuntimeError("all elements of input should be between 0 and 1")
    logi = input.log().clamp(-100)
    log1m = (1 - input).log().clamp(-100)
    loss = -(target * logi + (1 - target) * log1m)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


@_fp32_under_autocast
def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    log_sig = logsigmoid(input)
    log_one_minus = logsigmoid(-input)
    if pos_weight is not None:
        loss = -(pos_weight * target * log_sig + (1 - target) * log_one_minus)
    else:
        loss = -(target * log_sig + (1 - target) * log_one_minus)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


@_fp32_under_autocast
def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    if log_target:
        loss = target.exp() * (target - input)
    else:
        loss = _call("xlogy", (target, target)) - target * input
    if reduction == "batchmean":
        return loss.sum() / input.size(0)
    return _reduce(loss, reduction)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    from .attention import _check_backends

    _check_backends()
    if enable_gqa and key.dim() >= 3 and key.size(-3) != query.size(-3):
        # grouped-query attention: each key/value head serves a group of
        # query heads, as torch repeats them
        hq, hk = query.size(-3), key.size(-3)
        if hq % hk != 0 or value.size(-3) != hk:
            raise RuntimeError(f"scaled_dot_product_attention: number of heads in key and value ({hk}, "
                               f"{value.size(-3)}) must divide the number of heads in query ({hq}) with "
                               "enable_gqa=True")
        key = key.repeat_interleave(hq // hk, dim=-3)
        value = value.repeat_interleave(hq // hk, dim=-3)
    return _call("scaled_dot_product_attention",
                 (query, key, value, attn_mask, dropout_p, is_causal), {"scale": scale}
                 if scale is not None else {})



def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    return _call("conv_transpose2d", (input, weight, bias, stride, padding, output_padding, groups,
                                      dilation))


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    stride = [] if stride is None else stride
    out = _call("max_pool1d_with_indices", (input, kernel_size, stride, padding, dilation, ceil_mode))
    return out if return_indices else out[0]


def adaptive_max_pool2d(input, output_size, return_indices=False):
    out = _call("adaptive_max_pool2d", (input, _adaptive_size(input, output_size, 2)))
    return out if return_indices else out[0]


def rms_norm(input, normalized_shape, weight=None, eps=None):
    dims = list(range(-len(normalized_shape), 0))
    if eps is None:
        from .. import finfo

        eps = finfo(input.dtype).eps
    out = input * (input * input).mean(dims, keepdim=True).add(eps).rsqrt()
    return out if weight is None else out * weight


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Channel-wise dropout of ``(N, C, L)`` or unbatched ``(C, L)`` input."""
    if input.dim() not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.dim()}D input. Note that "
                           "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial dimension, a "
                           "channel dimension, and an optional batch dimension (i.e. 2D or 3D inputs).")
    return _unbatched_feature_dropout(input, p, training, inplace, input.dim() == 3)


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Channel-wise dropout of ``(N, C, H, W)`` input. As torch's, other
    ranks warn and proceed: a 3-D input is taken as ``(N, C, L)`` and a
    2-D one as ``(N, C)`` (element-wise)."""
    import warnings

    dim = input.dim()
    if dim not in (3, 4):
        warnings.warn(f"dropout2d: Received a {dim}-D input to dropout2d, which is deprecated and will result in an "
                      "error in a future release. To retain the behavior and silence this warning, please use "
                      "dropout instead. Note that dropout2d exists to provide channel-wise dropout on inputs with 2 "
                      "spatial dimensions, a channel dimension, and an optional batch dimension (i.e. 3D or 4D "
                      "inputs).", stacklevel=2)
    if dim == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout "
                      "behavior is desired - input is interpreted as shape (N, C, L), where C is the channel dim. "
                      "This behavior will change in a future release to interpret the input as one without a batch "
                      "dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout behavior, please "
                      "switch to using dropout1d instead.", stacklevel=2)
    return _feature_dropout(input, p, training, inplace)


def _unbatched_feature_dropout(input, p, training, inplace, batched):
    """Feature dropout with an unbatched input seen as a batch of one (its
    first dim is the channels), as torch's dropout1d/dropout3d."""
    if batched:
        return _feature_dropout(input, p, training, inplace)
    if inplace:
        input.unsqueeze_(0)
        _feature_dropout(input, p, training, True)
        return input.squeeze_(0)
    return _feature_dropout(input.unsqueeze(0), p, training, False).squeeze(0)


def _feature_dropout(input, p, training, inplace):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    # one draw per (batch, channel): the mask broadcasts over the rest
    shape = tuple(input.shape[:2]) + (1,) * (input.dim() - 2)
    if p == 1.0:
        return _inplace(input, input * 0.0, inplace)
    # torch's feature_dropout draws its mask with a scalar bernoulli_ (the
    # tensor-probability bernoulli consumes the stream differently)
    keep = _call("empty", (shape,), {"dtype": input.dtype}).bernoulli_(1.0 - p)
    return _inplace(input, input * keep / (1.0 - p), inplace)


def _alpha_dropout(input, p, training, inplace, feature):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return _inplace(input, input * 0.0, inplace)
    # ATen's _dropout_impl with alpha: keep the SELU mean and variance
    alpha = 1.7580993408473766
    a = 1.0 / math.sqrt((alpha * alpha * p + 1) * (1 - p))
    shape = tuple(input.shape)
    if feature:
        shape = shape[:2] + (1,) * (input.dim() - 2)
    # torch's feature_dropout draws its mask with a scalar bernoulli_ (the
    # tensor-probability bernoulli consumes the stream differently)
    keep = _call("empty", (shape,), {"dtype": input.dtype}).bernoulli_(1.0 - p)
    b = (keep - 1) * (alpha * a) + alpha * a * p
    return _inplace(input, input * (keep * a) + b, inplace)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    return _alpha_dropout(input, p, training, inplace, False)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    return _alpha_dropout(input, p, training, inplace, True)


from ._functional_more import (  # noqa: E402,F401  (the rest of nn.functional)
    hardshrink, softshrink, tanhshrink, rrelu, pixel_shuffle, pixel_unshuffle, channel_shuffle,
    native_channel_shuffle, cosine_similarity, pairwise_distance, pdist, margin_ranking_loss,
    hinge_embedding_loss, soft_margin_loss, multilabel_soft_margin_loss, cosine_embedding_loss,
    poisson_nll_loss, gaussian_nll_loss, triplet_margin_loss, triplet_margin_with_distance_loss,
    multi_margin_loss, multilabel_margin_loss, instance_norm, local_response_norm, avg_pool1d,
    adaptive_avg_pool1d, adaptive_max_pool1d, conv_transpose1d, dropout3d, interpolate, upsample,
    upsample_nearest, upsample_bilinear, unfold, fold)
from ._functional_sampling import (  # noqa: E402,F401  (sampling and scattering)
    affine_grid, grid_sample, max_unpool1d, max_unpool2d, max_unpool3d, embedding_bag)
from ._functional_3d import (  # noqa: E402,F401  (volumetric convolution and pools)
    conv3d, conv_transpose3d, max_pool3d, avg_pool3d, adaptive_avg_pool3d, adaptive_max_pool3d)
from ._functional_fractional import (  # noqa: E402,F401  (fractional max pooling)
    fractional_max_pool2d, fractional_max_pool3d, fractional_max_pool2d_with_indices,
    fractional_max_pool3d_with_indices)
from ._functional_ctc import ctc_loss  # noqa: E402,F401  (connectionist temporal classification)
from ._functional_attention import multi_head_attention_forward  # noqa: E402,F401
from ._functional_misc import (  # noqa: E402,F401  (in-place forms, aliases, lp pools, ...)
    relu_, elu_, celu_, selu_, hardtanh_, leaky_relu_, rrelu_, threshold_, max_pool1d_with_indices,
    max_pool2d_with_indices, max_pool3d_with_indices, adaptive_max_pool1d_with_indices,
    adaptive_max_pool2d_with_indices, adaptive_max_pool3d_with_indices, lp_pool1d, lp_pool2d,
    lp_pool3d, gumbel_softmax, conv_tbc, linear_cross_entropy)

from ..overrides import (handle_torch_function, has_torch_function, has_torch_function_unary,  # noqa: E402,F401
                         has_torch_function_variadic)


def assert_int_or_pair(arg, arg_name, message):
    """torch's argument check: ``arg`` is an int or a pair."""
    assert isinstance(arg, int) or len(arg) == 2, message.format(arg_name)


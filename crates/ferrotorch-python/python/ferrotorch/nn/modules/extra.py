"""Module forms of the rest of ``nn.functional``: shuffles and
shrinkages, distances, the margin/embedding/NLL-family losses, instance and
local response norm, the 1-D pools, ``Dropout3d``, ``Fold``/``Unfold``,
``Upsample``, the padding layers, ``BatchNorm3d`` and ``Softmax2d``. Each
holds torch's constructor options and calls the function."""

from ... import _C
from .. import functional as F
from ..parameter import Parameter
from .batchnorm import _BatchNorm
from .loss import _Loss
from .misc import _DropoutNd
from .module import Module


def _set_options(module, name, params, args, kwargs):
    """Store constructor ``args``/``kwargs`` as the ``params`` (name,
    default) pairs say, refusing unknown keywords as torch's constructors."""
    for (key, _default), value in zip(params, args):
        kwargs.setdefault(key, value)
    for key, default in params:
        setattr(module, key, kwargs.pop(key, default))
    if kwargs:
        raise TypeError(f"{name}.__init__() got an unexpected keyword argument '{next(iter(kwargs))}'")


def _simple(name, fn, params, doc):
    """A module class whose forward is ``fn(*inputs, **options)``."""
    def __init__(self, *args, **kwargs):
        Module.__init__(self)
        _set_options(self, name, params, args, kwargs)


    def forward(self, *inputs):
        return fn(*inputs, **{k: getattr(self, k) for k, _ in params})

    def extra_repr(self):
        return ", ".join(f"{k}={getattr(self, k)!r}" for k, _ in params)

    return type(name, (Module,), {"__init__": __init__, "forward": forward, "extra_repr": extra_repr,
                                  "__doc__": doc})


PixelShuffle = _simple("PixelShuffle", F.pixel_shuffle, [("upscale_factor", None)],
                       "Rearrange channels into an ``upscale_factor`` larger image.")
PixelUnshuffle = _simple("PixelUnshuffle", F.pixel_unshuffle, [("downscale_factor", None)],
                         "``PixelShuffle`` undone.")
ChannelShuffle = _simple("ChannelShuffle", F.channel_shuffle, [("groups", None)],
                         "Interleave ``groups`` groups of channels.")
Hardshrink = _simple("Hardshrink", F.hardshrink, [("lambd", 0.5)], "``x`` where ``|x| > lambd``, else 0.")
Softshrink = _simple("Softshrink", F.softshrink, [("lambd", 0.5)], "``x`` moved ``lambd`` toward 0.")
Tanhshrink = _simple("Tanhshrink", F.tanhshrink, [], "``x - tanh(x)``.")
CosineSimilarity = _simple("CosineSimilarity", F.cosine_similarity, [("dim", 1), ("eps", 1e-8)],
                           "Cosine of the angle between two inputs along ``dim``.")


class PairwiseDistance(Module):
    """The ``p``-norm distance between rows; torch keeps ``p`` as
    ``self.norm``."""

    def __init__(self, p=2.0, eps=1e-6, keepdim=False):
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1, x2):
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


LocalResponseNorm = _simple("LocalResponseNorm", F.local_response_norm,
                            [("size", None), ("alpha", 1e-4), ("beta", 0.75), ("k", 1.0)],
                            "Normalisation over neighbouring channels.")
AvgPool1d = _simple("AvgPool1d", F.avg_pool1d,
                    [("kernel_size", None), ("stride", None), ("padding", 0), ("ceil_mode", False),
                     ("count_include_pad", True)], "Mean over windows of ``(N, C, L)``.")
AdaptiveAvgPool1d = _simple("AdaptiveAvgPool1d", F.adaptive_avg_pool1d, [("output_size", None)],
                            "Mean pooling of ``(N, C, L)`` to ``output_size``.")
AdaptiveMaxPool1d = _simple("AdaptiveMaxPool1d", F.adaptive_max_pool1d,
                            [("output_size", None), ("return_indices", False)],
                            "Max pooling of ``(N, C, L)`` to ``output_size``.")
Fold = _simple("Fold", F.fold, [("output_size", None), ("kernel_size", None), ("dilation", 1),
                                ("padding", 0), ("stride", 1)], "Sliding blocks summed back into an image.")
Unfold = _simple("Unfold", F.unfold, [("kernel_size", None), ("dilation", 1), ("padding", 0), ("stride", 1)],
                 "Sliding blocks of an image as columns.")
Upsample = _simple("Upsample", F.interpolate,
                   [("size", None), ("scale_factor", None), ("mode", "nearest"), ("align_corners", None),
                    ("recompute_scale_factor", None)], "``F.interpolate`` as a layer.")


class RReLU(Module):
    """Randomized leaky ReLU: a random slope in ``[lower, upper]`` while
    training, their mean otherwise."""

    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False):
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input):
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)


class UpsamplingNearest2d(Module):
    """Nearest-neighbour 2-D upsampling."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__()
        self.size, self.scale_factor = size, scale_factor

    def forward(self, input):
        return F.interpolate(input, self.size, self.scale_factor, mode="nearest")


class UpsamplingBilinear2d(Module):
    """Bilinear 2-D upsampling with aligned corners."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__()
        self.size, self.scale_factor = size, scale_factor

    def forward(self, input):
        return F.interpolate(input, self.size, self.scale_factor, mode="bilinear", align_corners=True)


class Dropout3d(_DropoutNd):
    """Zero whole channels of ``(N, C, D, H, W)`` with probability ``p``."""

    _fn = staticmethod(F.dropout3d)


class Softmax2d(Module):
    """Softmax over the channels of ``(N, C, H, W)`` or ``(C, H, W)``."""

    def forward(self, input):
        if input.dim() not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.dim()}D instead")
        return F.softmax(input, -3)


class BatchNorm3d(_BatchNorm):
    """Batch norm over ``(N, C, D, H, W)``."""

    _dims = (5,)


class _InstanceNorm(Module):
    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False, track_running_stats=False,
                 device=None, dtype=None):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        self.weight = self.bias = None
        if affine:
            self.weight = Parameter(_C._call_op("ones", ((num_features,),), {"dtype": dtype}))
            self.bias = Parameter(_C._call_op("zeros", ((num_features,),), {"dtype": dtype}))
        if track_running_stats:
            self.register_buffer("running_mean", _C._call_op("zeros", ((num_features,),), {"dtype": dtype}))
            self.register_buffer("running_var", _C._call_op("ones", ((num_features,),), {"dtype": dtype}))
        else:
            self.running_mean = self.running_var = None

    def reset_running_stats(self):
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)

    def reset_parameters(self):
        self.reset_running_stats()
        if self.affine:
            self.weight.data.fill_(1)
            self.bias.data.zero_()

    def forward(self, input):
        return F.instance_norm(input, self.running_mean, self.running_var, self.weight, self.bias,
                               self.training or not self.track_running_stats, self.momentum, self.eps)

    def extra_repr(self):
        return f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}"


class InstanceNorm1d(_InstanceNorm):
    """Instance norm over ``(N, C, L)``."""


class InstanceNorm2d(_InstanceNorm):
    """Instance norm over ``(N, C, H, W)``."""


class InstanceNorm3d(_InstanceNorm):
    """Instance norm over ``(N, C, D, H, W)``."""


def _pad_module(name, n, mode, doc):
    """A padding module with torch's constructor: ``(padding, value)`` for
    ConstantPadNd, ``(padding)`` for the others (ZeroPadNd pads with 0)."""
    def _init(self, padding, value):
        Module.__init__(self)
        self.padding = tuple(padding) if isinstance(padding, (list, tuple)) else (padding,) * (2 * n)
        self.value = value

    if name.startswith("Constant"):
        def __init__(self, padding, value):
            _init(self, padding, value)
    else:
        def __init__(self, padding):
            _init(self, padding, 0.0)

    def forward(self, input):
        return F.pad(input, list(self.padding), mode, self.value if mode == "constant" else None)

    def extra_repr(self):
        if name.startswith("Constant"):
            return f"padding={self.padding}, value={self.value}"
        return f"{self.padding}"

    return type(name, (Module,), {"__init__": __init__, "forward": forward, "extra_repr": extra_repr,
                                  "__doc__": doc})


ZeroPad1d = _pad_module("ZeroPad1d", 1, "constant", "Pad the last dim with zeros.")
ZeroPad2d = _pad_module("ZeroPad2d", 2, "constant", "Pad the last two dims with zeros.")
ConstantPad1d = _pad_module("ConstantPad1d", 1, "constant", "Pad the last dim with ``value``.")
ConstantPad2d = _pad_module("ConstantPad2d", 2, "constant", "Pad the last two dims with ``value``.")
ConstantPad3d = _pad_module("ConstantPad3d", 3, "constant", "Pad the last three dims with ``value``.")
ReflectionPad1d = _pad_module("ReflectionPad1d", 1, "reflect", "Pad the last dim by reflection.")
ReflectionPad2d = _pad_module("ReflectionPad2d", 2, "reflect", "Pad the last two dims by reflection.")
ReplicationPad1d = _pad_module("ReplicationPad1d", 1, "replicate", "Pad the last dim with edge values.")
ReplicationPad2d = _pad_module("ReplicationPad2d", 2, "replicate", "Pad the last two dims with edge values.")
CircularPad1d = _pad_module("CircularPad1d", 1, "circular", "Pad the last dim by wrapping around.")
CircularPad2d = _pad_module("CircularPad2d", 2, "circular", "Pad the last two dims by wrapping around.")
ZeroPad3d = _pad_module("ZeroPad3d", 3, "constant", "Pad the last three dims with zeros.")
ReflectionPad3d = _pad_module("ReflectionPad3d", 3, "reflect", "Pad the last three dims by reflection.")
ReplicationPad3d = _pad_module("ReplicationPad3d", 3, "replicate", "Pad the last three dims with edge values.")
CircularPad3d = _pad_module("CircularPad3d", 3, "circular", "Pad the last three dims by wrapping around.")


# --- losses -----------------------------------------------------------------

def _loss(name, fn, params, doc):
    """A loss module: ``fn(*inputs, **options, reduction=...)``."""
    def __init__(self, *args, size_average=None, reduce=None, reduction="mean", **kwargs):
        _Loss.__init__(self, size_average, reduce, reduction)
        _set_options(self, name, params, args, kwargs)


    def forward(self, *inputs):
        return fn(*inputs, **{k: getattr(self, k) for k, _ in params}, reduction=self.reduction)

    return type(name, (_Loss,), {"__init__": __init__, "forward": forward, "__doc__": doc})


MarginRankingLoss = _loss("MarginRankingLoss", F.margin_ranking_loss, [("margin", 0.0)],
                          "``max(0, -y (x1 - x2) + margin)``.")
HingeEmbeddingLoss = _loss("HingeEmbeddingLoss", F.hinge_embedding_loss, [("margin", 1.0)],
                           "``x`` for ``y = 1``, ``max(0, margin - x)`` for ``y = -1``.")
SoftMarginLoss = _loss("SoftMarginLoss", F.soft_margin_loss, [], "``log(1 + exp(-y x))``.")
MultiLabelSoftMarginLoss = _loss("MultiLabelSoftMarginLoss", F.multilabel_soft_margin_loss,
                                 [("weight", None)], "One-versus-all logistic loss.")
CosineEmbeddingLoss = _loss("CosineEmbeddingLoss", F.cosine_embedding_loss, [("margin", 0.0)],
                            "Cosine similarity pulled up (``y = 1``) or pushed below ``margin``.")
PoissonNLLLoss = _loss("PoissonNLLLoss", F.poisson_nll_loss,
                       [("log_input", True), ("full", False), ("eps", 1e-8)],
                       "Negative log likelihood of a Poisson target.")
GaussianNLLLoss = _loss("GaussianNLLLoss", F.gaussian_nll_loss, [("full", False), ("eps", 1e-6)],
                        "Negative log likelihood of a Gaussian with predicted variance.")
TripletMarginLoss = _loss("TripletMarginLoss", F.triplet_margin_loss,
                          [("margin", 1.0), ("p", 2.0), ("eps", 1e-6), ("swap", False)],
                          "Anchor closer to the positive than to the negative by ``margin``.")
TripletMarginWithDistanceLoss = _loss("TripletMarginWithDistanceLoss", F.triplet_margin_with_distance_loss,
                                      [("distance_function", None), ("margin", 1.0), ("swap", False)],
                                      "``TripletMarginLoss`` with any distance function.")
MultiMarginLoss = _loss("MultiMarginLoss", F.multi_margin_loss,
                        [("p", 1), ("margin", 1.0), ("weight", None)], "Multi-class hinge loss.")
MultiLabelMarginLoss = _loss("MultiLabelMarginLoss", F.multilabel_margin_loss, [],
                             "Multi-class multi-label hinge loss.")


def _cross_map_lrn(input, size, alpha, beta, k):
    """``x · (k + alpha/size · Σ_window x²)^-beta`` over the channel windows
    of Lua-torch's running sum, which torch keeps: channel ``c`` sums the
    squares of channels ``0`` and ``max(1, c - pre + 1) ..= min(c + pre - 1,
    C - 1)`` with ``pre = (size - 1) // 2 + 1`` (the first channel is never
    subtracted from the sum)."""
    import ferrotorch as _ft

    channels = input.size(1)
    pre = int((size - 1) / 2 + 1)
    rows = []
    for c in range(channels):
        hi = min(pre, channels) - 1 if c == 0 else min(c + pre - 1, channels - 1)
        lo = 0 if c <= pre else c - pre + 1
        rows.append([1.0 if (lo <= j <= hi) or j == 0 else 0.0 for j in range(channels)])
    window = _ft.tensor(rows, dtype=input.dtype)
    scale = _ft.einsum("cj,njhw->nchw", window, input * input) * (alpha / size) + k
    return input * scale.pow(-beta)


class CrossMapLRN2d(Module):
    """Local response normalization across channels of 4-D input (the
    Lua-torch layer torch keeps, with its channel windows). The gradient
    is that of this forward; torch's hand-written backward assumes a
    symmetric window and differs from it for size < channels."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        if input.dim() != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D instead.")
        return _cross_map_lrn(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"

"""Modules over the volumetric, sampling and sequence-loss functions:
``Conv3d``, ``ConvTranspose1d``/``3d``, ``FractionalMaxPool2d``/``3d``, ``MaxPool3d``, ``AvgPool3d``, ``AdaptiveAvgPool3d``,
``AdaptiveMaxPool3d``, ``MaxUnpool1d/2d/3d``, ``EmbeddingBag``,
``CTCLoss``."""

from .. import functional as F
from .conv import _AvgPoolNd, _ConvNd, _ConvTransposeNd, _MaxPoolNd
from .loss import _Loss
from .misc import _embedding_weight
from .module import Module


class Conv3d(_ConvNd):
    """3-D convolution over ``(N, C, D, H, W)``."""

    _n = 3

    def forward(self, input):
        return F.conv3d(input, self.weight, self.bias, self.stride, self.padding, self.dilation,
                        self.groups)


class ConvTranspose1d(_ConvTransposeNd):
    """Transposed 1-D convolution over ``(N, C, L)``."""

    _n = 1
    _fn = staticmethod(F.conv_transpose1d)


class ConvTranspose3d(_ConvTransposeNd):
    """Transposed 3-D convolution over ``(N, C, D, H, W)``."""

    _n = 3
    _fn = staticmethod(F.conv_transpose3d)


class _FractionalMaxPoolNd(Module):
    _fn = None

    def __init__(self, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                 _random_samples=None):
        super().__init__()
        if output_size is None and output_ratio is None:
            raise ValueError(f"{type(self).__name__} requires specifying either an output size, "
                             "or a pooling ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        ratios = output_ratio if isinstance(output_ratio, (list, tuple)) else [output_ratio]
        if output_ratio is not None and not all(0 < r < 1 for r in ratios):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")
        self.kernel_size, self.output_size, self.output_ratio = kernel_size, output_size, output_ratio
        self.return_indices = return_indices
        self._random_samples = _random_samples

    def forward(self, input):
        return type(self)._fn(input, self.kernel_size, self.output_size, self.output_ratio,
                              self.return_indices, _random_samples=self._random_samples)


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """Fractional max pooling over ``(N, C, H, W)``."""

    _fn = staticmethod(F.fractional_max_pool2d)


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """Fractional max pooling over ``(N, C, T, H, W)``."""

    _fn = staticmethod(F.fractional_max_pool3d)


class MaxPool3d(_MaxPoolNd):
    """Max over ``kernel_size`` windows of ``(N, C, D, H, W)``."""

    _fn = staticmethod(F.max_pool3d)


class AvgPool3d(_AvgPoolNd):
    """Mean over ``kernel_size`` windows of ``(N, C, D, H, W)``."""

    _fn = staticmethod(F.avg_pool3d)


class AdaptiveAvgPool3d(Module):
    """Mean pooling of ``(N, C, D, H, W)`` to a fixed ``output_size``."""

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, input):
        return F.adaptive_avg_pool3d(input, self.output_size)

    def extra_repr(self):
        return f"output_size={self.output_size}"


class AdaptiveMaxPool3d(Module):
    """Max pooling of ``(N, C, D, H, W)`` to a fixed ``output_size``."""

    def __init__(self, output_size, return_indices=False):
        super().__init__()
        self.output_size, self.return_indices = output_size, return_indices

    def forward(self, input):
        return F.adaptive_max_pool3d(input, self.output_size, self.return_indices)

    def extra_repr(self):
        return f"output_size={self.output_size}"


class _MaxUnpoolNd(Module):
    _fn = None

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding

    def forward(self, input, indices, output_size=None):
        return type(self)._fn(input, indices, self.kernel_size, self.stride, self.padding, output_size)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """``MaxPool1d`` undone: values back at their indices, zeros elsewhere."""

    _fn = staticmethod(F.max_unpool1d)


class MaxUnpool2d(_MaxUnpoolNd):
    """``MaxPool2d`` undone."""

    _fn = staticmethod(F.max_unpool2d)


class MaxUnpool3d(_MaxUnpoolNd):
    """``MaxPool3d`` undone."""

    _fn = staticmethod(F.max_unpool3d)


class EmbeddingBag(Module):
    """Sums, means or maxima of bags of embeddings (``F.embedding_bag``)."""

    def __init__(self, num_embeddings, embedding_dim, max_norm=None, norm_type=2.0,
                 scale_grad_by_freq=False, mode="mean", sparse=False, _weight=None,
                 include_last_offset=False, padding_idx=None, device=None, dtype=None):
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq, self.mode, self.sparse = scale_grad_by_freq, mode, sparse
        self.include_last_offset = include_last_offset
        if padding_idx is not None and padding_idx < 0:
            padding_idx = num_embeddings + padding_idx
        self.padding_idx = padding_idx
        self.weight = _embedding_weight(num_embeddings, embedding_dim, padding_idx, _weight, True, dtype)

    def forward(self, input, offsets=None, per_sample_weights=None):
        return F.embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type,
                               self.scale_grad_by_freq, self.mode, self.sparse, per_sample_weights,
                               self.include_last_offset, self.padding_idx)

    def extra_repr(self):
        return f"{self.num_embeddings}, {self.embedding_dim}, mode={self.mode!r}"


class CTCLoss(_Loss):
    """The connectionist temporal classification loss (``F.ctc_loss``)."""

    def __init__(self, blank=0, reduction="mean", zero_infinity=False):
        super().__init__(reduction=reduction)
        self.blank, self.zero_infinity = blank, zero_infinity

    def forward(self, log_probs, targets, input_lengths, target_lengths):
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank,
                          self.reduction, self.zero_infinity)


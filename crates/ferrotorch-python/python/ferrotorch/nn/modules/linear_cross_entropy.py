"""``LinearCrossEntropyLoss``: a linear projection to class logits and
the cross-entropy of the targets, as one module over
``F.linear_cross_entropy``. torch can chunk the batch to save memory
(``LinearCrossEntropyOptions``); here the reference path always runs,
with the same values and gradients, and the options are validated and
kept."""

import dataclasses
import math

from .. import functional as F
from .linear import Linear
from .loss import _WeightedLoss

_ACC_POLICIES = ("auto", "accurate", "compact")


@dataclasses.dataclass(frozen=True)
class LinearCrossEntropyOptions:
    """torch's chunking settings for ``linear_cross_entropy`` (they change
    only memory use, never values)."""

    allow_retain_graph: bool = False
    batch_chunk_size: int = None
    chunking_method: str = "auto"
    acc_policy: str = "auto"
    acc_dtype: object = None

    def __post_init__(self):
        if self.acc_policy not in _ACC_POLICIES:
            raise ValueError(f"acc_policy must be one of {_ACC_POLICIES}, got {self.acc_policy!r}")
        if self.batch_chunk_size is not None and self.batch_chunk_size <= 0:
            raise ValueError(f"batch_chunk_size must be positive, got {self.batch_chunk_size}")


class LinearCrossEntropyLoss(_WeightedLoss):
    """``cross_entropy(linear(input), target)`` with the weight of shape
    ``(num_classes, *out_features, in_features)`` stored flat in
    ``self.linear``, as torch's."""

    def __init__(self, in_features, num_classes, *, out_features=(), bias=False, device=None, dtype=None,
                 reduction="mean", weight=None, ignore_index=None, label_smoothing=0.0, options=None):
        if weight is not None and tuple(weight.shape) != (num_classes,):
            raise RuntimeError(f"expected weight shape to be {(num_classes,)}, got {tuple(weight.shape)}")
        if label_smoothing < 0 or label_smoothing > 1.0:
            raise RuntimeError(f"expected label_smoothing to be in range [0, 1], got {label_smoothing}")
        super().__init__(weight=weight, size_average=None, reduce=None, reduction=reduction)
        self.num_classes = num_classes
        self.out_features = out_features
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing
        self.linear = Linear(in_features, math.prod(out_features, start=num_classes), bias=bias, dtype=dtype)
        self.options = options

    def forward(self, input, target):
        w = self.linear.weight.reshape((self.num_classes, *self.out_features, self.linear.in_features))
        b = None if self.linear.bias is None else self.linear.bias.reshape((self.num_classes, *self.out_features))
        return F.linear_cross_entropy(input, w, target, linear_bias=b, weight=self.weight, reduction=self.reduction,
                                      ignore_index=self.ignore_index, label_smoothing=self.label_smoothing,
                                      options=self.options)

    def extra_repr(self):
        return (f"in_features={self.linear.in_features}, num_classes={self.num_classes}, "
                f"out_features={self.out_features}, bias={self.linear.bias is not None}, "
                f"reduction={self.reduction}, ignore_index={self.ignore_index}, "
                f"label_smoothing={self.label_smoothing}, options={self.options}")

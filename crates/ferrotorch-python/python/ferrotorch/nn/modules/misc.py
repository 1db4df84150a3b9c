"""``Dropout``, ``LayerNorm``, ``Embedding``."""

from ... import _C
from .. import functional as F, init
from ..parameter import Parameter
from .module import Module


class _DropoutNd(Module):
    _fn = None

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def forward(self, input):
        return type(self)._fn(input, self.p, self.training, self.inplace)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class LayerNorm(Module):
    """Normalise over the trailing ``normalized_shape`` dims."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True,
                 device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        self.use_bias = bias
        if elementwise_affine:
            self.weight = Parameter(_C._call_op("ones", (self.normalized_shape,), {"dtype": dtype}))
            if bias:
                self.bias = Parameter(_C._call_op("zeros", (self.normalized_shape,), {"dtype": dtype}))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}, bias={self.use_bias}")


class Embedding(Module):
    """A lookup table of ``num_embeddings`` vectors of size ``embedding_dim``."""

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, max_norm=None,
                 norm_type=2.0, scale_grad_by_freq=False, sparse=False, _weight=None,
                 _freeze=False, device=None, dtype=None):
        super().__init__()
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        if padding_idx is not None:
            if padding_idx > 0:
                assert padding_idx < num_embeddings, "Padding_idx must be within num_embeddings"
            elif padding_idx < 0:
                assert padding_idx >= -num_embeddings, "Padding_idx must be within num_embeddings"
                padding_idx = num_embeddings + padding_idx
        self.padding_idx = padding_idx
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.sparse = sparse
        self.weight = _embedding_weight(num_embeddings, embedding_dim, padding_idx, _weight,
                                        not _freeze, dtype)

    def forward(self, input):
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           scale_grad_by_freq=self.scale_grad_by_freq, sparse=self.sparse)

    def extra_repr(self):
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        return s


def _embedding_weight(num_embeddings, embedding_dim, padding_idx, weight, requires_grad, dtype):
    """An embedding table: ``weight`` as given, else N(0, 1) draws with the
    ``padding_idx`` row zeroed (``Embedding``, ``EmbeddingBag``)."""
    if weight is not None:
        return Parameter(weight, requires_grad=requires_grad)
    w = Parameter(_C._call_op("empty", ((num_embeddings, embedding_dim),), {"dtype": dtype}),
                  requires_grad=requires_grad)
    init.normal_(w)
    if padding_idx is not None:
        with _no_grad():
            w[padding_idx] = 0.0
    return w


def _no_grad():
    from ...autograd.grad_mode import no_grad

    return no_grad()


class Dropout(_DropoutNd):
    """Zero elements with probability ``p`` in training, scaling the rest."""

    _fn = staticmethod(F.dropout)


class Dropout1d(_DropoutNd):
    """Zero whole channels of ``(N, C, L)`` input."""

    _fn = staticmethod(F.dropout1d)


class Dropout2d(_DropoutNd):
    """Zero whole channels of ``(N, C, H, W)`` input."""

    _fn = staticmethod(F.dropout2d)


class AlphaDropout(_DropoutNd):
    """Dropout that keeps SELU's self-normalising mean and variance."""

    _fn = staticmethod(F.alpha_dropout)


class FeatureAlphaDropout(_DropoutNd):
    """Alpha dropout of whole channels."""

    _fn = staticmethod(F.feature_alpha_dropout)


class RMSNorm(Module):
    """``x / sqrt(mean(x²) + eps) · weight`` over the trailing dims."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(_C._call_op("ones", (self.normalized_shape,), {"dtype": dtype}))
        else:
            self.register_parameter("weight", None)

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"

"""``LPPool1d``/``2d``/``3d``: power-average pooling."""

from .. import functional as F
from .module import Module


class _LPPoolNd(Module):
    _fn = None

    def __init__(self, norm_type, kernel_size, stride=None, ceil_mode=False):
        super().__init__()
        self.norm_type, self.kernel_size, self.stride, self.ceil_mode = norm_type, kernel_size, stride, ceil_mode

    def extra_repr(self):
        return f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, stride={self.stride}, " \
               f"ceil_mode={self.ceil_mode}"

    def forward(self, input):
        return type(self)._fn(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)


class LPPool1d(_LPPoolNd):
    """(Σ x^p)^(1/p) over 1-D windows."""

    _fn = staticmethod(F.lp_pool1d)


class LPPool2d(_LPPoolNd):
    """(Σ x^p)^(1/p) over 2-D windows."""

    _fn = staticmethod(F.lp_pool2d)


class LPPool3d(_LPPoolNd):
    """(Σ x^p)^(1/p) over 3-D windows."""

    _fn = staticmethod(F.lp_pool3d)

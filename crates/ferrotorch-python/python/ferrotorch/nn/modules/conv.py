"""``Conv1d``, ``Conv2d`` and the pooling modules."""

import math

from .. import functional as F, init
from .linear import _weight_and_bias
from .module import Module


def _pair(x, n):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,) * n


class _ConvNd(Module):
    _n = 2

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__()
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if padding_mode != "zeros":
            raise NotImplementedError(f"padding_mode={padding_mode!r} is not supported yet")
        n = self._n
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = _pair(kernel_size, n)
        self.stride, self.padding = _pair(stride, n), _pair(padding, n)
        self.dilation, self.groups = _pair(dilation, n), groups
        self.padding_mode = padding_mode
        _weight_and_bias(self, (out_channels, in_channels // groups) + self.kernel_size, out_channels, bias, dtype)
        self.reset_parameters()

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self):
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * self._n:
            s += f", padding={self.padding}"
        if any(getattr(self, "output_padding", ())):
            s += f", output_padding={self.output_padding}"
        if self.dilation != (1,) * self._n:
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        return s


class Conv1d(_ConvNd):
    """1-D convolution over ``(N, C, L)``."""

    _n = 1

    def forward(self, input):
        return F.conv1d(input, self.weight, self.bias, self.stride[0], self.padding[0],
                        self.dilation[0], self.groups)


class Conv2d(_ConvNd):
    """2-D convolution over ``(N, C, H, W)``."""

    def forward(self, input):
        return F.conv2d(input, self.weight, self.bias, list(self.stride), list(self.padding),
                        list(self.dilation), self.groups)


class _MaxPoolNd(Module):
    _fn = None

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False,
                 ceil_mode=False):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, input):
        return type(self)._fn(input, self.kernel_size, self.stride, self.padding, self.dilation,
                              self.ceil_mode, self.return_indices)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool2d(_MaxPoolNd):
    """Max over ``kernel_size`` windows of ``(N, C, H, W)``."""

    _fn = staticmethod(F.max_pool2d)


class MaxPool1d(_MaxPoolNd):
    """Max over ``kernel_size`` windows of ``(N, C, L)``."""

    _fn = staticmethod(F.max_pool1d)


class _AvgPoolNd(Module):
    _fn = None

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True, divisor_override=None):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, input):
        return type(self)._fn(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                              self.count_include_pad, self.divisor_override)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(_AvgPoolNd):
    """Mean over ``kernel_size`` windows of ``(N, C, H, W)``."""

    _fn = staticmethod(F.avg_pool2d)


class AdaptiveAvgPool2d(Module):
    """Mean pooling to a fixed ``output_size``."""

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, input):
        return F.adaptive_avg_pool2d(input, _pair(self.output_size, 2))

    def extra_repr(self):
        return f"output_size={self.output_size}"


class _ConvTransposeNd(_ConvNd):
    """Transposed N-d convolution (weight ``(in, out / groups, *kernel)``);
    subclasses set ``_n`` and ``_fn``."""

    _fn = None

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 device=None, dtype=None):
        Module.__init__(self)
        n = self._n
        if in_channels % groups != 0 or out_channels % groups != 0:
            raise ValueError("in_channels and out_channels must be divisible by groups")
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = _pair(kernel_size, n)
        self.stride, self.padding = _pair(stride, n), _pair(padding, n)
        self.output_padding, self.dilation = _pair(output_padding, n), _pair(dilation, n)
        self.groups, self.padding_mode = groups, padding_mode
        _weight_and_bias(self, (in_channels, out_channels // groups) + self.kernel_size, out_channels, bias, dtype)
        self.reset_parameters()

    def _output_padding(self, input, output_size):
        """The output padding that makes the result ``output_size`` (torch's
        rule: any size from the minimum up to ``stride - 1`` more)."""
        n = self._n
        if output_size is None:
            return list(self.output_padding)
        output_size = list(output_size)
        batched = input.dim() == n + 2
        lead = 2 if batched else 1
        if len(output_size) == lead + n:
            output_size = output_size[lead:]
        if len(output_size) != n:
            raise ValueError(f"ConvTranspose{n}D: for {input.dim()}D input, output_size must have {n} "
                             f"or {lead + n} elements (got {len(output_size)})")
        spatial = list(input.shape[lead:])
        lo = [(spatial[d] - 1) * self.stride[d] - 2 * self.padding[d]
              + self.dilation[d] * (self.kernel_size[d] - 1) + 1 for d in range(n)]
        hi = [lo[d] + self.stride[d] - 1 for d in range(n)]
        if any(not lo[d] <= output_size[d] <= hi[d] for d in range(n)):
            raise ValueError(f"requested an output size of {output_size}, but valid sizes range "
                             f"from {lo} to {hi} (for an input of {input.shape[lead:]})")
        return [output_size[d] - lo[d] for d in range(n)]

    def forward(self, input, output_size=None):
        return type(self)._fn(input, self.weight, self.bias, list(self.stride),
                              list(self.padding), self._output_padding(input, output_size),
                              self.groups, list(self.dilation))

class ConvTranspose2d(_ConvTransposeNd):
    """Transposed 2-D convolution (weight ``(in, out / groups, kH, kW)``)."""

    _n = 2
    _fn = staticmethod(F.conv_transpose2d)


class AdaptiveMaxPool2d(Module):
    """Max pooling to a fixed ``output_size``."""

    def __init__(self, output_size, return_indices=False):
        super().__init__()
        self.output_size, self.return_indices = output_size, return_indices

    def forward(self, input):
        return F.adaptive_max_pool2d(input, _pair(self.output_size, 2), self.return_indices)

    def extra_repr(self):
        return f"output_size={self.output_size}"

"""Lazy modules: ``LazyLinear``, ``LazyConv*``, ``LazyConvTranspose*``,
``LazyBatchNorm*``, ``LazyInstanceNorm*``. Their input-dependent sizes
are read from the first forward's input; the parameters are then
materialized and initialized as the regular module initializes them, and
the module becomes that regular module (``cls_to_become``), as torch's."""

from ..parameter import UninitializedBuffer, UninitializedParameter, is_lazy
from .batchnorm import BatchNorm1d, BatchNorm2d
from .conv import Conv1d, Conv2d, ConvTranspose2d
from .extra import BatchNorm3d, InstanceNorm1d, InstanceNorm2d, InstanceNorm3d
from .linear import Linear
from .volumetric import Conv3d, ConvTranspose1d, ConvTranspose3d


class LazyModuleMixin:
    """Runs ``initialize_parameters(*input)`` before the first forward."""

    cls_to_become = None

    def _lazy_setup(self):
        self._lazy_handle = self.register_forward_pre_hook(LazyModuleMixin._infer_parameters)

    def has_uninitialized_params(self):
        params = list(self._parameters.values()) + list(self._buffers.values())
        return any(is_lazy(p) for p in params if p is not None)

    def initialize_parameters(self, *args, **kwargs):
        raise NotImplementedError(f"initialize_parameters is not implemented for {self.__class__.__name__}")

    @staticmethod
    def _infer_parameters(module, args):
        module.initialize_parameters(*args)
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {module._get_name()} has not been fully initialized")
        module._lazy_handle.remove()
        del module._lazy_handle
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become


def _lazy_params(module, names, dtype):
    for n in names:
        if getattr(module, n, None) is not None:
            setattr(module, n, UninitializedParameter(dtype=dtype))


class LazyLinear(LazyModuleMixin, Linear):
    """A Linear whose ``in_features`` is the first input's last dim."""

    cls_to_become = Linear

    def __init__(self, out_features, bias=True, device=None, dtype=None):
        Linear.__init__(self, 0, 0, False, dtype=dtype)
        self.weight = UninitializedParameter(dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(dtype=dtype)
        self._lazy_setup()

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_features != 0:
            Linear.reset_parameters(self)

    def initialize_parameters(self, input):
        if self.has_uninitialized_params():
            self.in_features = input.shape[-1]
            self.weight.materialize((self.out_features, self.in_features))
            if self.bias is not None:
                self.bias.materialize((self.out_features,))
            self.reset_parameters()


def _lazy_conv(base, transposed):
    class _Lazy(LazyModuleMixin, base):
        cls_to_become = base

        def __init__(self, out_channels, kernel_size, stride=1, padding=0, *args, bias=True, dtype=None, **kwargs):
            base.__init__(self, 0, 0, kernel_size, stride, padding, *args, bias=False, dtype=dtype, **kwargs)
            self.weight = UninitializedParameter(dtype=dtype)
            self.out_channels = out_channels
            if bias:
                self.bias = UninitializedParameter(dtype=dtype)
            self._lazy_setup()

        def reset_parameters(self):
            if not self.has_uninitialized_params() and self.in_channels != 0:
                base.reset_parameters(self)

        def initialize_parameters(self, input, *args, **kwargs):
            if self.has_uninitialized_params():
                batched = input.dim() == len(self.kernel_size) + 2
                self.in_channels = input.shape[1] if batched else input.shape[0]
                if self.in_channels % self.groups != 0:
                    raise ValueError("in_channels must be divisible by groups")
                k = tuple(self.kernel_size)
                if transposed:
                    shape = (self.in_channels, self.out_channels // self.groups) + k
                else:
                    shape = (self.out_channels, self.in_channels // self.groups) + k
                self.weight.materialize(shape)
                if self.bias is not None:
                    self.bias.materialize((self.out_channels,))
                self.reset_parameters()

    _Lazy.__name__ = _Lazy.__qualname__ = "Lazy" + base.__name__
    _Lazy.__doc__ = f"A {base.__name__} whose ``in_channels`` is the first input's channel count."
    return _Lazy


LazyConv1d = _lazy_conv(Conv1d, False)
LazyConv2d = _lazy_conv(Conv2d, False)
LazyConv3d = _lazy_conv(Conv3d, False)
LazyConvTranspose1d = _lazy_conv(ConvTranspose1d, True)
LazyConvTranspose2d = _lazy_conv(ConvTranspose2d, True)
LazyConvTranspose3d = _lazy_conv(ConvTranspose3d, True)


def _lazy_norm(base):
    class _Lazy(LazyModuleMixin, base):
        cls_to_become = base

        def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None, dtype=None):
            base.__init__(self, 0, eps, momentum, False, False, dtype=dtype)
            self.affine, self.track_running_stats = affine, track_running_stats
            if affine:
                self.weight = UninitializedParameter(dtype=dtype)
                self.bias = UninitializedParameter(dtype=dtype)
            if track_running_stats:
                self.running_mean = UninitializedBuffer(dtype=dtype)
                self.running_var = UninitializedBuffer(dtype=dtype)
                from ... import tensor, int64

                self.num_batches_tracked = tensor(0, dtype=int64)
            self._lazy_setup()

        def reset_parameters(self):
            if not self.has_uninitialized_params() and self.num_features != 0:
                base.reset_parameters(self)

        def initialize_parameters(self, input):
            if self.has_uninitialized_params():
                self.num_features = input.shape[1] if input.dim() > 1 else input.shape[0]
                if self.affine:
                    self.weight.materialize((self.num_features,))
                    self.bias.materialize((self.num_features,))
                if self.track_running_stats:
                    self.running_mean.materialize((self.num_features,))
                    self.running_var.materialize((self.num_features,))
                self.reset_parameters()

    _Lazy.__name__ = _Lazy.__qualname__ = "Lazy" + base.__name__
    _Lazy.__doc__ = f"A {base.__name__} whose ``num_features`` is the first input's channel count."
    return _Lazy


LazyBatchNorm1d = _lazy_norm(BatchNorm1d)
LazyBatchNorm2d = _lazy_norm(BatchNorm2d)
LazyBatchNorm3d = _lazy_norm(BatchNorm3d)
LazyInstanceNorm1d = _lazy_norm(InstanceNorm1d)
LazyInstanceNorm2d = _lazy_norm(InstanceNorm2d)
LazyInstanceNorm3d = _lazy_norm(InstanceNorm3d)

"""``BatchNorm1d``, ``BatchNorm2d`` and ``GroupNorm``."""

from ... import _C
from .. import functional as F
from ..parameter import Parameter
from .module import Module


class _BatchNorm(Module):
    _dims = (2, 3)

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, device=None, dtype=None, bias=True):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        self.use_bias = bias
        if affine:
            self.weight = Parameter(_C._call_op("ones", ((num_features,),), {"dtype": dtype}))
            if bias:
                self.bias = Parameter(_C._call_op("zeros", ((num_features,),), {"dtype": dtype}))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", _C._call_op("zeros", ((num_features,),), {"dtype": dtype}))
            self.register_buffer("running_var", _C._call_op("ones", ((num_features,),), {"dtype": dtype}))
            self.register_buffer("num_batches_tracked", _C.tensor(0))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def reset_running_stats(self):
        """Running mean 0, variance 1, no batches tracked."""
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self):
        """The running statistics reset, weight 1 and bias 0."""
        self.reset_running_stats()
        if self.affine:
            self.weight.data.fill_(1)
            if self.bias is not None:
                self.bias.data.zero_()

    def forward(self, input):
        if input.dim() not in self._dims:
            raise ValueError(f"expected {' or '.join(f'{d}D' for d in self._dims)} input (got {input.dim()}D input)")
        momentum = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:
                momentum = 1.0 / float(self.num_batches_tracked.item())
        use_batch = self.training or self.running_mean is None
        return F.batch_norm(input, self.running_mean if not self.training or self.track_running_stats else None,
                            self.running_var if not self.training or self.track_running_stats else None,
                            self.weight, self.bias, use_batch, momentum, self.eps)

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.use_bias}, "
                f"track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """Batch norm over ``(N, C)`` or ``(N, C, L)``."""

    _dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch norm over ``(N, C, H, W)``."""

    _dims = (4,)


class GroupNorm(Module):
    """Normalise over groups of channels."""

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None, dtype=None):
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        if affine:
            self.weight = Parameter(_C._call_op("ones", ((num_channels,),), {"dtype": dtype}))
            self.bias = Parameter(_C._call_op("zeros", ((num_channels,),), {"dtype": dtype}))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}"


class SyncBatchNorm(_BatchNorm):
    """Batch norm whose statistics are reduced over a process group during
    training. Without an initialized ``torch.distributed`` process group
    (this package has none yet) it normalizes over the local batch, which
    is what torch's does when the group has one process."""

    _dims = (2, 3, 4, 5)

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 process_group=None, device=None, dtype=None):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, dtype=dtype)
        self.process_group = process_group

    def forward(self, input):
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")
        return super().forward(input)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """``module`` with every BatchNorm*D replaced by a SyncBatchNorm
        holding the same parameters and statistics."""
        out = module
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            out = SyncBatchNorm(module.num_features, module.eps, module.momentum, module.affine,
                                module.track_running_stats, process_group)
            if module.affine:
                out.weight = module.weight
                out.bias = module.bias
            out.running_mean = module.running_mean
            out.running_var = module.running_var
            out.num_batches_tracked = module.num_batches_tracked
            out.training = module.training
        for name, child in module.named_children():
            out.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return out

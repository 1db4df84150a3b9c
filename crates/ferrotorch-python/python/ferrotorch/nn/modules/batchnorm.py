"""``BatchNorm1d``, ``BatchNorm2d``, ``GroupNorm`` and ``SyncBatchNorm``."""

from ... import _C
from ...autograd.function import Function
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
        momentum = self._step_momentum()
        use_batch = self.training or self.running_mean is None
        return F.batch_norm(input, self.running_mean if not self.training or self.track_running_stats else None,
                            self.running_var if not self.training or self.track_running_stats else None,
                            self.weight, self.bias, use_batch, momentum, self.eps)

    def _step_momentum(self):
        """This forward's momentum; a training step with running statistics
        counts itself first (momentum None: the cumulative average)."""
        momentum = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:
                momentum = 1.0 / float(self.num_batches_tracked.item())
        return momentum

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


def _sync_group(group):
    """The group SyncBatchNorm reduces over in training, or None when
    there is nothing to synchronise (no distributed group, or one rank)."""
    from ... import distributed as dist

    if not dist.is_available() or not dist.is_initialized():
        return None
    g = group if group is not None else dist.group.WORLD
    return g if dist.get_world_size(g) > 1 else None


# Note [SyncBatchNorm]
# As torch's: in training each rank computes its batch's per-channel mean,
# biased variance and count, the ranks all-gather them (one collective),
# and each combines them into the whole batch's statistics (Chan's
# parallel formula: stable, unlike E[x²] − E[x]²), so every rank
# normalises with the same mean and variance and updates its running
# statistics with the global (unbiased) variance. Backward all-reduces
# the per-channel sums of dy and dy·x̂ so the input's gradient accounts for
# every rank's share of the statistics; the weight's and bias's gradients
# stay local (DDP averages them like any other parameter's). Outside
# training, without a group or with one rank, it is BatchNorm.

def _stats_shape(x):
    c = x.shape[1]
    return c, [0] + list(range(2, x.dim())), [1, c] + [1] * (x.dim() - 2)


def _sync_forward(ctx, x, weight, bias, running_mean, running_var, eps, momentum, group):
    from ... import cat, distributed as dist, no_grad, tensor, zeros

    c, dims, shape = _stats_shape(x)
    n_local = x.numel() // c if c else 0
    with no_grad():
        if n_local > 0:
            mean = x.mean(dims)
            var = ((x - mean.view(shape)) ** 2).mean(dims)
        else:
            mean, var = zeros(c, dtype=x.dtype), zeros(c, dtype=x.dtype)
        mine = cat([mean, var, tensor([float(n_local)], dtype=x.dtype)])
        world = dist.get_world_size(group)
        every = zeros(world * (2 * c + 1), dtype=x.dtype)
        dist.all_gather_into_tensor(every, mine, group=group)
        every = every.view(world, 2 * c + 1)
        means, vars_, counts = every[:, :c], every[:, c:2 * c], every[:, 2 * c:]
        n = counts.sum().item()
        if n <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                             f"{list(x.shape)} on this rank and {int(n)} values per channel in all")
        g_mean = (means * counts).sum(0) / n
        g_var = ((vars_ + (means - g_mean) ** 2) * counts).sum(0) / n
        invstd = (g_var + eps).rsqrt()
        if running_mean is not None:
            running_mean.mul_(1 - momentum).add_(g_mean * momentum)
            running_var.mul_(1 - momentum).add_(g_var * (n / (n - 1)) * momentum)
        xhat = (x - g_mean.view(shape)) * invstd.view(shape)
        y = xhat if weight is None else xhat * weight.view(shape)
        if bias is not None:
            y = y + bias.view(shape)
    ctx.save_for_backward(xhat, invstd, weight)
    ctx.group, ctx.n, ctx.has_bias = group, n, bias is not None
    return y


def _sync_backward(ctx, dy):
    from ... import cat, distributed as dist, no_grad

    xhat, invstd, weight = ctx.saved_tensors
    c, dims, shape = _stats_shape(dy)
    with no_grad():
        sum_dy = dy.sum(dims)
        sum_dy_xhat = (dy * xhat).sum(dims)
        grad_x = None
        if ctx.needs_input_grad[0]:
            both = cat([sum_dy, sum_dy_xhat])
            dist.all_reduce(both, group=ctx.group)
            g_dy, g_dy_xhat = both[:c] / ctx.n, both[c:] / ctx.n
            scale = invstd if weight is None else invstd * weight
            grad_x = (dy - g_dy.view(shape) - xhat * g_dy_xhat.view(shape)) * scale.view(shape)
        grad_w = sum_dy_xhat if weight is not None and ctx.needs_input_grad[1] else None
        grad_b = sum_dy if ctx.has_bias and ctx.needs_input_grad[2] else None
    return grad_x, grad_w, grad_b, None, None, None, None, None


class _SyncBatchNormFunction(Function):
    """Batch norm over every rank's batch (Note [SyncBatchNorm])."""

    @staticmethod
    def forward(ctx, x, weight, bias, running_mean, running_var, eps, momentum, group):
        return _sync_forward(ctx, x, weight, bias, running_mean, running_var, eps, momentum, group)

    @staticmethod
    def backward(ctx, dy):
        return _sync_backward(ctx, dy)


class SyncBatchNorm(_BatchNorm):
    """Batch norm whose statistics, in training, are those of every rank's
    batch together (Note [SyncBatchNorm]); outside training, or without
    a process group of more than one rank, it is BatchNorm."""

    _dims = (2, 3, 4, 5)

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 process_group=None, device=None, dtype=None):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, dtype=dtype)
        self.process_group = process_group

    def forward(self, input):
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")
        group = _sync_group(self.process_group) if self.training else None
        if group is None:
            return super().forward(input)
        if input.shape[1] != self.num_features:
            raise ValueError(f"SyncBatchNorm: expected {self.num_features} channels, got input of "
                             f"shape {list(input.shape)}")
        momentum = self._step_momentum()
        tracked = self.track_running_stats
        return _SyncBatchNormFunction.apply(
            input, self.weight, self.bias, self.running_mean if tracked else None,
            self.running_var if tracked else None, self.eps, momentum, group)
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

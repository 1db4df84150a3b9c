"""``torch.nn.parallel.DistributedDataParallel`` on ``torch.distributed``.

# Note [DDP's reducer]
As PyTorch's Reducer: at construction the parameters and buffers are
broadcast from rank 0; the parameters are grouped into buckets in reverse
registration order (backward produces gradients roughly in that order),
the first bucket small (1 MiB) so communication starts early, the rest
``bucket_cap_mb``. A post-accumulate-grad hook marks each parameter ready;
each bucket is one flat tensor, and a parameter's gradient is copied into
its slice as it arrives (with ``gradient_as_bucket_view=True`` the
``.grad`` *is* that slice from the first step on, so backward accumulates
straight into the bucket and nothing is copied in or out). When a
bucket's parameters all are ready it is all-reduced asynchronously on the
group's thread (the engine runs while backward goes on). A callback
queued on the autograd engine runs when backward ends: it waits for
every bucket, averages it in place and hands the gradients back. A parameter that got no gradient is an error naming it,
unless ``find_unused_parameters`` (then its gradient is taken as zero, as
every rank must reduce the same buckets). ``no_sync()`` skips all of it
for gradient accumulation; the next synchronised backward reduces the
accumulated gradients.
"""

import contextlib

from ..modules.module import Module

__all__ = ["DistributedDataParallel"]

_FIRST_BUCKET_BYTES = 1 << 20


class DistributedDataParallel(Module):
    """``module`` trained by every rank of ``process_group`` on its own
    share of the data, gradients averaged over the ranks each backward
    (Note [DDP's reducer])."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=True,
                 process_group=None, bucket_cap_mb=None, find_unused_parameters=False,
                 check_reduction=False, gradient_as_bucket_view=False, static_graph=False,
                 delay_all_reduce_named_params=None, param_to_hook_all_reduce=None,
                 mixed_precision=None, device_mesh=None):
        super().__init__()
        from ... import distributed as dist
        from ... import no_grad

        if device_ids is not None and list(device_ids) not in ([], [None]):
            raise ValueError("DistributedDataParallel: device_ids is for accelerators; "
                             "this is a CPU module (leave it None)")
        self.module = module
        self.process_group = process_group if process_group is not None else dist.group.WORLD
        if self.process_group is None:
            raise ValueError("Default process group has not been initialized, please make sure to "
                             "call init_process_group.")
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.require_backward_grad_sync = True
        self._world = dist.get_world_size(self.process_group)
        src = dist.get_global_rank(self.process_group, 0)
        with no_grad():
            for t in list(module.parameters()) + list(module.buffers()):
                dist.broadcast(t, src=src, group=self.process_group)
        named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        self._names = {id(p): n for n, p in named}
        cap = int((25 if bucket_cap_mb is None else bucket_cap_mb) * (1 << 20))
        self._buckets, current, size = [], [], 0
        for n, p in reversed(named):
            current.append(p)
            size += p.numel() * p.element_size()
            limit = _FIRST_BUCKET_BYTES if not self._buckets else cap
            if size >= limit:
                self._buckets.append(current)
                current, size = [], 0
        if current:
            self._buckets.append(current)
        self._bucket_of = {id(p): i for i, b in enumerate(self._buckets) for p in b}
        from ... import zeros

        self._flat, self._slices = [], {}
        for b in self._buckets:
            flat = zeros(sum(p.numel() for p in b), dtype=b[0].dtype)
            at = 0
            for p in b:
                self._slices[id(p)] = flat[at:at + p.numel()].view(p.shape)
                at += p.numel()
            self._flat.append(flat)
        for _, p in named:
            p.register_post_accumulate_grad_hook(self._ready)
        self._reset()

    def _reset(self):
        self._pending = [len(b) for b in self._buckets]
        self._seen = set()
        self._works = {}
        self._queued = False

    @contextlib.contextmanager
    def no_sync(self):
        """Backwards inside accumulate gradients locally, unreduced."""
        before = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = before

    def forward(self, *inputs, **kwargs):
        from ... import distributed as dist
        from ... import no_grad

        if self.broadcast_buffers and self.training:
            src = dist.get_global_rank(self.process_group, 0)
            with no_grad():
                for b in self.module.buffers():
                    dist.broadcast(b, src=src, group=self.process_group)
        self._reset()
        return self.module(*inputs, **kwargs)

    def _ready(self, p):
        if not self.require_backward_grad_sync:
            return
        from ...autograd.graph import queue_callback

        if not self._queued:
            self._queued = True
            queue_callback(self._finish)
        if id(p) in self._seen:
            return
        self._seen.add(id(p))
        self._into_bucket(p)
        i = self._bucket_of[id(p)]
        self._pending[i] -= 1
        if self._pending[i] == 0:
            self._launch(i)

    def _is_slice(self, p, g):
        s = self._slices[id(p)]
        return g.data_ptr() == s.data_ptr() and g.shape == s.shape

    def _into_bucket(self, p):
        """``p``'s gradient into its slice of the bucket (zeros if none)."""
        from ... import no_grad

        s, g = self._slices[id(p)], p.grad
        with no_grad():
            if g is None:
                s.zero_()
            elif not self._is_slice(p, g):
                s.copy_(g)
                if self.gradient_as_bucket_view:
                    p.grad = s

    def _launch(self, i):
        from ... import distributed as dist

        flat = self._flat[i]
        self._works[i] = (flat, dist.all_reduce(flat, group=self.process_group, async_op=True))

    def _finish(self):
        from ... import no_grad

        missing = [self._names[id(p)] for b in self._buckets for p in b if id(p) not in self._seen]
        if missing and not self.find_unused_parameters:
            self._reset()
            raise RuntimeError(
                "DistributedDataParallel: these parameters received no gradient in this backward "
                f"pass: {', '.join(missing)}. If the forward does not use them every step, pass "
                "find_unused_parameters=True (then every rank reduces them as zeros).")
        for b in self._buckets:
            for p in b:
                if id(p) not in self._seen:
                    self._into_bucket(p)  # unused: reduced as zeros
        for i in range(len(self._buckets)):
            if i not in self._works:
                self._launch(i)
        with no_grad():
            for i, bucket in enumerate(self._buckets):
                flat, work = self._works[i]
                work.wait()
                flat.div_(self._world)
                for p in bucket:
                    s = self._slices[id(p)]
                    if p.grad is None:
                        p.grad = s if self.gradient_as_bucket_view else s.clone()
                    elif not self._is_slice(p, p.grad):
                        p.grad.copy_(s)
        self._reset()

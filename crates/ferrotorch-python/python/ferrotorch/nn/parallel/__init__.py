"""``torch.nn.parallel``: data parallelism within one process.

There is no accelerator here (``torch.accelerator.is_available()`` is
False), so ``DataParallel`` is what torch's is without devices: it keeps
the module and calls it, and its ``state_dict`` keys carry the
``module.`` prefix as torch's do. ``scatter``, ``gather``, ``replicate``
and ``parallel_apply`` do their work on CPU tensors (chunks, a
concatenation, copies, threads). ``DistributedDataParallel`` runs on
``torch.distributed`` (``distributed.py``).
"""

import copy
import threading

from ... import _C, cat
from ..modules.module import Module

__all__ = ["replicate", "scatter", "parallel_apply", "gather", "data_parallel", "DataParallel",
           "DistributedDataParallel"]


def scatter(inputs, target_gpus, dim=0):
    """Split each tensor of ``inputs`` (through tuples, lists and dicts)
    into ``len(target_gpus)`` chunks along ``dim``; one input per target."""
    n = len(target_gpus)

    def split(obj):
        if isinstance(obj, _C.Tensor):
            return list(obj.chunk(n, dim))
        if isinstance(obj, tuple) and obj:
            return list(zip(*map(split, obj)))
        if isinstance(obj, list) and obj:
            return [list(x) for x in zip(*map(split, obj))]
        if isinstance(obj, dict) and obj:
            return [type(obj)(zip(obj.keys(), vals)) for vals in zip(*map(split, obj.values()))]
        return [obj] * n

    return split(inputs)


def scatter_kwargs(inputs, kwargs, target_gpus, dim=0):
    """``scatter`` of the positional and keyword arguments, padded to the
    same count."""
    inputs = scatter(inputs, target_gpus, dim) if inputs else []
    kwargs = scatter(kwargs, target_gpus, dim) if kwargs else []
    if len(inputs) < len(kwargs):
        inputs.extend(() for _ in range(len(kwargs) - len(inputs)))
    elif len(kwargs) < len(inputs):
        kwargs.extend({} for _ in range(len(inputs) - len(kwargs)))
    return tuple(inputs), tuple(kwargs)


def gather(outputs, target_device, dim=0):
    """Concatenate the outputs (through tuples, lists and dicts) along ``dim``."""

    def join(outs):
        first = outs[0]
        if isinstance(first, _C.Tensor):
            return cat([o if o.dim() else o.unsqueeze(0) for o in outs], dim if first.dim() else 0)
        if first is None:
            return None
        if isinstance(first, dict):
            if not all(len(first) == len(d) for d in outs):
                raise ValueError("All dicts must have the same number of keys")
            return type(first)((k, join([d[k] for d in outs])) for k in first)
        return type(first)(map(join, zip(*outs)))

    return join(outputs)


def replicate(network, devices, detach=False):
    """Copies of ``network``, one per device (on the CPU: deep copies, whose
    parameters are detached when ``detach``)."""
    out = []
    for _ in devices:
        m = copy.deepcopy(network)
        if detach:
            for p in m.parameters():
                p.requires_grad_(False)
        out.append(m)
    return out


def parallel_apply(modules, inputs, kwargs_tup=None, devices=None):
    """Run ``modules[i](*inputs[i], **kwargs_tup[i])`` on threads; the
    outputs in order (an exception in one is raised here)."""
    if len(modules) != len(inputs):
        raise AssertionError(f"The number of modules {len(modules)} is not equal to the number of inputs {len(inputs)}")
    kwargs_tup = kwargs_tup if kwargs_tup is not None else ({},) * len(modules)
    results = [None] * len(modules)
    from ...autograd.grad_mode import is_grad_enabled, set_grad_enabled

    grad = is_grad_enabled()

    def work(i, module, x, kw):
        try:
            with set_grad_enabled(grad):
                results[i] = module(*(x if isinstance(x, (list, tuple)) else (x,)), **kw)
        except Exception as e:  # noqa: BLE001  re-raised below, in order
            results[i] = e

    threads = [threading.Thread(target=work, args=(i, m, x, kw))
               for i, (m, x, kw) in enumerate(zip(modules, inputs, kwargs_tup))]
    if len(threads) == 1:
        work(0, modules[0], inputs[0], kwargs_tup[0])
    else:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    for r in results:
        if isinstance(r, Exception):
            raise r
    return results


class DataParallel(Module):
    """Split the batch over devices and run a replica on each; with no
    accelerator (here) it holds the module and calls it directly."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        self.module = module
        self.device_ids = []
        self.dim = dim
        self.output_device = None
        self.src_device_obj = None
        if device_ids:
            import warnings

            warnings.warn("DataParallel: no accelerator is available, so device_ids are ignored and the "
                          "module runs on the CPU")

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)

    def replicate(self, module, device_ids):
        return replicate(module, device_ids, not self.training)

    def scatter(self, inputs, kwargs, device_ids):
        return scatter_kwargs(inputs, kwargs, device_ids, dim=self.dim)

    def parallel_apply(self, replicas, inputs, kwargs):
        return parallel_apply(replicas, inputs, kwargs, self.device_ids[:len(replicas)])

    def gather(self, outputs, output_device):
        return gather(outputs, output_device, dim=self.dim)


def data_parallel(module, inputs, device_ids=None, output_device=None, dim=0, module_kwargs=None):
    """The functional ``DataParallel``: ``module(*inputs, **module_kwargs)``
    without an accelerator."""
    if not isinstance(inputs, tuple):
        inputs = (inputs,) if inputs is not None else ()
    return module(*inputs, **(module_kwargs or {}))


from .distributed import DistributedDataParallel  # noqa: E402

"""Rebuilding tensors from pickles: raw bytes, dtype name and shape only,
so unpickling a tensor never runs code of the pickle's choosing."""

from . import _C


def _rebuild_tensor(data, dtype, shape, requires_grad):
    t = _C._from_bytes(data, dtype, list(shape))
    if requires_grad:
        t.requires_grad_(True)
    return t


def _rebuild_parameter(data, dtype, shape, requires_grad):
    from .nn.parameter import Parameter

    return Parameter(_C._from_bytes(data, dtype, list(shape)), requires_grad)

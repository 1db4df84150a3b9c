"""``ShapeProp``: run a ``GraphModule`` on example inputs and record on each
node what it produced: ``node.meta['tensor_meta']`` (a ``TensorMetadata``:
shape, dtype, requires_grad, stride, memory format) for tensors, nested
for tuples and lists of them, and ``node.meta['type']``."""

import contextlib
from typing import NamedTuple

from ..interpreter import Interpreter
from ..node import map_aggregate


class TensorMetadata(NamedTuple):
    """What ShapeProp records about a tensor."""

    shape: object
    dtype: object
    requires_grad: bool
    stride: tuple
    memory_format: object
    is_quantized: bool
    qparams: dict


def _extract_tensor_metadata(result, include_contiguity=True):
    import ferrotorch

    memory_format = None
    if include_contiguity:
        for fmt in (ferrotorch.contiguous_format, ferrotorch.channels_last, ferrotorch.channels_last_3d):
            try:
                if result.is_contiguous(memory_format=fmt):
                    memory_format = fmt
                    break
            except (RuntimeError, TypeError, ValueError):
                continue
    return TensorMetadata(result.shape, result.dtype, result.requires_grad, result.stride(), memory_format,
                          False, {})


@contextlib.contextmanager
def enable_python_dispatcher():
    """torch's switch to its Python dispatcher for fake tensors; here ops
    always dispatch the one way, so the block runs as it is."""
    yield


class ShapeProp(Interpreter):
    """``ShapeProp(gm).propagate(*args)`` records each node's output
    metadata."""

    def __init__(self, gm, fake_mode=None):
        super().__init__(gm)
        self.fake_mode = fake_mode
        self.real_module = self.module

    def run_node(self, n):
        import ferrotorch

        result = super().run_node(n)
        found = [False]

        def meta(x):
            if isinstance(x, ferrotorch.Tensor):
                found[0] = True
                return _extract_tensor_metadata(x)
            return x

        tm = map_aggregate(result, meta)
        if found[0]:
            n.meta["tensor_meta"] = tm
        n.meta["type"] = type(result)
        return result

    def propagate(self, *args):
        """Run the module on ``args``, filling the nodes' ``meta``."""
        return super().run(*args)

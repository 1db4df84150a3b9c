"""``torch.autograd.graph``: hooks on the backward graph (Note [Graph
hooks] in the core's ``autograd/graph_hooks.rs``): saved-tensor hooks
(``saved_tensors_hooks``, ``save_on_cpu``, ``disable_saved_tensors_hooks``,
``allow_mutation_on_saved_tensors``), node hooks (``Node.register_hook``,
``Node.register_prehook``), ``register_multi_grad_hook``,
``queue_callback``, ``node_creation_hook`` and ``increment_version``."""

import contextlib
import threading
from typing import NamedTuple

from .. import _C

__all__ = ["saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks", "node_creation_hook",
           "register_multi_grad_hook", "allow_mutation_on_saved_tensors", "Node", "increment_version",
           "queue_callback", "GradientEdge", "get_gradient_edge"]

Node = _C.Node


class GradientEdge(NamedTuple):
    """An edge of the backward graph: output ``output_nr`` of ``node``
    (what ``autograd.grad`` can take in place of a tensor)."""

    node: Node
    output_nr: int


def get_gradient_edge(tensor):
    """The edge gradients of ``tensor`` flow into: its ``grad_fn`` and
    ``output_nr``, or for a leaf its gradient accumulator."""
    node, nr = _C._gradient_edge(tensor)
    return GradientEdge(node, nr)


class _Disabled(threading.local):
    message = None


_disabled = _Disabled()


class saved_tensors_hooks:
    """Within it, each tensor a recorded op saves for backward goes to
    ``pack_hook`` and only its result is kept; backward gets the tensor back
    from ``unpack_hook`` (the innermost pair applies, per thread)."""

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        if _disabled.message is not None:
            raise RuntimeError(_disabled.message)
        _C._push_saved_tensors_hooks(self.pack_hook, self.unpack_hook)

    def __exit__(self, *args):
        _C._pop_saved_tensors_hooks()


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors kept on the CPU (copied into pinned memory with
    ``pin_memory``), moved back to their device for backward. Every tensor
    is on the CPU here, so they are kept as they are."""

    def __init__(self, pin_memory=False, device_type="cuda"):
        def pack_to_cpu(tensor):
            if not pin_memory:
                return (tensor.device, tensor.cpu())
            packed = _ft().empty(tensor.size(), dtype=tensor.dtype)
            packed.copy_(tensor)
            return (tensor.device, packed)

        def unpack_from_cpu(packed):
            device, tensor = packed
            return tensor.to(device)

        super().__init__(pack_to_cpu, unpack_from_cpu)


def _ft():
    import ferrotorch

    return ferrotorch


@contextlib.contextmanager
def disable_saved_tensors_hooks(error_message):
    """Within it, entering saved-tensor hooks raises RuntimeError with
    ``error_message``."""
    prev = _disabled.message
    _disabled.message = error_message
    try:
        yield
    finally:
        _disabled.message = prev


@contextlib.contextmanager
def allow_mutation_on_saved_tensors():
    """Within it, a tensor saved for backward may be changed in place
    afterwards: backward uses the value it had when saved (each saved
    tensor is kept as a copy)."""
    with saved_tensors_hooks(lambda t: t.clone(), lambda t: t):
        yield _AllowMutationContext()


class _AllowMutationContext:
    """What ``allow_mutation_on_saved_tensors`` yields."""


class node_creation_hook:
    """Within it, ``hook(node)`` is called with each graph node recorded,
    once complete (nested: every active hook, outermost first; recording a
    node inside the hook is an error)."""

    def __init__(self, hook):
        self.hook = hook

    def __enter__(self):
        _C._push_node_creation_hook(self.hook)
        return self

    def __exit__(self, *args):
        _C._pop_node_creation_hook()


def increment_version(tensor):
    """Count an in-place change made outside the ops (a node that saved the
    tensor then refuses to use it)."""
    if isinstance(tensor, _C.Tensor):
        tensor = (tensor,)
    _C._increment_version(list(tensor))


def queue_callback(callback):
    """Run ``callback()`` when the backward running now has finished (an
    error outside backward)."""
    _C._queue_callback(callback)


class _MultiHandle:
    """Removes every per-tensor hook of a ``register_multi_grad_hook``."""

    def __init__(self, handles):
        self.handles = handles

    def remove(self):
        for h in self.handles:
            h.remove()

    def __enter__(self):
        return self

    def __exit__(self, *args):
        self.remove()


def register_multi_grad_hook(tensors, fn, *, mode="all"):
    """``mode='all'``: ``fn(grads)`` once per backward, with each tensor's
    gradient (None for those that got none), when the backward has
    computed them; ``mode='any'``: ``fn(grad)`` with the first of them."""
    if mode not in ("all", "any"):
        raise ValueError(f"Expects mode to be one of ('all', 'any') but got {mode}")
    tensors = list(tensors)
    handles = []
    if mode == "any":
        state = {"fired": False}

        def any_hook(grad):
            if not state["fired"]:
                state["fired"] = True
                queue_callback(lambda: state.update(fired=False))
                fn(grad)

        for t in tensors:
            if t.requires_grad:
                handles.append(t.register_hook(any_hook))
        return _MultiHandle(handles)

    state = {"grads": None}

    def finish():
        grads, state["grads"] = state["grads"], None
        fn(grads)

    def make(i):
        def hook(grad):
            if state["grads"] is None:
                state["grads"] = [None] * len(tensors)
                queue_callback(finish)
            state["grads"][i] = grad

        return hook

    for i, t in enumerate(tensors):
        if t.requires_grad:
            handles.append(t.register_hook(make(i)))
    return _MultiHandle(handles)

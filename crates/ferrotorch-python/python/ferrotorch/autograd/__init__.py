"""``torch.autograd``: ``backward``, ``grad``, ``Function``, grad modes,
``gradcheck`` and ``functional``."""

from .. import _C
from .grad_mode import (enable_grad, inference_mode, is_grad_enabled,
                        is_inference_mode_enabled, no_grad, set_grad_enabled)
from .function import Function, FunctionCtx
from .gradcheck import GradcheckError, gradcheck, gradgradcheck


def _seq(x):
    if x is None:
        return None
    if isinstance(x, _C.Tensor):
        return [x]
    return list(x)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate gradients of ``tensors`` into the leaves' ``.grad`` (only
    into ``inputs``' ``.grad`` when given)."""
    if inputs is not None:
        ins = _seq(inputs)
        if not ins:
            raise RuntimeError("'inputs' argument to backward() cannot be empty.")
        got = _C._grad(_seq(tensors), ins, _seq(grad_tensors), retain_graph, create_graph, True)
        from .grad_mode import set_grad_enabled

        with set_grad_enabled(create_graph):
            for x, g in zip(ins, got):
                if g is None:
                    continue
                g = g if create_graph else g.detach()
                x.grad = g if x.grad is None else x.grad + g
        return
    _C._backward(_seq(tensors), _seq(grad_tensors), retain_graph, create_graph)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """Gradients of ``outputs`` with respect to ``inputs`` (tensors or
    ``graph.GradientEdge``s), as a tuple. With ``is_grads_batched``, the
    first dim of each of ``grad_outputs`` is a batch of vectors: one
    vector-Jacobian product each, stacked."""
    ins = _seq(inputs)
    outs, gos = _seq(outputs), _seq(grad_outputs)
    if is_grads_batched:
        if gos is None:
            raise RuntimeError("torch.autograd.grad: is_grads_batched=True needs grad_outputs")
        n = gos[0].shape[0]
        rows = [grad(outs, ins, [g[i] for g in gos], retain_graph=True if i < n - 1 else retain_graph,
                     create_graph=create_graph, allow_unused=True) for i in range(n)]
        got = [None if rows[0][k] is None else _stack([r[k] for r in rows]) for k in range(len(ins))]
        if not (allow_unused or materialize_grads) and any(g is None for g in got):
            i = next(k for k, g in enumerate(got) if g is None)
            raise RuntimeError(f"One of the differentiated Tensors (input {i}) appears to not have been used in the "
                               "graph. Set allow_unused=True if this is the desired behavior.")
    elif any(isinstance(i, graph.GradientEdge) for i in ins):
        edges = [i if isinstance(i, graph.GradientEdge) else graph.get_gradient_edge(i) for i in ins]
        got = _C._grad_edges(outs, [e.node for e in edges], [e.output_nr for e in edges], gos, retain_graph,
                             create_graph, bool(allow_unused) or materialize_grads)
    else:
        got = _C._grad(outs, ins, gos, retain_graph, create_graph, bool(allow_unused) or materialize_grads)
    if materialize_grads:
        got = [g if g is not None else i.new_zeros(i.shape) for g, i in zip(got, ins)]
    return tuple(got)


def _stack(ts):
    import ferrotorch

    return ferrotorch.stack(ts)


from . import forward_ad, functional, graph, profiler  # noqa: E402,F401
from . import variable  # noqa: E402,F401
from .anomaly_mode import detect_anomaly, set_detect_anomaly  # noqa: E402,F401
from .profiler import DeviceType, ProfilerActivity, ProfilerConfig, ProfilerState, kineto_available  # noqa: E402,F401
from .variable import Variable  # noqa: E402,F401
from ..overrides import handle_torch_function, has_torch_function  # noqa: E402,F401

_multithreading = [True]
_grad_layout_policy = [True]


def is_multithreading_enabled():
    """Whether backward may run device threads (torch's switch; the CPU's
    backward always runs on the calling thread, so it changes nothing here)."""
    return _multithreading[0]


class set_multithreading_enabled:  # noqa: N801 - torch's name
    """Set ``is_multithreading_enabled()`` (and restore it after a block)."""

    def __init__(self, mode):
        self.prev = _multithreading[0]
        _multithreading[0] = bool(mode)

    def __enter__(self):
        pass

    def __exit__(self, *args):
        _multithreading[0] = self.prev


def is_view_replay_enabled():
    """Whether views are replayed as view ops after in-place changes of
    their base under functionalization: no (views here share storage)."""
    return False


class enforce_grad_layout_policy:  # noqa: N801 - torch's name
    """torch's switch for the gradient-layout contract of accumulated
    gradients. Here ``.grad`` is always made in the parameter's layout and
    a gradient of another layout is never stolen, so the policy holds
    either way; the flag is kept for programs that set it."""

    def __init__(self, enable=True):
        self.prev = _grad_layout_policy[0]
        _grad_layout_policy[0] = bool(enable)

    def __enter__(self):
        pass

    def __exit__(self, *args):
        _grad_layout_policy[0] = self.prev

__all__ = ["backward", "grad", "Function", "FunctionCtx", "no_grad", "enable_grad",
           "set_grad_enabled", "inference_mode", "is_grad_enabled",
           "is_inference_mode_enabled", "functional"]

"""``torch.jit``: ``trace`` a function or module to a graph (recorded
through the dispatcher: every op the Python code runs, by operator, method
or function), ``is_tracing``, and ``ScriptModule`` to run the graph.

Saving and loading programs, passes and ``optimize_for_inference`` come
with the rest of issue 19."""

import warnings

from .. import _C

__all__ = ["trace", "trace_module", "is_tracing", "ScriptModule", "TracerWarning",
           "TracingCheckError"]


class TracerWarning(Warning):
    """A traced value left the graph, or the trace may not generalise."""


class TracingCheckError(Exception):
    """``check_trace`` found the traced graph disagreeing with the Python
    function."""


def is_tracing():
    """Whether this thread is tracing."""
    return _C._jit_is_tracing()


class ScriptModule:
    """A traced function or module: ``m(*inputs)`` runs its graph;
    ``m.graph`` prints it as TorchScript does. A traced ``nn.Module`` reads
    the module's own parameters and buffers, so it trains them."""

    def __init__(self, native, original=None):
        self._c = native
        self._original = original

    def __call__(self, *args):
        return self._c.forward(*args)

    forward = __call__

    @property
    def graph(self):
        return self._c.graph

    @property
    def inlined_graph(self):
        # traced graphs record submodule calls inline already
        return self._c.graph

    def parameters(self, recurse=True):
        if self._original is None:
            return iter(())
        return self._original.parameters(recurse)

    def named_parameters(self, prefix="", recurse=True):
        if self._original is None:
            return iter(())
        return self._original.named_parameters(prefix, recurse)

    def train(self, mode=True):
        if self._original is not None:
            self._original.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def __repr__(self):
        name = type(self._original).__name__ if self._original is not None else "function"
        return f"RecursiveScriptModule(original_name={name})"


def _as_tuple(example_inputs):
    if isinstance(example_inputs, _C.Tensor):
        return (example_inputs,)
    return tuple(example_inputs)


def _check(traced, func, inputs, tolerance):
    want = func(*inputs)
    got = traced(*inputs)
    want = want if isinstance(want, (tuple, list)) else (want,)
    got = got if isinstance(got, (tuple, list)) else (got,)
    for i, (a, b) in enumerate(zip(got, want)):
        if a.shape != b.shape or not a.detach().allclose(b.detach(), rtol=tolerance, atol=tolerance,
                                                         equal_nan=True):
            raise TracingCheckError(
                f"Output nr {i + 1}. of the traced function does not match the corresponding "
                f"output of the Python function (trace checking found a divergence)")


def trace(func, example_inputs=None, optimize=None, check_trace=True, check_inputs=None,
          check_tolerance=1e-5, strict=True, _force_outplace=False, _module_class=None,
          _compilation_unit=None, example_kwarg_inputs=None, _store_inputs=True):
    """Run ``func(*example_inputs)`` once and record the ops it runs.
    ``func`` is a function of tensors or an ``nn.Module`` (its ``forward``
    is traced, its parameters and buffers become attributes). With
    ``check_trace``, the graph is run on ``check_inputs`` (or the example
    inputs) and compared with ``func``."""
    from ..nn import Module

    if example_inputs is None:
        raise RuntimeError("jit.trace: example_inputs are required (keyword inputs are not supported)")
    inputs = _as_tuple(example_inputs)
    if isinstance(func, Module):
        attrs = list(func.named_parameters()) + list(func.named_buffers())
        native = _C._jit_trace(func, inputs, attrs, type(func).__name__)
        traced = ScriptModule(native, func)
    else:
        native = _C._jit_trace(func, inputs, [], None)
        traced = ScriptModule(native)
    if check_trace:
        for ins in (check_inputs or [inputs]):
            _check(traced, func, _as_tuple(ins), check_tolerance)
    return traced


def trace_module(mod, inputs, optimize=None, check_trace=True, check_inputs=None,
                 check_tolerance=1e-5, strict=True, _force_outplace=False,
                 _module_class=None, _compilation_unit=None, example_inputs_is_kwarg=False,
                 _store_inputs=True):
    """``trace`` of ``mod``'s methods given as ``{"forward": inputs}``
    (only ``forward`` is supported)."""
    if set(inputs) != {"forward"}:
        raise RuntimeError("jit.trace_module: only the 'forward' method can be traced")
    return trace(mod, inputs["forward"], check_trace=check_trace, check_inputs=check_inputs,
                 check_tolerance=check_tolerance)

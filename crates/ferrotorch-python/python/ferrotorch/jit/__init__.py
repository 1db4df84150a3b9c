"""``torch.jit``: ``trace`` a function or module to a graph (recorded
through the dispatcher: every op the Python code runs, by operator, method
or function), ``is_tracing``, ``ScriptModule`` to run the graph, and
``save`` / ``load`` of programs as one checked file that runs without
Python (Note [Saved programs] in ``crates/ferrotorch-jit``).

Submodule calls are kept as ``prim::CallMethod`` nodes (``graph``;
``inlined_graph`` and saved programs are flat). ``freeze``,
``optimize_for_inference`` and ``torch._C._jit_pass_*`` run the passes
(Note [Pass order])."""

import builtins as _builtins
import os

from .. import _C, _files

__all__ = ["trace", "trace_module", "is_tracing", "ScriptModule", "TracerWarning",
           "TracingCheckError", "save", "load", "freeze", "optimize_for_inference",
           "compile_fx", "fx_to_wasm", "script", "ScriptFunction", "RecursiveScriptModule", "TracedModule",
           "TopLevelTracedModule", "ignore", "unused", "export", "interface", "annotate", "isinstance", "fork",
           "wait", "Future", "Attribute", "Error", "ScriptWarning", "fuser", "optimized_execution",
           "set_fusion_strategy", "strict_fusion", "script_if_tracing", "script_method"]


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
        _script_state["last_graph"] = self._c
        return self._c.forward(*args)

    forward = __call__

    @property
    def graph(self):
        """The graph (a ``torch._C.Graph``; ``str()`` prints it).
        ``torch._C._jit_pass_*(m.graph)`` rewrites it in place."""
        return self._c.graph

    @property
    def inlined_graph(self):
        """A copy of the graph with submodule calls inlined."""
        return self._c.inlined_graph

    @property
    def code(self):
        """The graph as TorchScript-style source."""
        return self._c.code

    def named_parameters(self, prefix="", recurse=True):
        """The traced module's parameters, or for a loaded program the
        attributes it saved as parameters (trainable tensors)."""
        if self._original is not None:
            return self._original.named_parameters(prefix, recurse)
        return ((prefix + ("." if prefix else "") + n, t) for n, t in self._c._attributes()
                if t.requires_grad)

    def parameters(self, recurse=True):
        return (t for _, t in self.named_parameters(recurse=recurse))

    def train(self, mode=True):
        if self._original is not None:
            self._original.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def save(self, f, _extra_files=None):
        """Write the program to a path or a binary file object."""
        save(self, f, _extra_files)

    def __repr__(self):
        name = type(self._original).__name__ if self._original is not None else "function"
        return f"RecursiveScriptModule(original_name={name})"


class TracedModule(ScriptModule):
    """A traced ``nn.Module`` (torch's class of ``jit.trace(module)``)."""


class TopLevelTracedModule(TracedModule):
    """What ``jit.trace`` of an ``nn.Module`` returns."""


def freeze(mod, preserved_attrs=None, optimize_numerics=True):
    """``torch.jit.freeze``: a copy whose parameters and buffers are
    constants (their current values), simplified by the passes; the module
    must be in eval mode, as torch requires."""
    if not _builtins.isinstance(mod, ScriptModule):
        raise RuntimeError("Freezing expects a ScriptModule as input. Please use torch.jit.script or torch.jit.trace to script your 'nn.Module'.")
    if mod._original is not None and mod._original.training:
        raise RuntimeError("Freezing is currently only implemented for modules in eval mode. Please call .eval() on your module before freezing.")
    if preserved_attrs:
        raise RuntimeError("jit.freeze: preserved_attrs are not supported")
    return ScriptModule(mod._c._run_pass("freeze")._run_pass("fold_convbn")._run_pass("optimize"))


def optimize_for_inference(mod, other_methods=None):
    """``torch.jit.optimize_for_inference``: freeze, then run the passes
    (Note [Pass order] in ``crates/ferrotorch-jit``)."""
    if not _builtins.isinstance(mod, ScriptModule):
        raise RuntimeError("optimize_for_inference expects a ScriptModule as input.")
    return ScriptModule(mod._c._run_pass("optimize_for_inference"))


def _run_pass(mod, name):
    """Run one pass (``dce``, ``cse``, ``peephole``, ``constant_propagation``,
    ``inline``, ``fold_convbn``, ``fuse``, ``freeze``, ``optimize``) on a copy
    of ``mod``; ``torch._C._jit_pass_*`` run them on a graph in place."""
    return ScriptModule(mod._c._run_pass(name), mod._original)


def save(m, f, _extra_files=None):
    """``torch.jit.save(m, f)``: ``f`` is a path or a binary file object."""
    if not _builtins.isinstance(m, ScriptModule):
        raise TypeError(f"jit.save expects a traced ScriptModule, got {type(m).__name__}")
    if _extra_files:
        raise RuntimeError("jit.save: _extra_files are not supported")
    if _builtins.isinstance(f, (str, os.PathLike)):
        m._c.save(os.fspath(f))
    else:
        # an empty BytesIO adopts the bytes (Note [Handing bytes to a BytesIO])
        _files.write_bytes(f, m._c._save_to_bytes())


def load(f, map_location=None, _extra_files=None):
    """``torch.jit.load(f)``: a program saved by ``jit.save`` or an
    archive PyTorch's ``torch.jit.trace(...).save()`` wrote (a path or a
    binary file object), checked before anything runs; its parameters are
    trainable tensors. ``_extra_files`` (a dict of names) is filled with
    the bytes of the archive's ``extra/<name>`` entries, ``b""`` for a
    name it lacks, as torch does."""
    if map_location not in (None, "cpu") and str(map_location) != "cpu":
        raise RuntimeError(f"jit.load: only map_location='cpu' is supported, got {map_location!r}")
    if _builtins.isinstance(f, (str, os.PathLike)):
        m = ScriptModule(_C._jit_load(os.fspath(f)))
        source = os.fspath(f)
    else:
        # a BytesIO is read in place (Note [Handing bytes to a BytesIO])
        data = _files.read_rest(f)
        m = ScriptModule(_C._jit_load_bytes(data))
        source = data
    if _extra_files:
        _read_extra_files(source, _extra_files)
    return m


def _read_extra_files(source, extra):
    """Fill ``extra`` from the ``<archive>/extra/`` entries of a zip that
    has already loaded (so it is a well-formed archive)."""
    import io
    import zipfile

    found = {}
    try:
        z = zipfile.ZipFile(source if _builtins.isinstance(source, str) else io.BytesIO(bytes(source)))
    except zipfile.BadZipFile:
        z = None  # a version 1 program: one safetensors file, no extra files
    if z is not None:
        with z:
            for name in z.namelist():
                parts = name.split("/", 2)
                if len(parts) == 3 and parts[1] == "extra" and parts[2] in extra:
                    found[parts[2]] = z.read(name)
    for k in extra:
        extra[k] = found.get(k, b"")


def _as_tuple(example_inputs):
    if _builtins.isinstance(example_inputs, (_C.Tensor, _C.ScriptObject)):
        return (example_inputs,)
    return tuple(example_inputs)


def _check(traced, func, inputs, tolerance):
    want = func(*inputs)
    got = traced(*inputs)
    want = want if _builtins.isinstance(want, (tuple, list)) else (want,)
    got = got if _builtins.isinstance(got, (tuple, list)) else (got,)
    for i, (a, b) in enumerate(zip(got, want)):
        if a.shape != b.shape or not a.detach().allclose(b.detach(), rtol=tolerance, atol=tolerance,
                                                         equal_nan=True):
            raise TracingCheckError(
                f"Output nr {i + 1}. of the traced function does not match the corresponding "
                f"output of the Python function (trace checking found a divergence)")


def trace(func, example_inputs=None, optimize=None, check_trace=True, check_inputs=None,
          check_tolerance=1e-5, strict=True, _force_outplace=False, _module_class=None,
          _compilation_unit=None, example_kwarg_inputs=None, _store_inputs=True,
          _outputs=None):
    """Run ``func(*example_inputs)`` once and record the ops it runs.
    ``func`` is a function of tensors or an ``nn.Module`` (its ``forward``
    is traced, its parameters and buffers become attributes). With
    ``check_trace``, the graph is run on ``check_inputs`` (or the example
    inputs) and compared with ``func``."""
    from ..nn import Module

    if example_inputs is None:
        raise RuntimeError("jit.trace: example_inputs are required (keyword inputs are not supported)")
    inputs = _as_tuple(example_inputs)
    call = func
    if _outputs is not None:
        # the traced run's own result, for a caller that must not run
        # the function twice (compile's first call)
        def call(*args):
            out = func(*args)
            _outputs.append(out)
            return out
    if _builtins.isinstance(func, Module):
        from ..nn.modules import module as _module

        attrs = list(func.named_parameters()) + list(func.named_buffers())
        _module._trace_names = {id(m): name for name, m in func.named_modules()}
        try:
            native = _C._jit_trace(call, inputs, attrs, type(func).__name__)
        finally:
            _module._trace_names = None
        traced = TopLevelTracedModule(native, func)
    else:
        native = _C._jit_trace(call, inputs, [], None)
        traced = ScriptModule(native)
    # running the function again would change the state of any custom
    # class object it was given (a queue it pushes to): no check then
    if check_trace and not any(_builtins.isinstance(x, _C.ScriptObject) for x in inputs):
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


from ._fx import compile_fx, fx_to_wasm  # noqa: E402
from ._script import (Attribute, Error, Future, RecursiveScriptModule, ScriptFunction, ScriptWarning,  # noqa: E402
                      annotate, enable_onednn_fusion, export, export_opnames, fork, fuser, ignore, interface,
                      last_executed_optimized_graph, onednn_fusion_enabled, optimized_execution,
                      run_frozen_optimizations, script, script_if_tracing, script_method, set_fusion_strategy,
                      strict_fusion, unused, wait)
from ._script import _jit_isinstance as isinstance  # noqa: E402,A001 (torch.jit.isinstance)
from ._script import _state as _script_state  # noqa: E402

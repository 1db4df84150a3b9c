"""``torch.jit.script`` and the TorchScript language's helpers, for the
programs that use them.

Note [Scripting runs Python]
----------------------------
TorchScript compiles a subset of Python whose meaning is Python's. There
is no TorchScript compiler here: ``torch.jit.script(fn_or_module)`` gives
a ``ScriptFunction`` or ``RecursiveScriptModule`` that runs the Python
code itself, so a scripted program computes what torch's does, data-
dependent control flow included. What needs the compiled graph — its
``graph``/``code``, ``save`` — fails with a message pointing at
``torch.jit.trace``, which records a graph and saves it as a program
(Note [Saved programs] in ``ferrotorch-jit``). The language's helpers
(``ignore``, ``unused``, ``export``, ``interface``, ``annotate``,
``isinstance``, ``fork``/``wait``, the fusion switches) do in eager mode
what torch's do there.
"""

import collections
import contextlib
import functools
import typing
import warnings

from . import ScriptModule

_NO_GRAPH = ("a scripted {what} runs its Python code here (there is no TorchScript compiler, Note [Scripting runs "
             "Python]): it has no graph to {verb}. Record one with torch.jit.trace(model, example_inputs) and "
             "{verb} that")


class Error(Exception):
    """``torch.jit.Error``: what a failing TorchScript ``raise`` becomes."""


class ScriptWarning(Warning):
    """A warning TorchScript compilation gives."""


Attribute = collections.namedtuple("Attribute", ["value", "type"])


class ScriptFunction:
    """A scripted function (Note [Scripting runs Python])."""

    def __init__(self, fn):
        self._fn = fn
        functools.update_wrapper(self, fn)

    def __call__(self, *args, **kwargs):
        return self._fn(*args, **kwargs)

    @property
    def graph(self):
        raise RuntimeError(_NO_GRAPH.format(what="function", verb="print"))

    @property
    def code(self):
        raise RuntimeError(_NO_GRAPH.format(what="function", verb="print"))

    def save(self, f, _extra_files=None):
        raise RuntimeError(_NO_GRAPH.format(what="function", verb="save"))


class RecursiveScriptModule(ScriptModule):
    """A scripted ``nn.Module`` (Note [Scripting runs Python]): calling it
    runs the module's ``forward``; its parameters, buffers, submodules and
    every other attribute are the module's."""

    def __init__(self, module):
        object.__setattr__(self, "_original", module)
        object.__setattr__(self, "_c", None)

    def __call__(self, *args, **kwargs):
        return self._original(*args, **kwargs)

    def forward(self, *args, **kwargs):
        return self._original(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.__dict__["_original"], name)

    def __setattr__(self, name, value):
        setattr(self._original, name, value)

    @property
    def graph(self):
        raise RuntimeError(_NO_GRAPH.format(what="module", verb="print"))

    @property
    def inlined_graph(self):
        raise RuntimeError(_NO_GRAPH.format(what="module", verb="print"))

    @property
    def code(self):
        raise RuntimeError(_NO_GRAPH.format(what="module", verb="print"))

    @property
    def training(self):
        return self._original.training

    def save(self, f, _extra_files=None):
        raise RuntimeError(_NO_GRAPH.format(what="module", verb="save"))

    def __repr__(self):
        return f"RecursiveScriptModule(original_name={type(self._original).__name__})"


def script(obj, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    """``torch.jit.script``: a module, a function or a class, to run as
    torch runs the scripted one (Note [Scripting runs Python])."""
    from ..nn import Module

    warnings.warn("`torch.jit.script` is deprecated. Please switch to `torch.compile` or `torch.export`.",
                  FutureWarning, stacklevel=2)
    if isinstance(obj, (ScriptModule, ScriptFunction)):
        return obj
    if isinstance(obj, Module):
        return RecursiveScriptModule(obj)
    if isinstance(obj, type):
        return obj
    if callable(obj):
        return ScriptFunction(obj)
    raise RuntimeError(f"torch.jit.script: cannot script an object of type {type(obj).__name__}")


def script_method(fn):
    """The legacy method decorator of ``ScriptModule`` subclasses."""
    return fn


def script_if_tracing(fn):
    """``fn``, scripted only when called while tracing (here: ``fn``)."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)

    wrapper.__original_fn = fn
    return wrapper


class _Modifier:
    EXPORT = "export (compile this function even if nothing calls it)"
    IGNORE = "ignore (leave as a call to Python, cannot be torch.jit.save'd)"
    UNUSED = "unused (ignore and replace with raising of an exception)"
    COPY_TO_SCRIPT_WRAPPER = "if this method is not scripted, copy the python method onto the scripted model"


def export(fn):
    """Mark a method for compilation even if ``forward`` does not call it."""
    fn._torchscript_modifier = _Modifier.EXPORT
    return fn


def unused(fn):
    """Mark a function the compiler replaces with a raise (eager: runs it)."""
    if isinstance(fn, property):
        for f in (fn.fget, fn.fset):
            if f is not None:
                f._torchscript_modifier = _Modifier.UNUSED
        return fn
    fn._torchscript_modifier = _Modifier.UNUSED
    return fn


def ignore(drop=False, **kwargs):
    """Leave a function as a call to Python (``@ignore`` or
    ``@ignore(drop=True)``)."""
    if callable(drop):
        drop._torchscript_modifier = _Modifier.IGNORE
        return drop
    if not isinstance(drop, bool):
        raise RuntimeError(f"Argument to @torch.jit.ignore must be a bool or a function but got {drop}")
    drop_on_export = kwargs.pop("drop_on_export", None)
    if drop_on_export:
        warnings.warn("ignore(drop_on_export=True) has been deprecated. TorchScript will now drop the function "
                      "call on compilation. Use torch.jit.unused now. {}", FutureWarning, stacklevel=2)
        drop = drop_on_export

    def decorator(fn):
        fn._torchscript_modifier = _Modifier.UNUSED if drop else _Modifier.IGNORE
        return fn

    return decorator


def interface(obj):
    """Mark a class as a TorchScript interface (eager: the class itself)."""
    if not isinstance(obj, type):
        raise RuntimeError("interface must be applied to a class")
    obj.__torch_script_interface__ = True
    return obj


def annotate(the_type, the_value):
    """Give ``the_value`` the TorchScript type ``the_type`` (eager: the value)."""
    return the_value


def _matches(obj, target):
    origin, args = typing.get_origin(target), typing.get_args(target)
    if target is typing.Any:
        return True
    if origin is None:
        if target in (list, dict, tuple) or target in (typing.List, typing.Dict, typing.Tuple):
            raise RuntimeError(f"Attempted to use {getattr(target, '__name__', target)} without a contained type. "
                               f"Please add a contained type, e.g. {getattr(target, '__name__', 'list')}[int]")
        if target is type(None):
            return obj is None
        return isinstance(obj, target)
    if origin is typing.Union:
        return any(_matches(obj, a) for a in args)
    if origin is list:
        return isinstance(obj, list) and all(_matches(v, args[0]) for v in obj)
    if origin is dict:
        return isinstance(obj, dict) and all(_matches(k, args[0]) and _matches(v, args[1]) for k, v in obj.items())
    if origin is tuple:
        if not isinstance(obj, tuple):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(_matches(v, args[0]) for v in obj)
        return len(obj) == len(args) and all(_matches(v, a) for v, a in zip(obj, args))
    return isinstance(obj, origin)


def _jit_isinstance(obj, target_type):
    """``torch.jit.isinstance``: ``isinstance`` that checks the contained
    types of ``List[int]``, ``Dict[str, Tensor]``, ``Optional[...]``."""
    return _matches(obj, target_type)


class Future:
    """``torch.futures.Future``: a value that is or will be ready."""

    def __init__(self, *, devices=None):
        self._done, self._value, self._error, self._callbacks = False, None, None, []

    def done(self):
        return self._done

    def wait(self):
        if self._error is not None:
            raise self._error
        return self._value

    def value(self):
        return self.wait()

    def set_result(self, result):
        if self._done:
            raise RuntimeError("Future can only be marked completed once")
        self._done, self._value = True, result
        for cb in self._callbacks:
            cb(self)

    def set_exception(self, result):
        if self._done:
            raise RuntimeError("Future can only be marked completed once")
        self._done, self._error = True, result
        for cb in self._callbacks:
            cb(self)

    def then(self, callback):
        """A Future of ``callback(self)`` once this one is done."""
        out = Future()

        def run(fut):
            try:
                out.set_result(callback(fut))
            except Exception as e:
                out.set_exception(e)

        self.add_done_callback(run)
        return out

    def add_done_callback(self, callback):
        if self._done:
            callback(self)
        else:
            self._callbacks.append(callback)


def fork(func, *args, **kwargs):
    """``torch.jit.fork``: a Future of ``func(*args, **kwargs)``; in eager
    mode torch runs it at once, as here."""
    warnings.warn("`torch.jit.fork` is deprecated. Please use `torch.compile` instead.", FutureWarning,
                  stacklevel=2)
    fut = Future()
    try:
        fut.set_result(func(*args, **kwargs))
    except Exception as e:
        fut.set_exception(e)
    return fut


def wait(future):
    """``torch.jit.wait``: the Future's value."""
    warnings.warn("`torch.jit.wait` is deprecated. Please use `torch.compile` instead.", FutureWarning,
                  stacklevel=2)
    return future.wait()


# ---- fusion and optimisation switches ----

_state = {"optimized": True, "fuser": "fuser0", "strategy": [("STATIC", 2), ("DYNAMIC", 10)], "onednn": False,
          "last_graph": None}
_FUSERS = ("fuser0", "fuser1", "fuser2", "fuser3", "none")


@contextlib.contextmanager
def optimized_execution(should_optimize):
    """Run traced programs optimized or not within the block."""
    prev = _state["optimized"]
    _state["optimized"] = bool(should_optimize)
    try:
        yield
    finally:
        _state["optimized"] = prev


@contextlib.contextmanager
def fuser(name):
    """Choose TorchScript's fuser (``fuser0`` legacy, ``fuser1`` NNC,
    ``fuser2`` nvFuser, ``fuser3`` oneDNN, ``none``) within the block;
    traced programs here are fused by ferrotorch's own pass either way."""
    if name not in _FUSERS:
        raise Exception(f"unrecognized fuser option (name: {name})")  # noqa: TRY002 (torch's exception)
    prev = _state["fuser"]
    _state["fuser"] = name
    try:
        yield
    finally:
        _state["fuser"] = prev


def set_fusion_strategy(strategy):
    """Set the fusion strategy (``[("STATIC", n), ("DYNAMIC", m)]``);
    returns the previous one."""
    for kind, depth in strategy:
        if kind not in ("STATIC", "DYNAMIC") or not isinstance(depth, int):
            raise RuntimeError(f"invalid fusion strategy entry {(kind, depth)}")
    prev = _state["strategy"]
    _state["strategy"] = list(strategy)
    return prev


class strict_fusion:  # noqa: N801 - torch's name
    """Inside a scripted function, require its nodes to fuse; in eager mode
    (and so here) the block just runs."""

    def __enter__(self):
        return self

    def __exit__(self, *args):
        return False


def enable_onednn_fusion(enabled):
    """Turn TorchScript's oneDNN fusion on or off."""
    _state["onednn"] = bool(enabled)


def onednn_fusion_enabled():
    return _state["onednn"]


def last_executed_optimized_graph():
    """The graph of the traced program that ran last (None before any)."""
    last = _state["last_graph"]
    return None if last is None else last.graph


def run_frozen_optimizations(mod, optimize_numerics=True, preserved_methods=None):
    """Run the optimization passes on a frozen module, in place."""
    if not hasattr(mod, "_c") or mod._c is None:
        raise RuntimeError("run_frozen_optimizations expects a frozen traced module (torch.jit.freeze)")
    mod._c = mod._c._run_pass("optimize")


def export_opnames(m):
    """The operators a traced program calls (``aten::add``, ...), sorted."""
    import re

    return sorted(set(re.findall(r"\b((?:aten|prim|[A-Za-z_]\w*)::[A-Za-z_]\w*(?:\.\w+)?)", str(m.inlined_graph))))

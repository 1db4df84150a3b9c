"""What symbolic tracing records as one call instead of tracing into it:
functions named by ``fx.wrap`` at a module's top level (patched in that
module's globals while tracing), a tracer's ``autowrap_functions``, and
classes built by ``ProxyableClassMeta``."""

import builtins
import functools
import inspect

# (id of a module's globals, name) -> those globals
_wrapped_fns_to_patch = {}
_proxyable_classes = {}
_tracing = [0]  # how many traces are running (``is_fx_tracing``)


def is_fx_tracing():
    """Whether a symbolic trace is running."""
    return _tracing[0] > 0


def wrap(fn_or_name):
    """At the top level of a module: record calls of this function (or of
    the global named ``fn_or_name``) as ``call_function`` nodes instead of
    tracing through them (for code symbolic tracing cannot follow)."""
    if not callable(fn_or_name) and not isinstance(fn_or_name, str):
        raise RuntimeError("Unsupported type for global function! Must be either a callable or string name")
    name = fn_or_name if isinstance(fn_or_name, str) else fn_or_name.__name__
    frame = inspect.currentframe().f_back
    if frame.f_code.co_name != "<module>":
        raise NotImplementedError("wrap must be called at the top level of a module")
    _wrapped_fns_to_patch[(id(frame.f_globals), name)] = frame.f_globals
    return fn_or_name


def _find_proxy(args, kwargs):
    from .proxy import Proxy

    found = []

    def look(a):
        if isinstance(a, Proxy):
            found.append(a)
        return a

    from .node import map_aggregate

    map_aggregate(args, look)
    map_aggregate(kwargs, look)
    return found[0] if found else None


def _recording(orig):
    """``orig`` recorded as one node when a Proxy is among its arguments."""
    @functools.wraps(orig)
    def wrapped(*args, **kwargs):
        proxy = _find_proxy(args, kwargs)
        if proxy is not None:
            out = proxy.tracer.create_proxy("call_function", orig, args, kwargs)
            out.node.meta["is_wrapped"] = True
            return out
        return orig(*args, **kwargs)

    return wrapped


def _patches(fn_globals, autowrap_ids):
    """``[(dict, name, replacement)]``: the ``fx.wrap`` globals, and the
    functions of ``fn_globals`` among the tracer's ``autowrap_functions``."""
    out = []
    for (_gid, name), g in _wrapped_fns_to_patch.items():
        orig = g[name] if name in g else getattr(builtins, name)
        out.append((g, name, _recording(orig)))
    for name, value in list(fn_globals.items()):
        if not name.startswith("_") and callable(value) and id(value) in autowrap_ids:
            out.append((fn_globals, name, _recording(value)))
    return out


class ProxyableClassMeta(type):
    """Construction of a class with this metaclass from Proxies is
    recorded as one ``call_function`` node of the class."""

    def __init__(cls, name, bases, attrs):
        _proxyable_classes.setdefault(cls)
        super().__init__(name, bases, attrs)

    def __call__(cls, *args, **kwargs):
        instance = cls.__new__(cls)
        if is_fx_tracing():
            proxy = _find_proxy(args, kwargs)
            if proxy is not None:
                return proxy.tracer.create_proxy("call_function", cls, args, kwargs)
        cls.__init__(instance, *args, **kwargs)
        return instance

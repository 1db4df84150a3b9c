"""Symbolic tracing (``torch.fx.Tracer``, ``Proxy``): the function runs
on ``Proxy`` values, and every operation on them becomes a ``Node``."""

import builtins
import functools
import inspect
import math
import operator

from .graph import Graph
from .node import Node


class TraceError(ValueError):
    """An operation symbolic tracing cannot record."""


class Proxy:
    """A value being traced: operators, methods and ``torch``
    functions applied to it record nodes (``torch`` functions through
    ``__torch_function__``, also outside a trace: ``Transformer``, or a
    ``Proxy(node)`` over a graph being built)."""

    def __init__(self, node, tracer=None):
        from .. import overrides

        self.node = node
        self.tracer = tracer if tracer is not None else GraphAppendingTracer(node.graph)
        # while a Proxy lives, overridable calls look for it
        # (Note [Torch function dispatch])
        overrides._reason("proxies", 1)
        self._counted = True

    def __del__(self):
        if self.__dict__.get("_counted"):
            from .. import overrides

            overrides._reason("proxies", -1)

    @classmethod
    def __torch_function__(cls, orig_method, types, args=None, kwargs=None):
        args = args if args else ()
        kwargs = kwargs if kwargs else {}
        tracers = []
        from .node import map_aggregate

        def find(a):
            if isinstance(a, cls) and a.tracer not in tracers:
                tracers.append(a.tracer)
            return a

        map_aggregate(args, find)
        map_aggregate(kwargs, find)
        if len(tracers) > 1:
            raise RuntimeError(f"Found multiple different tracers {tracers} while trying to trace operations "
                               f"{orig_method}")
        tracer = tracers[0]
        import ferrotorch

        name = getattr(orig_method, "__name__", "")
        is_function = getattr(ferrotorch, name, None) is orig_method or not hasattr(ferrotorch.Tensor, name)
        if not is_function:
            return tracer.create_proxy("call_method", name, args, kwargs)
        return tracer.create_proxy("call_function", orig_method, args, kwargs)

    def __repr__(self):
        return f"Proxy({self.node.name})"

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return Attribute(self, name)

    def __call__(self, *args, **kwargs):
        return self.tracer.create_proxy("call_method", "__call__", (self,) + args, kwargs)

    def __bool__(self):
        raise TraceError("symbolically traced variables cannot be used as inputs to control flow")

    def __iter__(self):
        raise TraceError("Proxy object cannot be iterated. This can be attempted when the "
                         "Proxy is used in a loop or as a *args or **kwargs function argument.")

    def __len__(self):
        raise RuntimeError("'len' is not supported in symbolic tracing by default. If you want "
                           "this call to be recorded, please call torch.fx.wrap('len') at module "
                           "scope")

    def __getitem__(self, idx):
        return self.tracer.create_proxy("call_function", operator.getitem, (self, idx), {})

    def __index__(self):
        raise TraceError("symbolically traced variables cannot be used as indices")

    __float__ = __int__ = __index__


def _binary(op, reflected=False):
    def f(self, other):
        args = (other, self) if reflected else (self, other)
        return self.tracer.create_proxy("call_function", op, args, {})
    return f


for _name, _op in [("add", operator.add), ("sub", operator.sub), ("mul", operator.mul),
                   ("truediv", operator.truediv), ("floordiv", operator.floordiv),
                   ("mod", operator.mod), ("pow", operator.pow), ("matmul", operator.matmul),
                   ("and", operator.and_), ("or", operator.or_), ("xor", operator.xor),
                   ("lshift", operator.lshift), ("rshift", operator.rshift)]:
    setattr(Proxy, f"__{_name}__", _binary(_op))
    setattr(Proxy, f"__r{_name}__", _binary(_op, reflected=True))
for _name, _op in [("lt", operator.lt), ("le", operator.le), ("gt", operator.gt),
                   ("ge", operator.ge)]:
    setattr(Proxy, f"__{_name}__", _binary(_op))
for _name, _op in [("neg", operator.neg), ("pos", operator.pos), ("invert", operator.invert),
                   ("abs", operator.abs)]:
    setattr(Proxy, f"__{_name}__",
            (lambda op: lambda self: self.tracer.create_proxy("call_function", op, (self,), {}))(_op))


class Attribute(Proxy):
    """``proxy.name``: a method call when called, else a ``getattr`` node."""

    def __init__(self, root, attr):
        self.root = root
        self.attr = attr
        self.tracer = root.tracer
        self._node = None

    @property
    def node(self):
        if self._node is None:
            self._node = self.tracer.create_proxy(
                "call_function", builtins.getattr, (self.root, self.attr), {}).node
        return self._node

    def __call__(self, *args, **kwargs):
        return self.tracer.create_proxy("call_method", self.attr, (self.root,) + args, kwargs)


def _has_proxy(a):
    if isinstance(a, Proxy):
        return True
    if isinstance(a, (tuple, list)):
        return any(_has_proxy(x) for x in a)
    if isinstance(a, dict):
        return any(_has_proxy(x) for x in a.values())
    return False


# math functions recorded when applied to a Proxy (functions of floats)
_MATH = ["sin", "cos", "tan", "exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "tanh",
         "sinh", "cosh", "atan", "asin", "acos", "fabs", "floor", "ceil", "trunc", "erf",
         "erfc", "pow"]


class Tracer:
    """Records a function or module as a ``Graph``. Modules of
    ``torch.nn`` (except ``Sequential``) are leaves, recorded as
    ``call_module``; other modules are traced through."""

    def __init__(self, autowrap_modules=(math,), autowrap_functions=(), param_shapes_constant=False):
        self.graph = None
        self.root = None
        self._autowrap_function_ids = {id(f) for f in autowrap_functions}
        self._autowrap_function_ids.update(id(v) for m in autowrap_modules for k, v in vars(m).items()
                                           if not k.startswith("_") and callable(v))
        self._tensor_paths = {}
        self._attr_nodes = {}
        self._constants = 0

    def is_leaf_module(self, m, module_qualified_name):
        from ..nn import Sequential

        mod = type(m).__module__
        return mod.startswith("ferrotorch.nn") and not isinstance(m, Sequential)

    def create_proxy(self, kind, target, args, kwargs, name=None, type_expr=None):
        node = self.graph.create_node(kind, target, self.create_arg(args),
                                      self.create_arg(kwargs), name, type_expr)
        return Proxy(node, self)

    def create_arg(self, a):
        """``a`` as a node argument: proxies become their nodes, tensors
        and parameters ``get_attr`` nodes."""
        from .. import Tensor
        from ..nn import Module

        if isinstance(a, Proxy):
            return a.node
        if isinstance(a, tuple):
            return tuple(self.create_arg(x) for x in a)
        if isinstance(a, list):
            return [self.create_arg(x) for x in a]
        if isinstance(a, dict):
            return {k: self.create_arg(v) for k, v in a.items()}
        if isinstance(a, slice):
            return slice(self.create_arg(a.start), self.create_arg(a.stop),
                         self.create_arg(a.step))
        if isinstance(a, Tensor):
            path = self._tensor_paths.get(id(a))
            if path is None and self.root is None:
                raise TraceError("a tensor constant needs a module to live in: this tracer has no root")
            if path is None:
                path = f"_tensor_constant{self._constants}"
                self._constants += 1
                setattr(self.root, path, a)
                self._tensor_paths[id(a)] = path
            return self._attr_node(path)
        if isinstance(a, Module):
            raise TraceError(f"a module ({type(a).__name__}) cannot be an argument")
        return a

    def _attr_node(self, path):
        if path not in self._attr_nodes:
            self._attr_nodes[path] = self.graph.get_attr(path)
        return self._attr_nodes[path]

    def trace(self, root, concrete_args=None):
        """The ``Graph`` of ``root`` (a module or a function)."""
        from .. import nn

        if isinstance(root, nn.Module):
            self.root = root
            fn = type(root).forward
            skip_self = True
        else:
            self.root = nn.Module()
            fn = root
            skip_self = False
        self.graph = Graph()
        self._constants = 0
        self._attr_nodes = {}
        qual = {id(m): name for name, m in self.root.named_modules()}
        self._tensor_paths = {}
        for name, p in list(self.root.named_parameters()) + list(self.root.named_buffers()):
            self._tensor_paths[id(p)] = name
        sig = inspect.signature(fn)
        params = list(sig.parameters.values())[1 if skip_self else 0:]
        concrete_args = concrete_args or {}
        args = []
        for p in params:
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise TraceError(f"symbolic_trace: *args/**kwargs ({p.name}) are not supported")
            if p.name in concrete_args:
                args.append(concrete_args[p.name])
            else:
                args.append(Proxy(self.graph.placeholder(p.name), self))
        from . import _wrap

        with self._patched(qual, getattr(fn, "__globals__", {})):
            _wrap._tracing[0] += 1
            try:
                result = fn(self.root, *args) if skip_self else fn(*args)
            finally:
                _wrap._tracing[0] -= 1
        self.graph.output(self.create_arg(result))
        return self.graph

    def _patched(self, qual, fn_globals):
        import contextlib

        from .. import nn
        from ..nn import functional as F
        import ferrotorch

        tracer = self

        @contextlib.contextmanager
        def patch():
            saved = []

            def put(obj, name, value):
                saved.append((obj, name, obj.__dict__[name] if isinstance(obj, type)
                              else getattr(obj, name)))
                setattr(obj, name, value)

            orig_call = nn.Module.__call__
            orig_getattr = nn.Module.__getattr__

            def call(m, *args, **kwargs):
                name = qual.get(id(m))
                if m is not tracer.root and name is not None and tracer.is_leaf_module(m, name):
                    return tracer.create_proxy("call_module", name, args, kwargs)
                return orig_call(m, *args, **kwargs)

            def getattr_(m, name):
                v = orig_getattr(m, name)
                prefix = qual.get(id(m))
                d = m.__dict__
                if prefix is not None and (name in d.get("_parameters", {})
                                           or name in d.get("_buffers", {})):
                    path = f"{prefix}.{name}" if prefix else name
                    return Proxy(tracer._attr_node(path), tracer)
                return v

            def wrap(fn):
                @functools.wraps(fn)
                def w(*args, **kwargs):
                    if _has_proxy(args) or _has_proxy(kwargs):
                        return tracer.create_proxy("call_function", fn, args, kwargs)
                    return fn(*args, **kwargs)
                return w

            try:
                put(nn.Module, "__call__", call)
                put(nn.Module, "__getattr__", getattr_)
                for ns in (ferrotorch, F):
                    for k, v in list(vars(ns).items()):
                        if (callable(v) and not isinstance(v, type) and not k.startswith("_")
                                and inspect.isfunction(v) or inspect.isbuiltin(v)):
                            put(ns, k, wrap(v))
                for k in _MATH:
                    put(math, k, wrap(getattr(math, k)))
                from ._wrap import _patches

                for g, name, value in _patches(fn_globals, tracer._autowrap_function_ids):
                    saved.append((g, name, g.get(name, _MISSING)))
                    g[name] = value
                yield
            finally:
                for obj, name, value in reversed(saved):
                    if isinstance(obj, dict):
                        if value is _MISSING:
                            obj.pop(name, None)
                        else:
                            obj[name] = value
                    else:
                        setattr(obj, name, value)

        return patch()


_MISSING = object()


class GraphAppendingTracer(Tracer):
    """A tracer that appends to an existing ``graph`` (what ``Proxy(node)``
    uses): build nodes by operating on Proxies of its nodes."""

    def __init__(self, graph):
        super().__init__()
        self.graph = graph


def symbolic_trace(root, concrete_args=None):
    """Trace ``root`` (an ``nn.Module`` or a function) to a
    ``GraphModule``."""
    from .graph_module import GraphModule

    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    name = type(root).__name__ if not inspect.isfunction(root) else root.__name__
    return GraphModule(tracer.root, graph, name)

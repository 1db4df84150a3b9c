"""``ferrotorch.compile``: ``torch.compile`` over the tracing JIT.

The first call with a new signature traces the function or module on its
arguments (``jit.trace``), runs the graph passes and groups elementwise
chains into fusion groups, which run as native kernels (Note [Fusion
runtime] in ferrotorch-jit). Tracing runs the function, so that first
call returns the traced run's result: running the graph as well would
repeat its in-place writes and its calls on custom class objects. A
custom class's object is an input of the graph, guarded by its class
(Note [Objects in graphs]). Guards, as torch.compile's: each tensor
argument's shape, dtype, device and requires_grad, the value of every
other argument, grad mode, and a module's ``training`` flag. Shapes being
guarded, sizes are traced as plain ints (static shapes), so Python
arithmetic on them is sound. What cannot
be traced soundly runs eagerly (``fullgraph=True``: an error naming the
reason). After ``cache_size_limit`` signatures, new ones run eagerly with
a warning. Gradients flow as in eager mode.
"""

import functools
import warnings

from . import _C, _logging

#: ``torch._dynamo.config.cache_size_limit``
cache_size_limit = 8


class _Eager:
    def __init__(self, reason):
        self.reason = reason


class _Graph:
    """A traced, fused graph and how to return its outputs. A frozen graph
    (an eval-mode module under no_grad) holds the weights as constants:
    it is valid while every parameter and buffer has the version it was
    frozen at."""

    def __init__(self, script, tensor_slots, structure, frozen=None):
        self.script = script
        self.tensor_slots = tensor_slots
        self.structure = structure
        self.frozen = frozen

    def stale(self, module):
        return self.frozen is not None and self.frozen != _versions(module)

    def __call__(self, args):
        out = self.script(*[args[i] for i in self.tensor_slots])
        if self.structure is list:
            return list(out) if isinstance(out, tuple) else [out]
        return out


def _versions(module):
    ts = list(module.parameters()) + list(module.buffers())
    return tuple((id(t), t._version) for t in ts)


def _value_key(a):
    """What a guard checks of one argument: a tensor's metadata, a
    constant's value; None for anything else."""
    from . import Tensor

    if isinstance(a, Tensor):
        return ("T", tuple(a.shape), a.dtype, str(a.device), a.requires_grad)
    if isinstance(a, (bool, int, float, str, type(None))):
        return ("C", type(a), a)
    if isinstance(a, _C.ScriptObject):
        # a custom class's object is an input of the graph, whose calls
        # on it run its methods (Note [Objects in graphs]): guarded by
        # its class only
        return ("O", a._qualified_name)
    return None


def _signature(args, kwargs, module):
    if kwargs:
        return None
    key = []
    for a in args:
        k = _value_key(a)
        if k is None:
            return None
        key.append(k)
    key.append(_C.is_grad_enabled())
    if module is not None:
        key.append(module.training)
    return tuple(key)


class _CompiledFunction:
    def __init__(self, fn, module, fullgraph, dynamic, mode, backend):
        if backend not in ("ferrotorch", "inductor", "eager"):
            raise ValueError(f"compile: unknown backend {backend!r} (use 'ferrotorch')")
        self._fn = fn
        self._module = module
        self._fullgraph = fullgraph
        self._backend = backend
        self._cache = {}
        self._warned = False
        functools.update_wrapper(self, fn, updated=())

    def _bind(self, args, kwargs):
        """``(args, keyword-only args)`` with keywords bound to positions
        and defaults filled, or None when the signature cannot say."""
        import inspect

        fn = self._module.forward if self._module is not None else self._fn
        try:
            bound = inspect.signature(fn).bind(*args, **kwargs)
        except (TypeError, ValueError):
            return None
        bound.apply_defaults()
        return tuple(bound.args), dict(bound.kwargs)

    def __call__(self, *args, **kwargs):
        kw = {}
        if kwargs:
            # torch.compile takes keywords: bound to positions, and
            # keyword-only ones kept (constants of the signature)
            bound = self._bind(args, kwargs)
            if bound is not None:
                args, kw = bound
                kwargs = {}
        key = _signature(args, kwargs, self._module)
        if key is not None and kw:
            # keyword-only arguments: constants of the signature
            kw_keys = [(k, _value_key(v)) for k, v in sorted(kw.items())]
            ok = all(v is not None and v[0] == "C" for _, v in kw_keys)
            key = key + (tuple(kw_keys),) if ok else None
        if self._backend == "eager":
            # torch's "eager" backend runs what it captured as is
            return self._fn(*args, **kwargs, **kw)
        if key is None:
            return self._unsupported("keyword or non-constant arguments", args, {**kwargs, **kw})
        plan = self._cache.get(key)
        if isinstance(plan, _Graph) and plan.stale(self._module):
            if _logging.enabled("recompiles"):
                _logging.log("recompiling: a frozen weight changed")
            plan, traced = self._build(args, kw)
            self._cache[key] = plan
            if traced:
                return traced[0]  # the trace's own run (see below)
        if plan is None:
            if len(self._cache) >= cache_size_limit:
                if not self._warned:
                    self._warned = True
                    warnings.warn(f"ferrotorch.compile: {cache_size_limit} signatures compiled "
                                  "(cache_size_limit reached); new ones run eagerly")
                return self._fn(*args, **kw)
            if self._cache and _logging.enabled("recompiles"):
                _logging.log(f"recompiling {getattr(self._fn, '__name__', self._fn)}: "
                             "a new argument signature")
            plan, traced = self._build(args, kw)
            self._cache[key] = plan
            if traced:
                # the trace ran the function once on these arguments:
                # its result is this call's (running the graph as well
                # would repeat in-place writes and object calls)
                return traced[0]
        if isinstance(plan, _Eager):
            return self._fn(*args, **kw)
        return plan(args)

    def _unsupported(self, why, args, kwargs):
        if self._fullgraph:
            raise RuntimeError(f"compile(fullgraph=True): {why}")
        return self._fn(*args, **kwargs)

    def _build(self, args, kw):
        from . import Tensor, jit

        slots = [i for i, a in enumerate(args) if isinstance(a, (Tensor, _C.ScriptObject))]
        seen = []

        def run(*tensors):
            full = list(args)
            for i, t in zip(slots, tensors):
                full[i] = t
            return self._fn(*full, **kw)

        reason = None
        # sizes are guarded, so they are constants of the graph: traced as
        # plain ints, size arithmetic in Python (math.sqrt(x.size(-1)))
        # leaves no unsound trace
        static = _C._jit_set_static_sizes(True)
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                inputs = tuple(args[i] for i in slots)
                if self._module is not None and len(slots) == len(args) and not kw:
                    script = jit.trace(self._module, inputs, check_trace=False, _outputs=seen)
                else:
                    if self._module is not None:
                        raise RuntimeError("a module called with non-tensor arguments "
                                           "(None, numbers)")
                    script = jit.trace(run, inputs, check_trace=False, _outputs=seen)
            unsound = [str(w.message) for w in caught
                       if issubclass(w.category, jit.TracerWarning)]
            if unsound:
                reason = "the trace is unsound: " + "; ".join(unsound)
            elif not slots:
                reason = "no tensor arguments"
        except Exception as e:  # noqa: BLE001 (any failure means: run eagerly)
            reason = f"tracing failed: {e}"
        finally:
            _C._jit_set_static_sizes(static)
        if reason is not None:
            if self._fullgraph:
                raise RuntimeError(f"compile(fullgraph=True): {reason}")
            if _logging.enabled("graph_breaks"):
                _logging.log(f"running eagerly: {reason}")
            return _Eager(reason), seen
        frozen = None
        if self._module is not None and not self._module.training and not _C.is_grad_enabled():
            # inference: weights become constants, batch norms fold into
            # convolutions (as optimize_for_inference), guarded by versions
            script = script._c._run_pass("optimize_for_inference")
            frozen = _versions(self._module)
        else:
            script = script._c._run_pass("optimize")._run_pass("fuse")
        out = seen[0] if seen else None
        if _logging.enabled("graph_code"):
            _logging.log(f"compiled graph:\n{script.graph}")
        return _Graph(jit.ScriptModule(script), slots,
                      list if isinstance(out, list) else None, frozen), seen

    def _reset(self):
        self._cache.clear()
        self._warned = False


class OptimizedModule:
    """What ``compile(module)`` returns: calling it runs the compiled
    forward; everything else (parameters, ``train()``, ``state_dict``)
    is the original module's (``_orig_mod``)."""

    def __init__(self, mod, compiled):
        object.__setattr__(self, "_orig_mod", mod)
        object.__setattr__(self, "_compiled", compiled)

    def __call__(self, *args, **kwargs):
        return self._compiled(*args, **kwargs)

    forward = __call__

    def __getattr__(self, name):
        return getattr(self._orig_mod, name)

    def __setattr__(self, name, value):
        setattr(self._orig_mod, name, value)

    def __repr__(self):
        return f"OptimizedModule({self._orig_mod!r})"


_all = []


def compile(model=None, *, fullgraph=False, dynamic=None, backend="ferrotorch", mode=None,
            options=None, disable=False):
    """Compile a function or ``nn.Module`` (``torch.compile``); usable as
    a decorator with or without arguments."""
    from .nn import Module

    if model is None:
        return lambda m: compile(m, fullgraph=fullgraph, dynamic=dynamic, backend=backend,
                                 mode=mode, options=options, disable=disable)
    if disable:
        return model
    if isinstance(model, Module):
        c = _CompiledFunction(model.forward, model, fullgraph, dynamic, mode, backend)
        c._fn = model
        _all.append(c)
        return OptimizedModule(model, c)
    if not callable(model):
        raise RuntimeError("compile: the model must be a function or an nn.Module")
    c = _CompiledFunction(model, None, fullgraph, dynamic, mode, backend)
    _all.append(c)
    return c


def reset():
    """Forget every compiled graph (``torch.compiler.reset``)."""
    for c in _all:
        c._reset()

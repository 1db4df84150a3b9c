"""``torch.overrides``: the ``__torch_function__`` protocol. A Tensor
subclass, a tensor-like object (``fx.Proxy``, a user's duck type) or a
``TorchFunctionMode`` on the stack sees the public function a program
called — ``torch.add``, ``Tensor.__add__``, ``F.linear`` — and decides
what it returns.

Note [Torch function dispatch]
------------------------------
torch checks every call in C++. Here the check costs nothing until it is
needed:

- the schema-generated ops (``_ops.make_op``) and the Python-level public
  functions (wrapped by ``_install``: ``nn.functional``, ``linalg``, ...)
  first read one flag, ``_TF[0]``, which is set only while there is a
  reason to look: a mode on some stack, a Tensor subclass whose
  ``__torch_function__`` is not disabled, or a live ``fx.Proxy``;
- an argument of a foreign type (a duck type the flag does not know) makes
  the op's argument parser raise TypeError; that error is caught and the
  arguments scanned for ``__torch_function__`` before it is raised again;
- the Tensor methods written in Rust (the operators, ``to``, ``detach``,
  ...) cannot read the flag; a subclass gets Python versions of them that
  dispatch (``Tensor.__init_subclass__``), and entering the first mode
  puts such versions on Tensor itself until the last mode exits.

A subclass with torch's default ``__torch_function__`` gets its results
back as the subclass (``_convert``); ``nn.Parameter`` disables it
(``_disabled_torch_function_impl``), so arithmetic on parameters gives
plain tensors, as in torch.
"""

import contextlib
import functools
import threading
import warnings

from . import _C

__all__ = ["get_ignored_functions", "get_overridable_functions", "get_testing_overrides",
           "get_default_nowrap_functions", "handle_torch_function", "has_torch_function",
           "resolve_name", "is_tensor_like", "is_tensor_method_or_property", "wrap_torch_function",
           "enable_reentrant_dispatch", "redispatch_function", "TorchFunctionMode", "BaseTorchFunctionMode",
           "has_torch_function_unary", "has_torch_function_variadic"]

# the one flag every overridable call reads (Note [Torch function dispatch])
_TF = [False]
_REASONS = {"modes": 0, "subclasses": 0, "proxies": 0, "batched": 0}
_NOT = object()  # "not dispatched": run the function itself


def _update_flag():
    _TF[0] = any(_REASONS.values())


def _reason(kind, delta):
    _REASONS[kind] += delta
    _update_flag()


class _State(threading.local):
    def __init__(self):
        self.modes = []
        self.subclasses_disabled = False
        self.all_disabled = False
        self.skip_one = False


_state = _State()


def _disabled_torch_function_impl(func, types, args=(), kwargs=None):
    """What a class that opts out of dispatch (``nn.Parameter``) sets as its
    ``__torch_function__``."""
    return NotImplemented


_C._disabled_torch_function_impl = _disabled_torch_function_impl


def _overrides(t):
    """Whether objects of type ``t`` take part in dispatch."""
    if t is _C.Tensor:
        return False
    f = getattr(t, "__torch_function__", None)
    if f is None:
        return False
    return getattr(f, "__func__", f) is not _disabled_torch_function_impl


def _get_overloaded_args(relevant_args):
    """The arguments whose ``__torch_function__`` to call, one per type,
    subclasses before their bases, otherwise left to right."""
    if _state.all_disabled or _state.subclasses_disabled:
        return []
    types, out = [], []
    for arg in relevant_args:
        t = type(arg)
        if t in types or not _overrides(t):
            continue
        types.append(t)
        # before the first argument whose type is a base of this one
        at = len(out)
        for i, o in enumerate(out):
            if issubclass(t, type(o)):
                at = i
                break
        out.insert(at, arg)
    return out


def _relevant(args, kwargs):
    """Tensor-like arguments: positional and keyword ones, and the
    elements of lists and tuples among them (``torch.cat([a, b])``)."""
    out = []
    for a in list(args) + list(kwargs.values()):
        if isinstance(a, (list, tuple)):
            out.extend(a)
        else:
            out.append(a)
    return out


def has_torch_function(relevant_args):
    """Whether a mode is active or an element of ``relevant_args`` overrides
    ``__torch_function__`` (exact Tensors and Parameters do not). The
    check of the call ``redispatch_function`` makes says False."""
    if _state.skip_one:
        _state.skip_one = False
        return False
    if _state.all_disabled:
        return False
    if _state.modes:
        return True
    return bool(_get_overloaded_args(relevant_args))


def has_torch_function_unary(input):
    """``has_torch_function((input,))``."""
    return has_torch_function((input,))


def has_torch_function_variadic(*args):
    """``has_torch_function(args)``."""
    return has_torch_function(args)


@contextlib.contextmanager
def _pop_mode_temporarily():
    mode = _state.modes.pop()
    _reason("modes", -1)
    try:
        yield mode
    finally:
        _state.modes.append(mode)
        _reason("modes", 1)


def handle_torch_function(public_api, relevant_args, *args, **kwargs):
    """Call the ``__torch_function__`` of the active mode, then of each
    overloaded argument, until one returns something other than
    ``NotImplemented``."""
    overloaded = _get_overloaded_args(relevant_args)
    types = tuple(type(a) for a in overloaded)
    if _state.modes and not _state.all_disabled:
        with _pop_mode_temporarily() as mode:
            result = mode.__torch_function__(public_api, types, args, kwargs)
        if result is not NotImplemented:
            return result
    for arg in overloaded:
        method = arg.__torch_function__
        if getattr(method, "__self__", None) is arg:
            warnings.warn("Defining your `__torch_function__ as a plain method is deprecated and will be an error "
                          "in future, please define it as a classmethod.", DeprecationWarning, stacklevel=2)
        result = method(public_api, types, args, kwargs)
        if result is not NotImplemented:
            return result
    name = f"{getattr(public_api, '__module__', None)}.{getattr(public_api, '__name__', public_api)}"
    name = name.replace("ferrotorch", "torch")
    if getattr(public_api, "_ft_op", False):
        # the schema-generated ops fail as torch's C++ bindings do
        kinds = "".join(f"  - tensor subclass {type(a)}\n" for a in overloaded)
        raise TypeError(f"Multiple dispatch failed for '{name}'; all __torch_function__ handlers returned "
                        f"NotImplemented:\n\n{kinds}\nFor more information, try re-running with "
                        "TORCH_LOGS=not_implemented")
    msg = (f"no implementation found for '{name}' on types that implement "
           f"__torch_function__: {[type(a) for a in overloaded]}")
    if _state.modes:
        msg += f" nor in mode {_state.modes[-1]}"
    raise TypeError(msg)


def _dispatch(public_api, args, kwargs):
    """What an overridable call does when ``_TF[0]`` is set: the result of a
    ``__torch_function__``, or ``_NOT`` to run the function itself."""
    st = _state
    if st.skip_one:
        st.skip_one = False
        return _NOT
    if st.all_disabled:
        return _NOT
    relevant = _relevant(args, kwargs)
    if not st.modes and not _get_overloaded_args(relevant):
        return _NOT
    return handle_torch_function(public_api, relevant, *args, **kwargs)


def _foreign(public_api, args, kwargs):
    """After a TypeError: dispatch when an argument of a type the flag does
    not know implements ``__torch_function__``, else ``_NOT``."""
    if _state.all_disabled or _state.subclasses_disabled:
        return _NOT
    relevant = _relevant(args, kwargs)
    if not _get_overloaded_args(relevant):
        return _NOT
    return handle_torch_function(public_api, relevant, *args, **kwargs)


_WRAPPED = {}  # fn -> its overridable wrapper: one public object per function


def _overridable(fn):
    """``fn`` (a Python-level public function) taking part in dispatch."""
    if getattr(fn, "_ft_overridable", False):
        return fn
    if fn in _WRAPPED:
        return _WRAPPED[fn]

    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        if _TF[0]:
            r = _dispatch(wrapped, args, kwargs)
            if r is not _NOT:
                return r
        try:
            return fn(*args, **kwargs)
        except TypeError:
            r = _foreign(wrapped, args, kwargs)
            if r is _NOT:
                raise
            return r

    wrapped._ft_overridable = True
    _WRAPPED[fn] = wrapped
    return wrapped


# the method torch passes as ``func`` for an operator (``a + b`` is
# ``Tensor.add``; the reflected and the bitwise operators keep their names)
_OPERATOR_FUNC = {"__add__": "add", "__radd__": "add", "__iadd__": "add_", "__sub__": "sub", "__isub__": "sub_",
                  "__mul__": "mul", "__rmul__": "mul", "__imul__": "mul_", "__truediv__": "div",
                  "__itruediv__": "div_", "__rtruediv__": "__rdiv__", "__matmul__": "matmul", "__pow__": "pow",
                  "__ipow__": "pow_", "__mod__": "remainder", "__imod__": "remainder_", "__neg__": "neg",
                  "__abs__": "abs", "__ne__": "ne", "__lt__": "lt", "__le__": "le", "__gt__": "gt", "__ge__": "ge"}


def _method_dispatcher(name, base, on_tensor=False):
    """A Tensor method of a subclass (or of Tensor itself under a mode)
    that dispatches with ``func`` = what ``torch.Tensor.<name>`` is at that
    moment: the original for a subclass, this very function on Tensor (for
    an operator, the method torch names: ``Tensor.add`` for ``+``)."""
    public = _ORIGINALS.get(_OPERATOR_FUNC.get(name, ""), None)

    def method(*args, **kwargs):
        if _TF[0]:
            r = _dispatch(public or (method if on_tensor else base), args, kwargs)
            if r is not _NOT:
                return r
        return base(*args, **kwargs)

    method.__name__ = name
    method.__doc__ = getattr(base, "__doc__", None)
    method._ft_dispatcher = base
    return method


# Tensor attributes that never dispatch: construction, pickling, the
# protocol itself, identity and the numpy/dlpack exchange
_NEVER = {"__new__", "__init__", "__init_subclass__", "__torch_function__", "__reduce_ex__", "__reduce__",
          "__getattribute__", "__getattr__", "__setattr__", "__delattr__", "__class__", "__dict__", "__hash__",
          "__array__", "__array_ufunc__", "__array_function__", "__array_interface__", "__array_priority__",
          "__dlpack__", "__dlpack_device__", "_set_from", "__sizeof__", "__subclasshook__", "__dir__",
          "__doc__", "__module__", "__weakref__", "__format__", "__deepcopy__", "__copy__"}
_ORIGINALS = {}


def _dispatchable_tensor_attrs():
    """``{name: original}`` for the Tensor methods written in Rust and the
    Python ones that do not check the flag themselves."""
    out = {}
    for name, v in _ORIGINALS.items():
        if name in _NEVER or isinstance(v, (property, type)) or not callable(v):
            continue
        if type(v).__name__ == "getset_descriptor":
            continue
        if getattr(v, "_ft_overridable", False) or getattr(v, "_ft_op", False):
            continue
        out[name] = v
    return out


def _tensor_init_subclass(cls, **kwargs):
    """A new Tensor subclass whose ``__torch_function__`` is not disabled
    gets methods that dispatch (Note [Torch function dispatch])."""
    super(_C.Tensor, cls).__init_subclass__(**kwargs)
    if not _overrides(cls):
        return
    for name, base in _dispatchable_tensor_attrs().items():
        # only what the subclass (or a class between) did not define itself
        for k in cls.__mro__:
            if k is _C.Tensor:
                setattr(cls, name, _method_dispatcher(name, base))
                break
            if name in k.__dict__:
                break
    _reason("subclasses", 1)


def _convert(ret, cls):
    if cls is _C.Tensor:
        return ret
    if isinstance(ret, _C.Tensor) and not isinstance(ret, cls):
        ret = ret.as_subclass(cls)
    if isinstance(ret, (tuple, list)):
        items = [_convert(r, cls) for r in ret]
        ret = type(ret)(*items) if hasattr(ret, "_fields") else type(ret)(items)
    return ret


def _tensor_torch_function(cls, func, types, args=(), kwargs=None):
    """torch's default: run ``func`` with subclass dispatch off and give
    Tensor results back as ``cls``."""
    if kwargs is None:
        kwargs = {}
    if not all(issubclass(cls, t) for t in types):
        return NotImplemented
    with DisableTorchFunctionSubclass():
        ret = func(*args, **kwargs)
        if func in get_default_nowrap_functions():
            return ret
        return _convert(ret, cls)


class DisableTorchFunctionSubclass:
    """Within it, only modes dispatch: subclasses' ``__torch_function__``
    are not called."""

    def __enter__(self):
        self._prev = _state.subclasses_disabled
        _state.subclasses_disabled = True
        return self

    def __exit__(self, *exc):
        _state.subclasses_disabled = self._prev


class DisableTorchFunction:
    """Within it, nothing dispatches: neither modes nor subclasses."""

    def __enter__(self):
        self._prev = _state.all_disabled
        _state.all_disabled = True
        return self

    def __exit__(self, *exc):
        _state.all_disabled = self._prev


_SWAPS = {}  # name -> (original, dispatcher), made on first use
_swapped = [frozenset()]  # the names whose dispatcher is on Tensor now
# the Tensor methods that take a second tensor: what a batched vmap swaps
# (``plain.mm(batched)``; the operators reflect to BatchedTensor's own)
_BATCHED_NAMES = set("""add sub mul div true_divide floor_divide remainder fmod pow atan2 maximum minimum fmax fmin
eq ne lt le gt ge logical_and logical_or logical_xor bitwise_and bitwise_or bitwise_xor where lerp addcmul addcdiv
hypot copysign xlogy masked_fill matmul mm bmm mv dot inner outer ger expand_as view_as reshape_as type_as copy_
add_ sub_ mul_ div_ masked_fill_ gather index_select __eq__ __ne__ __getitem__ __setitem__ clamp clamp_ rsub
""".split())


_WANT = {}  # "all" / "batched" -> frozenset of names


def _mode_methods():
    """Put on Tensor the dispatching versions of its Rust methods that the
    dispatch reasons call for: all of them while a mode is active, those
    that take a second tensor while only a batched vmap runs, none
    otherwise (the originals back)."""
    if not _SWAPS:
        _SWAPS.update((name, (base, _method_dispatcher(name, base, on_tensor=True)))
                      for name, base in _dispatchable_tensor_attrs().items())
        _WANT["all"] = frozenset(_SWAPS)
        _WANT["batched"] = frozenset(n for n in _BATCHED_NAMES if n in _SWAPS)
    if _REASONS["modes"] > 0:
        want = _WANT["all"]
    elif _REASONS["batched"] > 0:
        want = _WANT["batched"]
    else:
        want = frozenset()
    have = _swapped[0]
    if want is have:
        return
    T = _C.Tensor
    for name in have - want:
        setattr(T, name, _SWAPS[name][0])
    for name in want - have:
        setattr(T, name, _SWAPS[name][1])
    _swapped[0] = want


def _tensor_method(name):
    """What ``torch.Tensor.<name>`` is as a ``func`` that dispatches: the
    method's dispatcher when it is written in Rust, else the method."""
    if not _SWAPS:
        _mode_methods()
    pair = _SWAPS.get(name)
    return pair[1] if pair is not None else getattr(_C.Tensor, name, None)


def _push_mode(mode):
    _state.modes.append(mode)
    _reason("modes", 1)
    _mode_methods()


def _pop_mode():
    mode = _state.modes.pop()
    _reason("modes", -1)
    _mode_methods()
    return mode


def _batched_scope(delta):
    """Enter (+1) or leave (-1) a batched ``vmap`` (Note [Batching rules]
    in ``func/_batched.py``): its BatchedTensors are duck types, so the
    flag is set and the Tensor methods that take a second tensor dispatch
    (``plain.matmul(batched)``), for as long as one is running."""
    _reason("batched", delta)
    _mode_methods()


class TorchFunctionMode:
    """Override every overridable function inside ``with Mode():``. Calls
    made inside ``__torch_function__`` go to the next mode on the stack."""

    inner = None

    def __init__(self):
        pass

    def __torch_function__(self, func, types, args=(), kwargs=None):
        raise NotImplementedError

    def __enter__(self):
        _push_mode(self)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        _pop_mode()

    @classmethod
    def push(cls, *args, **kwargs):
        warnings.warn("`Mode.push()` is no longer necessary and can be replaced with just `with Mode()`",
                      stacklevel=2)
        return cls(*args, **kwargs)


class BaseTorchFunctionMode(TorchFunctionMode):
    """A mode that calls each function unchanged (a base to override from)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if kwargs is None:
            kwargs = {}
        return func(*args, **kwargs)


def _get_current_function_mode_stack():
    return list(_state.modes)


def redispatch_function(func, types, args, kwargs):
    """Call ``func`` skipping one level of dispatch (the call's own check);
    the ops inside it dispatch as usual."""
    _state.skip_one = True
    try:
        return func(*args, **(kwargs or {}))
    finally:
        _state.skip_one = False


@contextlib.contextmanager
def enable_reentrant_dispatch():
    """torch's re-entry into the Python dispatcher from ``__torch_dispatch__``;
    there is no Python dispatcher here, so the block runs as it is."""
    yield


def wrap_torch_function(dispatcher):
    """Decorate a function so that the tensor-likes ``dispatcher(*args,
    **kwargs)`` returns take part in dispatch."""
    def inner(func):
        @functools.wraps(func)
        def wrapped(*args, **kwargs):
            relevant = dispatcher(*args, **kwargs)
            if has_torch_function(relevant):
                return handle_torch_function(wrapped, relevant, *args, **kwargs)
            return func(*args, **kwargs)

        return wrapped

    return inner


def is_tensor_like(inp):
    """Whether ``inp`` is a Tensor or implements ``__torch_function__``."""
    return type(inp) is _C.Tensor or hasattr(inp, "__torch_function__")


def get_default_nowrap_functions():
    """Functions whose results the default ``__torch_function__`` does not
    convert to the subclass (field accesses that must keep identity)."""
    T = _C.Tensor
    return {T._base.__get__, T.grad.__get__}


_NAMESPACES = []  # (module or class, its torch name), filled by _install


@functools.lru_cache(maxsize=1)
def _overridable_table():
    table, names = {}, {}
    for ns, tname in _NAMESPACES:
        items = vars(ns).items() if isinstance(ns, type) else vars(ns).items()
        fns = []
        for k, v in items:
            if k.startswith("_") and not (isinstance(ns, type) and k.startswith("__") and k.endswith("__")):
                continue
            if isinstance(v, type) or not callable(v) or k in _NEVER:
                continue
            if not isinstance(ns, type) and not (getattr(v, "_ft_op", False) or getattr(v, "_ft_overridable", False)):
                continue
            fns.append(v)
            names.setdefault(v, f"{tname}.{k}")
        table[ns] = fns
    return table, names


def get_overridable_functions():
    """``{namespace: [functions]}`` of what ``__torch_function__`` can
    override (``torch``, ``torch.nn.functional``, ``torch.Tensor``, ...)."""
    return {k: list(v) for k, v in _overridable_table()[0].items()}


def resolve_name(f):
    """The torch name of an overridable function (``'torch.add'``)."""
    return _overridable_table()[1].get(f)


def is_tensor_method_or_property(func):
    """Whether ``func`` (as passed to ``__torch_function__``) is a method of
    Tensor or a property getter."""
    return func in set(get_overridable_functions().get(_C.Tensor, ())) or getattr(func, "__name__", "") == "__get__"


def get_ignored_functions():
    """Public functions that take no tensor to dispatch on (creation and
    process-wide settings); modes still see the creation functions."""
    import ferrotorch

    names = ["zeros", "ones", "empty", "full", "rand", "randn", "randint", "randperm", "arange", "linspace",
             "logspace", "eye", "tensor", "as_tensor", "from_numpy", "manual_seed", "seed", "initial_seed",
             "set_default_dtype", "get_default_dtype", "is_tensor", "is_storage", "set_grad_enabled",
             "is_grad_enabled", "set_num_threads", "get_num_threads", "set_printoptions", "typename",
             "use_deterministic_algorithms", "are_deterministic_algorithms_enabled", "compile", "load", "save"]
    return {getattr(ferrotorch, n) for n in names if hasattr(ferrotorch, n)}


def get_testing_overrides():
    """``{function: lambda (same arguments) -> -1}`` for every overridable
    function (how torch's tests check that each one dispatches)."""
    out = {}
    for fns in get_overridable_functions().values():
        for f in fns:
            out[f] = lambda *args, **kwargs: -1
    return out


# public functions that take no tensor to dispatch on: process-wide
# settings and file I/O are not overridable in torch either
_SETTINGS = {"manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state", "fork_rng",
             "set_default_dtype", "set_default_tensor_type", "set_default_device", "set_printoptions",
             "is_tensor", "is_storage", "typename", "compile", "load", "save", "set_num_threads",
             "set_num_interop_threads", "use_deterministic_algorithms", "set_float32_matmul_precision",
             "set_warn_always", "set_deterministic_debug_mode", "set_anomaly_enabled", "get_device_module",
             "set_autocast_enabled", "set_autocast_dtype", "set_autocast_cache_enabled", "vmap", "cond"}


def _rebind_captured(base):
    """Modules that keep their functional as a class attribute
    (``MaxPool2d._fn = staticmethod(F.max_pool2d)``) captured it before it
    was made overridable: point them at the overridable version, so that
    ``nn.MaxPool2d`` dispatches as ``F.max_pool2d`` does."""
    todo, seen = [base], set()
    while todo:
        cls = todo.pop()
        if cls in seen:
            continue
        seen.add(cls)
        todo.extend(cls.__subclasses__())
        for k, v in list(vars(cls).items()):
            if isinstance(v, staticmethod) and v.__func__ in _WRAPPED:
                setattr(cls, k, staticmethod(_WRAPPED[v.__func__]))


def _install(torch_module, namespaces):
    """Make the Python-level public functions of ``namespaces`` (``(module,
    torch name)`` pairs) overridable, give Tensor torch's default
    ``__torch_function__`` and the subclass hook, and remember what
    Tensor's own methods are."""
    T = _C.Tensor
    for ns, tname in namespaces:
        _NAMESPACES.append((ns, tname))
        if isinstance(ns, type):
            continue
        for k, v in list(vars(ns).items()):
            if k.startswith("_") or isinstance(v, type) or not callable(v):
                continue
            if type(v).__name__ != "function" or getattr(v, "_ft_op", False):
                continue
            if not (getattr(v, "__module__", "") or "").startswith("ferrotorch") or k in _SETTINGS:
                continue
            if v.__code__.co_argcount == 0 and not (v.__code__.co_flags & 0x04):
                continue  # takes nothing to dispatch on
            setattr(ns, k, _overridable(v))
    for k, v in list(vars(T).items()):
        if type(v).__name__ == "function" and v.__name__ == "<lambda>":
            v.__name__ = v.__qualname__ = k  # what a mode sees as func.__name__
    _rebind_captured(torch_module.nn.Module)
    T.__torch_function__ = classmethod(_tensor_torch_function)
    T.__init_subclass__ = classmethod(_tensor_init_subclass)
    _ORIGINALS.update({k: v for k, v in vars(T).items()})
    torch_module.DisableTorchFunctionSubclass = DisableTorchFunctionSubclass
    torch_module.DisableTorchFunction = DisableTorchFunction

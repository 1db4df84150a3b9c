"""Python functions and ``Tensor`` methods generated from the dispatcher's
schemas (Note [Methods declared once] in ``src/tensor.rs``).

Each registered op ``name`` becomes ``ferrotorch.name(*args, **kwargs)``
and, when its first argument is ``Tensor self``, ``Tensor.name``. Both call
``_C._call_op``, which binds the arguments against the schema (or each
overload in turn) exactly as torch's argument parser does, so names,
defaults and keyword-only markers are the schema's.
"""

import re

from . import _C
from .overrides import _NOT, _TF, _dispatch, _foreign

_call = _C._call_op

# ops whose leading ``int[]`` argument may also be given as varargs:
# ``zeros(2, 3)``, ``t.view(2, 3)``, ``t.permute(1, 0)``
_SIZE_TYPES = ("SymInt[]", "int[]", "int[1]", "SymInt[1]")
# ops whose ``Tensor[]`` argument may also be given as varargs
# (``torch.meshgrid(a, b)``, ``torch.atleast_1d(a, b)``); their lists come
# back as tuples, as torch's Python functions return them
_TENSOR_VARARGS = {"broadcast_tensors", "meshgrid", "block_diag", "cartesian_prod",
                   "atleast_1d", "atleast_2d", "atleast_3d"}
_CREATION = {"zeros", "ones", "empty", "full", "rand", "randn", "randint",
             "arange", "linspace", "logspace", "eye", "randperm",
             "zeros_like", "ones_like", "empty_like", "full_like", "scalar_tensor",
             "empty_strided", "new_empty_strided", "empty_permuted", "randint_like",
             "hann_window", "hamming_window", "blackman_window", "bartlett_window",
             "kaiser_window", "fft_fftfreq", "fft_rfftfreq"}


# a schema's ``Tensor[]`` result, alias annotation or not (``Tensor(a)[]``)
_TENSOR_LIST = re.compile(r"Tensor(\([^)]*\))?\??\[\]")

# full op name -> (the argument each return aliases or -1, writes in
# place), from the schemas' alias annotations
_ALIASES = {}


def _schemas():
    by_name = {}
    for base, full, args, nret, text, aliases, inplace in _C._schemas():
        by_name.setdefault(base, []).append((full, args, nret, text))
        _ALIASES[full] = (aliases, inplace)
    return by_name


def _vararg_position(overloads):
    """Position of the int-list argument that takes varargs, or None
    (None too where another overload takes one int there:
    ``hsplit(x, 2)`` is ``hsplit.int``, not ``hsplit.array`` of ``[2]``)."""
    def takes_int_at(args, k):
        pos = [a for a in args if not a[3]]
        return len(pos) > k and pos[k][1] in ("int", "SymInt")

    for _full, args, _n, _t in overloads:
        pos = [a for a in args if not a[3]]
        offset = 1 if pos and pos[0][0] == "self" else 0
        # only a trailing list takes varargs (``view(2, 3)``, not ``movedim(0, 1)``)
        if len(pos) == offset + 1 and pos[offset][1] in _SIZE_TYPES:
            if any(takes_int_at(a, offset) for _f, a, _n2, _t2 in overloads):
                return None
            return offset
    return None


def _is_int(x):
    if isinstance(x, bool):
        return False
    if isinstance(x, int):
        return True
    if hasattr(x, "shape"):
        # a 0-dim integer tensor stands for an int, as a traced size does
        # (``x.view(x.size(0), -1)`` while tracing)
        return (getattr(x, "ndim", None) == 0 and not x.is_floating_point()
                and str(x.dtype) != "torch.bool")
    return hasattr(x, "__index__")


def _named_results(name, overloads):
    """``{number of results: named-tuple class}`` for overloads whose
    results all have names (``max.dim -> (Tensor values, Tensor indices)``)."""
    from .return_types import named

    out = {}
    for _full, _args, rets, _t in overloads:
        if len(rets) > 1 and all(rets):
            out.setdefault(len(rets), named(name, rets))
    return out


def _writes_self(overloads):
    """Whether every overload writes and returns ``self`` (``add_``,
    ``zero_``), as its schema's alias annotations say: the call then
    returns the very object it was given, as in torch (``t.add_(1) is t``)."""
    def writes_self(full, args):
        aliases, inplace = _ALIASES[full]
        return inplace and aliases == [0] and bool(args) and args[0][0] == "self"
    return all(writes_self(full, args) for full, args, _n, _t in overloads)


def make_op(name, overloads):
    """The Python function for op ``name``."""
    vpos = _vararg_position(overloads)
    creation = name in _CREATION
    named = _named_results(name, overloads)
    writes_self = _writes_self(overloads)

    tensor_varargs = name in _TENSOR_VARARGS
    # torch's generated bindings return a ``Tensor[]`` result as a tuple
    # (``split``, ``unbind``, ``chunk``, ``unravel_index``); ``torch.ops.aten``
    # keeps lists, as torch's does
    tensor_list = any(_TENSOR_LIST.fullmatch(t.rsplit("->", 1)[-1].strip())
                      for _f, _a, _n, t in overloads)

    def op(*args, **kwargs):
        # Note [Torch function dispatch] (overrides.py)
        if _TF[0]:
            r = _dispatch(op, args, kwargs)
            if r is not _NOT:
                return r
        given = args
        try:
            if tensor_varargs:
                if len(args) == 1 and isinstance(args[0], (list, tuple)):
                    args = (list(args[0]),)
                elif len(args) > 1 or (args and not name.startswith("atleast")):
                    args = (list(args),)  # atleast_1d(t) alone takes the Tensor overload
                out = _call(name, args, kwargs)
                return tuple(out) if isinstance(out, list) else out
            if vpos is not None and len(args) > vpos and all(_is_int(a) for a in args[vpos:]):
                args = args[:vpos] + (tuple(args[vpos:]),)
            if writes_self:
                out = _call(name, args, kwargs)
                return args[0] if args else kwargs.get("self", out)
            if creation:
                requires_grad = kwargs.pop("requires_grad", False)
                out = _call(name, args, kwargs)
                if requires_grad:
                    out.requires_grad_(True)
                return out
            out = _call(name, args, kwargs)
            if named and type(out) is tuple and len(out) in named:
                return named[len(out)](*out)
            if tensor_list and type(out) is list:
                return tuple(out)
            return out
        except TypeError:
            r = _foreign(op, given, kwargs)
            if r is _NOT:
                raise
            return r

    op.__name__ = op.__qualname__ = name
    op.__module__ = "ferrotorch"
    op._ft_op = True
    op.__doc__ = "\n".join(text for _f, _a, _n, text in overloads)
    return op


def _method_with_self_at(fn, k):
    def method(self, *args, **kwargs):
        return fn(*args[:k], self, *args[k:], **kwargs)

    method.__name__ = method.__qualname__ = fn.__name__
    method.__doc__ = fn.__doc__
    return method


def install(namespace, tensor_cls):
    """Define every op in ``namespace`` and as a method of ``tensor_cls``."""
    for name, overloads in _schemas().items():
        if name.startswith("_") or "::" in name:
            continue
        fn = make_op(name, overloads)
        namespace.setdefault(name, fn)
        is_method = any(args and args[0][0] == "self" for _f, args, _n, _t in overloads)
        if is_method and not hasattr(tensor_cls, name):
            setattr(tensor_cls, name, fn)
        elif not hasattr(tensor_cls, name):
            # `self` not first (`where.self(Tensor condition, Tensor self,
            # Tensor other)`): the method fills that slot, as torch's
            # `x.where(condition, y)`
            slots = {[a[0] for a in args if not a[3]].index("self")
                     for _f, args, _n, _t in overloads if any(a[0] == "self" for a in args)}
            if len(slots) == 1:
                setattr(tensor_cls, name, _method_with_self_at(fn, slots.pop()))

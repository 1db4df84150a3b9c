"""Tensor methods written in Python on top of the native type, as torch's
``torch/_tensor.py`` does: dtype shorthands, ``*_as`` forms, NumPy's
protocols (``__array__``, NEP-18 ``__array_function__``, NEP-13
``__array_ufunc__``) and ``deepcopy``."""


from . import _C

Tensor = _C.Tensor


def _install():
    def conv(dtype):
        def f(self, memory_format=None):
            if memory_format is None:
                return self.to(dtype)
            return self.to(dtype, memory_format=memory_format)
        return f

    for name, dt in [("float", _C.float32), ("double", _C.float64), ("half", _C.float16),
                     ("bfloat16", _C.bfloat16), ("long", _C.int64), ("int", _C.int32),
                     ("short", _C.int16), ("char", _C.int8), ("byte", _C.uint8),
                     ("bool", _C.bool), ("chalf", _C.complex32), ("cfloat", _C.complex64),
                     ("cdouble", _C.complex128)]:
        setattr(Tensor, name, conv(dt))

    Tensor.T = property(lambda self: self.permute(*reversed(range(self.dim()))),
                        doc="The dims reversed (``t.permute(n-1, ..., 0)``).")
    Tensor.mT = property(lambda self: self.transpose(-2, -1),
                         doc="The last two dims swapped.")
    Tensor.H = property(lambda self: self.T.conj(),
                        doc="The conjugate transpose of a matrix.")
    Tensor.mH = property(lambda self: self.mT.conj(),
                         doc="The conjugate transpose of the last two dims.")
    Tensor.adjoint = lambda self: self.mT.conj()
    # reflected bitwise operators (`True & t`) and Python 2's `__rdiv__`
    Tensor.__rand__ = lambda self, other: self.bitwise_and(other)
    Tensor.__ror__ = lambda self, other: self.bitwise_or(other)
    Tensor.__rxor__ = lambda self, other: self.bitwise_xor(other)
    Tensor.__rdiv__ = lambda self, other: self.reciprocal() * other
    Tensor.view_as = lambda self, other: self.view(other.shape)
    Tensor.reshape_as = lambda self, other: self.reshape(other.shape)
    Tensor.expand_as = lambda self, other: self.expand(other.shape)
    Tensor.type_as = lambda self, other: self.to(other.dtype)

    def _size_args(size):
        if len(size) == 1 and isinstance(size[0], (tuple, list)):
            return tuple(size[0])
        return tuple(size)

    def new_zeros(self, *size, dtype=None, device=None, requires_grad=False):
        return _C._call_op("zeros", (_size_args(size),), {"dtype": dtype or self.dtype})._rg(requires_grad)

    def new_ones(self, *size, dtype=None, device=None, requires_grad=False):
        return _C._call_op("ones", (_size_args(size),), {"dtype": dtype or self.dtype})._rg(requires_grad)

    def new_empty(self, *size, dtype=None, device=None, requires_grad=False):
        return _C._call_op("empty", (_size_args(size),), {"dtype": dtype or self.dtype})._rg(requires_grad)

    def new_full(self, size, fill_value, dtype=None, device=None, requires_grad=False):
        return _C._call_op("full", (tuple(size), fill_value), {"dtype": dtype or self.dtype})._rg(requires_grad)

    def new(self, *args, dtype=None, device=None):
        """The legacy constructor of a tensor of this one's dtype: ``new()``
        (empty), ``new(*sizes)`` or ``new(torch.Size)`` (uninitialised),
        ``new(data)`` (a copy of a sequence), ``new(tensor)`` (its data)."""
        from ._size import Size

        dtype = dtype or self.dtype
        if not args:
            return _C._call_op("empty", ((0,),), {"dtype": dtype})
        if len(args) == 1 and isinstance(args[0], Size):
            return _C._call_op("empty", (tuple(args[0]),), {"dtype": dtype})
        if all(isinstance(a, int) and not isinstance(a, bool) for a in args):
            return _C._call_op("empty", (tuple(args),), {"dtype": dtype})
        if len(args) == 1 and isinstance(args[0], _C.Tensor):
            t = args[0].detach()
            if t.dtype != dtype:
                raise TypeError(f"expected {self.dtype} (got {t.dtype})")
            return t
        if len(args) == 1:
            return _C.tensor(args[0], dtype=dtype)
        raise TypeError(f"new(): invalid arguments {tuple(type(a).__name__ for a in args)}")

    Tensor.new = new

    def _rg(self, requires_grad):
        return self.requires_grad_(True) if requires_grad else self

    Tensor._rg = _rg
    Tensor.new_zeros = new_zeros
    Tensor.new_ones = new_ones
    Tensor.new_empty = new_empty
    Tensor.new_full = new_full

    def __array__(self, dtype=None, copy=None):
        import numpy as np

        a = np.asarray(self.detach() if self.requires_grad else self)
        if dtype is not None:
            a = a.astype(dtype, copy=False)
        if copy:
            a = a.copy()
        return a

    Tensor.__array__ = __array__
    Tensor.__array_priority__ = 1000

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        import ferrotorch

        if method != "__call__" or kwargs.get("out") is not None:
            return NotImplemented
        name = _UFUNCS.get(ufunc.__name__, ufunc.__name__)
        fn = getattr(ferrotorch, name, None)
        if fn is None:
            return NotImplemented
        args = [ferrotorch.as_tensor(x) if _is_array(x) else x for x in inputs]
        if len(args) == 2 and not isinstance(args[0], Tensor):
            # a scalar on the left: put the tensor first where the op allows
            if name in ("add", "mul", "maximum", "minimum", "eq", "ne"):
                args = [args[1], args[0]]
            else:
                args[0] = ferrotorch.as_tensor(args[0])
        return fn(*args)

    Tensor.__array_ufunc__ = __array_ufunc__

    def __array_function__(self, func, types, args, kwargs):
        import ferrotorch

        name = func.__name__
        impl = _ARRAY_FUNCTIONS.get(name)
        if impl is not None:
            return impl(*args, **kwargs)
        fn = getattr(ferrotorch, name, None)
        if fn is None or kwargs:
            return NotImplemented
        return fn(*args)

    Tensor.__array_function__ = __array_function__

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        new = self.detach().clone()
        if type(self) is not Tensor:
            new = type(self)(new, self.requires_grad) if hasattr(type(self), "_is_param") else new
        elif self.requires_grad:
            new.requires_grad_(True)
        memo[id(self)] = new
        return new

    Tensor.__deepcopy__ = __deepcopy__
    Tensor.__format__ = lambda self, spec: (
        format(self.item(), spec) if self.dim() == 0 and spec else object.__format__(repr(self), spec))


def _is_array(x):
    return hasattr(x, "__array_interface__") and not isinstance(x, Tensor)


_UFUNCS = {
    "add": "add", "subtract": "sub", "multiply": "mul", "true_divide": "div",
    "divide": "div", "power": "pow", "negative": "neg", "absolute": "abs",
    "equal": "eq", "not_equal": "ne", "less": "lt", "less_equal": "le",
    "greater": "gt", "greater_equal": "ge", "floor_divide": "floor_divide",
    "remainder": "remainder", "arctan2": "atan2", "arcsin": "asin", "arccos": "acos",
    "arctan": "atan", "arcsinh": "asinh", "arccosh": "acosh", "arctanh": "atanh",
    "logical_not": "logical_not", "invert": "bitwise_not",
}


def _axis(kw):
    out = {}
    if kw.get("axis") is not None:
        out["dim"] = kw["axis"]
    if kw.get("keepdims"):
        out["keepdim"] = True
    return out


def _np_reduce(name):
    def f(a, axis=None, dtype=None, out=None, keepdims=False, **kw):
        import ferrotorch

        if out is not None:
            return NotImplemented
        fn = getattr(ferrotorch, name)
        return fn(a, **_axis({"axis": axis, "keepdims": keepdims}))
    return f


def _concatenate(arrays, axis=0, out=None, **kw):
    import ferrotorch

    return ferrotorch.cat([ferrotorch.as_tensor(a) for a in arrays], axis)


def _stack(arrays, axis=0, out=None, **kw):
    import ferrotorch

    return ferrotorch.stack([ferrotorch.as_tensor(a) for a in arrays], axis)


_ARRAY_FUNCTIONS = {
    "sum": _np_reduce("sum"),
    "mean": _np_reduce("mean"),
    "prod": _np_reduce("prod"),
    "amax": _np_reduce("amax"),
    "amin": _np_reduce("amin"),
    "max": _np_reduce("amax"),
    "min": _np_reduce("amin"),
    "concatenate": _concatenate,
    "stack": _stack,
}

_install()

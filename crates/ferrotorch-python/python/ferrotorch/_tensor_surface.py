"""The rest of torch's ``Tensor`` and ``torch`` names, derived from the ops
that exist rather than written one by one:

- torch's aliases (``arccos`` = ``acos``, ``clip`` = ``clamp``, ``divide``,
  ``multiply``, ``subtract``, ``greater``, ``moveaxis``, ``swapaxes``, ...),
  as methods and functions;
- in-place forms (``scatter_``, ``index_add_``, ``sinc_``, ``tril_``,
  ``eq_``, ...): the out-of-place op on the old value, checked with torch's
  casting rule and shape rule, then copied in. Note [In-place forms]: when
  the tensor is in a graph the op reads a clone, so what the op saved for
  its backward is the old value, as torch's in-place derivatives use;
- in-place view ops (``unsqueeze_``, ``t_``, ``transpose_``, ``squeeze_``,
  ``as_strided_``, ``resize_``, ``detach_``, ``set_``), which rebind the
  Python tensor to the new view of the same storage (``_set_from``);
- small queries (``nbytes``, ``itemsize``, ``is_signed``, ``get_device``,
  ``is_same_size``, ``is_nonzero``, ...), ``fill_diagonal_``, ``random_``,
  ``apply_``/``map_``, and ``torch.can_cast``.
"""

from . import _C

Tensor = _C.Tensor

# torch's alias -> the op it names
ALIASES = {
    "absolute": "abs", "arccos": "acos", "arccosh": "acosh", "arcsin": "asin",
    "arcsinh": "asinh", "arctan": "atan", "arctanh": "atanh", "arctan2": "atan2",
    "clip": "clamp", "divide": "div", "multiply": "mul", "subtract": "sub", "negative": "neg",
    "greater": "gt", "greater_equal": "ge", "less": "lt", "less_equal": "le",
    "not_equal": "ne", "fix": "trunc", "moveaxis": "movedim", "swapaxes": "transpose",
    "swapdims": "transpose", "ger": "outer",
}

# in-place forms built from their out-of-place op (after aliasing)
INPLACE = [
    "absolute", "addbmm", "addmm", "addmv", "addr", "arccos", "arccosh", "arcsin", "arcsinh",
    "arctan", "arctan2", "arctanh", "baddbmm", "bitwise_and", "bitwise_left_shift",
    "bitwise_or", "bitwise_right_shift", "bitwise_xor", "clamp_max", "clamp_min", "clip",
    "conj_physical", "cumprod", "cumsum", "deg2rad", "divide", "eq", "fix", "float_power",
    "floor_divide", "frac", "gcd", "ge", "greater", "greater_equal", "gt", "heaviside", "i0", "igamma", "igammac",
    "index_add", "index_copy", "index_fill", "index_reduce", "lcm", "ldexp", "le", "less",
    "less_equal", "logical_and", "logical_not", "logical_or", "logical_xor", "logit", "lt",
    "masked_scatter", "multiply", "mvlgamma", "nan_to_num", "ne", "negative", "nextafter",
    "not_equal", "polygamma", "put", "rad2deg", "renorm", "scatter", "scatter_add",
    "scatter_reduce", "sgn", "sinc", "square", "subtract", "tril", "triu", "true_divide",
]

# in-place view ops: rebind to the view
VIEW_INPLACE = ["unsqueeze", "squeeze", "t", "transpose", "swapaxes", "swapdims", "as_strided"]

_TITLE = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
          "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
          "bool": "Bool", "complex32": "ComplexHalf", "complex64": "ComplexFloat",
          "complex128": "ComplexDouble"}


def _title(dtype):
    name = str(dtype).replace("torch.", "").replace("ferrotorch.", "")
    return _TITLE.get(name, name)


def can_cast(from_, to):
    """``torch.can_cast``: whether ``from_`` converts to ``to`` under
    torch's casting rule (no complex to real, no floating to integral, no
    non-bool to bool)."""
    if from_.is_complex and not to.is_complex:
        return False
    if from_.is_floating_point and not (to.is_floating_point or to.is_complex):
        return False
    return not (to is _C.bool and from_ is not _C.bool)


def _inplace(name, base):
    def f(self, *args, **kwargs):
        # Note [In-place forms]: read a clone when in a graph
        src = self.clone() if self.requires_grad else self
        out = getattr(src, base)(*args, **kwargs)
        if tuple(out.shape) != tuple(self.shape):
            raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the "
                               f"broadcast shape {list(out.shape)}")
        if not can_cast(out.dtype, self.dtype):
            raise RuntimeError(f"result type {_title(out.dtype)} can't be cast to the desired "
                               f"output type {_title(self.dtype)}")
        return self.copy_(out)

    f.__name__ = name + "_"
    f.__doc__ = f"In-place ``{name}``: the result is written into this tensor."
    return f


def _view_inplace(name, base):
    def f(self, *args, **kwargs):
        from .autograd import is_grad_enabled

        if self.grad_fn is None and self.requires_grad and is_grad_enabled():
            raise RuntimeError(
                "a leaf Variable that requires grad is being used in an in-place operation.")
        v = getattr(self, base)(*args, **kwargs)
        if self.grad_fn is None:
            v = v.detach()  # a leaf stays a leaf: same storage, new geometry
        self._set_from(v)
        return self

    f.__name__ = name + "_"
    f.__doc__ = f"In-place ``{name}``: this tensor becomes the view."
    return f


def _sizes(args):
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        return tuple(args[0])
    return tuple(args)


def resize_(self, *sizes, memory_format=None):
    """``t.resize_(*sizes)``: the first ``prod(sizes)`` elements of the
    storage from the tensor's offset, contiguous; a larger size moves the
    data to a new, larger storage (the new elements are zero here; torch
    leaves them uninitialised)."""
    sizes = _sizes(sizes)
    if any(s < 0 for s in sizes):
        raise RuntimeError(f"Trying to create tensor with negative dimension: {list(sizes)}")
    if self.requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    n = 1
    for s in sizes:
        n *= s
    avail = self.untyped_storage().nbytes() // self.element_size() - self.storage_offset()
    whole = self.detach().as_strided((max(avail, 0),), (1,), self.storage_offset())
    if n <= avail:
        new = whole[:n].view(sizes)
    else:
        new = _C._call_op("zeros", ((n,),), {"dtype": self.dtype})
        new[:avail].copy_(whole)
        new = new.view(sizes)
    if memory_format is not None:
        new = new.contiguous(memory_format=memory_format)
    self._set_from(new)
    return self


def resize_as_(self, the_template, memory_format=None):
    return resize_(self, tuple(the_template.shape), memory_format=memory_format)


def detach_(self):
    """``t.detach_()``: this tensor leaves the graph (a leaf without grad)."""
    self._set_from(self.detach())
    return self


def set_(self, source=None, storage_offset=0, size=None, stride=None):
    """``t.set_(source)``: share ``source``'s storage and geometry (with
    ``storage_offset``/``size``/``stride``: that view of it); ``t.set_()``
    empties the tensor."""
    if source is None:
        new = _C._call_op("empty", ((0,),), {"dtype": self.dtype})
    elif size is not None:
        new = source.detach().as_strided(tuple(size), tuple(stride) if stride else None,
                                         storage_offset)
    else:
        new = source.detach()
    self._set_from(new)
    return self


def fill_diagonal_(self, fill_value, wrap=False):
    """``t.fill_diagonal_(v, wrap=False)``: the main diagonal (all dims
    equal for more than 2-D); a tall matrix with ``wrap`` restarts the
    diagonal every ``cols + 1`` rows, as torch."""
    if self.dim() < 2:
        raise RuntimeError("dimensions must larger than 1")
    shape = tuple(self.shape)
    if self.dim() > 2 and len(set(shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    if self.dim() > 2:
        i = _C._call_op("arange", (shape[0],), {})
        self[(i,) * self.dim()] = fill_value
        return self
    rows, cols = shape
    if wrap and rows > cols:
        # the flat positions step by cols + 1 through the whole matrix
        flat = list(range(0, rows * cols, cols + 1))
    else:
        flat = [k * (cols + 1) for k in range(min(rows, cols))]
    if flat:
        from . import tensor

        self[tensor([p // cols for p in flat]), tensor([p % cols for p in flat])] = fill_value
    return self


def random_(self, from_=0, to=None, *, generator=None, **kwargs):
    """``t.random_(from=0, to=None)``: integers uniform in ``[from, to)``;
    without ``to``, up to 2^mantissa for floating dtypes and the dtype's
    maximum for integers."""
    if "from" in kwargs:
        from_ = kwargs.pop("from")
    if to is None:
        if self.is_floating_point():
            to = {"float16": 2 ** 11, "bfloat16": 2 ** 8, "float32": 2 ** 24}.get(
                str(self.dtype).split(".")[-1], 2 ** 53) + 1
        elif self.dtype is _C.bool:
            to = 2
        else:
            from . import iinfo

            to = iinfo(self.dtype).max + 1 if self.dtype is not _C.int64 else 2 ** 63 - 1
    if from_ >= to:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={from_} >= to={to}")
    vals = _C._call_op("randint", (from_, to, tuple(self.shape)), {"generator": generator})
    return self.copy_(vals)


def apply_(self, callable):
    """``t.apply_(f)``: ``f`` applied to every element, in place (slow;
    CPU only, as torch)."""
    from . import tensor

    vals = [callable(v) for v in self.reshape(-1).tolist()]
    return self.copy_(tensor(vals, dtype=self.dtype).reshape(tuple(self.shape)))


def map_(self, tensor, callable):
    """``t.map_(other, f)``: ``f(self[i], other[i])`` for every element,
    ``other`` broadcast to this tensor's shape."""
    b = tensor.expand(tuple(self.shape)).reshape(-1).tolist()
    from . import tensor

    vals = [callable(a, c) for a, c in zip(self.reshape(-1).tolist(), b)]
    return self.copy_(tensor(vals, dtype=self.dtype).reshape(tuple(self.shape)))


def _install(module):
    for alias, name in ALIASES.items():
        if not hasattr(Tensor, alias) and hasattr(Tensor, name):
            setattr(Tensor, alias, getattr(Tensor, name))
        if not hasattr(module, alias) and hasattr(module, name):
            setattr(module, alias, getattr(module, name))
    for name in INPLACE:
        base = ALIASES.get(name, name)
        if not hasattr(Tensor, name + "_") and hasattr(Tensor, base):
            setattr(Tensor, name + "_", _inplace(name, base))
    for name in VIEW_INPLACE:
        base = ALIASES.get(name, name)
        if not hasattr(Tensor, name + "_"):
            setattr(Tensor, name + "_", _view_inplace(name, base))
    for name, f in [("resize_", resize_), ("resize_as_", resize_as_), ("detach_", detach_),
                    ("set_", set_), ("fill_diagonal_", fill_diagonal_), ("random_", random_),
                    ("apply_", apply_), ("map_", map_)]:
        if not hasattr(Tensor, name):
            setattr(Tensor, name, f)
    props = {
        "nbytes": lambda self: self.numel() * self.element_size(),
        "itemsize": lambda self: self.element_size(),
    }
    for name, get in props.items():
        if not hasattr(Tensor, name):
            setattr(Tensor, name, property(get))
    methods = {
        "is_signed": lambda self: self.dtype.is_signed,
        "get_device": lambda self: -1,
        "is_inference": lambda self: False,
        "is_neg": lambda self: False,
        "is_pinned": lambda self, device=None: False,
        "is_same_size": lambda self, other: tuple(self.shape) == tuple(other.shape),
        "is_set_to": lambda self, t: (self.data_ptr() == t.data_ptr() and self.shape == t.shape
                                      and self.stride() == t.stride()),
        "is_nonzero": _is_nonzero,
        "dim_order": lambda self: tuple(sorted(range(self.dim()), key=lambda d: -self.stride(d))),
    }
    for name, f in methods.items():
        if not hasattr(Tensor, name):
            setattr(Tensor, name, f)
    # the in-place forms torch also has as functions (`torch.sinc_(x)`)
    for name in ["addmv", "clamp_max", "clamp_min", "clip", "conj_physical", "deg2rad", "fix",
                 "frac", "gcd", "i0", "lcm", "ldexp", "logit", "nan_to_num", "negative",
                 "rad2deg", "sinc", "square", "detach", "arccos", "arccosh", "arcsin", "arcsinh", "arctan",
                 "arctanh", "as_strided"]:
        if not hasattr(module, name + "_"):
            setattr(module, name + "_", _function_of(name + "_"))
    for name in ["is_signed", "is_nonzero", "is_same_size", "is_inference", "is_neg",
                 "get_device", "resize_as_"]:
        if not hasattr(module, name):
            setattr(module, name, _function_of(name))
    module.can_cast = can_cast


def _is_nonzero(self):
    if self.numel() == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if self.numel() > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(self.item())


def _function_of(method):
    def f(input, *args, **kwargs):
        return getattr(input, method)(*args, **kwargs)

    f.__name__ = method
    f.__doc__ = f"``input.{method}(...)``."
    return f

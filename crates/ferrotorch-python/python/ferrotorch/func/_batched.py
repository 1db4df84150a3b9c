"""The batched values ``vmap`` runs its function on.

Note [Batching rules]
---------------------
torch's ``vmap`` runs the function once, on BatchedTensors: each holds a
physical tensor whose dim 0 is the mapped dim and shows the function the
per-example (logical) shape; every op meets a batching rule that computes
all examples in one call on the physical tensors, and an op without one
falls back to a loop over the examples with a performance warning. Here:

- ``BatchedTensor`` is a duck type (not a Tensor): its ``__torch_function__``
  receives every torch function, ``nn.functional`` function and Tensor
  method it meets (``overrides._batched_scope`` sets the dispatch flag
  and turns the Tensor methods that take a second tensor into
  dispatchers while a batched vmap runs, so ``plain.mm(batched)`` arrives
  here too; the operators reflect to BatchedTensor's own);
- ``_batch_rules.RULES`` maps a function's name to its rule; the rules run
  physical ops, and a physical value that is itself batched at an outer
  level (nested ``vmap``) dispatches again, level by level. With one
  level the rule runs with the flag off (its ops are on plain tensors),
  and a rule composed of batched ops calls ``dispatch`` itself;
- anything else runs once per example (``_fallback``) with torch's
  warning, so every op works and the common ones are fast;
- the gradient transforms inside a vmap (``vmap(grad(f))``) differentiate
  the physical tensors: an input they differentiate is expanded over the
  active vmap levels into a physical leaf (``physical_leaf``), so the
  autograd engine's one backward pass yields each example's gradient;
- ``randomness="same"`` and ``"different"`` keep the per-example loop of
  ``_vmap`` (a random factory has no batched argument to dispatch on);
  the default ``"error"`` runs batched and raises when the RNG moved.
"""

import warnings

from .. import _C
from .. import overrides as _overrides
from .._library import rules as _rules

_active = []  # [(level, size)] of the batched vmaps running, outermost first
_next_level = [0]


def _ft():
    import ferrotorch

    return ferrotorch


def _only_batched():
    r = _overrides._REASONS
    return not (r["modes"] or r["subclasses"] or r["proxies"])


class BatchedTensor:
    """A physical tensor (``_value``, mapped dim first) seen by the vmapped
    function as one example of it (Note [Batching rules])."""

    __slots__ = ("_value", "_level", "__weakref__")

    def __init__(self, value, level):
        self._value = value
        self._level = level

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return dispatch(func, args, kwargs or {})

    # ---- what the function may ask of its example ----
    @property
    def shape(self):
        return _ft().Size(tuple(self._value.shape)[1:])

    def size(self, dim=None):
        shape = self.shape
        if dim is None:
            return shape
        return shape[_norm_dim(dim, len(shape), "size")]

    def dim(self):
        return self._value.dim() - 1

    ndim = property(dim)

    def ndimension(self):
        return self.dim()

    def numel(self):
        n = 1
        for s in self.shape:
            n *= s
        return n

    nelement = numel

    def __len__(self):
        if self.dim() == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def stride(self, dim=None):
        st = tuple(self._value.stride())[1:]
        return st if dim is None else st[_norm_dim(dim, len(st), "stride")]

    dtype = property(lambda self: self._value.dtype)
    device = property(lambda self: self._value.device)
    layout = property(lambda self: self._value.layout)
    is_cuda = property(lambda self: False)
    is_sparse = property(lambda self: False)
    is_quantized = property(lambda self: False)
    is_meta = property(lambda self: False)
    is_nested = property(lambda self: False)
    requires_grad = property(lambda self: self._value.requires_grad)
    grad_fn = property(lambda self: self._value.grad_fn)
    is_leaf = property(lambda self: self._value.is_leaf)
    T = property(lambda self: dispatch(_overrides._tensor_method("permute"), (self, *reversed(range(self.dim()))),
                                       {}))
    mT = property(lambda self: dispatch(_overrides._tensor_method("transpose"), (self, -2, -1), {}))
    H = property(lambda self: self.T.conj())
    mH = property(lambda self: self.mT.conj())
    real = property(lambda self: BatchedTensor(self._value.real, self._level))
    imag = property(lambda self: BatchedTensor(self._value.imag, self._level))

    def is_floating_point(self):
        return self._value.is_floating_point()

    def is_complex(self):
        return self._value.is_complex()

    def is_contiguous(self, memory_format=None):
        return self._value.is_contiguous()

    def element_size(self):
        return self._value.element_size()

    def get_device(self):
        return -1

    # ---- what a vmapped function cannot do: read values ----
    def item(self):
        raise RuntimeError("vmap: It looks like you're calling .item() on a Tensor. We don't support vmap over "
                           "calling .item() on a Tensor, please try to rewrite what you're doing with other "
                           "operations. If error is occurring somewhere inside PyTorch internals, please file a "
                           "bug report.")

    def _data_dependent(self, *args, **kwargs):
        raise RuntimeError("vmap: It looks like you're attempting to use a Tensor in some data-dependent control "
                           "flow. We don't support that yet, please shout over at "
                           "https://github.com/pytorch/functorch/issues/257 .")

    __bool__ = __int__ = __float__ = __index__ = __complex__ = _data_dependent

    def tolist(self):
        self.item()

    def numpy(self, *args, **kwargs):
        raise RuntimeError("vmap: numpy() is not supported on a BatchedTensor: the example has no storage of "
                           "its own")

    def data_ptr(self):
        raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")

    def backward(self, *args, **kwargs):
        raise RuntimeError("vmap: backward() cannot be called on a BatchedTensor; use torch.func.grad or "
                           "torch.autograd.grad inside the vmapped function")

    def __repr__(self):
        return f"BatchedTensor(lvl={self._level}, bdim=0, value=\n{self._value!r})"

    def __getattr__(self, name):
        base = _overrides._tensor_method(name)
        if base is None or not callable(base):
            raise AttributeError(f"'Tensor' object has no attribute '{name}'")

        def method(*args, **kwargs):
            return dispatch(base, (self,) + args, kwargs)

        method.__name__ = name
        return method

    def __getitem__(self, index):
        return dispatch(_overrides._tensor_method("__getitem__"), (self, index), {})

    def __setitem__(self, index, value):
        dispatch(_overrides._tensor_method("__setitem__"), (self, index, value), {})

    def __iter__(self):
        if self.dim() == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter([self[i] for i in range(self.shape[0])])

    __hash__ = object.__hash__


def _method(name):
    def op(self, *args):
        return dispatch(_overrides._tensor_method(name), (self,) + args, {})

    op.__name__ = name
    return op


for _name in ("add", "sub", "mul", "matmul", "pow", "eq", "ne", "lt", "le", "gt", "ge", "and", "or", "xor",
              "neg", "abs", "invert", "mod", "floordiv", "truediv", "lshift", "rshift", "pos"):
    for _dunder in (f"__{_name}__", f"__i{_name}__", f"__r{_name}__"):
        if hasattr(_C.Tensor, _dunder):
            setattr(BatchedTensor, _dunder, _method(_dunder))


def _norm_dim(d, rank, what):
    if not -max(rank, 1) <= d < max(rank, 1):
        raise IndexError(f"Dimension out of range (expected to be in range of [{-max(rank, 1)}, {max(rank, 1) - 1}],"
                         f" but got {d})")
    return d % max(rank, 1)


def is_batched(x, level=None):
    return isinstance(x, BatchedTensor) and (level is None or x._level == level)


def top_level(args, kwargs):
    """The innermost (highest) vmap level among the arguments, or None."""
    best = None
    for a in list(args) + list(kwargs.values()):
        items = a if isinstance(a, (list, tuple)) else (a,)
        for x in items:
            if isinstance(x, BatchedTensor) and (best is None or x._level > best):
                best = x._level
    return best


def level_size(level):
    for lv, n in _active:
        if lv == level:
            return n
    raise RuntimeError("vmap: a BatchedTensor escaped the vmap that made it (it was kept beyond the call, e.g. "
                       "in a global); use the vmap's outputs instead")


def dispatch(func, args, kwargs):
    """``func(*args, **kwargs)`` with batched arguments: its rule at the
    innermost level among them, or the per-example fallback."""
    from ._batch_rules import RULES

    level = top_level(args, kwargs)
    if level is None:
        return func(*args, **kwargs)
    name = getattr(func, "__name__", "")
    custom = _rules.vmap_rule(func)
    if custom is not None:
        return _rules.run_vmap_rule(custom, level, func, args, kwargs)
    rule = RULES.get(name)
    # with one vmap level and no other reason to dispatch, the rule's
    # physical ops are plain tensors: they skip the dispatch check (a
    # BatchedTensor a rule passes on still reaches here: by its own
    # methods, or by the argument parser's TypeError)
    quiet = len(_active) == 1 and _overrides._TF[0] and _only_batched()
    if quiet:
        _overrides._TF[0] = False
    try:
        if rule is not None:
            out = rule(level, func, args, kwargs)
            if out is not NotImplemented:
                return out
        return _fallback(level, func, name, args, kwargs)
    finally:
        if quiet:
            _overrides._TF[0] = True


def _slice(x, level, i):
    if isinstance(x, BatchedTensor) and x._level == level:
        return x._value[i]
    if isinstance(x, (list, tuple)) and any(isinstance(v, BatchedTensor) and v._level == level for v in x):
        return type(x)(_slice(v, level, i) for v in x)
    return x


def _fallback(level, func, name, args, kwargs):
    """One call per example, the results stacked as batched values (torch's
    slow path, with its warning)."""
    ft = _ft()
    warnings.warn(f"There is a performance drop because we have not yet implemented the batching rule for "
                  f"aten::{name}. Please file us an issue on GitHub so that we can prioritize its "
                  "implementation.", UserWarning, stacklevel=4)
    n = level_size(level)
    outs = [func(*[_slice(a, level, i) for a in args], **{k: _slice(v, level, i) for k, v in kwargs.items()})
            for i in range(n)]
    first = outs[0]
    self = args[0] if args else None
    if name.endswith("_") and not name.endswith("__") or name in ("__setitem__",):
        # in place: the examples were views of self's physical tensor
        return self if name != "__setitem__" else None
    return _stack_results(outs, first, level, name)


def _stack_results(outs, first, level, name):
    ft = _ft()
    if isinstance(first, (_C.Tensor, BatchedTensor)):
        return BatchedTensor(ft.stack(outs), level)
    if isinstance(first, tuple):
        parts = [_stack_results([o[k] for o in outs], first[k], level, name) for k in range(len(first))]
        return type(first)(*parts) if hasattr(first, "_fields") else tuple(parts)
    if isinstance(first, list):
        return [_stack_results([o[k] for o in outs], first[k], level, name) for k in range(len(first))]
    if first is None:
        return None
    if all(o == first for o in outs):
        return first  # metadata that is the same for every example
    raise RuntimeError(f"vmap: {name} returned a non-Tensor value that differs between examples ({type(first)}); "
                       "vmap can only batch Tensor results")


def physical(x):
    """``x`` with every level unwrapped, and its levels (outermost first)."""
    levels = []
    while isinstance(x, BatchedTensor):
        levels.append(x._level)
        x = x._value
    return x, levels[::-1]


def wrap_levels(phys, levels):
    """``phys`` (one dim per level of ``levels``, outermost first) as a
    BatchedTensor of each."""
    for lv in levels:
        phys = BatchedTensor(phys, lv)
    return phys


def expand_to_levels(x, want):
    """The physical tensor of ``x`` with a dim for every level in ``want``
    (outermost first): a level ``x`` lacks becomes an expanded dim."""
    phys, have = physical(x)
    for i, lv in enumerate(want):
        if lv not in have:
            phys = phys.unsqueeze(i)
            shape = list(phys.shape)
            shape[i] = level_size(lv)
            phys = phys.expand(shape)
    return phys


def active_levels():
    return [lv for lv, _ in _active]


def physical_leaf(x):
    """What a gradient transform differentiates inside a vmap: ``(logical,
    leaf)`` with ``leaf`` a physical tensor with a dim for every active
    level (Note [Batching rules])."""
    want = active_levels()
    phys = expand_to_levels(x, want)
    leaf = phys if phys.requires_grad else phys.detach().requires_grad_(True)
    if phys.requires_grad:
        leaf = phys.view_as(phys)
    return wrap_levels(leaf, want), leaf

"""The rest of ``Tensor``'s attributes, as torch's CPU build has them:

- what a strided CPU tensor answers about itself: ``is_meta``,
  ``is_nested``, ``is_sparse``, ``is_quantized`` and the other devices'
  predicates (False), ``is_distributed()``, ``name`` (None, no named
  tensors), ``grad_dtype``, ``const_data_ptr()``, ``volatile`` (removed:
  False, with torch's warning);
- another device's transfers (``ipu()``, ``xpu()``, ``mtia()``,
  ``pin_memory()``), which raise as torch does where the device is absent;
- methods over existing ops: ``as_subclass``, ``hardshrink``,
  ``nonzero_static``, ``as_strided_scatter``, ``unsafe_split_with_sizes``,
  ``to_dense``, ``module_load``, ``map2_``, the deprecated out-of-place
  ``resize``/``resize_as``, and ``storage()``/``storage_type()`` (the
  deprecated ``TypedStorage``).
"""

import warnings

from . import _C

Tensor = _C.Tensor

_NO_DEVICE = {
    "ipu": (RuntimeError, "PyTorch is not linked with support for ipu devices"),
    "xpu": (AssertionError, "Torch not compiled with XPU enabled"),
    "mtia": (AssertionError, "Torch not compiled with MTIA enabled"),
}


def _no_device(name):
    kind, msg = _NO_DEVICE[name]

    def transfer(self, device=None, non_blocking=False, memory_format=None):
        raise kind(msg)

    transfer.__name__ = name
    transfer.__doc__ = f"``t.{name}()``: raises, as torch's build without that device does."
    return transfer


def as_subclass(self, cls):
    """This tensor (same data, same graph) as an instance of ``cls``, a
    subclass of Tensor; ``cls.__init__`` is not called, as in torch."""
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError("Creating a Tensor subclass from a class that does not inherit from Tensor is not "
                        "possible. Make sure your class inherits from Tensor.")
    return Tensor.__new__(cls, self)


def _resize_view(self, sizes, op):
    warnings.warn(f"non-inplace {op} is deprecated", stacklevel=3)
    n = 1
    for s in sizes:
        n *= s
    if n != self.numel():
        shape = "x".join(str(s) for s in self.shape)
        want = "x".join(str(s) for s in sizes)
        raise RuntimeError(f"requested resize to {want} ({n} elements in total), but the given tensor has a size "
                           f"of {shape} ({self.numel()} elements). autograd's resize can only change the shape of "
                           "a given tensor, while preserving the number of elements. ")
    return self.contiguous().view(*sizes)


def resize(self, *sizes):
    """Deprecated: ``self`` reshaped to ``sizes`` (same element count)."""
    if len(sizes) == 1 and isinstance(sizes[0], (list, tuple)):
        sizes = tuple(sizes[0])
    return _resize_view(self, tuple(sizes), "resize")


def resize_as(self, tensor):
    """Deprecated: ``self`` reshaped to ``tensor``'s shape."""
    return _resize_view(self, tuple(tensor.shape), "resize_as")


def module_load(self, other, assign=False):
    """What ``Module.load_state_dict`` puts in place of this parameter or
    buffer: ``other`` (assign) or this tensor after copying ``other`` in."""
    if assign:
        return other.detach()
    return self.copy_(other).detach()


def map2_(self, x, y, callable):
    """``self[i] = callable(self[i], x[i], y[i])`` with ``x`` and ``y``
    broadcast to ``self``'s shape."""
    import ferrotorch

    shape = tuple(self.shape)
    a = self.reshape(-1).tolist()
    b = x.expand(shape).reshape(-1).tolist()
    c = y.expand(shape).reshape(-1).tolist()
    vals = [callable(p, q, r) for p, q, r in zip(a, b, c)]
    return self.copy_(ferrotorch.tensor(vals, dtype=self.dtype).reshape(shape))


def storage(self):
    """The deprecated ``TypedStorage`` over this tensor's bytes."""
    from .storage import TypedStorage, _warn_typed_storage_removal

    _warn_typed_storage_removal()
    return TypedStorage(wrap_storage=self.untyped_storage(), dtype=self.dtype, _internal=True)


def storage_type(self):
    """The legacy storage class of this dtype (``torch.FloatStorage``)."""
    from .storage import _legacy_class, _warn_typed_storage_removal

    _warn_typed_storage_removal()
    return _legacy_class(self.dtype)


def to_dense(self, dtype=None, *, masked_grad=None):
    """A strided tensor is already dense: itself (or cast to ``dtype``)."""
    return self if dtype is None else self.to(dtype)


def pin_memory(self, device=None):
    """Pinned memory is an accelerator's: torch raises without one."""
    raise RuntimeError("Cannot access accelerator device when none is available.")


def _volatile(self):
    warnings.warn("volatile was removed (Variable.volatile is always False)", stacklevel=2)
    return False


def _subclass_repr(base):
    def __repr__(self, *, tensor_contents=None):
        """torch's repr; a subclass (other than Parameter) prints its name
        where a tensor prints ``tensor(``."""
        s = base(self)
        t = type(self)
        if t is Tensor or getattr(t, "_is_param", False) or not s.startswith("tensor("):
            return s
        name = t.__name__
        return name + "(" + s[7:].replace("\n" + " " * 7, "\n" + " " * (len(name) + 1))

    return __repr__


def _install(module):
    F = None
    Tensor.__repr__ = _subclass_repr(Tensor.__repr__)

    def hardshrink(self, lambd=0.5):
        nonlocal F
        if F is None:
            from .nn import functional as F
        return F.hardshrink(self, lambd)

    methods = {
        "as_subclass": as_subclass, "resize": resize, "resize_as": resize_as, "module_load": module_load,
        "map2_": map2_, "storage": storage, "storage_type": storage_type, "to_dense": to_dense,
        "pin_memory": pin_memory, "hardshrink": hardshrink,
        "const_data_ptr": lambda self: self.data_ptr(),
        "is_distributed": lambda self: False,
        "nonzero_static": lambda self, *, size, fill_value=-1: module.nonzero_static(
            self, size=size, fill_value=fill_value),
        "as_strided_scatter": lambda self, src, size, stride, storage_offset=None: module.as_strided_scatter(
            self, src, size, stride, storage_offset),
        "unsafe_split_with_sizes": lambda self, split_sizes, dim=0: module.unsafe_split_with_sizes(
            self, split_sizes, dim),
    }
    for name in _NO_DEVICE:
        methods[name] = _no_device(name)
    for name, f in methods.items():
        if not hasattr(Tensor, name):
            setattr(Tensor, name, f)
    props = {"volatile": _volatile, "name": lambda self: None, "grad_dtype": lambda self: self.dtype}
    for flag in ["is_meta", "is_nested", "is_sparse", "is_sparse_csr", "is_quantized", "is_mkldnn", "is_mps",
                 "is_xpu", "is_ipu", "is_mtia", "is_vulkan", "is_xla", "is_maia"]:
        props[flag] = lambda self: False
    for name, get in props.items():
        if not hasattr(Tensor, name):
            setattr(Tensor, name, property(get))

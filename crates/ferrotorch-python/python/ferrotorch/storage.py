"""``torch.storage``: ``UntypedStorage`` (the bytes under a tensor and its
views) and the deprecated ``TypedStorage`` that ``Tensor.storage()``
returns: the same bytes seen as elements of one dtype, and the legacy
classes (``FloatStorage``, ...) that name a dtype. torch warns that
TypedStorage will go; these warn the same."""

import warnings

from . import _C

UntypedStorage = _C.UntypedStorage

_LEGACY = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
           "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
           "bool": "Bool", "complex64": "ComplexFloat", "complex128": "ComplexDouble"}


def _warn_typed_storage_removal(stacklevel=2):
    warnings.warn("TypedStorage is deprecated. It will be removed in the future and UntypedStorage will be the "
                  "only storage class. This should only matter to you if you are using storages directly.  To "
                  "access UntypedStorage directly, use tensor.untyped_storage() instead of tensor.storage()",
                  UserWarning, stacklevel=stacklevel + 1)


def _dtype_name(dtype):
    return str(dtype).split(".")[-1]


class TypedStorage:
    """The elements of one dtype over an ``UntypedStorage``:
    ``TypedStorage(size)``, ``TypedStorage(sequence)``, or
    ``TypedStorage(wrap_storage=untyped, dtype=d)``; reading and writing go
    to the shared bytes."""

    is_sparse = False

    def __init__(self, *args, wrap_storage=None, dtype=None, device=None, _internal=False):
        import ferrotorch

        if not _internal:
            _warn_typed_storage_removal()
        dtype = dtype if dtype is not None else getattr(type(self), "_fixed_dtype", None)
        if dtype is None:
            dtype = ferrotorch.get_default_dtype()
        if wrap_storage is not None:
            if args:
                raise RuntimeError("TypedStorage(): No positional arguments should be given when using "
                                   "`wrap_storage`")
            self._untyped_storage = wrap_storage
        else:
            if len(args) > 1:
                raise TypeError(f"TypedStorage(): expected a size or a sequence, got {len(args)} arguments")
            if not args:
                values = ferrotorch.empty(0, dtype=dtype)
            elif isinstance(args[0], int):
                values = ferrotorch.zeros(args[0], dtype=dtype)
            else:
                values = ferrotorch.tensor(list(args[0]), dtype=dtype)
            self._untyped_storage = values.untyped_storage()
        self.dtype = dtype
        self._flat = self._untyped_storage._as_tensor(dtype)

    @property
    def device(self):
        import ferrotorch

        return ferrotorch.device(self._untyped_storage.device)

    def _size(self):
        return self._flat.numel()

    def size(self):
        """The number of elements."""
        _warn_typed_storage_removal()
        return self._size()

    def __len__(self):
        return self._size()

    def nbytes(self):
        return self._untyped_storage.nbytes()

    def element_size(self):
        return self._flat.element_size()

    def data_ptr(self):
        return self._untyped_storage.data_ptr()

    def untyped(self):
        """The bytes, as an ``UntypedStorage``."""
        return self._untyped_storage

    def _new_wrapped_storage(self, untyped):
        return TypedStorage(wrap_storage=untyped, dtype=self.dtype, _internal=True)

    def tolist(self):
        return self._flat.tolist()

    def __iter__(self):
        return iter(self.tolist())

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            raise RuntimeError("slices are only supported in UntypedStorage.__getitem__")
        n = self._size()
        if not -n <= idx < n:
            raise IndexError(f"index {idx} out of range for storage of size {n}")
        return self._flat[idx].item()

    def __setitem__(self, idx, value):
        self._flat[idx] = value

    def fill_(self, value):
        self._flat.fill_(value)
        return self

    def copy_(self, source, non_blocking=None):
        self._flat.copy_(source._flat if isinstance(source, TypedStorage) else source)
        return self

    def clone(self, memory_format=None):
        return TypedStorage(wrap_storage=self._flat.clone().untyped_storage(), dtype=self.dtype, _internal=True)

    def is_shared(self):
        return self._untyped_storage.is_shared()

    def share_memory_(self):
        self._untyped_storage.share_memory_()
        return self

    def is_pinned(self, device="cuda"):
        return False

    def _get_legacy_storage_class(self):
        return _legacy_class(self.dtype)

    def type(self, dtype=None, non_blocking=False):
        """The legacy class name (``torch.FloatStorage``)."""
        if dtype is None:
            return "torch." + self._get_legacy_storage_class().__name__
        raise NotImplementedError("TypedStorage.type(dtype): use tensor.to(dtype).storage()")

    def pickle_storage_type(self):
        return self._get_legacy_storage_class().__name__

    def __repr__(self):
        body = "\n".join(f" {v}" for v in self.tolist())
        head = (f"[{type(self).__module__.replace('ferrotorch', 'torch')}.{type(self).__name__}(dtype="
                f"torch.{_dtype_name(self.dtype)}, device={self._untyped_storage.device}) of size {self._size()}]")
        return f"{body}\n{head}" if body else head


_LEGACY_CLASSES = {}


def _legacy_class(dtype):
    name = _dtype_name(dtype)
    if name not in _LEGACY:
        raise RuntimeError(f"there is no legacy storage class for {dtype}")
    return _LEGACY_CLASSES[name]


def _make_legacy(name, dtype):
    def __init__(self, *args, wrap_storage=None, dtype=None, device=None, _internal=False):
        TypedStorage.__init__(self, *args, wrap_storage=wrap_storage, dtype=self._fixed_dtype, _internal=_internal)

    cls = type(f"{_LEGACY[name]}Storage", (TypedStorage,),
               {"_fixed_dtype": dtype, "__init__": __init__, "__module__": "ferrotorch",
                "__doc__": f"The legacy ``TypedStorage`` of {name} elements."})
    _LEGACY_CLASSES[name] = cls
    return cls


def _install(module):
    """Legacy storage classes at the top level (``torch.FloatStorage``)."""
    for name in _LEGACY:
        cls = _make_legacy(name, getattr(module, name))
        setattr(module, cls.__name__, cls)
    module.TypedStorage = TypedStorage

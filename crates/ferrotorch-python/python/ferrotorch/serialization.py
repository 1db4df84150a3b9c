"""``torch.serialization``: ``save``/``load`` and the allow-list of classes
a checkpoint may hold (``add_safe_globals``, ``safe_globals``).

Note [Allow-listed classes]
A ``torch.save`` file names classes by import path (``__main__.Net``,
``torch.nn.modules.linear.Linear``). Loading rebuilds only classes that
are allow-listed here (and, with ``weights_only=False``, ferrotorch's own
``nn`` classes under their ``torch.`` paths): the Rust reader turns each
into data (Note [A pickle reader without callables]) and ``_serialization``
makes the object as pickle's protocol does, ``cls.__new__(cls, *args)``
then ``__setstate__(state)`` or ``__dict__.update(state)``. Nothing else in
the file is called, so allow-listing a class trusts that class's
``__new__``/``__setstate__``, never the file. A ``ferrotorch.X`` class is
also allowed under ``torch.X``, the path a file PyTorch wrote names.
"""
import enum
import os

from . import _C
from ._serialization import load, save  # noqa: F401

__all__ = ["add_safe_globals", "clear_safe_globals", "get_safe_globals", "get_unsafe_globals_in_checkpoint",
           "safe_globals", "load", "save", "DEFAULT_PROTOCOL", "LoadEndianness", "SourceChangeWarning",
           "get_default_load_endianness", "set_default_load_endianness", "get_default_mmap_options",
           "set_default_mmap_options"]

DEFAULT_PROTOCOL = 2

_SAFE = []


class SourceChangeWarning(Warning):
    pass


class LoadEndianness(enum.Enum):
    NATIVE = 1
    LITTLE = 2
    BIG = 3


_ENDIAN = [None]
_MMAP_FLAGS = [None]


def get_default_load_endianness():
    return _ENDIAN[0]


def set_default_load_endianness(endianness):
    """How to read a file without a byteorder record: ferrotorch reads such
    files as little-endian (this machine's order), so ``None``, ``NATIVE``
    and ``LITTLE`` are accepted and ``BIG`` is an error, never ignored."""
    if endianness is not None and not isinstance(endianness, LoadEndianness):
        raise TypeError("Invalid argument type in function set_default_load_endianness")
    if endianness is LoadEndianness.BIG:
        raise RuntimeError("set_default_load_endianness: ferrotorch reads files without a byteorder record as "
                           "little-endian; LoadEndianness.BIG is not supported")
    _ENDIAN[0] = endianness


def get_default_mmap_options():
    return _MMAP_FLAGS[0]


class set_default_mmap_options:
    """Context manager (and setter) of the flags ``torch.load(mmap=True)``
    maps with. ferrotorch maps privately (``mmap.MAP_PRIVATE``, torch's
    default); ``MAP_SHARED`` is an error, never ignored."""

    def __init__(self, flags):
        import mmap

        if flags != mmap.MAP_PRIVATE:
            raise RuntimeError("set_default_mmap_options: ferrotorch maps checkpoints with mmap.MAP_PRIVATE "
                               f"only (writes stay in this process); got flags {flags!r}")
        self.prev = _MMAP_FLAGS[0]
        _MMAP_FLAGS[0] = flags

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        _MMAP_FLAGS[0] = self.prev


def _check(entry):
    if isinstance(entry, tuple):
        if len(entry) != 2 or not isinstance(entry[1], str):
            raise ValueError(f"Expected tuple of (callable, str) but got {entry}")
    elif not callable(entry):
        raise TypeError(f"Expected a class or function, but got {type(entry).__name__}")


def add_safe_globals(safe_globals):
    """Allow ``torch.load(weights_only=True)`` to rebuild these classes
    (each a class or ``(class, "module.Name")``)."""
    for g in safe_globals:
        _check(g)
    _SAFE.extend(safe_globals)


def get_safe_globals():
    return list(_SAFE)


def clear_safe_globals():
    _SAFE.clear()


class safe_globals:
    """``with torch.serialization.safe_globals([Net]): torch.load(...)``:
    the classes are allowed inside the block only."""

    def __init__(self, safe_globals):
        for g in safe_globals:
            _check(g)
        self.safe_globals = list(safe_globals)

    def __enter__(self):
        self._before = list(_SAFE)
        _SAFE.extend(self.safe_globals)

    def __exit__(self, *exc):
        _SAFE[:] = self._before


def _torch_path(cls):
    """The import path torch names ``cls`` by: a ferrotorch ``nn`` class
    by the module torch defines it in (``torch.nn.modules.flatten.Flatten``),
    another ferrotorch class under ``torch.``, anything else as it is."""
    from .nn import _torch_paths

    module, name = cls.__module__, cls.__qualname__
    if module == "ferrotorch" or module.startswith("ferrotorch."):
        from . import nn

        if getattr(nn, name, None) is cls and name in _torch_paths.PATHS:
            return f"{_torch_paths.PATHS[name]}.{name}"
        module = "torch" + module[len("ferrotorch"):]
    return f"{module}.{name}"


def _paths(entry):
    """The import paths a safe-globals entry allows."""
    if isinstance(entry, tuple):
        obj, path = entry
        paths = [path]
    else:
        obj = entry
        paths = [f"{obj.__module__}.{obj.__qualname__}"]
    if not isinstance(entry, tuple) and isinstance(obj, type):
        paths.append(_torch_path(obj))
    for p in list(paths):
        if p.startswith("ferrotorch."):
            paths.append("torch." + p[len("ferrotorch."):])
    return obj, paths


def _allowed():
    """``{path: class}`` of every allow-listed class."""
    out = {}
    for e in _SAFE:
        obj, paths = _paths(e)
        for p in paths:
            out[p] = obj
    return out


def _own_class(path):
    """ferrotorch's class for a ``torch.`` path (``torch.nn.modules.linear
    .Linear`` is ``ferrotorch.nn.Linear``), or None: what
    ``weights_only=False`` rebuilds without an allow-list."""
    import importlib

    if not path.startswith("torch.nn."):
        return None
    mod, _, name = path.rpartition(".")
    try:
        m = importlib.import_module("ferrotorch" + mod[len("torch"):])
    except ImportError:
        m = None
    from . import nn

    cls = getattr(m, name, None) if m is not None else None
    if cls is None:
        cls = getattr(nn, name, None)
    if isinstance(cls, type) and (issubclass(cls, nn.Module) or cls is nn.Parameter):
        return cls
    return None


def get_unsafe_globals_in_checkpoint(f):
    """The classes a checkpoint names that loading needs allow-listed,
    read without loading any tensor."""
    if isinstance(f, (str, os.PathLike)):
        return _C._pt_classes_file(os.fspath(f))
    return _C._pt_classes(f.read())

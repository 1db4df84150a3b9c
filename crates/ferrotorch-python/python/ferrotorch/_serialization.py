"""``ferrotorch.save`` / ``ferrotorch.load``: tensors and (nested)
dicts/lists/tuples of tensors and plain values, stored as safetensors,
which hold raw bytes, dtypes and shapes only, so loading never executes
code from the file. The bytes are written and validated by the nn crate's
safetensors module; this file only flattens the Python structure into
named tensors and back.

Note [What save keeps]
The structure goes into the file's metadata as JSON (``ferrotorch.layout``)
in which every value is tagged, so it round-trips exactly: dict keys of any
plain type (``'a.b'`` and ``{'a': {'b': ...}}`` are different keys; tuple
and int keys stay tuples and ints), lists vs tuples, ``OrderedDict``,
``requires_grad`` and ``nn.Parameter``, and sharing: one tensor stored
under several keys is stored once and loads as one tensor, and views of
one storage load as views of one storage (the storage is saved once, as
bytes, when two or more different views of it are saved). A flat dict of
tensors (a state dict) keeps its keys as the safetensors names, so other
safetensors readers see the usual layout. Complex dtypes the format lacks
(complex32, complex128) are stored as their (re, im) pairs
(``view_as_real``) and named in ``ferrotorch.complex``; loading views them
as complex again.

Saving to a path writes a uniquely named temporary file in the same
directory, syncs it, renames it over the target and syncs the directory:
two processes saving to one path never mix their bytes, and a crash leaves
either the old file or the new one."""

import collections
import json
import os
import tempfile

from . import _C, _files


class _Writer:
    def __init__(self):
        self.tensors = {}  # safetensors name -> tensor
        self.memo = {}  # (storage ptr, offset, shape, stride, dtype) -> node
        self.groups = {}  # storage key -> list of tensors
        self.states = {}  # id of a custom class's object -> (it, its state)
        self.paired = []  # names stored as view_as_real of a complex tensor

    def unique(self, name):
        base, n = name or "tensor", 0
        while name in self.tensors or not name:
            n += 1
            name = f"{base}#{n}"
        return name

    def collect(self, obj):
        """First pass: group every tensor by its storage."""
        if isinstance(obj, _C.Tensor):
            s = obj.untyped_storage()
            views = self.groups.setdefault((s.data_ptr(), s.nbytes()), [])
            if not any(v is obj for v in views):
                views.append(obj)
        elif isinstance(obj, dict):
            for k, v in obj.items():
                self.collect(v)
        elif isinstance(obj, (list, tuple)):
            for v in obj:
                self.collect(v)
        elif isinstance(obj, _C.ScriptObject) and id(obj) not in self.states:
            # a custom class's object is stored as its def_pickle state
            self.states[id(obj)] = (obj, obj.__getstate__())
            self.collect(self.states[id(obj)][1])

    def plan(self):
        """Storages seen through two or more distinct views (of one dtype)
        are saved once as raw elements: ``{storage key: blob name}``."""
        self.blobs = {}
        for key, views in self.groups.items():
            layouts = {(v.storage_offset(), tuple(v.shape), v.stride(), v.dtype, v.is_conj())
                       for v in views}
            dtypes = {v.dtype for v in views}
            if len(layouts) > 1 and len(dtypes) == 1:
                t = views[0]
                n = key[1] // t.element_size()
                blob = t.detach().as_strided((n,), (1,), 0)
                if blob.is_conj():  # the blob holds the memory as it is
                    blob = blob.conj()
                name = self.unique(f"__storage_{len(self.blobs)}__")
                self.tensors[name] = self.storable(name, blob)
                self.blobs[key] = name

    def storable(self, name, t):
        """``t`` as safetensors can hold it: complex32/complex128 as their
        (re, im) pairs, remembered under ``name``."""
        if t.dtype in (_C.complex32, _C.complex128):
            self.paired.append(name)
            return t.detach().resolve_conj().view_as_real()
        return t

    def node(self, obj, path):
        if isinstance(obj, _C.Tensor):
            from .nn.parameter import Parameter

            s = obj.untyped_storage()
            skey = (s.data_ptr(), s.nbytes())
            lkey = skey + (obj.storage_offset(), tuple(obj.shape), obj.stride(), obj.dtype,
                           obj.is_conj())
            if lkey in self.memo:
                return self.memo[lkey]
            flags = {"g": bool(obj.requires_grad), "p": isinstance(obj, Parameter)}
            if skey in self.blobs:
                node = {"s": self.blobs[skey], "shape": list(obj.shape),
                        "stride": list(obj.stride()), "offset": obj.storage_offset(), **flags}
                if obj.is_conj():  # a lazily conjugated view of the stored memory
                    node["j"] = True
            else:
                name = self.unique(path)
                self.tensors[name] = self.storable(name, obj)
                node = {"t": name, **flags}
            self.memo[lkey] = node
            return node
        if isinstance(obj, dict):
            tag = "o" if isinstance(obj, collections.OrderedDict) else "d"
            return {tag: [[_key(k), self.node(v, f"{path}.{k}" if path else str(k))]
                          for k, v in obj.items()]}
        if isinstance(obj, (list, tuple)):
            kind = "l" if isinstance(obj, list) else "u"
            return {kind: [self.node(v, f"{path}.{i}" if path else str(i))
                           for i, v in enumerate(obj)]}
        if obj is None or isinstance(obj, (bool, int, float, str)):
            return {"v": obj}
        if isinstance(obj, _C.ScriptObject):
            return {"c": obj._class_name, "state": self.node(self.states[id(obj)][1], path)}
        raise TypeError(f"ferrotorch.save: cannot store an object of type {type(obj).__name__}; "
                        "only tensors, numbers, strings, custom class objects and dicts/lists/tuples of them")


def _key(k):
    """A dict key as a tagged node (plain values and tuples of them)."""
    if k is None or isinstance(k, (bool, int, float, str)):
        return {"v": k}
    if isinstance(k, tuple):
        return {"u": [_key(x) for x in k]}
    raise TypeError(f"ferrotorch.save: cannot store a dict key of type {type(k).__name__}")


def _unkey(node):
    if not isinstance(node, dict):
        return node  # files written before keys were tagged
    if "u" in node:
        return tuple(_unkey(x) for x in node["u"])
    return node["v"]


class _Reader:
    def __init__(self, tensors):
        self.tensors = tensors
        self.made = {}  # id of layout node -> tensor (sharing)

    def tensor(self, node):
        key = json.dumps(node, sort_keys=True)
        if key in self.made:
            return self.made[key]
        if "t" in node:
            t = self.tensors[node["t"]]
        else:
            t = self.tensors[node["s"]].as_strided(node["shape"], node["stride"], node["offset"])
            if node.get("j"):
                t = t.conj()
        if node.get("p"):
            from .nn.parameter import Parameter

            t = Parameter(t, node.get("g", True))
        elif node.get("g"):
            t.requires_grad_(True)
        self.made[key] = t
        return t

    def value(self, node):
        if "t" in node or "s" in node:
            return self.tensor(node)
        if "d" in node:
            return {_unkey(k): self.value(v) for k, v in node["d"]}
        if "o" in node:
            return collections.OrderedDict((_unkey(k), self.value(v)) for k, v in node["o"])
        if "l" in node:
            return [self.value(v) for v in node["l"]]
        if "u" in node:
            return tuple(self.value(v) for v in node["u"])
        if "c" in node:
            # a registered custom class rebuilt by its own __setstate__
            return _C._script_object_from_state(node["c"], self.value(node["state"]))
        return node["v"]


def save(obj, f, pickle_module=None, pickle_protocol=2, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False):
    """Write ``obj`` to the path or binary file ``f`` as ``torch.save`` does:
    PyTorch's zip format (Note [Writing torch.save files]), which
    ``torch.load(weights_only=True)`` reads — tensors with their strides and
    shared storages, parameters, dicts (``OrderedDict`` with a state dict's
    ``_metadata``), lists, tuples, sets, numbers, strings, bytes, sizes,
    dtypes and devices. An object holding a custom class's object
    (``torch.classes``) is written in ferrotorch's own safetensors layout
    (Note [What save keeps]), which ``load`` reads too, and so is a save
    to a path ending in ``.safetensors``."""
    named_safetensors = isinstance(f, (str, os.PathLike)) and os.fspath(f).endswith(".safetensors")
    try:
        if named_safetensors:
            raise _NeedsOwnFormat()
        tree = _tree(obj, {})
    except _NeedsOwnFormat:
        blob = _save_safetensors(obj)
    else:
        archive = "archive"
        if isinstance(f, (str, os.PathLike)):
            stem = os.path.splitext(os.path.basename(os.fspath(f)))[0]
            archive = stem if stem and "/" not in stem else "archive"
        blob = _C._save_pt(tree, archive)
    _write_blob(f, blob)


class _NeedsOwnFormat(Exception):
    """An object torch's format has no place for here (a custom class's
    object): saved in ferrotorch's own layout instead."""


def _tree(obj, seen):
    """``obj`` as the tagged tree ``_C._save_pt`` writes; ``seen`` maps the
    ids of containers and tensors already written (shared objects become
    references)."""
    import ferrotorch as ft

    if obj is None:
        return ("none",)
    if isinstance(obj, bool):
        return ("bool", obj)
    if isinstance(obj, int):
        if -2 ** 63 <= obj < 2 ** 63:
            return ("int", obj)
        n = (obj.bit_length() + 8) // 8
        return ("bigint", obj.to_bytes(n, "little", signed=True))
    if isinstance(obj, float):
        return ("float", obj)
    if isinstance(obj, complex):
        return ("complex", obj.real, obj.imag)
    if isinstance(obj, str):
        return ("str", obj)
    if isinstance(obj, (bytes, bytearray)):
        return ("bytes", bytes(obj))
    if isinstance(obj, ft.Size):
        return ("size", list(obj))
    if isinstance(obj, ft.dtype):
        return ("dtype", str(obj).replace("torch.", ""))
    if isinstance(obj, ft.device):
        return ("device", str(obj))
    if isinstance(obj, _C.ScriptObject):
        raise _NeedsOwnFormat()
    key = id(obj)
    if key in seen:
        return ("ref", key)
    if isinstance(obj, _C.Tensor):
        seen[key] = obj
        if isinstance(obj, ft.nn.Parameter):
            return ("param", key, obj.detach(), obj.requires_grad)
        return ("tensor", key, obj.detach(), obj.requires_grad)
    if isinstance(obj, collections.OrderedDict):
        seen[key] = obj
        attrs = [(k, _tree(v, seen)) for k, v in vars(obj).items()] if hasattr(obj, "__dict__") else []
        return ("odict", key, [(_tree(k, seen), _tree(v, seen)) for k, v in obj.items()], attrs)
    if type(obj) is dict:
        seen[key] = obj
        return ("dict", key, [(_tree(k, seen), _tree(v, seen)) for k, v in obj.items()])
    if type(obj) is list:
        seen[key] = obj
        return ("list", key, [_tree(v, seen) for v in obj])
    if type(obj) is tuple:
        return ("tuple", [_tree(v, seen) for v in obj])
    if isinstance(obj, (set, frozenset)) and type(obj) in (set, frozenset):
        return ("set", [_tree(v, seen) for v in obj], type(obj) is frozenset)
    if any(isinstance(v, _C.ScriptObject) for v in (obj,)):
        raise _NeedsOwnFormat()
    from .nn import Module

    if isinstance(obj, Module) or hasattr(obj, "__dict__") and _is_plain_class(type(obj)):
        # pickle's protocol 2 for an instance: its class by import path
        # (ferrotorch's own under torch's, so torch.load finds torch's
        # class) and its __dict__ (Note [Allow-listed classes])
        seen[key] = obj
        cls = type(obj)
        from .serialization import _torch_path

        module = _torch_path(cls).rpartition(".")[0]
        state = obj.__getstate__() if type(obj).__getstate__ is not object.__getstate__ else vars(obj)
        return ("object", key, module, cls.__qualname__, _tree(state, seen))
    raise TypeError(f"torch.save: cannot save an object of type {type(obj).__module__}.{type(obj).__qualname__} "
                    "(a checkpoint holds tensors, containers, numbers, strings, sizes, dtypes and devices)")


def _is_plain_class(cls):
    """A class pickle would write as ``NEWOBJ`` + ``BUILD``: a Python class
    of the default ``__reduce_ex__`` (not a built-in type, not one with a
    reducer of its own, which a loader without callables could not
    rebuild)."""
    # a nested or function-local class (`A.B`, `f.<locals>.C`) is not
    # importable by its path
    return (cls.__reduce_ex__ is object.__reduce_ex__ and cls.__reduce__ is object.__reduce__
            and "." not in cls.__qualname__ and cls.__module__ != "builtins")


def _save_safetensors(obj):
    """``obj`` in ferrotorch's own safetensors layout (Note [What save
    keeps])."""
    w = _Writer()
    w.collect(obj)
    w.plan()
    layout = w.node(obj, "")  # a state dict's keys become the names
    meta = {"ferrotorch.layout": json.dumps(layout)}
    if w.paired:
        meta["ferrotorch.complex"] = json.dumps(sorted(w.paired))
    return _C._safetensors_save(sorted(w.tensors.items()), meta)


def _write_blob(f, blob):
    """``blob`` to the binary file ``f``, or to the path ``f`` atomically
    (a temporary file in the same directory, synced, renamed over it)."""
    if not isinstance(f, (str, os.PathLike)):
        _files.write_bytes(f, blob)  # Note [Handing bytes to a BytesIO]
        return
    path = os.fspath(f)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=os.path.basename(path) + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(blob)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:
        dfd = os.open(directory, os.O_RDONLY)
    except OSError:
        return  # a directory that cannot be opened (some platforms)
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)


def load(f, map_location=None, weights_only=True, mmap=None, **pickle_load_args):
    """Read what ``save`` wrote (or any safetensors file, as a dict).
    Never executes code from the file; PyTorch's own formats (zip and
    legacy pickles) are recognised and refused with what to do instead."""
    if mmap:
        if not isinstance(f, (str, os.PathLike)):
            raise ValueError("f must be a file path in order to use the mmap argument")
        with open(f, "rb") as fh:
            head = fh.read(64)
        if head[:4] == b"PK\x03\x04" and head[30:45] != b"archive/version":
            return _load_torch(None, path=os.fspath(f), weights_only=weights_only)
        if head[:4] == b"\x80\x02\x8a\x0a":
            raise RuntimeError("mmap can only be used with files saved with "
                               "`torch.save(_use_new_zipfile_serialization=True)`, please torch.save your "
                               "checkpoint with this option in order to use mmap.")
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            head = fh.read(512)
            if _is_torch_format(head):
                return _load_torch(None, path=os.fspath(f), mapped=False, weights_only=weights_only)
            fh.seek(0)
            blob = fh.read()
    else:
        blob = f.read()
    if _is_torch_format(blob[:512]):
        # PyTorch's torch.save zip, its stream before 1.6 or its tar layout
        # before 0.4 (Note [Reading torch.save files])
        return _load_torch(blob, weights_only=weights_only)
    tensors, meta = _C._safetensors_load(blob)
    for name in json.loads(meta.get("ferrotorch.complex", "[]")):
        t = tensors.get(name) if isinstance(name, str) else None
        if t is None or t.dim() == 0 or t.shape[-1] != 2 or not t.is_floating_point():
            raise RuntimeError(f"ferrotorch.load: {name!r} is listed as complex pairs but is not stored as them")
        tensors[name] = t.view_as_complex()
    layout = meta.get("ferrotorch.layout")
    if layout is None:
        return tensors
    return _Reader(tensors).value(json.loads(layout))


def _named(ft, name, what):
    v = getattr(ft, name, None)
    if v is None:
        raise RuntimeError(f"torch.load: the file holds the {what} torch.{name}, which ferrotorch does not have")
    return v


def _is_torch_format(head):
    return ((head[:4] == b"PK\x03\x04" and head[30:45] != b"archive/version") or head[:4] == b"\x80\x02\x8a\x0a"
            or head[257:262] == b"ustar")


def _classes_for(blob, path, weights_only):
    """``{path: class}`` the file may rebuild (Note [Allow-listed
    classes]): the allow-list, and with ``weights_only=False`` ferrotorch's
    own classes the file names."""
    from . import serialization

    allowed = serialization._allowed()
    if weights_only is False:
        # the classes the pickle names, read without the file's storages
        for name in (_C._pt_classes(blob) if blob is not None else _C._pt_classes_file(path)):
            if name not in allowed:
                own = serialization._own_class(name)
                if own is not None:
                    allowed[name] = own
    return allowed


def _rebuild(cls, args):
    """An allow-listed object as pickle makes it: ``__new__`` with its
    arguments; its state is set once every container is filled."""
    return cls.__new__(cls, *args)


def _set_state(obj, state):
    """BUILD: ``__setstate__(state)``, else the state into ``__dict__``
    (and a ``(dict, slots)`` pair's slots as attributes)."""
    setstate = getattr(type(obj), "__setstate__", None)
    if setstate is not None and setstate is not getattr(object, "__setstate__", None):
        obj.__setstate__(state)
        return
    if isinstance(state, tuple) and len(state) == 2:
        state, slots = state
        for k, v in (slots or {}).items():
            setattr(obj, k, v)
    if state:
        obj.__dict__.update(state)


def _load_torch(blob, path=None, mapped=True, weights_only=True):
    """A ``torch.save`` file as Python objects: the Rust reader's objects
    (no code runs: Note [A pickle reader without callables]) built in
    three passes, so that shared objects stay shared and nesting costs no
    recursion: mutable containers first (empty), then the other objects in
    pickle order (a tuple's items precede it), then the containers' items."""
    import ferrotorch as ft

    classes = _classes_for(blob, path, weights_only)
    names = list(classes)
    try:
        if path is None:
            objs, root = _C._load_pt(blob, names)
        elif mapped:
            objs, root = _C._load_pt_mmap(path, names)
        else:
            objs, root = _C._load_pt_file(path, names)
    except RuntimeError as e:
        if weights_only is False and "names the global" in str(e):
            raise RuntimeError(f"{e}. weights_only=False rebuilds ferrotorch's own nn classes and allow-listed "
                               "ones, and never calls anything else a file names") from None
        raise
    built = [None] * len(objs)
    for i, (kind, payload) in enumerate(objs):
        if kind == "list":
            built[i] = []
        elif kind == "dict":
            built[i] = {}
        elif kind == "ordereddict":
            built[i] = collections.OrderedDict()
        elif kind == "set":
            built[i] = set()
    for i, (kind, payload) in enumerate(objs):
        if kind in ("value", "none"):
            built[i] = payload
        elif kind == "bigint":
            built[i] = int.from_bytes(payload, "little", signed=True)
        elif kind == "complex":
            built[i] = complex(*payload)
        elif kind == "tuple":
            built[i] = tuple(built[j] for j in payload)
        elif kind == "frozenset":
            built[i] = frozenset(built[j] for j in payload)
        elif kind == "tensor":
            built[i] = payload
        elif kind == "parameter":
            built[i] = ft.nn.Parameter(payload[0], requires_grad=payload[1])
        elif kind == "size":
            built[i] = ft.Size(payload)
        elif kind == "dtype":
            built[i] = _named(ft, payload, "dtype")
        elif kind == "device":
            built[i] = ft.device(payload)
        elif kind == "layout":
            built[i] = _named(ft, payload.rpartition(".")[2], "layout")
        elif kind == "object":
            built[i] = _rebuild(classes[payload[0]], [built[j] for j in payload[1]])
    for i, (kind, payload) in enumerate(objs):
        if kind == "list":
            built[i].extend(built[j] for j in payload)
        elif kind == "dict":
            for k, v in payload:
                built[i][built[k]] = built[v]
        elif kind == "ordereddict":
            for k, v in payload[0]:
                built[i][built[k]] = built[v]
        elif kind == "set":
            built[i].update(built[j] for j in payload)
    for i, (kind, payload) in enumerate(objs):
        # objects' state (BUILD), once every container is filled
        if kind == "object" and payload[2] is not None:
            _set_state(built[i], built[payload[2]])
    for i, (kind, payload) in enumerate(objs):
        # a state dict's __dict__ (its _metadata), once every dict is filled
        if kind == "ordereddict" and payload[1] is not None:
            state = built[payload[1]]
            if isinstance(state, dict):
                for k, v in state.items():
                    setattr(built[i], k, v)
    return built[root]

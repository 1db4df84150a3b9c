"""``.pt2`` archives in PyTorch's layout (``torch/export/pt2_archive``):
a zip of stored entries under one root folder — ``archive_format``
(``pt2``), ``archive_version``, ``models/model.json`` (the program,
``_serde``), ``data/weights/model_weights_config.json`` with one raw
storage per ``weight_N``, the same for constants (``tensor_N``), and the
example inputs as a ``torch.save`` file (``data/sample_inputs/model.pt``).
Reading checks every entry before use; weights are raw bytes viewed with
the sizes and strides the config gives (bounds checked), the example
inputs go through ``torch.load(weights_only=True)``, and a pickled
weight (``use_pickle``, torch's tensor subclasses) is refused."""

import io
import json
import os
import uuid
import zipfile
import zlib

from .. import _C
from . import _serde
from .graph_signature import CustomObjArgument, InputKind

_MODEL = "model"
# a compressed entry (torch writes none) may not inflate past this
_MAX_INFLATED = 256 << 20


def _raw(t):
    """The bytes of ``t``'s elements (contiguous)."""
    return _C._to_bytes(t.detach().contiguous())


def _payload(tensors, prefix, is_param):
    """``(files, config)``: one file per distinct tensor (tied weights
    share one), the config entry of each name."""
    files, config, seen = {}, {}, {}
    from ._trace import TensorMeta

    for name, t in tensors.items():
        if id(t) not in seen:
            seen[id(t)] = f"{prefix}{len(seen)}"
            files[seen[id(t)]] = _raw(t)
        m = TensorMeta(t.shape, t.dtype, _contiguous_strides(t.shape), t.requires_grad, 0)
        config[name] = {"path_name": seen[id(t)], "is_param": bool(is_param(name, t)),
                        "use_pickle": False, "tensor_meta": _serde.tensor_meta(m)}
    return files, {"config": config}


def _contiguous_strides(shape):
    out, acc = [], 1
    for s in reversed(list(shape)):
        out.append(acc)
        acc *= max(s, 1)
    return list(reversed(out))


def save(ep, f, extra_files=None):
    from .. import nn, save as torch_save

    if any(s.kind in (InputKind.CUSTOM_OBJ, InputKind.TOKEN) or isinstance(s.arg, CustomObjArgument)
           for s in ep.graph_signature.input_specs):
        raise _serde.SerializeError(
            "export.save: programs that take or hold custom class objects cannot be saved yet "
            "(torch writes them through TorchBind's pickling)")
    if ep.range_constraints:
        raise _serde.SerializeError(
            "export.save: programs with dynamic shapes cannot be saved yet "
            f"(symbols {', '.join(map(str, ep.range_constraints))}); export with static shapes to save")
    program = json.dumps(_serde.serialize(ep)).encode()
    weights, wconf = _payload(ep.state_dict, "weight_",
                              lambda n, t: isinstance(t, nn.Parameter))
    consts = {k: v for k, v in ep.constants.items() if isinstance(v, _C.Tensor)}
    if len(consts) != len(ep.constants):
        raise _serde.SerializeError("export.save: programs holding custom class objects cannot be saved yet")
    constants, cconf = _payload(consts, "tensor_", lambda n, t: False)
    buf = io.BytesIO()
    torch_save(ep.example_inputs if ep.example_inputs is not None else ((), {}), buf)
    root = "archive"
    if isinstance(f, (str, os.PathLike)):
        root = os.path.splitext(os.path.basename(os.fspath(f)))[0] or "archive"
    entries = [("archive_format", b"pt2"), ("archive_version", b"0"),
               (f"models/{_MODEL}.json", program),
               (f"data/weights/{_MODEL}_weights_config.json", json.dumps(wconf).encode()),
               (f"data/constants/{_MODEL}_constants_config.json", json.dumps(cconf).encode()),
               (f"data/sample_inputs/{_MODEL}.pt", buf.getvalue())]
    entries += [(f"data/weights/{k}", v) for k, v in weights.items()]
    entries += [(f"data/constants/{k}", v) for k, v in constants.items()]
    for k, v in (extra_files or {}).items():
        entries.append((f"extra/{k}", v.encode() if isinstance(v, str) else bytes(v)))
    entries += [("byteorder", b"little"), (".data/version", b"6"),
                (".data/serialization_id", str(uuid.uuid4().int).encode())]
    own = isinstance(f, (str, os.PathLike))
    with zipfile.ZipFile(f if not own else os.fspath(f), "w", zipfile.ZIP_STORED) as z:
        for name, data in entries:
            z.writestr(f"{root}/{name}", data)


class _Archive:
    """The entries of a ``.pt2`` zip under its root folder."""

    def __init__(self, f):
        try:
            self.z = zipfile.ZipFile(f)
        except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError) as e:
            raise _serde.SerializeError(f"export.load: not a .pt2 archive ({e})") from None
        names = self.z.namelist()
        roots = {n.split("/", 1)[0] for n in names if "/" in n}
        if len(roots) != 1:
            raise _serde.SerializeError(f"export.load: expected one root folder, found {sorted(roots)[:5]}")
        self.root = roots.pop()
        self.names = {n[len(self.root) + 1:]: n for n in names if n.startswith(self.root + "/")}

    def has(self, name):
        return name in self.names

    def read(self, name):
        if name not in self.names:
            raise _serde.SerializeError(f"export.load: the archive has no {name!r}")
        info = self.z.getinfo(self.names[name])
        if info.compress_type != zipfile.ZIP_STORED and info.file_size > _MAX_INFLATED:
            raise _serde.SerializeError(
                f"export.load: entry {name!r} is compressed and declares {info.file_size} bytes")
        try:
            return self.z.read(info)
        except (zipfile.BadZipFile, OSError, ValueError, EOFError, zlib.error, NotImplementedError) as e:
            raise _serde.SerializeError(f"export.load: entry {name!r}: {e}") from None

    def json(self, name):
        try:
            return json.loads(self.read(name))
        except (ValueError, RecursionError) as e:
            raise _serde.SerializeError(f"export.load: {name!r} is not valid JSON ({e})") from None


def _tensors(ar, folder, config_name):
    """The tensors a payload config names, each viewed from its file."""
    from .. import nn

    conf = ar.json(config_name)
    if not isinstance(conf, dict) or not isinstance(conf.get("config"), dict):
        raise _serde.SerializeError(f"export.load: {config_name!r} has no config")
    files, out = {}, {}
    for fqn, meta in conf["config"].items():
        if meta.get("use_pickle"):
            raise _serde.SerializeError(
                f"export.load: {fqn!r} is stored pickled (a tensor subclass); only plain "
                "tensors are read")
        path = meta.get("path_name")
        if not isinstance(path, str) or "/" in path or ".." in path:
            raise _serde.SerializeError(f"export.load: {fqn!r} has path {path!r}")
        tm = _serde.meta_of(meta["tensor_meta"])
        if path not in files:
            data = ar.read(folder + path)
            size = tm.dtype.itemsize
            if len(data) % size:
                raise _serde.SerializeError(
                    f"export.load: {folder}{path} has {len(data)} bytes, not a whole number of "
                    f"{tm.dtype} elements")
            files[path] = _C._from_bytes(data, str(tm.dtype).rpartition(".")[2], [len(data) // size])
        flat = files[path]
        if flat.dtype != tm.dtype:
            raise _serde.SerializeError(f"export.load: {fqn!r} is {tm.dtype} but {path} holds {flat.dtype}")
        try:
            t = flat.as_strided(list(tm.shape), list(tm.stride()), tm.storage_offset())
        except RuntimeError as e:
            raise _serde.SerializeError(f"export.load: {fqn!r}: {e}") from None
        if meta.get("is_param"):
            t = nn.Parameter(t, requires_grad=tm.requires_grad)
        out[fqn] = t
    return out


def load(f, extra_files=None):
    from .. import load as torch_load

    ar = _Archive(f)
    fmt = ar.read("archive_format") if ar.has("archive_format") else None
    if fmt != b"pt2":
        raise _serde.SerializeError(f"export.load: archive_format is {fmt!r}, expected b'pt2'")
    models = [n for n in ar.names if n.startswith("models/") and n.endswith(".json")]
    if not models:
        raise _serde.SerializeError("export.load: the archive holds no program (models/*.json)")
    name = models[0][len("models/"):-len(".json")]
    if ar.has(f"data/weights/{name}.pt") or ar.has(f"data/constants/{name}.pt"):
        raise _serde.SerializeError("export.load: weights in the legacy pickled layout are not read; "
                                    "save the program again with torch.export.save")
    try:
        state_dict = _tensors(ar, "data/weights/", f"data/weights/{name}_weights_config.json")
        constants = _tensors(ar, "data/constants/", f"data/constants/{name}_constants_config.json")
    except (KeyError, TypeError, AttributeError, IndexError, ValueError) as e:
        raise _serde.SerializeError(f"export.load: malformed weights ({type(e).__name__}: {e})") from None
    example = None
    sample = f"data/sample_inputs/{name}.pt"
    if ar.has(sample):
        example = torch_load(io.BytesIO(ar.read(sample)), weights_only=True)
    ep = _serde.deserialize(ar.json(f"models/{name}.json"), state_dict, constants, example)
    if extra_files is not None:
        for k in list(extra_files):
            entry = f"extra/{k}"
            extra_files[k] = ar.read(entry).decode() if ar.has(entry) else ""
    return ep

"""``ferrotorch.save`` / ``ferrotorch.load``: tensors and (nested)
dicts/lists of tensors stored as safetensors, which hold raw bytes, dtypes
and shapes only, so loading never executes code from the file."""

import json
import os
import struct

from . import _C

_DTYPES = {"float64": "F64", "float32": "F32", "float16": "F16", "bfloat16": "BF16",
           "int64": "I64", "int32": "I32", "int16": "I16", "int8": "I8", "uint8": "U8",
           "bool": "BOOL"}
_BACK = {v: k for k, v in _DTYPES.items()}


def _flatten(obj, prefix, out, layout):
    if isinstance(obj, _C.Tensor):
        out[prefix] = obj
        return {"t": prefix}
    if isinstance(obj, dict):
        return {"d": [[k, _flatten(v, f"{prefix}.{k}" if prefix else str(k), out, layout)]
                      for k, v in obj.items()]}
    if isinstance(obj, (list, tuple)):
        kind = "l" if isinstance(obj, list) else "u"
        return {kind: [_flatten(v, f"{prefix}.{i}" if prefix else str(i), out, layout)
                       for i, v in enumerate(obj)]}
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return {"v": obj}
    raise TypeError(f"ferrotorch.save: cannot store an object of type {type(obj).__name__}; "
                    "only tensors, numbers, strings and dicts/lists/tuples of them")


def _unflatten(node, tensors):
    if "t" in node:
        return tensors[node["t"]]
    if "d" in node:
        return {k: _unflatten(v, tensors) for k, v in node["d"]}
    if "l" in node:
        return [_unflatten(v, tensors) for v in node["l"]]
    if "u" in node:
        return tuple(_unflatten(v, tensors) for v in node["u"])
    return node["v"]


def save(obj, f):
    """Write ``obj`` (a tensor, or dicts/lists of tensors and plain values)
    to the path or binary file ``f`` in safetensors format."""
    tensors = {}
    layout = _flatten(obj, "", tensors, None)
    header = {"__metadata__": {"ferrotorch.layout": json.dumps(layout)}}
    chunks, offset = [], 0
    for name in sorted(tensors):
        t = tensors[name]
        data = _C._to_bytes(t)
        header[name] = {"dtype": _DTYPES[repr(t.dtype)[6:]], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    blob = struct.pack("<Q", len(h)) + h + b"".join(chunks)
    if isinstance(f, (str, os.PathLike)):
        tmp = f"{os.fspath(f)}.tmp"
        with open(tmp, "wb") as fh:
            fh.write(blob)
        os.replace(tmp, f)
    else:
        f.write(blob)


def load(f, map_location=None, weights_only=True):
    """Read what ``save`` wrote. Never executes code from the file."""
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            blob = fh.read()
    else:
        blob = f.read()
    if len(blob) < 8:
        raise RuntimeError("ferrotorch.load: file too short to be a safetensors file")
    (n,) = struct.unpack("<Q", blob[:8])
    if 8 + n > len(blob):
        raise RuntimeError("ferrotorch.load: header length exceeds the file size")
    try:
        header = json.loads(blob[8:8 + n])
    except ValueError as e:
        raise RuntimeError(f"ferrotorch.load: invalid header: {e}") from None
    meta = header.pop("__metadata__", {}) or {}
    body = blob[8 + n:]
    tensors = {}
    for name, info in header.items():
        a, b = info["data_offsets"]
        if not 0 <= a <= b <= len(body):
            raise RuntimeError(f"ferrotorch.load: tensor '{name}' lies outside the file")
        dt = _BACK.get(info["dtype"])
        if dt is None:
            raise RuntimeError(f"ferrotorch.load: unsupported dtype {info['dtype']}")
        tensors[name] = _C._from_bytes(body[a:b], dt, list(info["shape"]))
    layout = meta.get("ferrotorch.layout")
    if layout is None:
        return tensors
    return _unflatten(json.loads(layout), tensors)

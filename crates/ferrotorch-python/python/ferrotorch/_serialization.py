"""``ferrotorch.save`` / ``ferrotorch.load``: tensors and (nested)
dicts/lists of tensors stored as safetensors, which hold raw bytes, dtypes
and shapes only, so loading never executes code from the file. The bytes
are written and validated by the nn crate's safetensors module; this file
only flattens the Python structure into named tensors and back."""

import json
import os

from . import _C


def _flatten(obj, prefix, out):
    if isinstance(obj, _C.Tensor):
        out[prefix] = obj
        return {"t": prefix}
    if isinstance(obj, dict):
        return {"d": [[k, _flatten(v, f"{prefix}.{k}" if prefix else str(k), out)]
                      for k, v in obj.items()]}
    if isinstance(obj, (list, tuple)):
        kind = "l" if isinstance(obj, list) else "u"
        return {kind: [_flatten(v, f"{prefix}.{i}" if prefix else str(i), out)
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
    layout = _flatten(obj, "", tensors)
    blob = _C._safetensors_save(sorted(tensors.items()),
                                {"ferrotorch.layout": json.dumps(layout)})
    if isinstance(f, (str, os.PathLike)):
        tmp = f"{os.fspath(f)}.tmp"
        with open(tmp, "wb") as fh:
            fh.write(blob)
        os.replace(tmp, f)
    else:
        f.write(blob)


def load(f, map_location=None, weights_only=True):
    """Read what ``save`` wrote (or any safetensors file, as a dict).
    Never executes code from the file."""
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            blob = fh.read()
    else:
        blob = f.read()
    tensors, meta = _C._safetensors_load(blob)
    layout = meta.get("ferrotorch.layout")
    if layout is None:
        return tensors
    return _unflatten(json.loads(layout), tensors)

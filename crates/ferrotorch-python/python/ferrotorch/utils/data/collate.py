"""Collation (torch's ``utils/data/_utils/collate.py``): ``default_collate``
stacks a batch of samples, ``default_convert`` turns NumPy arrays inside
one sample into tensors."""

import collections
import collections.abc
import copy
import re

from ... import _C

_in_worker = False  # set in worker processes: collate into shared memory

# NumPy dtypes of strings and objects, which stay arrays
_STR_OBJ = re.compile("[SaUO]")


def default_collate(batch):
    """Stack tensors, turn numbers into tensors, recurse into tuples,
    lists and dicts, as torch's ``default_collate``."""
    import ferrotorch

    elem = batch[0]
    if isinstance(elem, _C.Tensor):
        if _in_worker:
            # straight into shared memory: the batch then crosses to the
            # main process as a descriptor, as torch's workers do
            return _C._stack_shared(list(batch))
        return ferrotorch.stack(list(batch), 0)
    if hasattr(elem, "__array_interface__"):
        return ferrotorch.stack([ferrotorch.as_tensor(b) for b in batch], 0)
    if isinstance(elem, bool):
        return _C.tensor(list(batch))
    if isinstance(elem, float):
        return _C.tensor(list(batch), dtype=_C.float64)
    if isinstance(elem, int):
        return _C.tensor(list(batch))
    if isinstance(elem, (str, bytes)):
        return list(batch)
    if isinstance(elem, collections.abc.Mapping):
        return {k: default_collate([d[k] for d in batch]) for k in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return type(elem)(*(default_collate(list(s)) for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        if any(len(e) != len(elem) for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        out = [default_collate(list(s)) for s in zip(*batch)]
        return tuple(out) if isinstance(elem, tuple) else out
    raise TypeError(f"default_collate: batch must contain tensors, numpy arrays, numbers, dicts "
                    f"or lists; found {type(elem)}")



def default_convert(data):
    """NumPy arrays (and NumPy scalars) to tensors, recursing into
    mappings, named tuples, tuples and sequences; anything else as it is."""
    import ferrotorch

    t = type(data)
    if isinstance(data, _C.Tensor):
        return data
    if t.__module__ == "numpy" and t.__name__ not in ("str_", "string_"):
        if t.__name__ == "ndarray" and _STR_OBJ.search(data.dtype.str) is not None:
            return data
        return ferrotorch.as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        try:
            if isinstance(data, collections.abc.MutableMapping):
                clone = copy.copy(data)
                clone.update({k: default_convert(data[k]) for k in data})
                return clone
            return t({k: default_convert(data[k]) for k in data})
        except TypeError:
            return {k: default_convert(data[k]) for k in data}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return t(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            if isinstance(data, collections.abc.MutableSequence):
                clone = copy.copy(data)
                for i, d in enumerate(data):
                    clone[i] = default_convert(d)
                return clone
            return t([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data

"""``torch.return_types``: the named tuples ops with named results return
(``values, indices = t.max(0)``, or ``t.max(0).indices``)."""

from collections import namedtuple

_classes = {}


def named(op, fields):
    """The named-tuple class for ``op`` with ``fields`` (made once)."""
    key = (op, tuple(fields))
    cls = _classes.get(key)
    if cls is None:
        base = namedtuple(op, fields)

        def __repr__(self):
            body = ",\n".join(f"{k}={v!r}" for k, v in zip(self._fields, self))
            return f"torch.return_types.{op}(\n{body})"

        cls = type(op, (base,), {"__repr__": __repr__, "__slots__": (),
                                 "__module__": "ferrotorch.return_types"})
        _classes[key] = cls
        globals().setdefault(op, cls)
    return cls

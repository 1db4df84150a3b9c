"""``torch.ops``: every registered op by namespace — ``torch.ops.aten.add``,
``torch.ops.mylib.my_op`` — including ops registered after import (custom
ops, ``torch.library``). ``torch.ops.ns.op`` is an overload packet: call it
to let the arguments pick the overload, or take ``.default`` /
``.<overload name>`` for one schema."""

from . import _C
from ._library.rules import call as _call


def _full(ns, name):
    # built-in ops are registered by their bare names (``add``), as ATen's
    return name if ns == "aten" else f"{ns}::{name}"


class OpOverload:
    """One schema of an op (``torch.ops.aten.add.Tensor``)."""

    def __init__(self, packet, overload, full):
        self.overloadpacket, self._overloadname, self._name = packet, overload, full

    def __call__(self, *args, **kwargs):
        return _call(self._name, args, kwargs)

    @property
    def _schema(self):
        return _C._op_schema(self._name)

    def __repr__(self):
        return f"<OpOverload(op='{self.overloadpacket._qualified_op_name}', overload='{self._overloadname}')>"

    def __str__(self):
        return f"{self.overloadpacket._ns}.{self.overloadpacket._op_name}.{self._overloadname}"

    @property
    def __name__(self):
        return f"{self.overloadpacket._op_name}.{self._overloadname}"

    @property
    def namespace(self):
        return self.overloadpacket._ns

    @property
    def _opname(self):
        return self.overloadpacket._op_name

    def name(self):
        """``aten::add.Tensor`` (``aten::relu`` for a default overload)."""
        q = self.overloadpacket._qualified_op_name
        return q if self._overloadname == "default" else f"{q}.{self._overloadname}"


class OpOverloadPacket:
    """An op name with all its overloads (``torch.ops.aten.add``)."""

    def __init__(self, ns, name):
        self._ns, self._op_name = ns, name
        self._qualified_op_name = f"{ns}::{name}"
        self._name = _full(ns, name)

    def __call__(self, *args, **kwargs):
        return _call(self._name, args, kwargs)

    def __getattr__(self, overload):
        if overload.startswith("__"):
            raise AttributeError(overload)
        full = self._name if overload == "default" else f"{self._name}.{overload}"
        if not _C._op_exists(full):
            raise AttributeError(
                f"The underlying op of '{self._qualified_op_name}' has no overload name '{overload}'")
        op = OpOverload(self, overload, full)
        setattr(self, overload, op)
        return op

    def overloads(self):
        """The overload names (``default`` for the unnamed one)."""
        out = []
        for base, full in _C._op_overloads(self._name):
            out.append("default" if base == full else full.split(".", 1)[1])
        return out

    def __repr__(self):
        return f"<OpOverloadPacket(op='{self._qualified_op_name}')>"


class _CompositePacket:
    """An ATen op that ferrotorch writes in Python from native ops
    (``_aten_extras``): ``torch.ops.aten.<name>`` and its ``.default``
    call that function."""

    def __init__(self, name, fn):
        self._qualified_op_name, self._fn = f"aten::{name}", fn
        self.default = self

    def __call__(self, *args, **kwargs):
        return self._fn(*args, **kwargs)

    def overloads(self):
        return ["default"]

    def __repr__(self):
        return f"<OpOverloadPacket(op='{self._qualified_op_name}')>"


class _OpNamespace:
    """The ops of one namespace (``torch.ops.mylib``)."""

    def __init__(self, name):
        self.name = name

    def __getattr__(self, op):
        if op.startswith("__"):
            raise AttributeError(op)
        if self.name == "aten" and not _C._op_exists(op):
            from . import _aten_extras

            if op in _aten_extras.ATEN:
                packet = _CompositePacket(op, getattr(_aten_extras, op))
                setattr(self, op, packet)
                return packet
        if not _C._op_exists(_full(self.name, op)):
            raise AttributeError(f"'_OpNamespace' '{self.name}' object has no attribute '{op}'")
        packet = OpOverloadPacket(self.name, op)
        setattr(self, op, packet)
        return packet


class _Ops:
    """``torch.ops``."""

    __name__ = "torch.ops"

    def __getattr__(self, ns):
        if ns.startswith("__"):
            raise AttributeError(ns)
        namespace = _OpNamespace(ns)
        setattr(self, ns, namespace)
        return namespace

    def load_library(self, path):
        """Load the ferrotorch plugin (a shared library) at ``path``: its
        ops (and classes) join the dispatcher, as ``torch.ops.load_library``
        (Note [Plugin ABI] in ``crates/ferrotorch-c``). Loading a library
        runs its code. Loading the same path again does nothing."""
        import os

        _C._load_library(os.fspath(path))

    @property
    def loaded_libraries(self):
        """The paths of the plugins loaded so far."""
        return {str(p) for p in _C._loaded_libraries()}


ops = _Ops()

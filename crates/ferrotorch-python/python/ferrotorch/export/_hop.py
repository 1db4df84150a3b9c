"""The higher-order operators an exported graph names for calls on custom
class objects (seeds/004): ``torch.ops.higher_order.with_effects`` and
``call_torchbind``, and the effect token they thread."""

from .. import _C


class HigherOrderOperator:
    """An operator that takes another operator (``with_effects``) or a
    method name (``call_torchbind``) as an argument."""

    def __init__(self, name, fn):
        self._name = name
        self._fn = fn
        self.__name__ = name

    def name(self):
        return self._name

    def __call__(self, *args, **kwargs):
        return self._fn(*args, **kwargs)

    def __str__(self):
        return f"higher_order.{self._name}"

    def __repr__(self):
        return f"<HigherOrderOperator {self._name}>"


def _call_torchbind(obj, method, *args, **kwargs):
    if not isinstance(obj, _C.ScriptObject):
        raise TypeError(f"call_torchbind: expected a custom class object, got {type(obj).__name__}")
    return getattr(obj, method)(*args, **kwargs)


def _make_token():
    """A fresh effect token (torch's is an empty tensor)."""
    from .. import empty

    return empty(0)


def _with_effects(token, op, *args, **kwargs):
    out = op(*args, **kwargs)
    if out is None:
        return (token,)
    if isinstance(out, tuple):
        return (token, *out)
    return (token, out)


call_torchbind = HigherOrderOperator("call_torchbind", _call_torchbind)
with_effects = HigherOrderOperator("with_effects", _with_effects)


def install(ops):
    """Make them ``torch.ops.higher_order.*``."""
    ns = ops.higher_order
    ns.call_torchbind = call_torchbind
    ns.with_effects = with_effects

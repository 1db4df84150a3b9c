"""``torch.autograd.Variable``: what tensors were before torch 0.4. Today
``Variable(t, requires_grad)`` gives a tensor, and every tensor is an
instance of Variable, as in torch."""

import warnings

from .. import _C


class _VariableMeta(type):
    def __instancecheck__(cls, other):
        return isinstance(other, _C.Tensor)


class Variable(metaclass=_VariableMeta):
    """``Variable(data, requires_grad=False)``: ``data`` as a leaf tensor
    (sharing its data) that requires grad as asked."""

    def __new__(cls, data=None, requires_grad=False, volatile=False):
        if volatile:
            warnings.warn("volatile was removed and now has no effect. Use `with torch.no_grad():` instead.",
                          stacklevel=2)
        if data is None:
            data = _C._call_op("empty", ((0,),), {})
        out = data.detach()
        out.requires_grad_(requires_grad)
        return out

"""``nn.Parameter``: a tensor that modules register as a parameter."""

from .. import _C


class Parameter(_C.Tensor):
    """A leaf tensor that, assigned to a ``Module`` attribute, joins its
    ``parameters()``. ``requires_grad`` defaults to True."""

    _is_param = True

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = _C._call_op("empty", ((0,),), {})
        self = _C.Tensor.__new__(cls, data.detach())
        self.requires_grad_(requires_grad)
        return self

    def __repr__(self):
        return "Parameter containing:\n" + _C.Tensor.__repr__(self)

    def __reduce_ex__(self, protocol):
        from .._pickle import _rebuild_parameter

        return (_rebuild_parameter,
                (_C._to_bytes(self), repr(self.dtype)[6:], tuple(self.shape), self.requires_grad))

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        new = Parameter(self.detach().clone(), self.requires_grad)
        memo[id(self)] = new
        return new


class Buffer(_C.Tensor):
    """``nn.Buffer(data, persistent=True)``: marks a tensor to be registered
    as a buffer when assigned to a module attribute."""

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            data = _C._call_op("empty", ((0,),), {})
        self = _C.Tensor.__new__(cls, data.detach())
        self.persistent = persistent
        return self

"""``nn.Parameter``: a tensor that modules register as a parameter."""

from .. import _C
from ..overrides import _disabled_torch_function_impl


class Parameter(_C.Tensor):
    """A leaf tensor that, assigned to a ``Module`` attribute, joins its
    ``parameters()``. ``requires_grad`` defaults to True."""

    _is_param = True
    # arithmetic on a parameter gives a plain tensor, as in torch
    __torch_function__ = _disabled_torch_function_impl

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

    __torch_function__ = _disabled_torch_function_impl

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            data = _C._call_op("empty", ((0,),), {})
        self = _C.Tensor.__new__(cls, data.detach())
        self.persistent = persistent
        return self


class UninitializedTensorMixin:
    """A parameter or buffer whose shape is not known yet (lazy modules):
    ``materialize(shape)`` gives it storage; until then reading its data
    raises."""

    def materialize(self, shape, device=None, dtype=None):
        """Become a tensor of ``shape`` (uninitialised values) of this one's
        dtype (or ``dtype``), and the class torch gives it (``cls_to_become``)."""
        from .. import empty

        if isinstance(shape, int):
            shape = (shape,)
        data = empty(tuple(shape), dtype=dtype or self.dtype)
        self.set_(data)
        self.__class__ = self.cls_to_become

    @property
    def shape(self):
        raise RuntimeError("Can't access the shape of an uninitialized parameter or buffer. This error usually "
                           "happens in `load_state_dict` when trying to load an uninitialized parameter into an "
                           "initialized one. Call `forward` to initialize the parameters before accessing their "
                           "attributes.")

    def share_memory_(self):
        raise RuntimeError("Can't share memory on an uninitialized parameter or buffer. Call `forward` to initialize "
                           "the parameters before calling `module.share_memory()`.")

    def __repr__(self):
        return f"<{self.__class__.__name__}>"

    def __reduce_ex__(self, proto):
        return (self.__class__, (self.requires_grad,))


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A parameter of a lazy module before its first forward."""

    cls_to_become = Parameter

    def __new__(cls, requires_grad=True, device=None, dtype=None):
        data = _C._call_op("empty", ((0,),), {"dtype": dtype})
        self = _C.Tensor.__new__(cls, data)
        self.requires_grad_(requires_grad)
        return self

    def __deepcopy__(self, memo):
        return type(self)(self.requires_grad, None, self.dtype)


class UninitializedBuffer(UninitializedTensorMixin, _C.Tensor):
    """A buffer of a lazy module before its first forward."""

    cls_to_become = _C.Tensor

    def __new__(cls, requires_grad=False, device=None, dtype=None, persistent=True):
        data = _C._call_op("empty", ((0,),), {"dtype": dtype})
        self = _C.Tensor.__new__(cls, data)
        self.requires_grad_(requires_grad)
        self.persistent = persistent
        return self


def is_lazy(param):
    """Whether ``param`` is still uninitialised."""
    return isinstance(param, UninitializedTensorMixin)

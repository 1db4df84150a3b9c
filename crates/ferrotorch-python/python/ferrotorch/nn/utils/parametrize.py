"""``nn.utils.parametrize``: a module's tensor computed from others.

As torch does it: ``register_parametrization(module, "weight", p)`` moves
the weight into ``module.parametrizations.weight.original`` (or
``original0``, ``original1``, ... when ``p.right_inverse`` returns several
tensors) and swaps the module's class for a subclass with a ``weight``
property that evaluates the chain of parametrizations on access (once per
``cached()`` block) and whose setter runs their ``right_inverse``. The
state dict keys are torch's (``parametrizations.weight.original``).
"""

import contextlib

from ... import _C
from ...autograd.grad_mode import no_grad
from ..modules.container import ModuleDict, ModuleList
from ..modules.module import Module
from ..parameter import Parameter

__all__ = ["cached", "ParametrizationList", "register_parametrization", "is_parametrized",
           "remove_parametrizations", "type_before_parametrizations", "transfer_parametrizations_and_params"]

_cache_enabled = 0
_cache = {}


@contextlib.contextmanager
def cached():
    """Within the block, each parametrized tensor is computed once (on
    first access) and reused."""
    global _cache_enabled
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache.clear()


def _register_original(module, name, tensor):
    if isinstance(tensor, Parameter):
        module.register_parameter(name, tensor)
    else:
        module.register_buffer(name, tensor)


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor and its ``original``(s)."""

    def __init__(self, modules, original, unsafe=False):
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        shape, dtype = original.shape, original.dtype
        with no_grad():
            new = original
            for m in reversed(self):
                if hasattr(m, "right_inverse"):
                    try:
                        new = m.right_inverse(new)
                    except NotImplementedError:
                        pass
        if not isinstance(new, _C.Tensor) and not isinstance(new, (list, tuple)):
            raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                             f"Got {type(new).__name__}")
        self.is_tensor = isinstance(new, _C.Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if original.dtype != new.dtype:
                raise ValueError("When `right_inverse` outputs one tensor, it may not change the dtype.\n"
                                 f"original.dtype: {original.dtype}\nright_inverse(original).dtype: {new.dtype}")
            with no_grad():
                if tuple(new.shape) == tuple(original.shape):
                    original.copy_(new)
                else:
                    original.set_(new.detach().clone())
            _register_original(self, "original", original)
        else:
            for i, t in enumerate(new):
                if not isinstance(t, _C.Tensor):
                    raise ValueError(f"'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                                     f"Got element {i} of the sequence with type {type(t).__name__}.")
                if isinstance(original, Parameter):
                    t = Parameter(t.detach(), original.requires_grad)
                _register_original(self, f"original{i}", t)
        if not self.unsafe:
            z = self()
            if not isinstance(z, _C.Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(z).__name__}.")
            if z.dtype != dtype:
                raise ValueError("Registering a parametrization may not change the dtype of the tensor, unless "
                                 f"`unsafe` flag is enabled.\nunparametrized dtype: {dtype}\n"
                                 f"parametrized dtype: {z.dtype}")
            if tuple(z.shape) != tuple(shape):
                raise ValueError("Registering a parametrization may not change the shape of the tensor, unless "
                                 f"`unsafe` flag is enabled.\nunparametrized shape: {shape}\n"
                                 f"parametrized shape: {z.shape}")

    def right_inverse(self, value):
        """Store ``value`` as the parametrized tensor: run the
        parametrizations' inverses and write the originals."""
        with no_grad():
            for m in reversed(self):
                if hasattr(m, "right_inverse"):
                    value = m.right_inverse(value)
                else:
                    raise RuntimeError(f"parametrization {type(m).__name__} does not implement right_inverse.")
            if self.is_tensor:
                if not isinstance(value, _C.Tensor):
                    raise ValueError(f"`right_inverse` should return a tensor. Got {type(value).__name__}")
                if value.dtype != self.original.dtype:
                    raise ValueError(f"The tensor returned by `right_inverse` has dtype {value.dtype} while "
                                     f"`original` has dtype {self.original.dtype}")
                self.original.set_(value.detach().clone()) if tuple(value.shape) != tuple(self.original.shape) \
                    else self.original.copy_(value)
            else:
                if not isinstance(value, (list, tuple)) or len(value) != self.ntensors:
                    raise ValueError(f"'right_inverse' must return a sequence of tensors of length {self.ntensors}")
                for i, t in enumerate(value):
                    getattr(self, f"original{i}").copy_(t)

    def forward(self):
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for m in list(self)[1:]:
            x = m(x)
        return x


def _parametrized_class(module):
    cls = type(module)
    dct = {"__module__": cls.__module__}

    def getstate(self):
        raise RuntimeError("Serialization of parametrized modules is only supported through state_dict(). See:\n"
                           "https://pytorch.org/tutorials/beginner/saving_loading_models.html"
                           "#saving-loading-a-general-checkpoint-for-inference-and-or-resuming-training")

    def deepcopy(self, memo):
        new = type(self).__new__(type(self))
        memo[id(self)] = new
        import copy

        new.__dict__.update({k: copy.deepcopy(v, memo) for k, v in self.__dict__.items()})
        return new

    dct["__getstate__"] = getstate
    dct["__deepcopy__"] = deepcopy
    dct["_ft_parametrized_base"] = cls
    return type(f"Parametrized{cls.__name__}", (cls,), dct)


def _inject_property(module, name):
    def get(self):
        if _cache_enabled:
            key = (id(self), name)
            if key not in _cache:
                _cache[key] = self.parametrizations[name]()
            return _cache[key]
        return self.parametrizations[name]()

    def set(self, value):
        self.parametrizations[name].right_inverse(value)

    setattr(type(module), name, property(get, set))


def register_parametrization(module, tensor_name, parametrization, *, unsafe=False):
    """Make ``module.<tensor_name>`` the output of ``parametrization`` on
    the original tensor (chained after any registered before)."""
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            y = getattr(module, tensor_name)
            x = parametrization(y)
            if not isinstance(x, _C.Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(x).__name__}.")
            if x.dtype != y.dtype:
                raise ValueError("Registering a parametrization may not change the dtype of the tensor, unless the "
                                 f"`unsafe` flag is enabled.\nmodule.{tensor_name}.dtype: {y.dtype}\n"
                                 f"parametrization(module.{tensor_name}).dtype: {x.dtype}")
            if tuple(x.shape) != tuple(y.shape):
                raise ValueError("Registering a parametrization may not change the shape of the tensor, unless the "
                                 f"`unsafe` flag is enabled.\nmodule.{tensor_name}.shape: {y.shape}\n"
                                 f"parametrization(module.{tensor_name}).shape: {x.shape}")
        module.parametrizations[tensor_name].append(parametrization)
        module.parametrizations[tensor_name].unsafe |= unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        plist = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            module.__class__ = _parametrized_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = plist
    else:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a parametrized element with "
                         f"name '{tensor_name}'")
    return module


def is_parametrized(module, tensor_name=None):
    """Whether ``module`` has parametrizations (for ``tensor_name``)."""
    parametrizations = module.__dict__.get("_modules", {}).get("parametrizations")
    if parametrizations is None or not isinstance(parametrizations, ModuleDict):
        return False
    return len(parametrizations) > 0 if tensor_name is None else tensor_name in parametrizations


def remove_parametrizations(module, tensor_name, leave_parametrized=True):
    """Undo ``register_parametrization`` for ``tensor_name``: keep its
    current (parametrized) value, or its original with
    ``leave_parametrized=False``."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    plist = module.parametrizations[tensor_name]
    if plist.is_tensor:
        original = plist.original
        if leave_parametrized:
            with no_grad():
                t = getattr(module, tensor_name)
                if tuple(t.shape) == tuple(original.shape):
                    original.copy_(t)
                else:
                    original.set_(t.detach().clone())
    else:
        if not leave_parametrized:
            raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is "
                             "parametrized in terms of a sequence of tensors.")
        with no_grad():
            t = getattr(module, tensor_name)
        original = Parameter(t.detach(), t.requires_grad) if t.requires_grad else t.detach()
    delattr(type(module), tensor_name)
    del module.parametrizations[tensor_name]
    _register_original(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = type(module)._ft_parametrized_base
    return module


def type_before_parametrizations(module):
    """The module's class as it was before any parametrization."""
    return getattr(type(module), "_ft_parametrized_base", type(module)) if is_parametrized(module) else type(module)


def transfer_parametrizations_and_params(from_module, to_module, tensor_name=None):
    """Copy the parametrizations (and their originals' values) of
    ``from_module`` to ``to_module``, for one tensor or all."""
    if not is_parametrized(from_module):
        return to_module
    names = [tensor_name] if tensor_name is not None else list(from_module.parametrizations)
    for name in names:
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name)))
        for p in from_module.parametrizations[name]:
            if hasattr(to_module, "parametrizations") and name in to_module.parametrizations:
                continue
            register_parametrization(to_module, name, p)
        with no_grad():
            src = from_module.parametrizations[name]
            dst = to_module.parametrizations[name]
            if src.is_tensor:
                dst.original.set_(src.original.detach().clone())
            else:
                for i in range(src.ntensors):
                    getattr(dst, f"original{i}").set_(getattr(src, f"original{i}").detach().clone())
    return to_module



"""``Sequential``, ``ModuleList``, ``ModuleDict``."""

from collections import OrderedDict

from .module import Module


class Sequential(Module):
    """Modules run in order; ``Sequential(a, b)`` or ``Sequential(OrderedDict)``."""

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for key, module in args[0].items():
                self.add_module(key, module)
        else:
            for idx, module in enumerate(args):
                self.add_module(str(idx), module)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return Sequential(OrderedDict(list(self._modules.items())[idx]))
        keys = list(self._modules)
        n = len(keys)
        if not -n <= idx < n:
            raise IndexError(f"index {idx} is out of range")
        return self._modules[keys[idx % n]]

    def __setitem__(self, idx, module):
        keys = list(self._modules)
        setattr(self, keys[idx], module)

    def __delitem__(self, idx):
        keys = list(self._modules)
        del self._modules[keys[idx]]

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def forward(self, input):
        for module in self:
            input = module(input)
        return input


class ModuleList(Module):
    """A list of modules, registered as children ``0, 1, ...``."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return ModuleList(list(self._modules.values())[idx])
        n = len(self)
        if not -n <= idx < n:
            raise IndexError(f"index {idx} is out of range")
        return self._modules[str(idx % n)]

    def __setitem__(self, idx, module):
        self.add_module(str(idx % len(self)), module)

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules):
        for m in modules:
            self.append(m)
        return self

    def insert(self, index, module):
        items = list(self._modules.values())
        items.insert(index, module)
        self._modules.clear()
        for i, m in enumerate(items):
            self.add_module(str(i), m)


class ModuleDict(Module):
    """A dict of modules, registered as children under their keys."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def __delitem__(self, key):
        del self._modules[key]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key):
        return key in self._modules

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def update(self, modules):
        items = modules.items() if hasattr(modules, "items") else modules
        for k, m in items:
            self[k] = m


class ParameterList(Module):
    """A list of parameters, registered under "0", "1", ... (plain tensors
    become parameters)."""

    def __init__(self, values=None):
        super().__init__()
        self._size = 0
        if values is not None:
            self += values

    def _to_param(self, value):
        from ..parameter import Parameter

        if isinstance(value, _C_Tensor()) and not isinstance(value, Parameter):
            return Parameter(value)
        return value

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            out = ParameterList()
            for i in range(*idx.indices(len(self))):
                out.append(self[i])
            return out
        if idx < 0:
            idx += len(self)
        if not 0 <= idx < len(self):
            raise IndexError(f"index {idx} is out of range")
        return getattr(self, str(idx))

    def __setitem__(self, idx, param):
        if idx < 0:
            idx += len(self)
        setattr(self, str(idx), self._to_param(param))

    def __len__(self):
        return self._size

    def __iter__(self):
        return iter(self[i] for i in range(len(self)))

    def __iadd__(self, parameters):
        return self.extend(parameters)

    def __dir__(self):
        return [k for k in super().__dir__() if not k.isdigit()]

    def append(self, value):
        """Add a parameter at the end."""
        new_idx = len(self)
        self._size += 1
        self[new_idx] = value
        return self

    def extend(self, values):
        """Add each of ``values`` at the end."""
        for v in values:
            self.append(v)
        return self

    def extra_repr(self):
        lines = []
        for k, p in enumerate(self):
            if isinstance(p, _C_Tensor()):
                size = "x".join(str(s) for s in p.size())
                kind = "Parameter" if getattr(p, "_is_param", False) else "Tensor"
                lines.append(f"  ({k}): {kind} containing: [{str(p.dtype)} of size {size}]")
            else:
                lines.append(f"  ({k}): Object of type: {type(p).__name__}")
        return "\n".join(lines)

    def __call__(self, *args, **kwargs):
        raise RuntimeError("ParameterList should not be called.")


class ParameterDict(Module):
    """A dict of parameters, registered under their keys (plain tensors
    become parameters)."""

    def __init__(self, parameters=None):
        super().__init__()
        self._keys = {}
        if parameters is not None:
            self.update(parameters)

    def _to_param(self, value):
        from ..parameter import Parameter

        if isinstance(value, _C_Tensor()) and not isinstance(value, Parameter):
            return Parameter(value)
        return value

    def __getitem__(self, key):
        return getattr(self, key)

    def __setitem__(self, key, value):
        self._keys[key] = None
        setattr(self, key, self._to_param(value))

    def __delitem__(self, key):
        del self._keys[key]
        delattr(self, key)

    def __len__(self):
        return len(self._keys)

    def __iter__(self):
        return iter(self._keys)

    def __reversed__(self):
        return reversed(list(self._keys))

    def __contains__(self, key):
        return key in self._keys

    def copy(self):
        return ParameterDict(dict((k, self[k]) for k in self._keys))

    def setdefault(self, key, default=None):
        if key not in self:
            self[key] = default
        return self[key]

    def clear(self):
        for k in list(self._keys):
            del self[k]

    def pop(self, key):
        v = self[key]
        del self[key]
        return v

    def popitem(self):
        k = list(self._keys)[-1]
        return k, self.pop(k)

    def get(self, key, default=None):
        return self[key] if key in self else default

    def fromkeys(self, keys, default=None):
        return ParameterDict((k, default) for k in keys)

    def keys(self):
        return self._keys.keys()

    def items(self):
        return ((k, self[k]) for k in self._keys)

    def values(self):
        return (self[k] for k in self._keys)

    def update(self, parameters):
        """Add or replace entries from a mapping or (key, value) pairs."""
        items = parameters.items() if hasattr(parameters, "items") else parameters
        for k, v in items:
            self[k] = v

    def __or__(self, other):
        out = self.copy()
        out.update(other)
        return out

    def __ior__(self, other):
        self.update(other)
        return self

    def extra_repr(self):
        lines = []
        for k, p in self.items():
            if isinstance(p, _C_Tensor()):
                size = "x".join(str(s) for s in p.size())
                kind = "Parameter" if getattr(p, "_is_param", False) else "Tensor"
                lines.append(f"  ({k}): {kind} containing: [{str(p.dtype)} of size {size}]")
            else:
                lines.append(f"  ({k}): Object of type: {type(p).__name__}")
        return "\n".join(lines)

    def __call__(self, input):
        raise RuntimeError("ParameterDict should not be called.")


class Container(Module):
    """Deprecated in torch (it warns): a Module with the given children."""

    def __init__(self, **kwargs):
        super().__init__()
        import warnings

        warnings.warn("nn.Container is deprecated. All of it's functionality is now implemented in nn.Module. "
                      "Subclass that instead.")
        for key, value in kwargs.items():
            self.add_module(key, value)


def _C_Tensor():
    from ... import _C

    return _C.Tensor

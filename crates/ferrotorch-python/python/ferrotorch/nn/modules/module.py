"""``nn.Module``: the base class of every layer and model, with torch's
registration rules: assigning a ``Parameter``, a ``Module`` or a buffer to
an attribute registers it, in order, under that name."""

from collections import OrderedDict

from ... import _C
from ..parameter import Buffer, Parameter
from ...utils.hooks import RemovableHandle
from ._module_hooks import _ModuleHooks
from ._module_state import _IncompatibleKeys, _ModuleState  # noqa: F401  (re-exported as torch's)


def _addindent(s, n):
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    return lines[0] + "\n" + "\n".join(" " * n + line for line in lines[1:])


class Module(_ModuleHooks, _ModuleState):
    """Base class for all neural network modules."""

    training: bool
    dump_patches = False
    _version = 1
    call_super_init = False
    T_destination = dict

    def __init__(self, *args, **kwargs):
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got unexpected arguments")
        d = self.__dict__
        d["training"] = True
        d["_parameters"] = OrderedDict()
        d["_buffers"] = OrderedDict()
        d["_non_persistent_buffers_set"] = set()
        d["_modules"] = OrderedDict()
        for table in ("_forward_hooks", "_forward_pre_hooks", "_forward_hooks_with_kwargs",
                      "_forward_pre_hooks_with_kwargs", "_forward_hooks_always_called", "_backward_hooks",
                      "_backward_pre_hooks", "_state_dict_hooks", "_state_dict_pre_hooks",
                      "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks"):
            d[table] = OrderedDict()
        d["_is_full_backward_hook"] = None

    def forward(self, *input):
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    # ---- registration ----

    def register_parameter(self, name, param):
        """Add a parameter (or ``None``) under ``name``."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"parameter name should be a string. Got {type(name).__name__}")
        if "." in name:
            raise KeyError('parameter name can\'t contain "."')
        if name == "":
            raise KeyError('parameter name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{type(param).__name__}' object to parameter '{name}' "
                            "(torch.nn.Parameter or None required)")
        self._parameters[name] = param

    def register_buffer(self, name, tensor, persistent=True):
        """Add a buffer (state that is not a parameter, e.g. running means)."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"buffer name should be a string. Got {type(name).__name__}")
        if "." in name:
            raise KeyError('buffer name can\'t contain "."')
        if name == "":
            raise KeyError('buffer name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, _C.Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' "
                            "(torch Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name, module):
        """Add a child module under ``name``."""
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {type(name).__name__}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        self._modules[name] = module

    register_module = add_module

    def get_submodule(self, target):
        """The submodule at dotted path ``target``."""
        mod = self
        if target == "":
            return mod
        for item in target.split("."):
            if item not in mod._modules:
                raise AttributeError(f"{mod._get_name()} has no attribute `{item}`")
            mod = mod._modules[item]
        return mod

    def get_parameter(self, target):
        """The parameter at dotted path ``target``."""
        mod_path, _, name = target.rpartition(".")
        mod = self.get_submodule(mod_path)
        if name not in mod._parameters:
            raise AttributeError(f"{mod._get_name()} has no parameter `{name}`")
        return mod._parameters[name]

    def get_buffer(self, target):
        """The buffer at dotted path ``target``."""
        mod_path, _, name = target.rpartition(".")
        mod = self.get_submodule(mod_path)
        if not hasattr(mod, name):
            raise AttributeError(f"{mod._get_name()} has no attribute `{name}`")
        if name not in mod._buffers:
            raise AttributeError(f"`{name}` is not a buffer")
        return mod._buffers[name]

    def set_submodule(self, target, module, strict=False):
        """Put ``module`` at dotted path ``target`` (its parent must exist;
        with ``strict`` the name must exist too)."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        atoms = target.split(".")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        mod = self
        for item in atoms[:-1]:
            if not hasattr(mod, item):
                raise AttributeError(f"{mod._get_name()} has no attribute `{item}`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")
        if strict and not hasattr(mod, atoms[-1]):
            raise AttributeError(f"{mod._get_name()} has no attribute `{atoms[-1]}`")
        if hasattr(mod, atoms[-1]) and not isinstance(getattr(mod, atoms[-1]), Module):
            raise AttributeError(f"`{atoms[-1]}` is not an nn.Module")
        setattr(mod, atoms[-1], module)

    def __setattr__(self, name, value):
        params = self.__dict__.get("_parameters")

        def remove_from(*dicts):
            for d in dicts:
                if name in d:
                    del d[name]

        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            remove_from(self.__dict__, self._buffers, self._modules)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                                "(torch.nn.Parameter or None expected)")
            self.register_parameter(name, value)
        elif isinstance(value, Module):
            modules = self.__dict__.get("_modules")
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            remove_from(self.__dict__, self._parameters, self._buffers)
            modules[name] = value
        elif self.__dict__.get("_modules") is not None and name in self._modules:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as child module '{name}' "
                                "(torch.nn.Module or None expected)")
            self._modules[name] = value
        elif isinstance(value, Buffer) or (self.__dict__.get("_buffers") is not None
                                           and name in self._buffers):
            if value is not None and not isinstance(value, _C.Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                                "(torch.nn.Buffer, torch.Tensor or None expected)")
            persistent = getattr(value, "persistent", name not in self._non_persistent_buffers_set)
            self.register_buffer(name, value, persistent)
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name):
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            if store in d and name in d[store]:
                return d[store][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        for store in ("_parameters", "_buffers", "_modules"):
            if name in self.__dict__.get(store, {}):
                del self.__dict__[store][name]
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        keys = list(object.__dir__(self))
        keys += list(self._parameters) + list(self._buffers) + list(self._modules)
        return sorted(set(keys))

    # ---- traversal ----

    def _named_members(self, get, prefix="", recurse=True, remove_duplicate=True):
        seen = set()
        mods = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse \
            else [(prefix, self)]
        for mod_prefix, mod in mods:
            for k, v in get(mod):
                if v is None or (remove_duplicate and id(v) in seen):
                    continue
                if remove_duplicate:
                    seen.add(id(v))
                yield (mod_prefix + ("." if mod_prefix else "") + k, v)

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        """``(name, parameter)`` pairs, own first, then each child's."""
        yield from self._named_members(lambda m: m._parameters.items(), prefix, recurse,
                                       remove_duplicate)

    def parameters(self, recurse=True):
        """Every parameter (each once)."""
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        """``(name, buffer)`` pairs."""
        yield from self._named_members(lambda m: m._buffers.items(), prefix, recurse,
                                       remove_duplicate)

    def buffers(self, recurse=True):
        """Every buffer."""
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def named_children(self):
        """Direct children with their names."""
        seen = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in seen:
                seen.add(id(m))
                yield name, m

    def children(self):
        """Direct children."""
        for _, m in self.named_children():
            yield m

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        """This module and every descendant, depth first, with dotted names."""
        if memo is None:
            memo = set()
        if id(self) in memo:
            return
        if remove_duplicate:
            memo.add(id(self))
        yield prefix, self
        for name, m in self._modules.items():
            if m is None:
                continue
            sub = prefix + ("." if prefix else "") + name
            yield from m.named_modules(memo, sub, remove_duplicate)

    def modules(self):
        """This module and every descendant."""
        for _, m in self.named_modules():
            yield m

    # ---- modes and state ----

    def train(self, mode=True):
        """Set training mode here and in every descendant."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for m in self.children():
            m.train(mode)
        return self

    def eval(self):
        """``train(False)``."""
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        """Set ``requires_grad`` on every parameter."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        """Reset every parameter's gradient (to None by default)."""
        for p in self.parameters():
            if p.grad is not None:
                if set_to_none:
                    p.grad = None
                else:
                    g = p.grad
                    g.detach_() if g.grad_fn is not None else None
                    g.zero_()

    def apply(self, fn):
        """Call ``fn`` on every descendant, then on this module."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    def _apply_tensors(self, fn):
        for m in self.modules():
            for k, p in m._parameters.items():
                if p is not None:
                    with _C_no_grad():
                        new = fn(p)
                    if new is not p:
                        p.data = new
            for k, b in m._buffers.items():
                if b is not None:
                    m._buffers[k] = fn(b)
        return self

    def to(self, *args, **kwargs):
        """Convert floating-point parameters and buffers (``to(dtype)``);
        only the CPU exists in this build."""
        dtype = kwargs.get("dtype")
        if kwargs.get("device") is not None:
            from ..._device import device

            _C._check_device(str(device(kwargs["device"])))
        for a in args:
            if isinstance(a, _C.dtype):
                dtype = a
            elif isinstance(a, _C.Tensor):
                dtype = a.dtype
            else:
                from ..._device import device

                _C._check_device(str(device(a)))
        if dtype is None:
            return self
        if not dtype.is_floating_point:
            raise TypeError(f"nn.Module.to only accepts floating point dtypes, but got desired dtype={dtype}")
        return self._apply_tensors(lambda t: t.to(dtype) if t.is_floating_point() else t)

    def float(self):
        return self.to(_C.float32)

    def double(self):
        return self.to(_C.float64)

    def half(self):
        return self.to(_C.float16)

    def bfloat16(self):
        return self.to(_C.bfloat16)

    def cpu(self):
        return self

    def to_empty(self, *, device=None, recurse=True):
        """Parameters and buffers replaced by uninitialised tensors of the
        same shapes and dtypes (on the CPU)."""
        from ... import empty_like

        return self._apply_tensors(lambda t: empty_like(t))

    def compile(self, *args, **kwargs):
        """Compile this module's forward in place (``torch.compile``)."""
        from ... import compile as _compile

        self.__dict__["_compiled_call_impl"] = _compile(self._call_impl, *args, **kwargs)

    def share_memory(self):
        """Move every parameter and buffer into shared memory, in place
        (``Tensor.share_memory_``), for Hogwild training across processes;
        gradients that exist move too."""
        for m in self.modules():
            for p in m._parameters.values():
                if p is not None:
                    p.share_memory_()
                    if p.grad is not None:
                        p.grad.share_memory_()
            for b in m._buffers.values():
                if b is not None:
                    b.share_memory_()
        return self

    def cuda(self, device=None):
        """Move to a GPU: this build has none (torch's CPU-only error)."""
        _C._check_device("cuda")

    def type(self, dst_type):
        return self.to(dst_type)

    # ---- calling ----

    def __call__(self, *args, **kwargs):
        if _trace_names is not None:
            name = _trace_names.get(id(self))
            if name:
                return _traced_call(self, name, args, kwargs)
        compiled = self.__dict__.get("_compiled_call_impl")
        if compiled is not None:
            return compiled(*args, **kwargs)
        return self._call_impl(*args, **kwargs)

    # ---- printing ----

    def _get_name(self):
        return type(self).__name__

    def extra_repr(self):
        """Extra text inside this module's repr parentheses."""
        return ""

    def __repr__(self):
        lines = []
        extra = self.extra_repr()
        if extra:
            lines = extra.split("\n")
        children = []
        for key, m in self._modules.items():
            children.append("(" + key + "): " + _addindent(repr(m), 2))
        body = lines + children
        s = self._get_name() + "("
        if body:
            if len(lines) == 1 and not children:
                s += lines[0]
            else:
                s += "\n  " + "\n  ".join(body) + "\n"
        return s + ")"

    def __getstate__(self):
        return self.__dict__.copy()

    def __setstate__(self, state):
        self.__dict__.update(state)
        for table in ("_forward_hooks", "_forward_pre_hooks", "_forward_hooks_with_kwargs",
                      "_forward_pre_hooks_with_kwargs", "_forward_hooks_always_called", "_backward_hooks",
                      "_backward_pre_hooks", "_state_dict_hooks", "_state_dict_pre_hooks",
                      "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks"):
            self.__dict__.setdefault(table, OrderedDict())
        self.__dict__.setdefault("_is_full_backward_hook", None)


def _C_no_grad():
    from ...autograd.grad_mode import no_grad

    return no_grad()


# Note [Module hierarchy] (crates/ferrotorch-jit): while jit.trace runs on
# a module, this maps id(submodule) -> its qualified name, so each
# submodule call is recorded as a prim::CallMethod with its own graph.
_trace_names = None


def _traced_call(module, name, args, kwargs):
    tensors = [a for a in args if isinstance(a, _C.Tensor)]
    entered = _C._jit_enter_module(name, type(module).__name__, tensors)
    try:
        out = module._call_impl(*args, **kwargs)
    except BaseException:
        if entered:
            _C._jit_exit_module(None)
        raise
    if entered:
        if isinstance(out, _C.Tensor):
            outs = [out]
        elif isinstance(out, (tuple, list)) and out and all(isinstance(o, _C.Tensor) for o in out):
            outs = list(out)
        else:
            outs = None  # not tensors: the call is inlined
        _C._jit_exit_module(outs)
    return out

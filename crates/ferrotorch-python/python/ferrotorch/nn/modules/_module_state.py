"""``nn.Module``'s state dicts, as torch builds and loads them: each module
saves its own entries with ``_save_to_state_dict`` and loads them with
``_load_from_state_dict`` (what subclasses override to rename or convert
keys), the dict carries ``_metadata`` with each module's ``_version``, and
the four kinds of hooks run where torch runs them."""

import functools
from collections import OrderedDict, namedtuple
from collections.abc import Mapping

from ... import _C
from ...utils.hooks import RemovableHandle

_IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])
_EXTRA_STATE_KEY_SUFFIX = "_extra_state"


def _no_grad():
    from ...autograd.grad_mode import no_grad

    return no_grad()


def _is_tensor_like(x):
    return isinstance(x, _C.Tensor) or hasattr(x, "__torch_function__")


class _WrappedHook:
    """A hook called with its module prepended (held weakly, as torch's)."""

    def __init__(self, hook, module=None):
        import weakref

        self.hook = hook
        functools.update_wrapper(self, hook)
        self.with_module = module is not None
        if self.with_module:
            self.module = weakref.ref(module)

    def __call__(self, *args, **kwargs):
        if self.with_module:
            module = self.module()
            if module is None:
                raise RuntimeError("You are trying to call the hook of a dead Module!")
            return self.hook(module, *args, **kwargs)
        return self.hook(*args, **kwargs)


class _ModuleState:
    """The state-dict half of ``nn.Module`` (mixed into it)."""

    def _hook_tables(self):
        d = self.__dict__
        for name in ("_state_dict_hooks", "_state_dict_pre_hooks", "_load_state_dict_pre_hooks",
                     "_load_state_dict_post_hooks"):
            if name not in d:
                d[name] = OrderedDict()

    # ---- hooks ----

    def _register_state_dict_hook(self, hook):
        """``hook(module, state_dict, prefix, local_metadata)`` after this
        module's part is saved; it may return a new dict."""
        self._hook_tables()
        if getattr(hook, "_from_public_api", False):
            raise RuntimeError("Cannot register the same function as the state dict post hook that was "
                               "previously registered via register_state_dict_post_hook")
        handle = RemovableHandle(self._state_dict_hooks)
        self._state_dict_hooks[handle.id] = hook
        return handle

    def register_state_dict_post_hook(self, hook):
        """``hook(module, state_dict, prefix, local_metadata)`` after this
        module's part is saved (it must return None)."""
        self._hook_tables()
        hook._from_public_api = True
        handle = RemovableHandle(self._state_dict_hooks)
        self._state_dict_hooks[handle.id] = hook
        return handle

    def register_state_dict_pre_hook(self, hook):
        """``hook(module, prefix, keep_vars)`` before this module's part is saved."""
        self._hook_tables()
        handle = RemovableHandle(self._state_dict_pre_hooks)
        self._state_dict_pre_hooks[handle.id] = hook
        return handle

    def _register_load_state_dict_pre_hook(self, hook, with_module=False):
        """``hook(state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)`` (the module first with
        ``with_module``) before this module loads its part."""
        self._hook_tables()
        handle = RemovableHandle(self._load_state_dict_pre_hooks)
        self._load_state_dict_pre_hooks[handle.id] = _WrappedHook(hook, self if with_module else None)
        return handle

    def register_load_state_dict_pre_hook(self, hook):
        """``hook(module, state_dict, prefix, local_metadata, strict,
        missing_keys, unexpected_keys, error_msgs)`` before loading; it may
        edit the dict and the lists."""
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def register_load_state_dict_post_hook(self, hook):
        """``hook(module, incompatible_keys)`` after loading; it may edit the
        key lists (which ``strict`` then judges)."""
        self._hook_tables()
        handle = RemovableHandle(self._load_state_dict_post_hooks)
        self._load_state_dict_post_hooks[handle.id] = hook
        return handle

    # ---- extra state ----

    def get_extra_state(self):
        """State beyond parameters and buffers, saved under ``_extra_state``
        when a subclass overrides this (and ``set_extra_state``)."""
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never be called. "
                           "Please file an issue at https://github.com/pytorch/pytorch/issues/new?template="
                           "bug-report.yml to report this bug.")

    def set_extra_state(self, state):
        """Restore what ``get_extra_state`` returned."""
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never be called. "
                           "Please file an issue at https://github.com/pytorch/pytorch/issues/new?template="
                           "bug-report.yml to report this bug.")

    def _overrides(self, name):
        return getattr(type(self), name) is not getattr(_ModuleState, name)

    # ---- saving ----

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        """This module's own parameters and persistent buffers (and extra
        state), without its children."""
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars else b.detach()
        if self._overrides("get_extra_state"):
            destination[prefix + _EXTRA_STATE_KEY_SUFFIX] = self.get_extra_state()

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        """Parameters and persistent buffers by dotted name, with
        ``_metadata`` (each module's ``_version``)."""
        if args:
            # torch's deprecated positional (destination, prefix, keep_vars)
            names = ("destination", "prefix", "keep_vars")
            vals = dict(zip(names, args))
            destination = vals.get("destination", destination)
            prefix = vals.get("prefix", prefix)
            keep_vars = vals.get("keep_vars", keep_vars)
        self._hook_tables()
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = dict(version=self._version)
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        for hook in self._state_dict_pre_hooks.values():
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, m in self._modules.items():
            if m is not None:
                m.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            result = hook(self, destination, prefix, local_metadata)
            if getattr(hook, "_from_public_api", False):
                if result is not None:
                    raise RuntimeError("state_dict post-hook must return None")
            elif result is not None:
                destination = result
        return destination

    # ---- loading ----

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        """Load this module's own entries from ``state_dict`` (keys under
        ``prefix``), noting missing and unexpected keys and errors."""
        self._hook_tables()
        for hook in self._load_state_dict_pre_hooks.values():
            hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)
        persistent = {k: v for k, v in self._buffers.items() if k not in self._non_persistent_buffers_set}
        local_state = {k: v for k, v in list(self._parameters.items()) + list(persistent.items()) if v is not None}
        assign = local_metadata.get("assign_to_params_buffers", False)
        from ..parameter import Parameter

        for name, param in local_state.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            src = state_dict[key]
            if not _is_tensor_like(src):
                error_msgs.append(f'While copying the parameter named "{key}", expected torch.Tensor or '
                                  f"Tensor-like object from checkpoint but received {type(src)}")
                continue
            if len(param.shape) == 0 and len(src.shape) == 1:
                src = src[0]
            if tuple(src.shape) != tuple(param.shape):
                error_msgs.append(f"size mismatch for {key}: copying a param with shape {src.shape} from "
                                  f"checkpoint, the shape in current model is {param.shape}.")
                continue
            try:
                with _no_grad():
                    if assign:
                        if isinstance(param, Parameter):
                            if not isinstance(src, Parameter):
                                src = Parameter(src, requires_grad=param.requires_grad)
                            else:
                                src.requires_grad_(param.requires_grad)
                        setattr(self, name, src)
                    else:
                        param.copy_(src)
            except Exception as ex:  # noqa: BLE001  reported as torch reports it
                error_msgs.append(f'While copying the parameter named "{key}", whose dimensions in the model are '
                                  f"{param.size()} and whose dimensions in the checkpoint are {src.size()}, an "
                                  f"exception occurred : {ex.args}.")
        extra_key = prefix + _EXTRA_STATE_KEY_SUFFIX
        if self._overrides("set_extra_state"):
            if extra_key in state_dict:
                self.set_extra_state(state_dict[extra_key])
            elif strict:
                missing_keys.append(extra_key)
        elif strict and extra_key in state_dict:
            unexpected_keys.append(extra_key)
        if strict:
            for key in state_dict.keys():
                if key.startswith(prefix) and key != extra_key:
                    parts = key[len(prefix):].split(".", 1)
                    if len(parts) > 1:
                        if parts[0] not in self._modules:
                            unexpected_keys.append(key)
                    elif parts[0] not in local_state:
                        unexpected_keys.append(key)

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copy ``state_dict`` into this module and its descendants (or
        ``assign`` its tensors); returns the missing and unexpected keys,
        and raises with all errors when ``strict``."""
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing, unexpected, errors = [], [], []
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)
        if metadata is not None:
            state_dict._metadata = metadata

        def load(module, local, prefix=""):
            module._hook_tables()
            local_metadata = {} if metadata is None else dict(metadata.get(prefix[:-1], {}))
            if assign:
                local_metadata["assign_to_params_buffers"] = assign
            module._load_from_state_dict(local, prefix, local_metadata, True, missing, unexpected, errors)
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    load(child, {k: v for k, v in local.items() if k.startswith(child_prefix)}, child_prefix)
            keys = _IncompatibleKeys(missing, unexpected)
            for hook in module._load_state_dict_post_hooks.values():
                out = hook(module, keys)
                if out is not None:
                    raise AssertionError("Hooks registered with ``register_load_state_dict_post_hook`` are not "
                                         "expected to return new values, if incompatible_keys need to be modified,"
                                         " it should be done inplace.")

        load(self, state_dict)
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in unexpected)))
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in missing)))
        if errors:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(type(self).__name__,
                                                                                      "\n\t".join(errors)))
        return _IncompatibleKeys(missing, unexpected)

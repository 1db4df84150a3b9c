"""``optim.Optimizer``: parameter groups, per-parameter state,
``zero_grad``, ``state_dict`` / ``load_state_dict``, as in torch."""

from collections import OrderedDict, defaultdict
from copy import deepcopy
from functools import wraps

from .. import _C
from ..utils.hooks import RemovableHandle

_global_step_pre_hooks = OrderedDict()
_global_step_post_hooks = OrderedDict()


def register_optimizer_step_pre_hook(hook):
    """A hook ``hook(optimizer, args, kwargs)`` run before every optimizer's
    ``step``; it may return new ``(args, kwargs)``."""
    handle = RemovableHandle(_global_step_pre_hooks)
    _global_step_pre_hooks[handle.id] = hook
    return handle


def register_optimizer_step_post_hook(hook):
    """A hook ``hook(optimizer, args, kwargs)`` run after every optimizer's
    ``step``."""
    handle = RemovableHandle(_global_step_post_hooks)
    _global_step_post_hooks[handle.id] = hook
    return handle


def _hooked_step(step):
    """``step`` with the global and the optimizer's own step hooks around it."""

    @wraps(step)
    def wrapper(self, *args, **kwargs):
        for hook in (*_global_step_pre_hooks.values(), *self._optimizer_step_pre_hooks.values()):
            out = hook(self, args, kwargs)
            if out is not None:
                if not (isinstance(out, tuple) and len(out) == 2):
                    raise RuntimeError(
                        f"{hook} must return None or a tuple of (new_args, new_kwargs), but got {out}.")
                args, kwargs = out
        result = step(self, *args, **kwargs)
        for hook in (*self._optimizer_step_post_hooks.values(), *_global_step_post_hooks.values()):
            hook(self, args, kwargs)
        return result

    wrapper._hooked = True
    return wrapper


class _Required:
    def __repr__(self):
        return "<required parameter>"


required = _Required()


def _check_nonnegative(**values):
    """torch's option checks: ``ValueError("Invalid learning rate: -1")``
    for the first negative value (``lr`` is named "learning rate", ``eps``
    "epsilon value", the rest "<name> value")."""
    names = {"lr": "learning rate", "eps": "epsilon value"}
    for key, v in values.items():
        if not 0.0 <= v:
            raise ValueError(f"Invalid {names.get(key, key + ' value')}: {v}")


class Optimizer:
    """Base class: subclasses define ``step`` and their ``defaults``.
    Parameters come as tensors, ``(name, tensor)`` pairs (the group keeps
    ``param_names``) or dicts of groups; each subclass's ``step`` runs the
    step hooks (``register_step_pre_hook``/``_post_hook`` and the global
    ones), and ``state_dict``/``load_state_dict`` run theirs, as torch's."""

    OptimizerPreHook = object
    OptimizerPostHook = object

    @staticmethod
    def profile_hook_step(func):
        """``func`` (an optimizer's ``step``) run inside a profiler range
        ``Optimizer.step#<class>.step`` with the step hooks around it."""
        hooked = func if getattr(func, "_hooked", False) else _hooked_step(func)

        @wraps(func)
        def wrapper(*args, **kwargs):
            from ..profiler import record_function

            with record_function(f"Optimizer.step#{args[0].__class__.__name__}.step"):
                return hooked(*args, **kwargs)

        wrapper._hooked = True
        return wrapper

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "_hooked", False):
            cls.step = _hooked_step(step)

    def __init__(self, params, defaults):
        self.defaults = defaults
        self.state = defaultdict(dict)
        self.param_groups = []
        self._optimizer_step_pre_hooks = OrderedDict()
        self._optimizer_step_post_hooks = OrderedDict()
        self._optimizer_state_dict_pre_hooks = OrderedDict()
        self._optimizer_state_dict_post_hooks = OrderedDict()
        self._optimizer_load_state_dict_pre_hooks = OrderedDict()
        self._optimizer_load_state_dict_post_hooks = OrderedDict()
        if isinstance(params, _C.Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            f"Tensors or dicts, but got {type(params).__name__}")
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for g in groups:
            self.add_param_group(g)

    def _hook(self, table, hook, prepend):
        handle = RemovableHandle(table)
        table[handle.id] = hook
        if prepend:
            table.move_to_end(handle.id, last=False)
        return handle

    def register_step_pre_hook(self, hook):
        """``hook(optimizer, args, kwargs)`` before this optimizer's ``step``."""
        return self._hook(self._optimizer_step_pre_hooks, hook, False)

    def register_step_post_hook(self, hook):
        """``hook(optimizer, args, kwargs)`` after this optimizer's ``step``."""
        return self._hook(self._optimizer_step_post_hooks, hook, False)

    def register_state_dict_pre_hook(self, hook, prepend=False):
        """``hook(optimizer)`` before ``state_dict`` builds its result."""
        return self._hook(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook, prepend=False):
        """``hook(optimizer, state_dict)`` after; it may return a new dict."""
        return self._hook(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook, prepend=False):
        """``hook(optimizer, state_dict)`` before loading; it may return a new dict."""
        return self._hook(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook, prepend=False):
        """``hook(optimizer)`` after loading."""
        return self._hook(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    def _grads(self):
        """``(group, param, gradient)`` for every parameter with a gradient,
        the gradient negated for groups with ``maximize``."""
        for g in self.param_groups:
            for p in g["params"]:
                if p.grad is not None:
                    yield g, p, (-p.grad if g.get("maximize") else p.grad)

    def add_param_group(self, param_group):
        """Add a group of parameters with its own options."""
        params = param_group["params"]
        params = [params] if isinstance(params, _C.Tensor) else list(params)
        if params and isinstance(params[0], tuple):  # named parameters
            param_group["param_names"] = [n for n, _ in params]
            params = [p for _, p in params]
        param_group["params"] = params
        for p in param_group["params"]:
            if not isinstance(p, _C.Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is {type(p).__name__}")
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            param_group.setdefault(name, default)
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in param_group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none=True):
        """Reset every parameter's gradient (to None by default)."""
        for g in self.param_groups:
            for p in g["params"]:
                if p.grad is not None:
                    if set_to_none:
                        p.grad = None
                    else:
                        p.grad.zero_()

    def state_dict(self):
        """``{"state": {index: {...}}, "param_groups": [...]}``, parameters
        replaced by their running index, as torch saves them."""
        for hook in self._optimizer_state_dict_pre_hooks.values():
            hook(self)
        index, groups, n = {}, [], 0
        for g in self.param_groups:
            packed = {k: v for k, v in g.items() if k != "params"}
            ids = []
            for p in g["params"]:
                if id(p) not in index:
                    index[id(p)] = n
                    n += 1
                ids.append(index[id(p)])
            packed["params"] = ids
            groups.append(packed)
        state = {index[id(p)]: v for g in self.param_groups for p in g["params"]
                 for v in [self.state.get(p)] if v}
        out = {"state": state, "param_groups": groups}
        for hook in self._optimizer_state_dict_post_hooks.values():
            res = hook(self, out)
            if res is not None:
                out = res
        return out

    def load_state_dict(self, state_dict):
        """Restore what ``state_dict`` returned."""
        state_dict = deepcopy(state_dict)
        for hook in self._optimizer_load_state_dict_pre_hooks.values():
            res = hook(self, state_dict)
            if res is not None:
                state_dict = res
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        for mine, saved in zip(self.param_groups, groups):
            if len(mine["params"]) != len(saved["params"]):
                raise ValueError("loaded state dict contains a parameter group that doesn't match "
                                 "the size of optimizer's group")
        self.state = defaultdict(dict)
        for mine, saved in zip(self.param_groups, groups):
            for p, i in zip(mine["params"], saved["params"]):
                if i in state_dict["state"]:
                    self.state[p] = {k: _cast_state(p, k, v) for k, v in state_dict["state"][i].items()}
            for k, v in saved.items():
                if k != "params":
                    mine[k] = v
        for hook in self._optimizer_load_state_dict_post_hooks.values():
            hook(self)

    def __repr__(self):
        s = type(self).__name__ + " ("
        for i, g in enumerate(self.param_groups):
            s += f"\nParameter Group {i}"
            for k in sorted(g):
                if k != "params":
                    s += f"\n    {k}: {g[k]}"
        return s + "\n)"

    def step(self, closure=None):
        raise NotImplementedError


def _closure(closure):
    if closure is None:
        return None
    from ..autograd.grad_mode import enable_grad

    with enable_grad():
        return closure()


def _cast_state(param, key, value):
    """A loaded state value as torch's ``load_state_dict`` makes it: a
    tensor other than ``step`` takes a floating-point parameter's dtype
    (a float32 momentum buffer loaded for a float64 parameter is float64)."""
    if key != "step" and isinstance(value, _C.Tensor) and param.is_floating_point():
        return value.to(dtype=param.dtype)
    return value


def _zero_step():
    """A new ``state["step"]``: a float32 scalar tensor counted in place,
    as torch keeps it (so a state dict holds the same objects the live
    state does, and loads into either library)."""
    return _C._call_op("zeros", ((),), {"dtype": _C.float32})


def _zeros_like(p):
    """Zero optimizer state laid out like ``p`` (torch's
    ``zeros_like(p, memory_format=torch.preserve_format)``; Note [Optimizer
    layouts] in ferrotorch-optim)."""
    from .. import zeros_like

    return zeros_like(p)

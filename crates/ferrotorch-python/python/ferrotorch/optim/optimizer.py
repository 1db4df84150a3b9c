"""``optim.Optimizer``: parameter groups, per-parameter state,
``zero_grad``, ``state_dict`` / ``load_state_dict``, as in torch."""

from collections import defaultdict
from copy import deepcopy

from .. import _C


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
    """Base class: subclasses define ``step`` and their ``defaults``."""

    def __init__(self, params, defaults):
        self.defaults = defaults
        self.state = defaultdict(dict)
        self.param_groups = []
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
        param_group["params"] = [params] if isinstance(params, _C.Tensor) else list(params)
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
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        """Restore what ``state_dict`` returned."""
        state_dict = deepcopy(state_dict)
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


def _zeros_like(p):
    """Zero optimizer state laid out like ``p`` (torch's
    ``zeros_like(p, memory_format=torch.preserve_format)``; Note [Optimizer
    layouts] in ferrotorch-optim)."""
    from .. import zeros_like

    return zeros_like(p)

"""What ``torch.library`` registers beside kernels: vmap rules
(``register_vmap``) and autocast casts (``register_autocast``), applied
where Python calls an op by name (``torch.ops.ns.op``, a ``custom_op``).

Note [Custom op rules]: an op called with BatchedTensors inside a vmap
goes to the batching dispatch (Note [Batching rules]); there its
registered rule runs as torch's does — ``rule(info, in_dims, *args)`` on
the physical tensors, returning ``(output, out_dims)`` — and an op
without one runs once per example. Under autocast for the registered
device, the op's floating tensor arguments are cast to the registered
dtype and the op runs with autocast off.
"""

from typing import NamedTuple

from .. import _C

_VMAP = {}  # "ns::op" -> rule
_AUTOCAST = {}  # "ns::op" -> (device_type, dtype)


def _ft():
    import ferrotorch

    return ferrotorch


def base_name(name):
    return name.split(".", 1)[0]


class VmapInfo(NamedTuple):
    """What a vmap rule is told: the mapped size and the randomness mode."""

    batch_size: int
    randomness: str


class _NamedOp:
    """An op by name, as the batching dispatch's ``func``."""

    def __init__(self, name):
        self._name = name
        self.__name__ = base_name(name).split("::")[-1]

    def __call__(self, *args, **kwargs):
        return _C._call_op(self._name, args, kwargs)


def call(name, args, kwargs):
    """``_C._call_op`` with the op's vmap and autocast rules applied."""
    from ..func import _batched

    if _batched._active and _batched.top_level(args, kwargs) is not None:
        return _batched.dispatch(_NamedOp(name), args, kwargs)
    if _AUTOCAST:
        cast = _AUTOCAST.get(base_name(name))
        if cast is not None:
            ft = _ft()
            device, dtype = cast
            if ft.is_autocast_enabled(device):
                def c(x):
                    return x.to(dtype) if isinstance(x, _C.Tensor) and x.is_floating_point() else x

                with ft.autocast(device, enabled=False):
                    return _C._call_op(name, tuple(c(a) for a in args), {k: c(v) for k, v in kwargs.items()})
    return _C._call_op(name, args, kwargs)


def vmap_rule(func):
    """The registered vmap rule of a dispatch ``func`` (an op by name)."""
    name = getattr(func, "_name", None)
    if not isinstance(name, str):
        return None
    return _VMAP.get(base_name(name))


def run_vmap_rule(rule, level, func, args, kwargs):
    """Run a registered rule at ``level``: physical arguments, their in_dims
    (0 or None), the outputs' out_dims back to BatchedTensors."""
    from ..func._batched import BatchedTensor, is_batched, level_size

    in_dims = tuple(0 if is_batched(a, level) else None for a in args)
    phys = [a._value if is_batched(a, level) else a for a in args]
    info = VmapInfo(level_size(level), "error")
    got = rule(info, in_dims, *phys, **kwargs)
    if not (isinstance(got, tuple) and len(got) == 2):
        raise RuntimeError(f"vmap rule of {getattr(func, '_name', func)}: expected it to return (output, out_dims), "
                           f"got {type(got).__name__}")
    out, out_dims = got
    single = not isinstance(out, (tuple, list))
    outs = [out] if single else list(out)
    dims = [out_dims] * len(outs) if isinstance(out_dims, (int, type(None))) else list(out_dims)
    if len(dims) != len(outs):
        raise RuntimeError(f"vmap rule of {getattr(func, '_name', func)}: {len(outs)} outputs but {len(dims)} out_dims")
    res = [BatchedTensor(o.movedim(d, 0), level) if d is not None else o for o, d in zip(outs, dims)]
    return res[0] if single else type(out)(res)

"""``torch.autograd.forward_ad``: dual tensors and their tangents.

Note [Forward AD over the tape]: there is no second, forward-mode engine.
``make_dual`` gives a tensor the tape records (a leaf, or a view of the
primal when it already requires grad) and keeps its tangent with the
level; ``unpack_dual(y)`` forms the Jacobian-vector product ``J·t`` as the
transpose of a vector-Jacobian product (two reverse passes, as
``func.jvp``): ``u = Jᵀv`` for a ``v`` that requires grad, then the
derivative of ``⟨u, t⟩`` with respect to ``v``. The values are torch's;
what differs: the ops must run with grad mode on (torch's forward AD
also runs under ``no_grad``), and a dual tensor reports
``requires_grad=True``.
"""

from typing import NamedTuple, Optional

from .. import _C

__all__ = ["UnpackedDualTensor", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual", "dual_level"]

_current_level = -1
_duals = {}  # level -> [(dual, tangent, primal required grad)]


def _ft():
    import ferrotorch

    return ferrotorch


class UnpackedDualTensor(NamedTuple):
    """What ``unpack_dual`` returns: ``(primal, tangent)``."""

    primal: _C.Tensor
    tangent: Optional[_C.Tensor]


def enter_dual_level():
    """Enter a forward AD level (one at a time, as in torch) and return it."""
    global _current_level
    if _current_level >= 0:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    _current_level += 1
    _duals[_current_level] = []
    return _current_level


def exit_dual_level(*, level=None):
    """Leave the level: the tangents of its dual tensors are dropped."""
    global _current_level
    if level is None:
        level = _current_level
    if level != _current_level:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that was created. This is "
                           "not supported.")
    _duals.pop(level, None)
    _current_level = level - 1


def make_dual(tensor, tangent, *, level=None):
    """``tensor`` with ``tangent`` as its forward gradient at ``level``."""
    if level is None:
        level = _current_level
    if level < 0:
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, make sure to "
                           "enter_dual_level() first.")
    if not (tensor.is_floating_point() or tensor.is_complex()):
        raise ValueError(f"Expected primal to be floating point or complex, but got: {tensor.dtype}")
    if not (tangent.is_floating_point() or tangent.is_complex()):
        raise ValueError(f"Expected tangent to be floating point or complex, but got: {tangent.dtype}")
    if tuple(tensor.shape) != tuple(tangent.shape):
        raise RuntimeError("Trying to set a forward gradient that has a different size than that of the original "
                           f"Tensor, this is not supported. Tensor is of size {list(tensor.shape)} while the given "
                           f"forward gradient is of size {list(tangent.shape)}.")
    ft = _ft()
    with ft.enable_grad():
        if tensor.requires_grad:
            dual = tensor.view_as(tensor)
        else:
            dual = tensor.detach().requires_grad_(True)
    _duals[level].append((dual, tangent, tensor.requires_grad))
    return dual


def unpack_dual(tensor, *, level=None):
    """``(primal, tangent)`` of ``tensor`` at ``level``: the tangent is the
    Jacobian-vector product of the level's dual inputs' tangents (None when
    ``tensor`` depends on none of them) (Note [Forward AD over the tape])."""
    if level is None:
        level = _current_level
    if level < 0 or level not in _duals or not isinstance(tensor, _C.Tensor):
        return UnpackedDualTensor(tensor, None)
    ft = _ft()
    duals = _duals[level]
    keep = any(rg for _, _, rg in duals)
    primal = tensor if keep else tensor.detach()
    for d, t, _ in duals:
        if d is tensor:
            return UnpackedDualTensor(primal, t)
    if not tensor.requires_grad:
        return UnpackedDualTensor(primal, None)
    with ft.enable_grad():
        v = ft.zeros_like(tensor).requires_grad_(True)
        gs = ft.autograd.grad(tensor, [d for d, _, _ in duals], v, create_graph=True, allow_unused=True)
        used = [(g, t) for g, (_, t, _) in zip(gs, duals) if g is not None]
        if not used:
            return UnpackedDualTensor(primal, None)
        higher = keep or any(t.requires_grad for _, t in used)
        (jvp,) = ft.autograd.grad([g for g, _ in used], [v], [t for _, t in used], create_graph=higher,
                                  allow_unused=True)
    if jvp is None:
        jvp = ft.zeros_like(tensor)
    return UnpackedDualTensor(primal, jvp if higher else jvp.detach())


class dual_level:
    """``with dual_level():`` a forward AD level for the block."""

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, exc_type, exc_value, traceback):
        exit_dual_level()

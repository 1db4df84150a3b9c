"""``nn.utils``: gradient clipping, parameter/vector conversion, packed
sequences (``rnn``), parametrizations, weight and spectral norm, fusion
of batch norms, ``stateless.functional_call``."""

import math

from ... import _C
from ...autograd.grad_mode import no_grad


def _grads(parameters):
    if isinstance(parameters, _C.Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scale gradients so their joint ``norm_type`` norm is at most
    ``max_norm``; returns the norm before clipping."""
    grads = _grads(parameters)
    max_norm, norm_type = float(max_norm), float(norm_type)
    if not grads:
        return _C.tensor(0.0)
    import ferrotorch

    with no_grad():
        if norm_type == math.inf:
            norms = [g.abs().max() for g in grads]
            total = ferrotorch.stack(norms).max()
        else:
            total = ferrotorch.stack([g.norm(norm_type) for g in grads]).norm(norm_type)
        if error_if_nonfinite and (total.isnan() | total.isinf()).item():
            raise RuntimeError(
                f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, "
                "so it cannot be clipped. To disable this error and scale the gradients by the "
                "non-finite norm anyway, set `error_if_nonfinite=False`")
        coef = (max_norm / (total + 1e-6)).clamp(None, 1.0)
        for g in grads:
            g.mul_(coef)
    return total


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient element to ``[-clip_value, clip_value]``."""
    with no_grad():
        for g in _grads(parameters):
            g.copy_(g.clamp(-clip_value, clip_value))


def parameters_to_vector(parameters):
    """All parameters flattened into one vector."""
    import ferrotorch

    return ferrotorch.cat([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec, parameters):
    """Copy slices of ``vec`` into the parameters."""
    offset = 0
    with no_grad():
        for p in parameters:
            n = p.numel()
            p.copy_(vec[offset:offset + n].view_as(p))
            offset += n


from . import rnn  # noqa: E402,F401

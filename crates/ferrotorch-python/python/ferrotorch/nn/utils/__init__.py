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


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The ``norm_type`` norm of the tensors' norms (of all of them joined)."""
    import ferrotorch

    if isinstance(tensors, _C.Tensor):
        tensors = [tensors]
    tensors = list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return _C.tensor(0.0)
    with no_grad():
        if norm_type == math.inf:
            total = ferrotorch.stack([t.abs().max() for t in tensors]).max()
        else:
            total = ferrotorch.stack([t.norm(norm_type) for t in tensors]).norm(norm_type)
    if error_if_nonfinite and (total.isnan() | total.isinf()).item():
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so "
                           "it cannot be clipped. To disable this error and scale the gradients by the non-finite "
                           "norm anyway, set `error_if_nonfinite=False`")
    return total


def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scale the gradients by ``max_norm / (total_norm + 1e-6)`` when that is
    below 1 (``total_norm`` from ``get_total_norm``)."""
    grads = _grads(parameters)
    if not grads:
        return
    with no_grad():
        coef = (float(max_norm) / (total_norm + 1e-6)).clamp(None, 1.0)
        for g in grads:
            g.mul_(coef)


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Deprecated in torch in favour of ``clip_grad_norm_`` (it warns)."""
    import warnings

    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


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


def skip_init(module_cls, *args, **kwargs):
    """An instance of ``module_cls`` whose parameters are left uninitialised
    (torch builds it on the meta device and empties it; here the
    constructor's initialisation runs and the tensors are replaced by
    uninitialised ones of the same shapes)."""
    import inspect

    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    return module_cls(*args, **kwargs).to_empty()


def convert_conv2d_weight_memory_format(module, memory_format):
    """Put every Conv2d/ConvTranspose2d weight of ``module`` in
    ``memory_format`` (recursively)."""
    from ..modules.conv import Conv2d, ConvTranspose2d

    if isinstance(module, (Conv2d, ConvTranspose2d)):
        with no_grad():
            module.weight.data = module.weight.detach().clone().contiguous(memory_format=memory_format)
    for child in module.children():
        convert_conv2d_weight_memory_format(child, memory_format)
    return module


def convert_conv3d_weight_memory_format(module, memory_format):
    """Put every Conv3d/ConvTranspose3d weight of ``module`` in
    ``memory_format`` (recursively)."""
    from ..modules.volumetric import Conv3d, ConvTranspose3d

    if isinstance(module, (Conv3d, ConvTranspose3d)):
        with no_grad():
            module.weight.data = module.weight.detach().clone().contiguous(memory_format=memory_format)
    for child in module.children():
        convert_conv3d_weight_memory_format(child, memory_format)
    return module


from . import parametrizations, parametrize, rnn, stateless  # noqa: E402,F401
from .fusion import fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval, fuse_linear_bn_weights  # noqa: E402,F401
from .spectral_norm import remove_spectral_norm, spectral_norm  # noqa: E402,F401
from .weight_norm import remove_weight_norm, weight_norm  # noqa: E402,F401

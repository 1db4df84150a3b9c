"""``optim.Muon``: momentum SGD whose update is orthogonalised by a
Newton-Schulz iteration (in bfloat16, as torch's), for 2-D parameters."""

import math

from .. import addmm, bfloat16
from ..autograd.grad_mode import no_grad
from .optimizer import Optimizer, _closure, _zeros_like

__all__ = ["Muon"]


def _zeropower_via_newtonschulz(grad, ns_coefficients, ns_steps, eps):
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if len(grad.shape) != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = ns_coefficients
    x = grad.to(dtype=bfloat16, copy=True)
    tall = grad.size(0) > grad.size(1)
    if tall:
        x = x.T
    x.div_(x.norm().clamp(min=eps))
    for _ in range(ns_steps):
        gram = x @ x.T
        update = addmm(gram, gram, gram, beta=b, alpha=c)
        x = addmm(x, update, x, beta=a)
    return x.T if tall else x


def _adjust_lr(lr, adjust_lr_fn, shape):
    A, B = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        return lr * math.sqrt(max(1, A / B))
    if adjust_lr_fn == "match_rms_adamw":
        return lr * 0.2 * math.sqrt(max(A, B))
    if adjust_lr_fn == "spectral_unclamped":
        return lr * math.sqrt(A / B)
    return lr


class Muon(Optimizer):
    """MomentUm Orthogonalized by Newton-Schulz (2-D parameters only)."""

    def __init__(self, params, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True,
                 ns_coefficients=(3.4445, -4.775, 2.0315), eps=1e-7, ns_steps=5, adjust_lr_fn=None):
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ["original", "match_rms_adamw", "spectral_unclamped"]:
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        super().__init__(params, dict(lr=lr, weight_decay=weight_decay, momentum=momentum,
                                      nesterov=nesterov, ns_coefficients=ns_coefficients, eps=eps,
                                      ns_steps=ns_steps, adjust_lr_fn=adjust_lr_fn))
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError(f"Muon only supports 2D parameters whereas we found a parameter with size: {p.size()}")

    def step(self, closure=None):
        loss = _closure(closure)
        with no_grad():
            for g in self.param_groups:
                lr = float(g["lr"])
                for p in g["params"]:
                    if p.grad is None:
                        continue
                    if p.is_complex():
                        raise RuntimeError("Muon does not support complex parameters")
                    grad = p.grad
                    st = self.state[p]
                    if "momentum_buffer" not in st:
                        st["momentum_buffer"] = _zeros_like(grad)
                    buf = st["momentum_buffer"]
                    buf.lerp_(grad, 1 - g["momentum"])
                    update = grad.lerp(buf, g["momentum"]) if g["nesterov"] else buf
                    update = _zeropower_via_newtonschulz(update, g["ns_coefficients"], g["ns_steps"], g["eps"])
                    p.mul_(1 - lr * g["weight_decay"])
                    p.add_(update, alpha=-_adjust_lr(lr, g["adjust_lr_fn"], p.shape))
        return loss

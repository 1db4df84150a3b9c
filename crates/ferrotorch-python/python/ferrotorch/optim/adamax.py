"""``optim.Adamax`` (torch's single-tensor formulas)."""

from .. import maximum
from ..autograd.grad_mode import no_grad
from .optimizer import Optimizer, _check_nonnegative, _closure, _zeros_like, _zero_step

__all__ = ["Adamax"]


class Adamax(Optimizer):
    """Adam with the infinity norm of past gradients in place of the
    second moment."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                 maximize=False, differentiable=False, capturable=False):
        _check_nonnegative(lr=lr, eps=eps)
        for i, b in enumerate(betas):
            if not 0.0 <= b < 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {b}")
        _check_nonnegative(weight_decay=weight_decay)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      foreach=foreach, maximize=maximize, differentiable=differentiable,
                                      capturable=capturable))

    def step(self, closure=None):
        loss = _closure(closure)
        with no_grad():
            for g, p, grad in self._grads():
                st = self.state[p]
                if not st:
                    st["step"] = _zero_step()
                    st["exp_avg"] = _zeros_like(p)
                    st["exp_inf"] = _zeros_like(p)
                st["step"] += 1
                beta1, beta2 = g["betas"]
                if g["weight_decay"] != 0:
                    grad = grad.add(p, alpha=g["weight_decay"])
                m, u = st["exp_avg"], st["exp_inf"]
                m.lerp_(grad, 1 - beta1)
                u.copy_(maximum(u.mul_(beta2), grad.abs().add_(g["eps"])))
                clr = g["lr"] / (1 - beta1 ** float(st["step"]))
                p.addcdiv_(m, u, value=-clr)
        return loss

"""``optim.Adadelta`` (torch's single-tensor formulas)."""

from ..autograd.grad_mode import no_grad
from .optimizer import Optimizer, _check_nonnegative, _closure, _zeros_like, _zero_step

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    """ADADELTA: per-coordinate steps from running averages of squared
    gradients and squared updates."""

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *,
                 capturable=False, maximize=False, differentiable=False):
        _check_nonnegative(lr=lr, eps=eps)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        _check_nonnegative(weight_decay=weight_decay)
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay,
                                      maximize=maximize, capturable=capturable, foreach=foreach,
                                      differentiable=differentiable))

    def step(self, closure=None):
        loss = _closure(closure)
        with no_grad():
            for g, p, grad in self._grads():
                st = self.state[p]
                if not st:
                    st["step"] = _zero_step()
                    st["square_avg"] = _zeros_like(p)
                    st["acc_delta"] = _zeros_like(p)
                st["step"] += 1
                rho, eps = g["rho"], g["eps"]
                if g["weight_decay"] != 0:
                    grad = grad.add(p, alpha=g["weight_decay"])
                sq, acc = st["square_avg"], st["acc_delta"]
                sq.mul_(rho).addcmul_(grad, grad, value=1 - rho)
                std = sq.add(eps).sqrt_()
                delta = acc.add(eps).sqrt_().div_(std).mul_(grad)
                acc.mul_(rho).addcmul_(delta, delta, value=1 - rho)
                p.add_(delta, alpha=-g["lr"])
        return loss

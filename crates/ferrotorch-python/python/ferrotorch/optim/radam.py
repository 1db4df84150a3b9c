"""``optim.RAdam`` (torch's single-tensor formulas): Adam whose adaptive
step is switched on only once the variance of its estimate is tractable."""

from ..autograd.grad_mode import no_grad
from .optimizer import Optimizer, _check_nonnegative, _closure, _zeros_like, _zero_step

__all__ = ["RAdam"]


class RAdam(Optimizer):
    """Rectified Adam; ``decoupled_weight_decay`` makes it RAdamW."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        _check_nonnegative(lr=lr, eps=eps)
        for i, b in enumerate(betas):
            if not 0.0 <= b < 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {b}")
        _check_nonnegative(weight_decay=weight_decay)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      maximize=maximize, foreach=foreach, capturable=capturable,
                                      decoupled_weight_decay=decoupled_weight_decay,
                                      differentiable=differentiable))

    def step(self, closure=None):
        loss = _closure(closure)
        with no_grad():
            for g, p, grad in self._grads():
                st = self.state[p]
                if not st:
                    st["step"] = _zero_step()
                    st["exp_avg"] = _zeros_like(p)
                    st["exp_avg_sq"] = _zeros_like(p)
                st["step"] += 1
                step, lr, wd = float(st["step"]), g["lr"], g["weight_decay"]
                beta1, beta2 = g["betas"]
                if wd != 0:
                    if g["decoupled_weight_decay"]:
                        p.mul_(1 - lr * wd)
                    else:
                        grad = grad.add(p, alpha=wd)
                m, v = st["exp_avg"], st["exp_avg_sq"]
                m.lerp_(grad, 1 - beta1)
                v.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                bias1 = 1 - beta1 ** step
                bias2 = 1 - beta2 ** step
                corrected = m / bias1
                rho_inf = 2 / (1 - beta2) - 1
                rho_t = rho_inf - 2 * step * (beta2 ** step) / bias2
                if rho_t > 5.0:
                    rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
                    adaptive = (bias2 ** 0.5) / v.sqrt().add_(g["eps"])
                    p.add_(corrected * lr * adaptive * rect, alpha=-1.0)
                else:
                    p.add_(corrected * lr, alpha=-1.0)
        return loss

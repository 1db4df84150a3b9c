"""``optim.NAdam`` (torch's single-tensor formulas): Adam with Nesterov
momentum and the momentum-decay schedule of Dozat's paper."""

from .. import float32, tensor
from ..autograd.grad_mode import no_grad
from .optimizer import Optimizer, _check_nonnegative, _closure, _zeros_like, _zero_step

__all__ = ["NAdam"]


class NAdam(Optimizer):
    """NAdam; ``decoupled_weight_decay`` makes it NAdamW."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 momentum_decay=4e-3, decoupled_weight_decay=False, *, foreach=None, maximize=False,
                 capturable=False, differentiable=False):
        _check_nonnegative(lr=lr, eps=eps)
        for i, b in enumerate(betas):
            if not 0.0 <= b < 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {b}")
        _check_nonnegative(weight_decay=weight_decay, momentum_decay=momentum_decay)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      momentum_decay=momentum_decay,
                                      decoupled_weight_decay=decoupled_weight_decay, maximize=maximize,
                                      foreach=foreach, capturable=capturable,
                                      differentiable=differentiable))

    def step(self, closure=None):
        loss = _closure(closure)
        with no_grad():
            for g, p, grad in self._grads():
                st = self.state[p]
                if not st:
                    st["step"] = _zero_step()
                    # torch keeps the running product of the momentum
                    # coefficients as a float32 scalar tensor
                    st["mu_product"] = tensor(1.0, dtype=float32)
                    st["exp_avg"] = _zeros_like(p)
                    st["exp_avg_sq"] = _zeros_like(p)
                st["step"] += 1
                step, lr, wd = float(st["step"]), g["lr"], g["weight_decay"]
                beta1, beta2 = g["betas"]
                bias2 = 1 - beta2 ** step
                if wd != 0:
                    if g["decoupled_weight_decay"]:
                        p.mul_(1 - lr * wd)
                    else:
                        grad = grad.add(p, alpha=wd)
                mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * g["momentum_decay"])))
                mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * g["momentum_decay"])))
                st["mu_product"].mul_(mu)
                mu_product = st["mu_product"].item()
                m, v = st["exp_avg"], st["exp_avg_sq"]
                m.lerp_(grad, 1 - beta1)
                v.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                denom = v.div(bias2).sqrt().add_(g["eps"])
                p.addcdiv_(grad, denom, value=-lr * (1.0 - mu) / (1.0 - mu_product))
                p.addcdiv_(m, denom, value=(-lr * mu_next) / (1.0 - mu_product * mu_next))
        return loss

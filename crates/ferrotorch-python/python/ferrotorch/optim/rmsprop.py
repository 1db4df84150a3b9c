"""``optim.RMSprop`` and ``optim.Adagrad`` (torch's single-tensor formulas)."""

from ..autograd.grad_mode import no_grad
from .optimizer import Optimizer, _check_nonnegative, _closure, _zeros_like, _zero_step


class RMSprop(Optimizer):
    """RMSprop with optional momentum and centering."""

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
                 centered=False, capturable=False, foreach=None, maximize=False,
                 differentiable=False):
        _check_nonnegative(lr=lr, eps=eps, momentum=momentum, weight_decay=weight_decay, alpha=alpha)
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay,
                                      momentum=momentum, centered=centered, maximize=maximize))

    def step(self, closure=None):
        loss = _closure(closure)
        with no_grad():
            for g, p, grad in self._grads():
                st = self.state[p]
                if not st:
                    st["step"] = _zero_step()
                    st["square_avg"] = _zeros_like(p)
                    if g["momentum"] > 0:
                        st["momentum_buffer"] = _zeros_like(p)
                    if g["centered"]:
                        st["grad_avg"] = _zeros_like(p)
                st["step"] += 1
                if g["weight_decay"] != 0:
                    grad = grad.add(p, alpha=g["weight_decay"])
                sq = st["square_avg"]
                sq.mul_(g["alpha"]).add_(grad * grad, alpha=1 - g["alpha"])
                if g["centered"]:
                    ga = st["grad_avg"]
                    ga.mul_(g["alpha"]).add_(grad, alpha=1 - g["alpha"])
                    avg = (sq - ga * ga).sqrt().add_(g["eps"])
                else:
                    avg = sq.sqrt().add_(g["eps"])
                if g["momentum"] > 0:
                    buf = st["momentum_buffer"]
                    buf.mul_(g["momentum"]).add_(grad / avg)
                    p.add_(buf, alpha=-g["lr"])
                else:
                    p.add_(grad / avg, alpha=-g["lr"])
        return loss


class Adagrad(Optimizer):
    """Adagrad with learning-rate decay."""

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0,
                 eps=1e-10, foreach=None, *, maximize=False, differentiable=False, fused=None):
        _check_nonnegative(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                           initial_accumulator_value=initial_accumulator_value, eps=eps)
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value,
                                      maximize=maximize))
        for g in self.param_groups:
            for p in g["params"]:
                self.state[p]["step"] = _zero_step()
                self.state[p]["sum"] = p.new_full(tuple(p.shape), g["initial_accumulator_value"])

    def step(self, closure=None):
        loss = _closure(closure)
        with no_grad():
            for g, p, grad in self._grads():
                st = self.state[p]
                st["step"] += 1
                if g["weight_decay"] != 0:
                    grad = grad.add(p, alpha=g["weight_decay"])
                clr = g["lr"] / (1 + (float(st["step"]) - 1) * g["lr_decay"])
                st["sum"].add_(grad * grad)
                std = st["sum"].sqrt().add_(g["eps"])
                p.add_(grad / std, alpha=-clr)
        return loss

"""``optim.Rprop`` (torch's single-tensor formulas): resilient
backpropagation, steps from the gradient's sign alone."""

from .. import full_like
from ..autograd.grad_mode import no_grad
from .optimizer import Optimizer, _check_nonnegative, _closure, _zeros_like, _zero_step

__all__ = ["Rprop"]


class Rprop(Optimizer):
    """Each coordinate's step grows by ``etas[1]`` while its gradient keeps
    its sign and shrinks by ``etas[0]`` when it flips (that step is then
    skipped), within ``step_sizes``."""

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable=False,
                 foreach=None, maximize=False, differentiable=False):
        _check_nonnegative(lr=lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        super().__init__(params, dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach,
                                      maximize=maximize, differentiable=differentiable,
                                      capturable=capturable))

    def step(self, closure=None):
        loss = _closure(closure)
        with no_grad():
            for g, p, grad in self._grads():
                st = self.state[p]
                if not st:
                    st["step"] = _zero_step()
                    st["prev"] = _zeros_like(p)
                    st["step_size"] = full_like(grad, float(g["lr"]))
                st["step"] += 1
                etaminus, etaplus = g["etas"]
                lo, hi = g["step_sizes"]
                prev, size = st["prev"], st["step_size"]
                sign = grad.mul(prev).sign()
                factor = (sign.masked_fill(sign > 0, etaplus).masked_fill(sign < 0, etaminus)
                          .masked_fill(sign == 0, 1))
                size.mul_(factor).clamp_(lo, hi)
                grad = grad.masked_fill(factor == etaminus, 0)
                p.addcmul_(grad.sign(), size, value=-1)
                prev.copy_(grad)
        return loss

"""``optim.ASGD`` (torch's single-tensor formulas): averaged SGD."""

from .. import float32, ones, tensor
from ..autograd.grad_mode import no_grad
from .optimizer import Optimizer, _check_nonnegative, _closure, _zeros_like, _zero_step

__all__ = ["ASGD"]


class ASGD(Optimizer):
    """Averaged SGD: a decaying step ``eta`` and the running average ``ax``
    of the iterates from step ``t0`` on."""

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None,
                 maximize=False, differentiable=False, capturable=False):
        _check_nonnegative(lr=lr, weight_decay=weight_decay)
        super().__init__(params, dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay,
                                      foreach=foreach, maximize=maximize, capturable=capturable,
                                      differentiable=differentiable))

    def step(self, closure=None):
        loss = _closure(closure)
        with no_grad():
            for g, p, grad in self._grads():
                st = self.state[p]
                if not st:
                    st["step"] = _zero_step()
                    # eta and mu are float32 scalar tensors, as torch keeps them
                    st["eta"] = tensor(float(g["lr"]), dtype=float32)
                    st["mu"] = ones((), dtype=float32)
                    st["ax"] = _zeros_like(p)
                st["step"] += 1
                lambd, lr = g["lambd"], g["lr"]
                if g["weight_decay"] != 0:
                    grad = grad.add(p, alpha=g["weight_decay"])
                eta = st["eta"].item()
                p.mul_(1 - lambd * eta)
                p.add_(grad, alpha=-eta)
                ax = st["ax"]
                if st["mu"].item() != 1:
                    ax.add_(p.sub(ax).mul_(st["mu"]))
                else:
                    ax.copy_(p)
                step = float(st["step"])
                st["eta"].fill_(lr / ((1 + lambd * lr * step) ** g["alpha"]))
                st["mu"].fill_(1 / max(1, step - g["t0"]))
        return loss

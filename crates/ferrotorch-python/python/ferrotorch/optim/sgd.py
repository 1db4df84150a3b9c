"""``optim.SGD`` with momentum, dampening, Nesterov and weight decay: each
real floating-point parameter's update is one fused native call
(``ferrotorch_optim::sgd_step``, one pass over its memory); complex
parameters take torch's formulas as tensor ops."""

from .. import _C, bfloat16, float16, float32, float64
from ..autograd.grad_mode import no_grad
from .optimizer import Optimizer, _check_nonnegative, _closure, _zeros_like

_FUSED = (float32, float64, float16, bfloat16)


class SGD(Optimizer):
    """Stochastic gradient descent (torch's formulation of momentum)."""

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False,
                 *, maximize=False, foreach=None, differentiable=False, fused=None):
        _check_nonnegative(lr=lr, momentum=momentum, weight_decay=weight_decay)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov,
                                      maximize=maximize))

    def step(self, closure=None):
        loss = _closure(closure)
        with no_grad():
            for g in self.param_groups:
                for p in g["params"]:
                    grad = p.grad
                    if grad is None:
                        continue
                    if p.dtype in _FUSED and grad.dtype == p.dtype:
                        self._fused_update(g, p, grad)
                    else:
                        self._update(g, p, -grad if g["maximize"] else grad)
        return loss

    def _fused_update(self, g, p, grad):
        buf, first = None, False
        if g["momentum"] != 0:
            st = self.state[p]
            buf = st.get("momentum_buffer")
            if buf is None:
                buf, first = _zeros_like(p), True
                st["momentum_buffer"] = buf
        _C._sgd_step(p, grad, buf, first, float(g["lr"]), float(g["momentum"]),
                     float(g["dampening"]), float(g["weight_decay"]), bool(g["nesterov"]),
                     bool(g["maximize"]))

    def _update(self, g, p, d):
        if g["weight_decay"] != 0:
            d = d.add(p, alpha=g["weight_decay"])
        if g["momentum"] != 0:
            st = self.state[p]
            buf = st.get("momentum_buffer")
            if buf is None:
                buf = d.clone()
                st["momentum_buffer"] = buf
            else:
                buf.mul_(g["momentum"]).add_(d, alpha=1 - g["dampening"])
            d = d.add(buf, alpha=g["momentum"]) if g["nesterov"] else buf
        p.add_(d, alpha=-g["lr"])

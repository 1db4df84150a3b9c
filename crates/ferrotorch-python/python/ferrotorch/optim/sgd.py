"""``optim.SGD`` with momentum, dampening, Nesterov and weight decay."""

from ..autograd.grad_mode import no_grad
from .optimizer import Optimizer, _check_nonnegative, _closure


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
            for g, p, d in self._grads():
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
        return loss

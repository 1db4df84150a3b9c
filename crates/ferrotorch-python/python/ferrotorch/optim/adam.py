"""``optim.Adam`` and ``optim.AdamW``: Python holds the groups and state
as torch does; each parameter's update is one fused native call
(``ferrotorch_optim::adam_step``, torch's single-tensor formulas)."""

from .. import _C
from ..autograd.grad_mode import no_grad
from .optimizer import Optimizer, _check_nonnegative, _closure, _zeros_like, _zero_step


class Adam(Optimizer):
    """Adam; ``weight_decay`` is L2 added to the gradient."""

    _decoupled = False

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None, decoupled_weight_decay=False):
        _check_nonnegative(lr=lr, eps=eps)
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        _check_nonnegative(weight_decay=weight_decay)
        self._decoupled = self._decoupled or decoupled_weight_decay
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      amsgrad=amsgrad, maximize=maximize))

    def step(self, closure=None):
        loss = _closure(closure)
        with no_grad():
            for g in self.param_groups:
                beta1, beta2 = g["betas"]
                lr, eps, wd = g["lr"], g["eps"], g["weight_decay"]
                for p in g["params"]:
                    if p.grad is None:
                        continue
                    grad = p.grad
                    st = self.state[p]
                    if not st:
                        st["step"] = _zero_step()
                        st["exp_avg"] = _zeros_like(p)
                        st["exp_avg_sq"] = _zeros_like(p)
                        if g["amsgrad"]:
                            st["max_exp_avg_sq"] = _zeros_like(p)
                    st["step"] += 1
                    _C._adam_step(p, grad, st["exp_avg"], st["exp_avg_sq"],
                                  st.get("max_exp_avg_sq"), float(st["step"]), lr, beta1, beta2,
                                  eps, wd, g["maximize"], self._decoupled)
        return loss


class AdamW(Adam):
    """Adam with decoupled weight decay (default 1e-2)."""

    _decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False, foreach=None, capturable=False,
                 differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize)

"""``optim.Adafactor`` (torch's single-tensor formulas): second moments
factored into row and column statistics for matrices."""


from ..autograd.grad_mode import no_grad
from ..linalg import vector_norm
from .optimizer import Optimizer, _closure, _zeros_like, _zero_step

__all__ = ["Adafactor"]


class Adafactor(Optimizer):
    """Adafactor with torch's defaults: relative steps capped by ``lr``,
    update clipping by ``d``, decoupled weight decay."""

    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0, weight_decay=0.0, *,
                 foreach=None, maximize=False):
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        super().__init__(params, dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d,
                                      weight_decay=weight_decay, foreach=foreach, maximize=maximize))

    def step(self, closure=None):
        loss = _closure(closure)
        with no_grad():
            for g, p, grad in self._grads():
                if p.is_complex():
                    raise RuntimeError("Adafactor does not support complex parameters")
                st = self.state[p]
                if not st:
                    st["step"] = _zero_step()
                    if grad.dim() > 1:
                        rows, cols = list(grad.shape), list(grad.shape)
                        rows[-1], cols[-2] = 1, 1
                        st["row_var"] = grad.new_zeros(rows)
                        st["col_var"] = grad.new_zeros(cols)
                    else:
                        st["variance"] = _zeros_like(grad)
                st["step"] += 1
                lr, (eps1, eps2) = float(g["lr"]), g["eps"]
                if eps1 is None:
                    from .. import finfo

                    eps1 = finfo(p.dtype).eps
                step = float(st["step"])
                one_minus_beta2 = step ** g["beta2_decay"]
                rho = min(lr, 1 / (step ** 0.5))
                alpha = max(eps2, p.norm(2).item() / (p.numel() ** 0.5)) * rho
                if g["weight_decay"] != 0:
                    p.mul_(1 - lr * g["weight_decay"])
                if grad.dim() > 1:
                    row_var, col_var = st["row_var"], st["col_var"]
                    row_mean = vector_norm(grad, dim=-1, keepdim=True).square_().div_(grad.size(-1))
                    row_var.lerp_(row_mean, one_minus_beta2)
                    col_mean = vector_norm(grad, dim=-2, keepdim=True).square_().div_(grad.size(-2))
                    col_var.lerp_(col_mean, one_minus_beta2)
                    var = row_var @ col_var
                    var.div_(row_var.mean(dim=-2, keepdim=True).clamp_(min=eps1))
                else:
                    st["variance"].lerp_(grad * grad, one_minus_beta2)
                    var = st["variance"].clone()
                update = var.clamp_(min=eps1 * eps1).rsqrt_()
                update.mul_(grad)
                denom = max(1.0, update.norm(2).item() / ((update.numel() ** 0.5) * g["d"]))
                p.add_(update, alpha=-alpha / denom)
        return loss

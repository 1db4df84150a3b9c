"""``optim.SparseAdam``: Adam that updates only the rows a gradient
touches.

Note [SparseAdam on dense gradients]: torch's SparseAdam takes the sparse
gradients ``nn.Embedding(sparse=True)`` makes and updates the moments and
the parameter at the gradient's indices only. ferrotorch has no sparse
layout yet (the dispatcher issue's Sparse key), so its embeddings give
dense gradients; SparseAdam reads the rows of dimension 0 that are not all
zero as the gradient's indices and does torch's update there, which is
the same as torch's whenever the rows looked up have a non-zero gradient
(a looked-up row whose gradient is exactly zero is updated by torch and
skipped here)."""

import math

from ..autograd.grad_mode import no_grad
from .optimizer import Optimizer, _closure, _zeros_like, _zero_step

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    """Lazy Adam for embeddings (Note [SparseAdam on dense gradients])."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
        if not 0.0 < lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        for i, b in enumerate(betas):
            if not 0.0 <= b < 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {b}")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, maximize=maximize))

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
                beta1, beta2 = g["betas"]
                flat = grad.reshape(grad.shape[0], -1) if grad.dim() > 1 else grad.reshape(-1, 1)
                rows = flat.ne(0).any(1).nonzero().reshape(-1)
                if rows.numel() == 0:
                    continue
                gv = grad.index_select(0, rows)
                m, v = st["exp_avg"], st["exp_avg_sq"]
                m_rows = m.index_select(0, rows)
                v_rows = v.index_select(0, rows)
                m_update = gv.sub(m_rows).mul_(1 - beta1)
                m_rows = m_rows.add_(m_update)
                v_update = gv.pow(2).sub_(v_rows).mul_(1 - beta2)
                v_rows = v_rows.add_(v_update)
                m.index_copy_(0, rows, m_rows)
                v.index_copy_(0, rows, v_rows)
                denom = v_rows.sqrt_().add_(g["eps"])
                bias1 = 1 - beta1 ** float(st["step"])
                bias2 = 1 - beta2 ** float(st["step"])
                step_size = g["lr"] * math.sqrt(bias2) / bias1
                p.index_add_(0, rows, m_rows.div_(denom).mul_(-step_size))
        return loss

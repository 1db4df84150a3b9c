"""Helpers of ``torch.distributions``: broadcasting parameters, logits and
probabilities, lazy properties, triangular packing, and the samplers'
reparameterized gradients (Note [Gamma's pathwise gradient])."""

import math
from functools import update_wrapper
from numbers import Number

import ferrotorch as torch
import ferrotorch.nn.functional as F

euler_constant = 0.57721566490153286060

__all__ = ["broadcast_all", "logits_to_probs", "clamp_probs", "probs_to_logits", "lazy_property",
           "tril_matrix_to_vec", "vec_to_tril_matrix"]


def broadcast_all(*values):
    """The values broadcast to one shape; numbers become tensors of the
    tensors' dtype (the default dtype when there is no tensor)."""
    if not all(isinstance(v, (torch.Tensor, Number)) for v in values):
        raise ValueError("Input arguments must all be instances of numbers.Number, torch.Tensor or objects "
                         "implementing __torch_function__.")
    if not all(isinstance(v, torch.Tensor) for v in values):
        dtype = torch.get_default_dtype()
        for v in values:
            if isinstance(v, torch.Tensor):
                dtype = v.dtype
                break
        values = [v if isinstance(v, torch.Tensor) else torch.tensor(v, dtype=dtype) for v in values]
    return torch.broadcast_tensors(*values)


def _standard_normal(shape, dtype, device=None):
    return torch.empty(shape, dtype=dtype).normal_()


def _sum_rightmost(value, dim):
    """Sum out the ``dim`` rightmost dimensions."""
    if dim == 0:
        return value
    return value.reshape(value.shape[:-dim] + (-1,)).sum(-1)


def logits_to_probs(logits, is_binary=False):
    """Probabilities from logits: sigmoid for binary, softmax otherwise."""
    if is_binary:
        return torch.sigmoid(logits)
    return F.softmax(logits, dim=-1)


def clamp_probs(probs):
    """Probabilities clamped into [eps, 1 - eps] of their dtype."""
    eps = torch.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary=False):
    """Logits from probabilities (log-odds for binary)."""
    ps = clamp_probs(probs)
    if is_binary:
        return torch.log(ps) - torch.log1p(-ps)
    return torch.log(ps)


class lazy_property:
    """A property computed on first access and then stored on the instance."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        update_wrapper(self, wrapped)

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return _lazy_property_and_property(self.wrapped)
        with torch.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _lazy_property_and_property(lazy_property, property):
    def __init__(self, wrapped):
        property.__init__(self, wrapped)


def tril_matrix_to_vec(mat, diag=0):
    """The lower triangle (from diagonal ``diag``) of the last two dims, as a vector."""
    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    arange = torch.arange(n)
    tril_mask = arange < arange.view(-1, 1) + (diag + 1)
    return mat[..., tril_mask]


def vec_to_tril_matrix(vec, diag=0):
    """The inverse of ``tril_matrix_to_vec``."""
    n = (-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * vec.shape[-1] + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    eps = torch.finfo(vec.dtype).eps
    if round(n) - n > eps:
        raise ValueError(f"The size of last dimension is {vec.shape[-1]} which cannot be expressed as the "
                         "lower triangular part of a square D x D matrix.")
    n = round(n)
    mat = vec.new_zeros(vec.shape[:-1] + (n, n))
    arange = torch.arange(n)
    tril_mask = arange < arange.view(-1, 1) + (diag + 1)
    mat[..., tril_mask] = vec
    return mat


# Note [Gamma's pathwise gradient]: a Gamma(α, 1) draw x is differentiated
# as torch's implicit reparameterization differentiates it: holding the
# draw's CDF value P(α, x) fixed, dx/dα = -∂P/∂α / p(x; α). torch
# evaluates that with a Taylor series, a saddle-point expansion and a
# rational fit (errors up to ~1e-3 relative); here ∂P/∂α is a central
# difference of the regularized incomplete gamma function in float64
# (igamma below its mean, igammac above, so neither is near 1), whose
# error is below 1e-7 relative: the gradient is the exact one, and it
# agrees with torch's to torch's approximation error. Beta and Dirichlet
# draws are normalized gamma draws and are differentiated through them.

def _standard_gamma_grad(alpha, x):
    """dx/dα of a Gamma(α, 1) draw x (Note [Gamma's pathwise gradient])."""
    a = alpha.double()
    v = x.double()
    h = (a * 1e-4).clamp(min=1e-7)
    upper = v > a
    lo, hi = (a - h).clamp(min=1e-12), a + h
    p_lo = torch.where(upper, torch.igammac(lo, v), torch.igamma(lo, v))
    p_hi = torch.where(upper, torch.igammac(hi, v), torch.igamma(hi, v))
    dP = (p_hi - p_lo) / (hi - lo)
    dP = torch.where(upper, -dP, dP)
    log_pdf = (a - 1) * torch.log(v) - v - torch.lgamma(a)
    g = -dP / torch.exp(log_pdf)
    g = torch.where(torch.isfinite(g), g, torch.zeros_like(g))
    return g.to(alpha.dtype)


class _StandardGamma(torch.autograd.Function):
    @staticmethod
    def forward(ctx, alpha):
        x = torch._C._call_op("_standard_gamma", (alpha.detach(),), {})
        ctx.save_for_backward(alpha, x)
        return x

    @staticmethod
    def backward(ctx, grad):
        alpha, x = ctx.saved_tensors
        return grad * _standard_gamma_grad(alpha, x)


def _standard_gamma(alpha, generator=None):
    """``torch._standard_gamma``: Gamma(α, 1) draws on torch's stream,
    differentiable in α (Note [Gamma's pathwise gradient])."""
    if generator is not None or not (alpha.requires_grad and torch.is_grad_enabled()):
        with torch.no_grad():
            return torch._C._call_op("_standard_gamma", (alpha.detach(),), {"generator": generator})
    return _StandardGamma.apply(alpha)


def _sample_dirichlet(concentration, generator=None):
    """``torch._sample_dirichlet``: gamma draws in float64 normalized over
    the last dim and clamped into (0, 1), as torch's CPU kernel; the
    gradient flows through the gamma draws."""
    dt = concentration.dtype
    g = _standard_gamma(concentration.double(), generator)
    x = g / g.sum(-1, keepdim=True)
    tiny = torch.finfo(dt).tiny
    top = math.nextafter(1.0, 0.0) if dt == torch.float64 else float(torch.tensor(1.0).nextafter(torch.tensor(0.0)))
    return x.clamp(min=tiny, max=top).to(dt)

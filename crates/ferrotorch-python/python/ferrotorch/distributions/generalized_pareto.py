"""``GeneralizedPareto(loc, scale, concentration)``."""

import math
from numbers import Number, Real

import ferrotorch as torch
from . import constraints
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["GeneralizedPareto"]


class GeneralizedPareto(Distribution):
    """The generalized Pareto distribution (``concentration`` 0: exponential tail)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive, "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args=None):
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        scalar = isinstance(loc, Number) and isinstance(scale, Number) and isinstance(concentration, Number)
        super().__init__(torch.Size() if scalar else self.loc.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(GeneralizedPareto, _instance)
        batch_shape = torch.Size(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        super(GeneralizedPareto, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=torch.Size()):
        shape = self._extended_shape(sample_shape)
        return self.icdf(torch.rand(shape, dtype=self.loc.dtype))

    def _safe(self):
        eq_zero = torch.isclose(self.concentration, torch.zeros_like(self.concentration))
        return eq_zero, torch.where(eq_zero, torch.ones_like(self.concentration), self.concentration)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero, safe = self._safe()
        y = 1 / safe + torch.ones_like(z)
        where_nonzero = torch.where(y == 0, y, y * torch.log1p(safe * z))
        log_scale = math.log(self.scale) if isinstance(self.scale, Real) else self.scale.log()
        return -log_scale - torch.where(eq_zero, z, where_nonzero)

    def log_survival_function(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero, safe = self._safe()
        return torch.where(eq_zero, -z, -torch.log1p(safe * z) / safe)

    def log_cdf(self, value):
        return torch.log1p(-torch.exp(self.log_survival_function(value)))

    def cdf(self, value):
        return torch.exp(self.log_cdf(value))

    def icdf(self, value):
        eq_zero, safe = self._safe()
        logu = torch.log1p(-value)
        where_nonzero = self.loc + self.scale / safe * torch.expm1(-safe * logu)
        return torch.where(eq_zero, self.loc - self.scale * logu, where_nonzero)

    def _z(self, x):
        return (x - self.loc) / self.scale

    @property
    def mean(self):
        valid = self.concentration < 1
        safe = torch.where(valid, self.concentration, torch.full_like(self.concentration, 0.5))
        result = self.loc + self.scale / (1 - safe)
        return torch.where(valid, result, torch.full_like(result, float("nan")))

    @property
    def variance(self):
        valid = self.concentration < 0.5
        safe = torch.where(valid, self.concentration, torch.full_like(self.concentration, 0.25))
        result = self.scale ** 2 / ((1 - safe) ** 2 * (1 - 2 * safe))
        return torch.where(valid, result, torch.full_like(result, float("nan")))

    def entropy(self):
        return torch.broadcast_to(torch.log(self.scale) + self.concentration + 1, self._batch_shape)

    @property
    def mode(self):
        return self.loc

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        lower = self.loc
        upper = torch.where(self.concentration < 0, lower - self.scale / self.concentration,
                            torch.full_like(lower, math.inf))
        return constraints.interval(lower, upper)

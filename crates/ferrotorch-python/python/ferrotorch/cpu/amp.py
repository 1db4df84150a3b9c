"""``torch.cpu.amp``: ``autocast`` fixed to the CPU."""

from ..amp.autocast_mode import autocast as _autocast
from ..amp.grad_scaler import GradScaler as _GradScaler

__all__ = ["autocast", "GradScaler"]


class autocast(_autocast):
    """``torch.autocast("cpu", ...)``."""

    def __init__(self, enabled=True, dtype=None, cache_enabled=True):
        import ferrotorch as ft

        super().__init__("cpu", dtype=ft.bfloat16 if dtype is None else dtype, enabled=enabled,
                         cache_enabled=cache_enabled)


class GradScaler(_GradScaler):
    """``torch.amp.GradScaler("cpu", ...)``."""

    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                 enabled=True):
        super().__init__("cpu", init_scale, growth_factor, backoff_factor, growth_interval, enabled)

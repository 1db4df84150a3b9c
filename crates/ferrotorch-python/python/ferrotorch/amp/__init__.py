"""``torch.amp``: automatic mixed precision — ``autocast`` regions (CPU:
bfloat16/float16 through the core's autocast key) and ``GradScaler``."""

from .autocast_mode import autocast, custom_bwd, custom_fwd, is_autocast_available
from .grad_scaler import GradScaler

__all__ = ["autocast", "custom_bwd", "custom_fwd", "is_autocast_available", "GradScaler"]

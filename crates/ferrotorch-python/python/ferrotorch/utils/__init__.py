"""``ferrotorch.utils``."""

from . import checkpoint, data, dlpack, hooks  # noqa: F401

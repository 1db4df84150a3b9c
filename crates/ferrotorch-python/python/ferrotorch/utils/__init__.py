"""``ferrotorch.utils``."""

from . import data, dlpack  # noqa: F401

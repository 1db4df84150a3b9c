"""``torch.fx.passes``: analyses over graphs (``shape_prop``)."""

from . import shape_prop  # noqa: F401

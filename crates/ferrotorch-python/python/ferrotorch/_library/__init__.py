"""``torch._library``: the fake-class registry of custom classes."""

from .fake_class_registry import register_fake_class  # noqa: F401
from . import fake_class_registry  # noqa: F401

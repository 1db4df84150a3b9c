"""``torch.compiler``: ``reset()`` forgets every compiled graph."""

from ._compile import reset  # noqa: F401
from ._compile import compile as _compile


def is_compiling():
    """Whether a function is being traced for ``compile`` right now."""
    from . import jit
    return jit.is_tracing()


__all__ = ["reset", "is_compiling"]
del _compile

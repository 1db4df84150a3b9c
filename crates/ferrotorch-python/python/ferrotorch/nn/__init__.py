"""``ferrotorch.nn``: modules, parameters, ``functional`` and ``init``."""

from .parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter
from .modules import *  # noqa: F401,F403
from .modules import Module
from . import functional, init, utils  # noqa: F401
from . import parallel  # noqa: F401
from .parallel import DataParallel  # noqa: F401


def factory_kwargs(kwargs):
    """The ``device``/``dtype``/``memory_format`` entries of ``kwargs`` (and
    a ``factory_kwargs`` dict inside it) merged, as torch.nn.factory_kwargs."""
    if kwargs is None:
        return {}
    simple = {"device", "dtype", "memory_format"}
    expected = simple | {"factory_kwargs"}
    if not kwargs.keys() <= expected:
        raise TypeError(f"unexpected kwargs {kwargs.keys() - expected}")
    r = dict(kwargs.get("factory_kwargs", {}))
    for k in simple:
        if k in kwargs:
            if k in r:
                raise TypeError(f"{k} specified twice, in **kwargs and in factory_kwargs")
            r[k] = kwargs[k]
    return r
from . import attention  # noqa: E402,F401

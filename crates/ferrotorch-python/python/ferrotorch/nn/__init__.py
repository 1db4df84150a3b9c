"""``ferrotorch.nn``: modules, parameters, ``functional`` and ``init``."""

from .parameter import Buffer, Parameter
from .modules import *  # noqa: F401,F403
from .modules import Module
from . import functional, init, utils  # noqa: F401
from . import parallel  # noqa: F401
from .parallel import DataParallel  # noqa: F401

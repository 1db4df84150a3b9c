"""``ferrotorch.multiprocessing``: a drop-in for ``torch.multiprocessing``.

Python's ``multiprocessing`` (``Process``, ``Queue``, ``SimpleQueue``,
``Pipe``, ``Pool``, ``get_context("spawn" | "fork" | "forkserver")``, ...)
with ferrotorch's reductions registered, so that a tensor, a Parameter, a
storage or a module's state sent to another process travels as a handle
to shared memory, never as its bytes (``reductions``). Shared memory is an
anonymous memory file: nothing is created in ``/dev/shm``, and the kernel
frees it when the last process using it exits, however it exits.

``get_context`` and ``Process`` are Python's, except that a daemonic
process dies with its parent even when the parent is killed (Note
[Daemons die with their parent] in ``_context.py``).

Importing this module registers the reductions and, in the first process
that imports it, starts the descriptor keeper its children use (Note
[Descriptor keeper]); import it (as torch users import
``torch.multiprocessing``) before starting processes that exchange
tensors. Tensors pickled without it are copied as bytes.

The one sharing strategy is ``"file_descriptor"``: PyTorch's other one,
``"file_system"``, names files in ``/dev/shm`` that leak when a process is
killed, which is what this design avoids.
"""

import multiprocessing
from multiprocessing import *  # noqa: F401,F403 (torch re-exports them too)

from . import _keeper
from ._context import Process, get_context  # noqa: F401 (daemons die with their parent)
from .reductions import init_reductions
from .spawn import (SpawnContext, ProcessContext, ProcessExitedException, ProcessRaisedException,  # noqa: F401
                    spawn, start_processes)

__all__ = ["set_sharing_strategy", "get_sharing_strategy", "get_all_sharing_strategies",
           "spawn", "start_processes", "ProcessContext", "ProcessRaisedException",
           "ProcessExitedException"] + list(multiprocessing.__all__)

_sharing_strategy = "file_descriptor"
_all_sharing_strategies = {"file_descriptor"}


def set_sharing_strategy(new_strategy):
    """Set the strategy for sharing CPU tensors (only ``"file_descriptor"``)."""
    if new_strategy not in _all_sharing_strategies:
        raise ValueError(
            f"ferrotorch.multiprocessing: unknown sharing strategy {new_strategy!r}; the only one is "
            "'file_descriptor' (anonymous memory files that cannot leak; torch's 'file_system' "
            "names files in /dev/shm)")
    global _sharing_strategy
    _sharing_strategy = new_strategy


def get_sharing_strategy():
    """The current strategy for sharing CPU tensors."""
    return _sharing_strategy


def get_all_sharing_strategies():
    """The strategies this system supports."""
    return set(_all_sharing_strategies)


init_reductions()
_keeper.ensure_started()

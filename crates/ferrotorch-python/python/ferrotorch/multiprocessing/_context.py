"""Process contexts whose daemonic processes die with their parent.

Note [Daemons die with their parent]
Python ends a daemonic process when its parent exits normally, but a
parent killed by SIGKILL (or the OOM killer) leaves its daemons running:
blocked in ``Queue.get`` forever, and holding every shared memory file
they mapped. Here a daemonic process started through
``ferrotorch.multiprocessing`` (and every DataLoader worker) runs a
watchdog thread that checks every ``WATCHDOG_INTERVAL`` seconds whether
its parent is still its parent, and exits at once when it is not; the
kernel then frees the shared memory with its last user. (Linux's
``PR_SET_PDEATHSIG`` fires when the parent *thread* that started the
child ends, not the process, so a DataLoader iterated from a short-lived
thread would lose its workers: it is not used.) Non-daemonic processes
keep Python's semantics: they may outlive their parent.
"""

import multiprocessing
import multiprocessing.context as _mpc
import os
import threading
import time

WATCHDOG_INTERVAL = 0.2


def _watch_parent(creator):
    ppid = os.getppid()
    if creator is not None and ppid != creator:  # it died before we started
        os._exit(1)

    def watch():
        while True:
            time.sleep(WATCHDOG_INTERVAL)
            if os.getppid() != ppid:
                os._exit(1)

    threading.Thread(target=watch, name="ferrotorch parent watchdog", daemon=True).start()


class _DiesWithParent:
    _via_server = False  # forkserver: the parent is the server, not the creator

    def _bootstrap(self, *args, **kwargs):
        if self.daemon:
            _watch_parent(None if self._via_server else self._parent_pid)
        return super()._bootstrap(*args, **kwargs)


class ForkProcess(_DiesWithParent, _mpc.ForkProcess):
    pass


class SpawnProcess(_DiesWithParent, _mpc.SpawnProcess):
    pass


class ForkServerProcess(_DiesWithParent, _mpc.ForkServerProcess):
    _via_server = True


class ForkContext(_mpc.ForkContext):
    Process = ForkProcess


class SpawnContext(_mpc.SpawnContext):
    Process = SpawnProcess


class ForkServerContext(_mpc.ForkServerContext):
    Process = ForkServerProcess


_contexts = {"fork": ForkContext(), "spawn": SpawnContext(), "forkserver": ForkServerContext()}


def get_context(method=None):
    """``multiprocessing.get_context`` whose daemonic processes die with
    their parent (Note [Daemons die with their parent])."""
    if method is None:
        method = multiprocessing.get_start_method()
    try:
        return _contexts[method]
    except KeyError:
        raise ValueError(f"cannot find context for {method!r}") from None


class Process(_DiesWithParent, multiprocessing.Process):
    """``multiprocessing.Process`` (the default start method) whose
    daemonic instances die with their parent."""

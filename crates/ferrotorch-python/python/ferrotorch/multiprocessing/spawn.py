"""``spawn`` / ``start_processes``: run ``fn(i, *args)`` in ``nprocs``
processes and re-raise a failure of any of them in the parent, as
``torch.multiprocessing.spawn`` does."""

import multiprocessing
import multiprocessing.connection
import signal
import sys
import traceback


class ProcessException(Exception):
    __slots__ = ["error_index", "error_pid"]

    def __init__(self, msg, error_index, pid):
        super().__init__(msg)
        self.msg = msg
        self.error_index = error_index
        self.pid = pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid)


class ProcessRaisedException(ProcessException):
    """A process started by ``spawn`` raised an exception."""


class ProcessExitedException(ProcessException):
    """A process started by ``spawn`` exited with a nonzero code or a signal."""

    __slots__ = ["exit_code"]

    def __init__(self, msg, error_index, error_pid, exit_code, signal_name=None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code = exit_code
        self.signal_name = signal_name

    def __reduce__(self):
        return (type(self), (self.msg, self.error_index, self.pid, self.exit_code,
                             self.signal_name))


def _wrap(fn, i, args, error_queue):
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass
    except Exception:
        error_queue.put(traceback.format_exc())
        sys.exit(1)


class ProcessContext:
    """The processes ``start_processes`` started; ``join()`` waits for them."""

    def __init__(self, processes, error_queues):
        self.error_queues = error_queues
        self.processes = processes
        self.sentinels = {p.sentinel: i for i, p in enumerate(processes)}

    def pids(self):
        return [int(p.pid) for p in self.processes]

    def join(self, timeout=None):
        """Wait for one process to end; True once all ended successfully.
        A failure terminates the others and raises."""
        if len(self.sentinels) == 0:
            return True
        ready = multiprocessing.connection.wait(self.sentinels.keys(), timeout=timeout)
        error_index = None
        for sentinel in ready:
            index = self.sentinels.pop(sentinel)
            p = self.processes[index]
            p.join()
            if p.exitcode != 0:
                error_index = index
                break
        if error_index is None:
            return len(self.sentinels) == 0
        for p in self.processes:
            if p.is_alive():
                p.terminate()
            p.join()
        failed = self.processes[error_index]
        if self.error_queues[error_index].empty():
            code = failed.exitcode
            if code < 0:
                name = signal.Signals(-code).name
                raise ProcessExitedException(
                    f"process {error_index} terminated with signal {name}",
                    error_index, failed.pid, code, name)
            raise ProcessExitedException(
                f"process {error_index} terminated with exit code {code}",
                error_index, failed.pid, code)
        original = self.error_queues[error_index].get()
        msg = f"\n\n-- Process {error_index} terminated with the following error:\n{original}"
        raise ProcessRaisedException(msg, error_index, failed.pid)


def start_processes(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Start ``nprocs`` processes running ``fn(i, *args)``; with ``join``,
    wait for them, else return their ``ProcessContext``."""
    ctx = multiprocessing.get_context(start_method)
    error_queues, processes = [], []
    for i in range(nprocs):
        q = ctx.SimpleQueue()
        p = ctx.Process(target=_wrap, args=(fn, i, args, q), daemon=daemon)
        p.start()
        error_queues.append(q)
        processes.append(p)
    context = ProcessContext(processes, error_queues)
    if not join:
        return context
    while not context.join():
        pass


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """``torch.multiprocessing.spawn``: ``start_processes`` with the spawn
    start method."""
    return start_processes(fn, args, nprocs, join, daemon, start_method=start_method)


class SpawnContext(ProcessContext):
    """The deprecated name of ``ProcessContext`` (torch warns)."""

    def __init__(self, processes, error_files):
        import warnings

        warnings.warn("SpawnContext is renamed to ProcessContext since 1.4 release.", stacklevel=2)
        super().__init__(processes, error_files)

"""The iterator of a ``DataLoader`` with ``num_workers > 0``: worker
processes (torch's ``_MultiProcessingDataLoaderIter``).

Each worker has a socket pair with the main process (``Pipe()``), which
carries index lists one way and batches the other: each end has one
reader and one writer, so there is no lock, no feeder thread and no named
semaphore in /dev/shm (Python's ``Queue`` makes several per loader, and a
process killed while it creates one leaves the name behind). The
iterator keeps ``prefetch_factor`` batches per worker in flight, hands
index lists out round robin, and returns batches in sampler order.
Batches arrive as shared memory (``ferrotorch.multiprocessing``): no bytes
are copied between processes.

Failures: an exception in a worker is raised again here with the worker's
traceback (``ExceptionWrapper``); a worker that dies (a signal, an
``os._exit``) wakes the iterator at once (its process sentinel is waited
on with the sockets) and is raised as torch's ``RuntimeError`` naming its
pid and signal, never a hang; ``timeout`` bounds the wait for one batch.
Shutting down (the epoch's end, ``del``, ``break`` out of a loop, an
error) sends each worker its end marker, closes the sockets, joins the
workers for ``_SHUTDOWN_TIMEOUT`` seconds, and terminates any still
alive. With ``persistent_workers`` the workers stay
for the next epoch; results of an abandoned epoch are recognised by their
epoch number and dropped.
"""

import itertools
import multiprocessing.connection
import signal
import time

from ._fetch import _DatasetKind
from ._worker import ExceptionWrapper, _IterableDatasetStopIteration, _worker_loop

_SHUTDOWN_TIMEOUT = 5.0  # torch's MP_STATUS_CHECK_INTERVAL for joining workers


def _context(loader):
    # ferrotorch.multiprocessing's contexts: the daemonic workers die with
    # this process (Note [Daemons die with their parent])
    from ...multiprocessing import get_context

    ctx = loader.multiprocessing_context
    if ctx is None or isinstance(ctx, str):
        return get_context(ctx)
    return ctx


def _signal_name(code):
    try:
        return signal.strsignal(-code) or f"signal {-code}"
    except (ValueError, AttributeError):
        return f"signal {-code}"


class _ProcessIter:
    """Iterate a DataLoader's batches from worker processes."""

    def __init__(self, loader, base_seed):
        # registers the reductions and starts the descriptor keeper before
        # any worker exists (Note [Descriptor keeper])
        import ferrotorch.multiprocessing  # noqa: F401

        self._closed = True  # until the workers exist (for __del__)
        self._loader = loader
        ctx = _context(loader)
        n = loader.num_workers
        self._conns = []
        self._workers = []
        for wid in range(n):
            ours, theirs = ctx.Pipe(duplex=True)
            w = ctx.Process(
                target=_worker_loop,
                args=(theirs, loader.dataset, loader._dataset_kind, loader._auto_collation,
                      loader.collate_fn, loader.drop_last, base_seed + wid, loader.worker_init_fn, wid, n),
                daemon=True)
            w.start()
            theirs.close()
            self._conns.append(ours)
            self._workers.append(w)
        self._closed = False
        self._epoch = 0
        self._reset()

    def _reset(self):
        loader = self._loader
        self._epoch += 1
        self._source = iter(loader._index_sampler)
        self._sent = self._next = self._yielded = 0
        self._results = {}
        self._task_worker = {}
        self._active = [True] * len(self._workers)
        self._exhausted = False
        self._turn = itertools.cycle(range(len(self._workers)))
        for _ in range(len(self._workers) * loader.prefetch_factor):
            self._send()

    def _send(self):
        if self._exhausted:
            return
        try:
            indices = next(self._source)
        except StopIteration:
            self._exhausted = True
            return
        for _ in range(len(self._workers)):  # the next worker whose stream has not ended
            i = next(self._turn)
            if self._active[i]:
                break
        else:
            return
        try:
            self._conns[i].send((self._epoch, self._sent, indices))
        except OSError:
            # the worker died (EPIPE or ECONNRESET before it is reaped):
            # the error names its signal
            self._workers[i].join(5.0)
            self._check_workers()
            raise
        self._task_worker[self._sent] = i
        self._sent += 1

    def __iter__(self):
        return self

    def __len__(self):
        return len(self._loader)

    def _check_workers(self):
        dead = [w for w in self._workers if not w.is_alive()]
        if not dead:
            return
        self._shutdown()
        for w in dead:
            if w.exitcode is not None and w.exitcode < 0:
                raise RuntimeError(
                    f"DataLoader worker (pid {w.pid}) is killed by signal: "
                    f"{_signal_name(w.exitcode)}. ")
        pids = ", ".join(str(w.pid) for w in dead)
        raise RuntimeError(f"DataLoader worker (pid(s) {pids}) exited unexpectedly")

    def _get(self):
        """The next message of any worker (the order is restored by the
        caller); a dead worker or the timeout raise."""
        timeout = self._loader.timeout or None
        deadline = None if timeout is None else time.monotonic() + timeout
        sentinels = [w.sentinel for w in self._workers]
        while True:
            for c, w in zip(self._conns, self._workers):
                if c.poll():
                    try:
                        return c.recv()
                    except (EOFError, OSError):
                        # the socket closes (EOF, or ECONNRESET when the
                        # worker died with unread data) before the dead
                        # worker is reaped: wait for it, so the error
                        # names the signal
                        w.join(5.0)
                        self._check_workers()
                        raise
            wait = None if deadline is None else deadline - time.monotonic()
            if wait is not None and wait <= 0:
                self._shutdown()
                raise RuntimeError(f"DataLoader timed out after {timeout} seconds")
            ready = multiprocessing.connection.wait(self._conns + sentinels, wait)
            if any(r in sentinels for r in ready) and not any(c.poll() for c in self._conns):
                self._check_workers()

    def __next__(self):
        if self._closed:
            raise StopIteration
        while True:
            # jobs given to a worker whose iterable dataset has ended are
            # never answered: skip them
            while (self._next < self._sent and self._next not in self._results
                   and not self._active[self._task_worker[self._next]]):
                del self._task_worker[self._next]
                self._next += 1
            if self._next == self._sent:
                if not self._loader.persistent_workers:
                    self._shutdown()
                raise StopIteration
            if self._next in self._results:
                break
            epoch, idx, data = self._get()
            if epoch != self._epoch:
                continue
            if isinstance(data, _IterableDatasetStopIteration):
                self._active[data.worker_id] = False
                self._send()
                continue
            self._results[idx] = data
        data = self._results.pop(self._next)
        self._task_worker.pop(self._next, None)
        self._next += 1
        self._send()
        if isinstance(data, ExceptionWrapper):
            self._shutdown()
            data.reraise()
        if self._loader._dataset_kind == _DatasetKind.Iterable:
            self._yielded += 1
            self._loader._check_reported_length(self._yielded)
        return data

    def _shutdown(self):
        if self._closed:
            return
        self._closed = True
        for c in self._conns:
            try:
                c.send(None)
            except (OSError, ValueError):
                pass
        deadline = time.monotonic() + _SHUTDOWN_TIMEOUT
        for w in self._workers:
            w.join(max(0.0, deadline - time.monotonic()))
        for w in self._workers:
            if w.is_alive():
                w.terminate()
                w.join(1.0)
            if w.is_alive():
                w.kill()
                w.join()
        for c in self._conns:
            c.close()
        self._results = {}
        if self._loader._iterator is self:
            self._loader._iterator = None

    def __del__(self):
        try:
            self._shutdown()
        except Exception:
            pass

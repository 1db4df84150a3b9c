"""What runs inside a DataLoader worker process (torch's
``utils/data/_utils/worker.py``): the loop that turns index lists into
batches, ``get_worker_info``, and how a worker's exception travels.

A worker collates tensors straight into shared memory (``default_collate``
asks ``_C._stack_shared`` when it runs here), so a batch reaches the main
process as a descriptor (``ferrotorch.multiprocessing``), never as bytes.
A worker dies with its parent (a daemonic process of
``ferrotorch.multiprocessing``: Note [Daemons die with their parent]), so
a killed training script leaves no worker behind, and with it no shared
memory: the kernel frees anonymous memory files with their last user.
"""

import os
import random
import sys
import traceback

MP_STATUS_CHECK_INTERVAL = 5.0


class WorkerInfo:
    """What ``get_worker_info()`` returns inside a worker."""

    def __init__(self, id, num_workers, seed, dataset):
        self.id, self.num_workers, self.seed, self.dataset = id, num_workers, seed, dataset

    def __repr__(self):
        return f"WorkerInfo(id={self.id}, num_workers={self.num_workers})"


_worker_info = None


def get_worker_info():
    """The current worker's ``WorkerInfo``, or None in the main process."""
    return _worker_info


class _KeyErrorMessage(str):
    """Shows a KeyError's message with its newlines (torch's KeyErrorMessage)."""

    def __repr__(self):
        return self


class ExceptionWrapper:
    """An exception with its traceback as text, picklable across processes."""

    def __init__(self, exc_info=None, where="in background"):
        if exc_info is None:
            exc_info = sys.exc_info()
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self):
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = _KeyErrorMessage(msg)
        try:
            exception = self.exc_type(msg)
        except Exception:
            raise RuntimeError(msg) from None
        raise exception


class _IterableDatasetStopIteration:
    """A worker's iterable dataset is exhausted for this epoch."""

    def __init__(self, worker_id):
        self.worker_id = worker_id


def _worker_loop(conn, dataset, kind, auto_collation, collate_fn, drop_last, seed, init_fn, worker_id,
                 num_workers):
    """Serve jobs from ``conn`` (one end of a socket pair: the only reader
    and writer of this end, so no lock and no named semaphore is needed)
    until the end marker or the parent goes away."""
    parent_pid = os.getppid()
    try:
        _serve(conn, dataset, kind, auto_collation, collate_fn, drop_last, seed, init_fn, worker_id,
               num_workers, parent_pid)
    except (KeyboardInterrupt, EOFError, BrokenPipeError, ConnectionResetError):
        pass


def _serve(conn, dataset, kind, auto_collation, collate_fn, drop_last, seed, init_fn, worker_id,
           num_workers, parent_pid):
    """Answer each ``(epoch, idx, index)`` with ``(epoch, idx, data)``. An
    iterable dataset is iterated afresh each epoch; at its end the worker
    answers once with ``_IterableDatasetStopIteration`` and leaves the
    epoch's later jobs unanswered (the main process skips them), as
    torch's workers do."""
    global _worker_info
    import ferrotorch
    from . import collate
    from ._fetch import _DatasetKind

    # one intra-op thread per worker, as torch's workers run
    ferrotorch.set_num_threads(1)
    random.seed(seed)
    ferrotorch.manual_seed(seed)
    collate._in_worker = True
    _worker_info = WorkerInfo(worker_id, num_workers, seed, dataset)
    init_exception = None
    fetcher = fetch_epoch = None
    iteration_end = False
    try:
        if init_fn is not None:
            init_fn(worker_id)
    except Exception:
        init_exception = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
    while True:
        if not conn.poll(MP_STATUS_CHECK_INTERVAL):
            if os.getppid() != parent_pid:
                return
            continue
        r = conn.recv()
        if r is None:
            return
        epoch, idx, index = r
        if init_exception is not None:
            data, init_exception = init_exception, None
        else:
            try:
                if epoch != fetch_epoch:
                    fetch_epoch, iteration_end = epoch, False
                    fetcher = _DatasetKind.create_fetcher(kind, dataset, auto_collation, collate_fn, drop_last)
                if iteration_end:
                    continue
                data = fetcher.fetch(index)
            except StopIteration:
                if kind != _DatasetKind.Iterable:
                    data = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
                else:
                    data, iteration_end = _IterableDatasetStopIteration(worker_id), True
            except Exception:
                data = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
        conn.send((epoch, idx, data))
        del data, r

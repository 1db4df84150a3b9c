"""``DataLoader``: batches from a dataset through a sampler, stacked by
``default_collate``. With ``num_workers > 0`` batches are loaded by worker
threads (torch uses processes; native kernels release the GIL, and a
thread shares the dataset without pickling it), ``prefetch_factor``
batches per worker ahead, delivered in sampler order.

Workers are daemon threads owned by the iterator: dropping the iterator
(``del it``, ``break`` out of a loop) stops them and returns within
``_SHUTDOWN_TIMEOUT`` seconds even when a worker is stuck in the dataset,
as torch's shutdown does, and never blocks interpreter exit. An exception
raised in a worker (``__getitem__``, ``collate_fn``, ``worker_init_fn``)
is raised again in the main thread as itself, with its traceback."""

import collections
import collections.abc
import queue
import threading
import time


class WorkerInfo:
    """What ``get_worker_info()`` returns inside a worker."""

    def __init__(self, id, num_workers, seed, dataset):
        self.id, self.num_workers, self.seed, self.dataset = id, num_workers, seed, dataset

    def __repr__(self):
        return f"WorkerInfo(id={self.id}, num_workers={self.num_workers})"


_worker = threading.local()


def get_worker_info():
    """The current worker's ``WorkerInfo``, or None in the main thread."""
    return getattr(_worker, "info", None)

from ... import _C
from .sampler import BatchSampler, RandomSampler, SequentialSampler


def default_collate(batch):
    """Stack tensors, turn numbers into tensors, recurse into tuples,
    lists and dicts, as torch's ``default_collate``."""
    import ferrotorch

    elem = batch[0]
    if isinstance(elem, _C.Tensor):
        return ferrotorch.stack(list(batch), 0)
    if hasattr(elem, "__array_interface__"):
        return ferrotorch.stack([ferrotorch.as_tensor(b) for b in batch], 0)
    if isinstance(elem, bool):
        return _C.tensor(list(batch))
    if isinstance(elem, float):
        return _C.tensor(list(batch), dtype=_C.float64)
    if isinstance(elem, int):
        return _C.tensor(list(batch))
    if isinstance(elem, (str, bytes)):
        return list(batch)
    if isinstance(elem, collections.abc.Mapping):
        return {k: default_collate([d[k] for d in batch]) for k in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return type(elem)(*(default_collate(list(s)) for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        if any(len(e) != len(elem) for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        out = [default_collate(list(s)) for s in zip(*batch)]
        return tuple(out) if isinstance(elem, tuple) else out
    raise TypeError(f"default_collate: batch must contain tensors, numpy arrays, numbers, dicts "
                    f"or lists; found {type(elem)}")


class DataLoader:
    """Iterate over ``dataset`` in batches."""

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor=None, persistent_workers=False, pin_memory_device="",
                 in_order=True):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable multiprocessing.")
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last")
            batch_size = None
            drop_last = False
        self.dataset = dataset
        self.num_workers = num_workers
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.generator = generator
        if sampler is None:
            sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing."
                             "let num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor to None.")
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.collate_fn = collate_fn or default_collate
        self.worker_init_fn = worker_init_fn
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        self.timeout = timeout
        self.prefetch_factor = 2 if prefetch_factor is None and num_workers > 0 else prefetch_factor

    def _fetch(self, indices):
        if self.batch_sampler is None:
            return self.dataset[indices] if self.collate_fn is default_collate \
                else self.collate_fn(self.dataset[indices])
        return self.collate_fn([self.dataset[i] for i in indices])

    def __iter__(self):
        # torch's iterator draws a base seed (for workers) first, even
        # without workers: the sampler's draws come after it
        base_seed = _C._random_seed(self.generator)
        if self.num_workers > 0:
            return _WorkerIter(self, base_seed)
        return self._single(base_seed)

    def _single(self, base_seed):
        if self.batch_sampler is None:
            for i in self.sampler:
                yield self.collate_fn(self.dataset[i]) if self.collate_fn is not default_collate \
                    else self.dataset[i]
            return
        for indices in self.batch_sampler:
            yield self.collate_fn([self.dataset[i] for i in indices])

    def __len__(self):
        if self.batch_sampler is not None:
            return len(self.batch_sampler)
        return len(self.sampler)


_SHUTDOWN_TIMEOUT = 5.0  # torch's MP_STATUS_CHECK_INTERVAL for joining workers


class _Failure:
    """An exception raised in a worker, carried to the main thread."""

    def __init__(self, exc):
        self.exc = exc


class _Shared:
    """What the worker threads share with their iterator. The threads hold
    this, never the iterator, so dropping the iterator runs its
    ``__del__`` (which stops them) even while they are alive."""

    def __init__(self, loader):
        self.loader = loader
        self.tasks = queue.SimpleQueue()
        self.results = {}
        self.cv = threading.Condition()
        self.init_error = None


def _work(sh, wid, n, seed):
    loader = sh.loader
    _worker.info = WorkerInfo(wid, n, seed, loader.dataset)
    if loader.worker_init_fn is not None:
        try:
            loader.worker_init_fn(wid)
        except BaseException as e:  # re-raised in the main thread
            with sh.cv:
                sh.init_error = sh.init_error or e
                sh.cv.notify_all()
            return
    while True:
        task = sh.tasks.get()
        if task is None:
            return
        i, indices = task
        try:
            r = loader._fetch(indices)
        except BaseException as e:  # re-raised in the main thread
            r = _Failure(e)
        with sh.cv:
            sh.results[i] = r
            sh.cv.notify_all()


class _WorkerIter:
    """The iterator of a ``DataLoader`` with ``num_workers > 0``."""

    def __init__(self, loader, base_seed):
        self._closed = True  # until the workers exist (for __del__)
        self._loader = loader
        self._source = iter(loader.batch_sampler if loader.batch_sampler is not None
                            else loader.sampler)
        self._sh = _Shared(loader)
        self._sent = self._next = 0
        self._exhausted = False
        n = loader.num_workers
        self._threads = [threading.Thread(target=_work, args=(self._sh, wid, n, base_seed + wid),
                                          name=f"DataLoader worker {wid}", daemon=True)
                         for wid in range(n)]
        for t in self._threads:
            t.start()
        self._closed = False
        for _ in range(n * loader.prefetch_factor):
            self._send()

    def _send(self):
        if self._exhausted:
            return
        try:
            indices = next(self._source)
        except StopIteration:
            self._exhausted = True
            return
        self._sh.tasks.put((self._sent, indices))
        self._sent += 1

    def __iter__(self):
        return self

    def __next__(self):
        if self._closed or self._next == self._sent:
            self._shutdown()
            raise StopIteration
        sh = self._sh
        timeout = self._loader.timeout or None
        deadline = None if timeout is None else time.monotonic() + timeout
        with sh.cv:
            while self._next not in sh.results and sh.init_error is None:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    break
                sh.cv.wait(left)
            r = sh.results.pop(self._next, None)
            init_error = sh.init_error
        if init_error is not None and r is None:
            self._shutdown()
            raise init_error
        if r is None:
            self._shutdown()
            raise RuntimeError(f"DataLoader timed out after {timeout} seconds")
        self._next += 1
        self._send()
        if isinstance(r, _Failure):
            self._shutdown()
            raise r.exc
        return r

    def __len__(self):
        return len(self._loader)

    def _shutdown(self):
        if self._closed:
            return
        self._closed = True
        for _ in self._threads:
            self._sh.tasks.put(None)
        deadline = time.monotonic() + _SHUTDOWN_TIMEOUT
        for t in self._threads:
            t.join(max(0.0, deadline - time.monotonic()))

    def __del__(self):
        self._shutdown()

"""``DataLoader``: batches from a dataset through a sampler, stacked by
``default_collate``. With ``num_workers > 0`` batches are loaded by worker
threads (torch uses processes; native kernels release the GIL, and a
thread shares the dataset without pickling it), ``prefetch_factor``
batches per worker ahead, delivered in sampler order."""

import collections
import collections.abc
import threading
from concurrent.futures import ThreadPoolExecutor


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
        self.prefetch_factor = 2 if prefetch_factor is None and num_workers > 0 else prefetch_factor

    def _fetch(self, indices):
        if self.batch_sampler is None:
            return self.dataset[indices] if self.collate_fn is default_collate \
                else self.collate_fn(self.dataset[indices])
        return self.collate_fn([self.dataset[i] for i in indices])

    def _threaded(self, base_seed):
        n = self.num_workers
        ids = iter(range(n))
        lock = threading.Lock()

        def init():
            with lock:
                wid = next(ids)
            _worker.info = WorkerInfo(wid, n, base_seed + wid, self.dataset)
            if self.worker_init_fn is not None:
                self.worker_init_fn(wid)

        source = iter(self.batch_sampler if self.batch_sampler is not None else self.sampler)
        with ThreadPoolExecutor(max_workers=n, initializer=init) as pool:
            pending = collections.deque()
            for indices in source:
                pending.append(pool.submit(self._fetch, indices))
                if len(pending) >= n * self.prefetch_factor:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()

    def __iter__(self):
        # torch's iterator draws a base seed (for workers) first, even
        # without workers: the sampler's draws come after it
        base_seed = _C._random_seed(self.generator)
        if self.num_workers > 0:
            yield from self._threaded(base_seed)
            return
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

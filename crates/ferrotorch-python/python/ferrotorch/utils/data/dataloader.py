"""``DataLoader``: batches from a dataset through a sampler, stacked by
``default_collate``. With ``num_workers > 0`` batches are loaded by
worker processes, as torch's are (``_process_iter``, ``_worker``), and
arrive through shared memory; ``prefetch_factor`` batches per worker are
in flight, delivered in sampler order."""

import collections
import collections.abc
import warnings

from ._worker import WorkerInfo, get_worker_info  # noqa: F401

_in_worker = False  # set in worker processes: collate into shared memory

from ... import _C
from .sampler import BatchSampler, RandomSampler, SequentialSampler


def default_collate(batch):
    """Stack tensors, turn numbers into tensors, recurse into tuples,
    lists and dicts, as torch's ``default_collate``."""
    import ferrotorch

    elem = batch[0]
    if isinstance(elem, _C.Tensor):
        if _in_worker:
            # straight into shared memory: the batch then crosses to the
            # main process as a descriptor, as torch's workers do
            return _C._stack_shared(list(batch))
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
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        self.persistent_workers = persistent_workers
        self.multiprocessing_context = multiprocessing_context
        self.pin_memory = pin_memory
        if pin_memory:
            warnings.warn("'pin_memory' argument is set as true but no accelerator is found, "
                          "then device pinned memory won't be used.")
        self._iterator = None

    def __iter__(self):
        # torch's iterator draws a base seed (for workers) first, even
        # without workers: the sampler's draws come after it
        base_seed = _C._random_seed(self.generator)
        if self.num_workers > 0:
            from ._process_iter import _ProcessIter

            if self.persistent_workers:
                if self._iterator is None or self._iterator._closed:
                    self._iterator = _ProcessIter(self, base_seed)
                else:
                    self._iterator._reset()
                return self._iterator
            return _ProcessIter(self, base_seed)
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

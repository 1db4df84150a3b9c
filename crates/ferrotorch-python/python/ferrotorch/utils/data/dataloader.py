"""``DataLoader``: batches from a dataset through a sampler, stacked by
``default_collate`` (or samples converted by ``default_convert`` when
there is no batch size). An ``IterableDataset`` is a stream: its sampler
is infinite and the stream's end ends the epoch. With ``num_workers > 0``
batches are loaded by worker processes, as torch's are (``_process_iter``,
``_worker``), and arrive through shared memory; ``prefetch_factor``
batches per worker are in flight, delivered in sampler order."""

import warnings

from ... import _C
from ._fetch import _DatasetKind, _InfiniteConstantSampler
from ._worker import WorkerInfo, get_worker_info  # noqa: F401
from .collate import default_collate, default_convert
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, SequentialSampler


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
        if isinstance(dataset, IterableDataset):
            self._dataset_kind = _DatasetKind.Iterable
            if shuffle not in (False, None):
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, "
                                 f"but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, "
                                 f"but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified batch_sampler option, "
                                 f"but got batch_sampler={batch_sampler}")
            sampler = _InfiniteConstantSampler()
        else:
            self._dataset_kind = _DatasetKind.Map
        self._IterableDataset_len_called = None
        if sampler is None:
            sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing."
                             "let num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor to None.")
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        if collate_fn is None:
            collate_fn = default_collate if batch_sampler is not None else default_convert
        self.collate_fn = collate_fn
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
        self.check_worker_number_rationality()

    def check_worker_number_rationality(self):
        """torch's warning when there are more workers than CPUs this
        process may run on."""
        if not self.num_workers:
            return
        import os

        cpuset = hasattr(os, "sched_getaffinity")
        suggest = len(os.sched_getaffinity(0)) if cpuset else os.cpu_count()
        if suggest is None or self.num_workers > suggest:
            if suggest is None:
                why = "DataLoader is not able to compute a suggested max number of worker in current system."
            else:
                why = (f"Our suggested max number of worker in current system is {suggest}"
                       f"{'' if cpuset else ' (`cpuset` is not taken into account)'}, which is smaller than what "
                       "this DataLoader is going to create.")
            warnings.warn(f"This DataLoader will create {self.num_workers} worker processes in total. {why} "
                          "Please be aware that excessive worker creation might get DataLoader running slow or even "
                          "freeze, lower the worker number to avoid potential slowness/freeze if necessary.",
                          stacklevel=2)

    def __iter__(self):
        # torch's iterator draws a base seed (for workers) first, even
        # without workers: the sampler's draws come after it
        base_seed = _C._random_seed(self.generator)
        if self.num_workers > 0:
            self.check_worker_number_rationality()
            from ._process_iter import _ProcessIter

            if self.persistent_workers:
                if self._iterator is None or self._iterator._closed:
                    self._iterator = _ProcessIter(self, base_seed)
                else:
                    self._iterator._reset()
                return self._iterator
            return _ProcessIter(self, base_seed)
        return self._single(base_seed)

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def _single(self, base_seed):
        fetcher = _DatasetKind.create_fetcher(self._dataset_kind, self.dataset, self._auto_collation,
                                              self.collate_fn, self.drop_last)
        yielded = 0
        for index in self._index_sampler:
            try:
                data = fetcher.fetch(index)
            except StopIteration:
                return
            yielded += 1
            self._check_reported_length(yielded)
            yield data

    def _check_reported_length(self, yielded):
        """torch's warning when an IterableDataset yields more batches than
        the length ``len(loader)`` reported."""
        reported = self._IterableDataset_len_called
        if self._dataset_kind == _DatasetKind.Iterable and reported is not None and yielded > reported:
            msg = (f"Length of IterableDataset {self.dataset} was reported to be {reported}(when accessing "
                   f"len(dataloader)), but {yielded} samples have been fetched. ")
            if self.num_workers > 0:
                msg += ("For multiprocessing data-loading, this could be caused by not properly configuring "
                        "the IterableDataset replica at each worker. Please see "
                        "https://pytorch.org/docs/stable/data.html#torch.utils.data.IterableDataset for "
                        "examples.")
            warnings.warn(msg)

    def __len__(self):
        if self._dataset_kind == _DatasetKind.Iterable:
            length = self._IterableDataset_len_called = len(self.dataset)
            if self.batch_size is not None:
                length = length // self.batch_size if self.drop_last else -(-length // self.batch_size)
            return length
        return len(self._index_sampler)

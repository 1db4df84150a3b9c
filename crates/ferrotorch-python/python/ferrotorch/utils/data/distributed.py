"""``DistributedSampler``: each of ``num_replicas`` processes takes every
``num_replicas``-th index of one (seeded, per-epoch) permutation, padded
or truncated so that all get the same count, as torch's."""

import math

from .sampler import Sampler


def _default(what):
    from ... import distributed as dist

    if not dist.is_initialized():
        raise ValueError("Default process group has not been initialized, please make sure to call "
                         "init_process_group.")
    return dist.get_world_size() if what == "size" else dist.get_rank()


class DistributedSampler(Sampler):
    """Indices of this process's share of ``dataset``: ``num_replicas`` and
    ``rank`` default to the default process group's."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False):
        if num_replicas is None:
            num_replicas = _default("size")
        if rank is None:
            rank = _default("rank")
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        if self.drop_last and len(self.dataset) % self.num_replicas != 0:
            self.num_samples = math.ceil((len(self.dataset) - self.num_replicas) / self.num_replicas)
        else:
            self.num_samples = math.ceil(len(self.dataset) / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self):
        import ferrotorch

        n = len(self.dataset)
        if self.shuffle:
            g = ferrotorch.Generator()
            g.manual_seed(self.seed + self.epoch)
            indices = ferrotorch.randperm(n, generator=g).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            pad = self.total_size - len(indices)
            if pad <= len(indices):
                indices += indices[:pad]
            else:
                indices += (indices * math.ceil(pad / len(indices)))[:pad]
        else:
            indices = indices[:self.total_size]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        """Use permutation ``seed + epoch`` from the next iteration on (call
        it each epoch, or every epoch repeats the same order)."""
        self.epoch = epoch

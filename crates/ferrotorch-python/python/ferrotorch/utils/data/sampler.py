"""Samplers: which indices a ``DataLoader`` visits, in which order. The
random ones make torch's draws in torch's order (``randperm`` without
replacement, ``randint`` in chunks of 32 with, a generator seeded from the
default one when none is given), so the same seed gives torch's indices."""

from ... import _C

_call = _C._call_op


class Sampler:
    """Base class: iterate over dataset indices."""

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """0, 1, ..., n-1."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random permutation, or ``num_samples`` draws with replacement."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={self.replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={self.num_samples}")

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        # torch's RandomSampler, draw for draw: without a generator, seed a
        # fresh one from the default generator
        import ferrotorch

        n = len(self.data_source)
        generator = self.generator
        if generator is None:
            generator = ferrotorch.Generator()
            generator.manual_seed(_C._random_seed())
        if self.replacement:
            for _ in range(self.num_samples // 32):
                yield from ferrotorch.randint(high=n, size=(32,), generator=generator).tolist()
            yield from ferrotorch.randint(high=n, size=(self.num_samples % 32,),
                                          generator=generator).tolist()
        else:
            for _ in range(self.num_samples // n):
                yield from ferrotorch.randperm(n, generator=generator).tolist()
            yield from ferrotorch.randperm(n, generator=generator).tolist()[:self.num_samples % n]

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in random order."""

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        import ferrotorch

        for i in ferrotorch.randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """Indices drawn with probability proportional to ``weights``."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        self.weights = _C.tensor(weights, dtype=_C.float64)
        self.num_samples = num_samples
        self.replacement = replacement

    def __iter__(self):
        yield from self.weights.multinomial(self.num_samples, self.replacement).tolist()

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Group another sampler's indices into lists of ``batch_size``."""

    def __init__(self, sampler, batch_size, drop_last):
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        batch = []
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else (n + self.batch_size - 1) // self.batch_size

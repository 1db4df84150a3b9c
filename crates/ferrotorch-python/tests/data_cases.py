"""utils.data cases run the same way under torch (fixtures/gen_data.py) and
ferrotorch (test_data.py): iterable datasets with and without workers,
ChainDataset, StackDataset, DistributedSampler, default_convert and
``__getitems__``; each returns plain values."""

import math
import warnings

import numpy as np


def _flat(batch):
    if hasattr(batch, "tolist"):
        return batch.tolist()
    if isinstance(batch, dict):
        return {k: _flat(v) for k, v in sorted(batch.items())}
    if isinstance(batch, (list, tuple)):
        return [_flat(b) for b in batch]
    return batch


def _datasets(L):
    data = L.utils.data

    class Stream(data.IterableDataset):
        def __init__(self, start, end, shard=True):
            self.start, self.end, self.shard = start, end, shard

        def __iter__(self):
            info = data.get_worker_info()
            lo, hi = self.start, self.end
            if info is not None and self.shard:
                per = int(math.ceil((hi - lo) / info.num_workers))
                lo = lo + info.id * per
                hi = min(lo + per, self.end)
            return iter(L.tensor([float(i)]) for i in range(lo, hi))

        def __len__(self):
            return self.end - self.start

    class Batched(data.Dataset):
        calls = 0

        def __getitem__(self, i):
            return i * 10

        def __getitems__(self, idx):
            return [("batched", i) for i in idx]

        def __len__(self):
            return 7

    return Stream, Batched


def iterable_single(L):
    Stream, _ = _datasets(L)
    DL = L.utils.data.DataLoader
    out = {"b3": [_flat(b) for b in DL(Stream(0, 10), batch_size=3)],
           "b3_drop": [_flat(b) for b in DL(Stream(0, 10), batch_size=3, drop_last=True)],
           "none": [_flat(b) for b in DL(Stream(2, 5), batch_size=None)],
           "len": len(DL(Stream(0, 10), batch_size=4)), "len_drop": len(DL(Stream(0, 10), batch_size=4, drop_last=True))}
    errs = []
    for kw in [{"shuffle": True}, {"sampler": [0, 1]}, {"batch_sampler": [[0]]}]:
        try:
            DL(Stream(0, 3), **kw)
            errs.append(None)
        except ValueError as e:
            errs.append(str(e).split(",")[0])
    out["errs"] = errs
    return out


def iterable_workers(L):
    Stream, _ = _datasets(L)
    DL = L.utils.data.DataLoader
    out = {"sharded": [_flat(b) for b in DL(Stream(0, 11), batch_size=2, num_workers=2)],
           "uneven": [_flat(b) for b in DL(Stream(0, 7), batch_size=2, num_workers=3)],
           "dup": [_flat(b) for b in DL(Stream(0, 3, shard=False), batch_size=2, num_workers=2)],
           "drop": [_flat(b) for b in DL(Stream(0, 11), batch_size=2, num_workers=2, drop_last=True)],
           "none": [_flat(b) for b in DL(Stream(0, 5), batch_size=None, num_workers=2)]}
    loader = DL(Stream(0, 5), batch_size=2, num_workers=2, persistent_workers=True)
    out["persistent"] = [[_flat(b) for b in loader] for _ in range(2)]
    return out


def length_warning(L):
    Stream, _ = _datasets(L)

    class Liar(Stream):
        def __len__(self):
            return 2

    loader = L.utils.data.DataLoader(Liar(0, 4), batch_size=None)
    n = len(loader)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        got = [_flat(b) for b in loader]
    return {"n": n, "got": got, "warned": [str(x.message).split(" was reported")[0].split(" ")[0] + " " +
                                           str(x.message).split("but ")[1] for x in w]}


def chain_stack(L):
    Stream, Batched = _datasets(L)
    data = L.utils.data
    chain = Stream(0, 2) + Stream(5, 7)
    ch = data.ChainDataset([Stream(0, 2), Stream(3, 4)])
    st = data.StackDataset(data.TensorDataset(L.arange(4.)), L.arange(4) * 2)
    sd = data.StackDataset(a=L.arange(7), b=Batched())
    errs = []
    for args, kw in [((), {}), ((L.arange(2), L.arange(3)), {}), ((L.arange(2),), {"x": L.arange(2)})]:
        try:
            data.StackDataset(*args, **kw)
            errs.append(None)
        except ValueError as e:
            errs.append(str(e))
    return {"chain": [_flat(x) for x in chain], "chain_cls": type(chain).__name__, "ch_len": len(ch),
            "stack_item": _flat(st[1]), "stack_batches": [_flat(b) for b in data.DataLoader(st, batch_size=3)],
            "dict_items": _flat(sd.__getitems__([0, 2])), "errs": errs}


def getitems(L):
    _, Batched = _datasets(L)
    data = L.utils.data
    b = [_flat(x) for x in data.DataLoader(Batched(), batch_size=3, collate_fn=lambda x: x)]
    sub = data.Subset(Batched(), [6, 2, 4])
    return {"batches": b, "subset": _flat(sub.__getitems__([0, 2])), "subset_item": sub[1]}


def distributed_sampler(L):
    DS = L.utils.data.DistributedSampler
    out = {}
    for n, reps, shuffle, drop, seed in [(10, 3, True, False, 0), (10, 3, True, True, 0), (10, 4, False, False, 0),
                                         (2, 5, False, False, 0), (11, 2, True, False, 7)]:
        per = []
        for rank in range(reps):
            s = DS(list(range(n)), num_replicas=reps, rank=rank, shuffle=shuffle, seed=seed, drop_last=drop)
            e0 = list(s)
            s.set_epoch(3)
            per.append([e0, list(s), len(s)])
        out[f"{n}_{reps}_{shuffle}_{drop}_{seed}"] = per
    errs = []
    for kw in [{"num_replicas": 2, "rank": 2}, {"num_replicas": 2, "rank": -1}, {}]:
        try:
            DS(list(range(4)), **kw)
            errs.append(None)
        except (ValueError, RuntimeError) as e:
            errs.append(type(e).__name__ + ": " + str(e))
    out["errs"] = errs
    return out


def convert(L):
    data = L.utils.data
    c = data.default_convert({"a": np.arange(3), "b": [np.float32(2.5), 1.5, "s"], "c": (np.ones(2),),
                              "d": np.array(["x", "y"])})
    kinds = {"a": type(c["a"]).__name__, "b0": type(c["b"][0]).__name__, "b1": type(c["b"][1]).__name__,
             "c": type(c["c"]).__name__, "d": type(c["d"]).__name__}
    loader = data.DataLoader([np.arange(2) + i for i in range(3)], batch_size=None)
    return {"a": c["a"].tolist(), "dtype": str(c["a"].dtype).split(".")[1], "kinds": kinds,
            "loader": [[type(b).__name__, b.tolist()] for b in loader]}


def _rename(v):
    return v.replace("ferrotorch", "torch") if isinstance(v, str) else v


CASES = {f.__name__: f for f in [iterable_single, iterable_workers, length_warning, chain_stack, getitems,
                                 distributed_sampler, convert]}


def run(L, name):
    L.manual_seed(0)
    return CASES[name](L)

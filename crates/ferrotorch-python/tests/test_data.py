"""torch.utils.data as torch's: IterableDataset streams with and without
worker processes (sharded by get_worker_info, uneven, duplicated,
persistent), ChainDataset, StackDataset, __getitems__, DistributedSampler
and default_convert give torch's batches in torch's order
(fixtures/data.json from fixtures/gen_data.py)."""

import json
import os

import pytest

import ferrotorch as ft
import data_cases as C

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "fixtures", "data.json")) as f:
    FIX = json.load(f)["cases"]


def _same(a, b, path=""):
    if isinstance(b, dict):
        assert set(a) == set(b), path
        for k in b:
            _same(a[k], b[k], f"{path}.{k}")
    elif isinstance(b, list):
        assert isinstance(a, (list, tuple)) and len(a) == len(b), (path, a, b)
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{path}[{i}]")
    elif isinstance(b, str):
        assert a.replace("ferrotorch", "torch") == b, path
    else:
        assert a == b, path


@pytest.mark.parametrize("name", list(C.CASES))
def test_data_case_is_torchs(name):
    _same(C.run(ft, name), FIX[name], name)


def test_an_error_in_an_iterable_workers_stream_reaches_the_loop():
    class Bad(ft.utils.data.IterableDataset):
        def __iter__(self):
            yield ft.tensor([1.0])
            raise KeyError("stream broke")

    loader = ft.utils.data.DataLoader(Bad(), batch_size=None, num_workers=2)
    with pytest.raises(KeyError, match="stream broke"):
        list(loader)

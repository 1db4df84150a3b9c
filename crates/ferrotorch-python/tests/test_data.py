"""torch.utils.data as torch's: IterableDataset streams with and without
worker processes (sharded by get_worker_info, uneven, duplicated,
persistent), ChainDataset, StackDataset, __getitems__, DistributedSampler
and default_convert give torch's batches in torch's order
(fixtures/data.json from fixtures/gen_data.py)."""

import pytest

import ferrotorch as ft
from fixture_compare import close as _same, load
import data_cases as C

FIX = load("data")


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

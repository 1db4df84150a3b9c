"""``torch.testing``: assert_close gives torch's verdicts and messages, and
make_tensor torch's values for the same seed (fixtures/testing.json from
fixtures/gen_testing.py)."""

import json
import os

import pytest

import ferrotorch as ft
import testing_cases as C

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "fixtures", "testing.json")) as f:
    FIX = json.load(f)


def _torchless(s):
    return s.replace("torch.Size", "Size").replace("torch.", "ferrotorch.").replace("<class 'torch.Tensor'>", "T") \
        .replace("<class 'ferrotorch.Tensor'>", "T")


@pytest.mark.parametrize("name,make,kwargs", C.ASSERT_CLOSE, ids=[c[0] for c in C.ASSERT_CLOSE])
def test_assert_close_is_torchs(name, make, kwargs):
    got = C.run_assert_close(ft, make, kwargs)
    assert _torchless(got.replace("ferrotorch.", "torch.")) == _torchless(FIX["assert_close"][name])


@pytest.mark.parametrize("name,make", C.MAKE_TENSOR, ids=[c[0] for c in C.MAKE_TENSOR])
def test_make_tensor_draws_torchs_values(name, make):
    want = FIX["make_tensor"][name]
    got = C.run_make_tensor(ft, make)
    assert got["shape"] == want["shape"] and got["stride"] == want["stride"] and got["dtype"] == want["dtype"]
    flat = lambda v: [x for e in v for x in (e if isinstance(e, list) else [e])]  # noqa: E731
    assert flat(got["values"]) == pytest.approx(flat(want["values"]), rel=1e-6)


def test_make_tensor_refuses_bad_ranges():
    with pytest.raises(ValueError, match="must be less than"):
        ft.testing.make_tensor(3, dtype=ft.float32, device="cpu", low=2, high=1)
    with pytest.raises(ValueError, match="requires_grad=True"):
        ft.testing.make_tensor(3, dtype=ft.int64, device="cpu", requires_grad=True)
    assert ft.testing.make_tensor(3, dtype=ft.float32, device="cpu", requires_grad=True).requires_grad

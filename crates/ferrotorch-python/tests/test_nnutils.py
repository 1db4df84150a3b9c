"""nn.utils as torch's: parametrizations, the hook-based weight and
spectral norms, fusion, functional_call and the norm helpers give torch's
values and state-dict keys (fixtures/nnutils.json from
fixtures/gen_nnutils.py)."""

import pytest

import ferrotorch as ft
from fixture_compare import close as _close, load
import nnutils_cases as C

FIX = load("nnutils")


@pytest.mark.parametrize("name", list(C.CASES))
def test_nn_utils_case_is_torchs(name):
    _close(C.run(ft, name), FIX[name], name)

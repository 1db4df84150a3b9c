"""nn.utils as torch's: parametrizations, the hook-based weight and
spectral norms, fusion, functional_call and the norm helpers give torch's
values and state-dict keys (fixtures/nnutils.json from
fixtures/gen_nnutils.py)."""

import json
import os

import pytest

import ferrotorch as ft
import nnutils_cases as C

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "fixtures", "nnutils.json")) as f:
    FIX = json.load(f)["cases"]


def _close(a, b, path=""):
    if isinstance(b, dict):
        assert set(a) == set(b), path
        for k in b:
            _close(a[k], b[k], f"{path}.{k}")
    elif isinstance(b, list) and b and isinstance(b[0], float):
        assert a == pytest.approx(b, rel=2e-4, abs=2e-5), path
    elif isinstance(b, float):
        assert a == pytest.approx(b, rel=2e-4, abs=2e-5), path
    elif isinstance(b, str) and isinstance(a, str):
        assert a.replace("ferrotorch", "torch") == b, path
    else:
        assert a == b, path


@pytest.mark.parametrize("name", list(C.CASES))
def test_nn_utils_case_is_torchs(name):
    _close(C.run(ft, name), FIX[name], name)

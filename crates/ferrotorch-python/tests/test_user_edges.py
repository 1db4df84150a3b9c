"""What stopped real programs: indexing with a Python range, and the
channel dropouts on every rank (warn and proceed, torch's masks), as
torch's (fixtures/user_edges.json from fixtures/gen_user_edges.py)."""

import json
import os

import pytest

import ferrotorch as ft
import user_edges_cases as C

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "fixtures", "user_edges.json")) as f:
    FIX = json.load(f)["cases"]


def _close(a, b, path=""):
    if isinstance(b, dict):
        assert set(a) == set(b), path
        for k in b:
            _close(a[k], b[k], f"{path}.{k}")
    elif isinstance(b, list) and b and isinstance(b[0], float):
        assert list(a) == pytest.approx(b, rel=2e-4, abs=2e-5), path
    elif isinstance(b, list):
        assert isinstance(a, (list, tuple)) and len(a) == len(b), (path, a, b)
        for i, (x, y) in enumerate(zip(a, b)):
            _close(x, y, f"{path}[{i}]")
    elif isinstance(b, float):
        assert a == pytest.approx(b, rel=2e-4, abs=2e-5), path
    elif isinstance(b, str) and isinstance(a, str):
        assert a.replace("ferrotorch", "torch") == b, path
    else:
        assert a == b, path


@pytest.mark.parametrize("name", list(C.CASES))
def test_user_edge_case_is_torchs(name):
    _close(C.run(ft, name), FIX[name], name)

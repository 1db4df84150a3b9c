"""What stopped real programs: indexing with a Python range, and the
channel dropouts on every rank (warn and proceed, torch's masks), as
torch's (fixtures/user_edges.json from fixtures/gen_user_edges.py)."""

import pytest

import ferrotorch as ft
from fixture_compare import close as _close, load
import user_edges_cases as C

FIX = load("user_edges")


@pytest.mark.parametrize("name", list(C.CASES))
def test_user_edge_case_is_torchs(name):
    _close(C.run(ft, name), FIX[name], name)

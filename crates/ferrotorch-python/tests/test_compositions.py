"""torch's top-level creation, norm, view-copy, layer entry-point and
settings functions give torch's results (fixtures/compositions.json from
fixtures/gen_compositions.py)."""

import json
import os

import pytest

import ferrotorch as ft
import compositions_cases as C

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "fixtures", "compositions.json")) as f:
    FIX = json.load(f)["values"]

GOT = None


def _got():
    global GOT
    if GOT is None:
        GOT = C.run(ft)
        GOT["frombuffer"][1] = [float(v) for v in GOT["frombuffer"][1]]
    return GOT


def _same(a, b, k):
    if isinstance(b, list) and b and isinstance(b[0], list):
        assert len(a) == len(b), k
        for x, y in zip(a, b):
            _same(x, y, k)
    elif isinstance(b, list) and b and isinstance(b[0], float):
        assert a == pytest.approx(b, rel=1e-6, abs=1e-7), k
    else:
        assert a == b, k


@pytest.mark.parametrize("key", list(FIX))
def test_composition_is_torchs(key):
    _same(_got()[key], FIX[key], key)

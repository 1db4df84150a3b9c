"""torch.fx's tools on PyTorch's own fx tutorials and documentation
examples: the conv/BN fuser, Transformer, a profiling Interpreter,
ShapeProp, replace_pattern (and its filters and literals), fx.wrap,
Proxy over a graph being built, has_side_effect, a custom CodeGen and
ProxyableClassMeta give torch's graphs and values
(fixtures/fx_tools.json from fixtures/gen_fx_tools.py)."""

import json
import os

import pytest

import ferrotorch as ft
import fx_tools_cases as C

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "fixtures", "fx_tools.json")) as f:
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
def test_fx_tool_case_is_torchs(name):
    _close(C.run(ft, name), FIX[name], name)

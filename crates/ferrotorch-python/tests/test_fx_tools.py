"""torch.fx's tools on PyTorch's own fx tutorials and documentation
examples: the conv/BN fuser, Transformer, a profiling Interpreter,
ShapeProp, replace_pattern (and its filters and literals), fx.wrap,
Proxy over a graph being built, has_side_effect, a custom CodeGen and
ProxyableClassMeta give torch's graphs and values
(fixtures/fx_tools.json from fixtures/gen_fx_tools.py)."""

import pytest

import ferrotorch as ft
from fixture_compare import close as _close, load
import fx_tools_cases as C

FIX = load("fx_tools")


@pytest.mark.parametrize("name", list(C.CASES))
def test_fx_tool_case_is_torchs(name):
    _close(C.run(ft, name), FIX[name], name)

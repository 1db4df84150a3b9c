"""What the fixture tests share: loading ``fixtures/<name>.json`` (written
by ``fixtures/gen_<name>.py`` under torch) and comparing a case's plain
values with torch's: floats within a tolerance, ints, strings (with
ferrotorch's name read as torch's) and the structure exactly."""

import json
import os

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


def load(name, key="cases"):
    """The ``key`` entry of ``fixtures/<name>.json``."""
    with open(os.path.join(HERE, "fixtures", f"{name}.json")) as f:
        return json.load(f)[key]


def close(a, b, path="", rel=2e-4, abs=2e-5):
    """Assert ``a`` (ours) matches ``b`` (torch's), naming where not."""
    if isinstance(b, dict):
        assert set(a) == set(b), path
        for k in b:
            close(a[k], b[k], f"{path}.{k}", rel, abs)
    elif isinstance(b, list) and b and isinstance(b[0], float):
        assert list(a) == pytest.approx(b, rel=rel, abs=abs), path
    elif isinstance(b, list):
        assert isinstance(a, (list, tuple)) and len(a) == len(b), (path, a, b)
        for i, (x, y) in enumerate(zip(a, b)):
            close(x, y, f"{path}[{i}]", rel, abs)
    elif isinstance(b, float):
        assert a == pytest.approx(b, rel=rel, abs=abs), path
    elif isinstance(b, str) and isinstance(a, str):
        assert a.replace("ferrotorch", "torch") == b, path
    else:
        assert a == b, path

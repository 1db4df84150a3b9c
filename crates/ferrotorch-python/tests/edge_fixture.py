"""Helpers of the edge-value replays (``test_edge_grads.py``,
``test_reduce_edges.py``, ``test_binary_edges.py``): a PyTorch fixture
loaded by name, its encoded numbers decoded, and the comparison that
treats NaN and infinities exactly."""
import json
import math
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def load(name):
    """``fixtures/<name>.json`` and its cases by ``(op, dtype)``."""
    with open(os.path.join(HERE, "fixtures", name + ".json")) as f:
        data = json.load(f)
    return data, {(c["op"], c["dtype"]): c for c in data["cases"]}


def dec(vs):
    """The fixture's numbers (NaN and infinities are written as strings)."""
    return [float(v) for v in vs]


def same(got, want, rtol):
    """NaN matches NaN, an infinity itself, a number within ``rtol``."""
    if math.isnan(want):
        return math.isnan(got)
    if math.isinf(want):
        return got == want
    return abs(got - want) <= rtol * max(1.0, abs(want))

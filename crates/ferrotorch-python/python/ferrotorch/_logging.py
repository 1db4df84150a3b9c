"""``torch._logging``: what the compiler prints. ``set_logs(graph_code=True,
fusion=True, recompiles=True, graph_breaks=True)``, or the
``FERROTORCH_LOGS`` environment variable (``FERROTORCH_LOGS=graph_code,fusion``;
``all`` for every one). Output goes to stderr."""

import os
import sys

from . import _C

_ARTIFACTS = ("graph_code", "fusion", "recompiles", "graph_breaks")
_on = set()


def _from_env():
    env = os.environ.get("FERROTORCH_LOGS", "")
    names = {s.strip().lstrip("+") for s in env.split(",") if s.strip()}
    if "all" in names:
        names = set(_ARTIFACTS)
    return names & set(_ARTIFACTS)


def set_logs(*, graph_code=None, fusion=None, recompiles=None, graph_breaks=None, all=None):
    """Switch log artifacts on or off (None leaves one as it is)."""
    given = dict(graph_code=graph_code, fusion=fusion, recompiles=recompiles,
                 graph_breaks=graph_breaks)
    for name, v in given.items():
        v = all if v is None else v
        if v is True:
            _on.add(name)
        elif v is False:
            _on.discard(name)
    _C._fusion_set_logging("fusion" in _on)


def enabled(name):
    """Whether the artifact ``name`` is logged."""
    return name in _on


def log(message):
    """Print one compiler message to stderr."""
    print(f"[ferrotorch compile] {message}", file=sys.stderr)


_on.update(_from_env())
if "fusion" in _on:
    _C._fusion_set_logging(True)

"""Runs each fuzz target of ``fuzz_targets.py`` in a child process on a
fixed budget (``FERROTORCH_FUZZ_SECONDS``, default 5 s each; seed
``FERROTORCH_FUZZ_SEED``, default 0, so CI is repeatable). A crash of the
child fails the test with the seed and case that reproduce it."""

import os
import pathlib
import subprocess
import sys

import pytest

HERE = pathlib.Path(__file__).parent


@pytest.mark.parametrize("target", ["load", "pickle", "torchscript", "foreign", "views", "indexing", "pt2"])
def test_fuzz_target(target):
    secs = os.environ.get("FERROTORCH_FUZZ_SECONDS", "5")
    seed = os.environ.get("FERROTORCH_FUZZ_SEED", "0")
    p = subprocess.run([sys.executable, str(HERE / "fuzz_targets.py"), target, secs, seed],
                       capture_output=True, text=True, timeout=float(secs) * 4 + 120)
    assert p.returncode == 0, p.stdout + p.stderr[-4000:]
    assert "no failure" in p.stdout

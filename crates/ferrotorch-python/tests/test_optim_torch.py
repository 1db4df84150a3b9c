"""torch's optimizers and schedulers, step for step: the cases of
optim_cases.py run under ferrotorch give the losses, parameters and
learning rates torch gave (fixtures/optim.json, written by
fixtures/gen_optim.py with torch 2.15)."""

import json
import os

import numpy as np
import pytest

import ferrotorch as ft
import optim_cases as C

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "fixtures", "optim.json")) as f:
    FIX = json.load(f)

# float64 cases agree to rounding; float32 ones accumulate a few ulps a step
TOL = {"float64": 1e-9, "float32": 2e-5}


def _kw(kwargs):
    return {k: tuple(v) if isinstance(v, list) else v for k, v in kwargs.items()}


@pytest.mark.parametrize("case", FIX["optimizers"], ids=lambda c: f"{c['name']}-{c['dtype']}-{c['kwargs']}")
def test_optimizer_trajectory_is_torchs(case):
    got = C.run_optimizer(ft, case["name"], _kw(case["kwargs"]), case["dtype"])
    tol = TOL[case["dtype"]]
    np.testing.assert_allclose(got["losses"], case["losses"], rtol=tol, atol=tol)
    np.testing.assert_allclose(got["params"], case["params"], rtol=tol, atol=tol)


@pytest.mark.parametrize("case", FIX["special"], ids=lambda c: f"{c['name']}-{c['kwargs']}")
def test_special_optimizer_trajectory_is_torchs(case):
    got = C.run_special(ft, case["name"], _kw(case["kwargs"]), case["kind"])
    # Muon orthogonalises in bfloat16 (8 bits of mantissa)
    tol = 2e-2 if case["name"] == "Muon" else 2e-5
    np.testing.assert_allclose(got["losses"], case["losses"], rtol=tol, atol=tol)
    np.testing.assert_allclose(got["params"], case["params"], rtol=tol, atol=tol)


@pytest.mark.parametrize("case", FIX["schedulers"], ids=lambda c: c["name"])
def test_scheduler_sequence_is_torchs(case):
    (spec,) = [s for s in C.SCHEDULERS if s[0] == case["name"]]
    got = C.run_scheduler(ft, *spec[1:])
    np.testing.assert_allclose(got["lrs"], case["lrs"], rtol=1e-12, atol=0)
    np.testing.assert_allclose(got["last_lr"], case["last_lr"], rtol=1e-12, atol=0)

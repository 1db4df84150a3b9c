"""torch.amp on the CPU as torch's: a model trained under
``autocast("cpu", bfloat16/float16)`` takes torch's dtypes and losses (to
the low precision's rounding), GradScaler scales, skips a step with an inf
and backs off and grows as torch's; a scaler for a missing device disables
itself with torch's warning (fixtures/amp.json from fixtures/gen_amp.py)."""

import json
import os

import pytest

import ferrotorch as ft
import amp_cases as C

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "fixtures", "amp.json")) as f:
    FIX = json.load(f)["cases"]


@pytest.mark.parametrize("name", ["autocast bf16", "autocast fp16"])
def test_autocast_training_is_torchs(name):
    got, want = C.CASES[name](ft), FIX[name]
    assert got["dtypes"] == want["dtypes"]
    # bfloat16 keeps 8 mantissa bits: the low-precision matmuls agree to that
    tol = 2e-2 if "bf16" in name else 2e-3
    assert got["losses"] == pytest.approx(want["losses"], rel=tol)
    assert got["w"] == pytest.approx(want["w"], rel=tol, abs=tol)


@pytest.mark.parametrize("name", ["grad_scaler", "disabled_scaler"])
def test_grad_scaler_is_torchs(name):
    got, want = C.CASES[name](ft), FIX[name]
    for k in want:
        if isinstance(want[k], list):
            assert got[k] == pytest.approx(want[k], rel=1e-5), k
        else:
            assert got[k] == want[k], k


def test_autocast_regions_nest_and_restore():
    assert not ft.is_autocast_enabled("cpu")
    with ft.autocast("cpu"):
        assert ft.is_autocast_enabled("cpu") and ft.get_autocast_dtype("cpu") == ft.bfloat16
        with ft.autocast("cpu", enabled=False):
            assert not ft.is_autocast_enabled("cpu")
            assert (ft.ones(2, 2) @ ft.ones(2, 2)).dtype == ft.float32
        assert (ft.ones(2, 2) @ ft.ones(2, 2)).dtype == ft.bfloat16
        assert (ft.ones(2, 2, dtype=ft.float64) @ ft.ones(2, 2, dtype=ft.float64)).dtype == ft.float64
    assert not ft.is_autocast_enabled("cpu")
    with pytest.warns(UserWarning, match="CUDA is not available"):
        with ft.autocast("cuda"):
            assert (ft.ones(2, 2) @ ft.ones(2, 2)).dtype == ft.float32

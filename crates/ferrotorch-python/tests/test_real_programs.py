"""Issue 49's real programs (bench/programs.py): a CNN with Adadelta and
StepLR on the device torch.accelerator picks, an LSTM language model with
tied weights over packed variable-length sentences, a VAE with
torch.distributions, per-sample gradients with torch.func, an fx pass
with wrap and replace_pattern, and a GAN importing nn.parallel. Each
step's loss equals torch's (same seeds, same random streams) to 1e-4
relative: against torch itself when it is installed, else against
fixtures/real_programs.json (fixtures/gen_real_programs.py)."""

import json
import os
import pathlib
import sys
import warnings

import pytest

import ferrotorch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[3] / "bench"))
import programs  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "fixtures", "real_programs.json")) as f:
    FIX = json.load(f)


def _losses(lib, name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return programs.run(lib, name, FIX["steps"])


@pytest.mark.parametrize("name", list(programs.PROGRAMS))
def test_every_step_loss_is_torchs(name):
    ours = _losses(ferrotorch, name)
    try:
        import torch
    except ImportError:
        theirs = FIX["losses"][name]
    else:
        theirs = _losses(torch, name)
    assert ours == pytest.approx(theirs, rel=1e-4, abs=1e-6), name


def test_the_language_model_saves_and_loads_its_tied_weights():
    step = programs.make(ferrotorch, "lm")
    for i in range(2):
        step(i)
    assert step.reload_matches()

"""The character-level models of ``bench/char_models.py`` (an MLP over
embedded context characters, a nanoGPT-style transformer, a GRU), trained
the way PyTorch users train them (AdamW, cross-entropy, ``zero_grad`` /
``backward`` / ``step``) at small sizes. Always checked: the loss falls.
With PyTorch installed: from the same initial weights and batches, every
step's loss matches PyTorch's."""

import pathlib
import sys

import numpy as np
import pytest

import ferrotorch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[3] / "bench"))
import char_models  # noqa: E402

SMALL = {
    "mlp": dict(batch=8, block=3, n_embd=8, hidden=32),
    "gpt": dict(batch=4, block=8, n_embd=16, n_head=2, n_layer=2),
    "gru": dict(batch=4, block=8, n_embd=8, hidden=16),
}


def _train(lib, name, steps, init=None):
    lib.manual_seed(0)
    model, batch = char_models.MODELS[name](lib, **SMALL[name])
    if init is not None:
        model.load_state_dict({k: lib.tensor(v) for k, v in init.items()})
    opt = lib.optim.AdamW(model.parameters(), lr=3e-3)
    losses = [char_models.train_step(model, opt, *batch(i % 4)) for i in range(steps)]
    return model, losses


@pytest.mark.parametrize("name", ["mlp", "gpt", "gru"])
def test_training_lowers_the_loss(name):
    _, losses = _train(ferrotorch, name, 40)
    assert all(np.isfinite(losses))
    assert np.mean(losses[-5:]) < np.mean(losses[:5]) - 0.05, losses


@pytest.mark.parametrize("name", ["mlp", "gpt", "gru"])
def test_training_matches_pytorch(name):
    torch = pytest.importorskip("torch")
    model, _ = _train(ferrotorch, name, 0)
    init = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    _, ours = _train(ferrotorch, name, 12, init)
    _, theirs = _train(torch, name, 12, init)
    np.testing.assert_allclose(ours, theirs, rtol=2e-4, atol=2e-5)

"""The seeds/000 check: the randomized-prior-functions code of the seed
document, with only its imports changed (examples/python/rpf.py), runs
and trains, and its figures are drawn by matplotlib from tensors."""

import importlib.util
import os

import pytest

import ferrotorch as torch
from ferrotorch import nn
from ferrotorch.utils.data import TensorDataset, RandomSampler, DataLoader

# The seed's code, with only its imports changed, is the example's
# (examples/python/rpf.py); the tests run it from there.
_EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples", "python", "rpf.py")
_spec = importlib.util.spec_from_file_location("rpf_example", _EXAMPLE)
rpf = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rpf)
MLP, ModelWithPrior, SinPrior, train_model = rpf.MLP, rpf.ModelWithPrior, rpf.SinPrior, rpf.train_model


def _data():
    # the small dataset of the paper (as in examples/rpf): 1-D points
    x = torch.tensor([[-0.9], [-0.7], [-0.55], [-0.35], [-0.2], [0.0], [0.1], [0.25], [0.4],
                      [0.55], [0.7], [0.85]])
    y = torch.sin(x * 4) * 0.8 + x * 0.3
    return x, y


def _bootstrap_fit(prior_factory, n_models):
    x, y = _data()
    dataset = TensorDataset(x, y)
    bootstrap_sampler = RandomSampler(dataset, True, len(dataset))
    train_dataloader = DataLoader(dataset,
                                  batch_size=len(dataset),
                                  sampler=bootstrap_sampler)
    models = []
    for _ in range(n_models):
        x_b, y_b = next(iter(train_dataloader))
        models.append((train_model(x_b, y_b, MLP(), prior_factory()), x_b, y_b))
    return models, x, y


def test_seed000_trains_an_ensemble_with_an_mlp_prior():
    torch.manual_seed(0)
    models, x, y = _bootstrap_fit(MLP, 4)
    loss_fn = nn.MSELoss()
    with torch.no_grad():
        untrained = ModelWithPrior(MLP(), MLP(), 1.0)
        before = loss_fn(untrained(x), y).item()
        # each member fits its own bootstrap sample
        fitted = [loss_fn(m(xb), yb).item() for m, xb, yb in models]
        # and the ensemble mean fits the whole data set far better than chance
        mean = torch.stack([m(x) for m, _, _ in models]).mean(0)
        ensemble = loss_fn(mean, y).item()
    assert max(fitted) < 0.1, fitted
    assert ensemble < before / 10, (ensemble, before)
    # priors are untrained: their parameters never got gradients
    assert all(p.grad is None for m, _, _ in models for p in m.prior_model.parameters())


def test_seed000_trains_with_the_sine_prior():
    torch.manual_seed(1)
    models, x, y = _bootstrap_fit(SinPrior, 2)
    with torch.no_grad():
        losses = [nn.MSELoss()(m(xb), yb).item() for m, xb, yb in models]
    assert max(losses) < 0.1, losses
    assert list(models[0][0].prior_model.parameters()) == []


def test_matplotlib_plots_ferrotorch_tensors():
    # plt.plot(t) as with torch's CPU tensors: matplotlib reads __array__
    plt = pytest.importorskip("matplotlib.pyplot")
    import numpy as np
    x = torch.linspace(-1, 1, 5).unsqueeze(1)
    y = torch.sin(3 * x)
    fig, ax = plt.subplots()
    (line,) = ax.plot(x, y)
    band = ax.fill_between(x.flatten(), (y - 1).flatten(), (y + 1).flatten())
    plt.close(fig)
    np.testing.assert_allclose(line.get_xdata(), np.linspace(-1, 1, 5), rtol=1e-6)
    np.testing.assert_allclose(line.get_ydata(), np.sin(3 * np.linspace(-1, 1, 5)), rtol=1e-5)
    # the band's outline spans y - 1 .. y + 1
    ys = np.sin(3 * np.linspace(-1, 1, 5))
    verts = band.get_paths()[0].vertices
    np.testing.assert_allclose([verts[:, 1].min(), verts[:, 1].max()],
                               [ys.min() - 1, ys.max() + 1], rtol=1e-5)


def test_rpf_example_trains_and_plots_with_matplotlib(tmp_path):
    # examples/python/rpf.py: the seed's code and figures, a small ensemble
    pytest.importorskip("matplotlib")
    import re
    import subprocess
    import sys
    env = dict(os.environ, MPLBACKEND="Agg")
    r = subprocess.run([sys.executable, _EXAMPLE,
                        "--models", "4", "--out", str(tmp_path)],
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr
    names = sorted(os.listdir(tmp_path))
    assert names == sorted(f"rpf_{p}_{k}.png" for p in ("mlp_prior", "sin_prior")
                           for k in ("ensemble", "members", "priors")), names
    for n in names:
        head = open(tmp_path / n, "rb").read(24)
        assert head[:8] == b"\x89PNG\r\n\x1a\n", n
        # IHDR: the 8x5 in figure at 100 dpi
        assert int.from_bytes(head[16:20], "big") == 800, n
        assert int.from_bytes(head[20:24], "big") == 500, n
    # randomized priors: the band is wider away from the data than on it
    widths = re.findall(r"half-width ([0-9.]+) on the data, ([0-9.]+) away", r.stdout)
    assert len(widths) == 2, r.stdout
    for near, far in widths:
        assert float(far) > 1.5 * float(near), r.stdout

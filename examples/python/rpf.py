"""Randomized prior functions (seeds/000, "Randomized prior functions in
PyTorch"): the post's training code with only its imports changed, and its
figures drawn by matplotlib straight from ferrotorch tensors (matplotlib
reads them through ``Tensor.__array__``, as it reads torch's CPU tensors).

    pip install matplotlib
    PYTHONPATH=crates/ferrotorch-python/python python examples/python/rpf.py \\
        [--models 50] [--out rpf-py]

Trains an ensemble with MLP priors and one with a sin(3x) prior, each
member on its own bootstrap resample, and writes six PNGs to ``--out``:
the ensembles' mean with a ±2σ band, their members, and the priors. The
Rust version of the same job (the README's main command) is
``crates/ferrotorch/examples/rpf``.
"""

import argparse
import os
import time

# ---- the imports, changed from torch to ferrotorch ----
import ferrotorch as torch
from ferrotorch import nn
from ferrotorch.utils.data import DataLoader, RandomSampler, TensorDataset


# ---- the post's code, unchanged ----
class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(1, 20)
        self.l2 = nn.Linear(20, 20)
        self.l3 = nn.Linear(20, 1)

        nn.init.xavier_uniform_(self.l1.weight)
        nn.init.xavier_uniform_(self.l2.weight)
        nn.init.xavier_uniform_(self.l3.weight)

    def forward(self, inputs):
        x = self.l1(inputs)
        x = nn.functional.selu(x)
        x = self.l2(x)
        x = nn.functional.selu(x)
        x = self.l3(x)
        return x


class ModelWithPrior(nn.Module):
    def __init__(self,
                 base_model : nn.Module,
                 prior_model : nn.Module,
                 prior_scale : float = 1.0):
        super().__init__()
        self.base_model = base_model
        self.prior_model = prior_model
        self.prior_scale = prior_scale

    def forward(self, inputs):
        with torch.no_grad():
            prior_out = self.prior_model(inputs)
            prior_out = prior_out.detach()
        model_out = self.base_model(inputs)
        return model_out + (self.prior_scale * prior_out)


def train_model(x_train, y_train, base_model, prior_model):
    model = ModelWithPrior(base_model, prior_model, 1.0)
    loss_fn = nn.MSELoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)

    for epoch in range(100):
        model.train()
        preds = model(x_train)
        loss = loss_fn(preds, y_train)

        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    return model


class SinPrior(nn.Module):
    def forward(self, input):
        return torch.sin(3 * input)
# ---- end of the post's code ----


# each prior's words in titles and its tag in file names
NAMES = {MLP: ("MLP priors", "mlp_prior"), SinPrior: ("a sin(3x) prior", "sin_prior")}


def train_ensemble(dataset, prior_factory, n_models):
    """The post's bootstrap: a sampler with replacement, one full batch."""
    bootstrap_sampler = RandomSampler(dataset, True, len(dataset))
    train_dataloader = DataLoader(dataset,
                                  batch_size=len(dataset),
                                  sampler=bootstrap_sampler)
    models = []
    for k in range(n_models):
        x_b, y_b = next(iter(train_dataloader))
        models.append(train_model(x_b, y_b, MLP(), prior_factory()))
        print(f"\r{NAMES[prior_factory][0]}: {k + 1}/{n_models} models", end="", flush=True)
    print()
    return models


def pyplot():
    """matplotlib, imported when plotting (the tests import the seed's code
    from this file without it), drawing to files only."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def figure(title, ylabel="prediction"):
    fig, ax = pyplot().subplots(figsize=(8, 5), dpi=100)
    ax.set_title(title)
    ax.set_xlabel("x")
    ax.set_ylabel(ylabel)
    ax.set_xlim(-2, 2)
    ax.set_ylim(-3, 3)
    ax.grid(alpha=0.3)
    return fig, ax


def save(fig, ax, path):
    ax.legend(loc="upper left")
    fig.tight_layout()
    fig.savefig(path)
    pyplot().close(fig)
    print("wrote", path)


def plot_ensemble(models, x, y, x_test, prior, out):
    """Three figures of one ensemble; every array matplotlib gets is a
    ferrotorch tensor."""
    with torch.no_grad():
        for m in models:
            m.eval()
        preds = torch.stack([m(x_test) for m in models])  # (models, points, 1)
        priors = torch.stack([m.prior_model(x_test) for m in models])
    mean = preds.mean(0)
    std = preds.std(0)
    label, tag = NAMES[prior]

    fig, ax = figure(f"Ensemble with {label}: mean ± 2σ")
    ax.fill_between(x_test.flatten(), (mean - 2 * std).flatten(), (mean + 2 * std).flatten(),
                    color="tab:blue", alpha=0.25, label="ensemble mean ± 2σ")
    ax.plot(x_test, mean, color="navy", lw=2, label="ensemble mean")
    ax.scatter(x, y, s=10, color="tab:red", label="data", zorder=3)
    save(fig, ax, os.path.join(out, f"rpf_{tag}_ensemble.png"))

    fig, ax = figure(f"Ensemble with {label}: the members")
    for k, p in enumerate(preds):
        ax.plot(x_test, p, color="0.3", alpha=0.3, lw=1, label="members" if k == 0 else None)
    ax.scatter(x, y, s=10, color="tab:red", label="data", zorder=3)
    save(fig, ax, os.path.join(out, f"rpf_{tag}_members.png"))

    fig, ax = figure(f"The priors of the ensemble with {label} (fixed, never trained)",
                     ylabel="prior output")
    for k, p in enumerate(priors):
        ax.plot(x_test, p, color="tab:green", alpha=0.4, lw=1, label="priors" if k == 0 else None)
    save(fig, ax, os.path.join(out, f"rpf_{tag}_priors.png"))
    return mean, std


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=50, help="ensemble size (the post: 50)")
    parser.add_argument("--out", default="rpf-py", help="folder for the PNGs")
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)

    torch.manual_seed(0)
    # the Rust example's data: sin(3x) plus noise on [-1, 1]
    x = torch.linspace(-1, 1, 100).unsqueeze(1)
    y = torch.sin(3 * x) + 0.1 * torch.randn(x.shape)
    x_test = torch.linspace(-2, 2, 200).unsqueeze(1)
    dataset = TensorDataset(x, y)

    start = time.perf_counter()
    for prior in (MLP, SinPrior):
        models = train_ensemble(dataset, prior, args.models)
        mean, std = plot_ensemble(models, x, y, x_test, prior, args.out)
        inside = (x_test.abs() <= 1).flatten()
        print(f"  {NAMES[prior][0]}: mean ±2σ half-width {2 * std[inside].mean().item():.3f} "
              f"on the data, {2 * std[~inside].mean().item():.3f} away from it")
    print(f"done in {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()

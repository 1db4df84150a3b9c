"""torch.distributions cases run the same way under torch
(fixtures/gen_distributions.py) and ferrotorch (test_distributions.py):
each case builds a distribution from the library given and records its
samples (seeded), densities, moments, entropy, CDFs and reparameterized
gradients."""

import math
import warnings

import numpy as np

R = np.random.default_rng(0)


_CREATED = []


def _t(L, a, grad=False):
    t = L.tensor(np.asarray(a, dtype=np.float64))
    if grad:
        t.requires_grad_(True)
        _CREATED.append(t)
    return t


P = {  # parameters, float64
    "loc": R.normal(size=(2, 3)), "scale": R.uniform(0.5, 2.0, size=(2, 3)), "pos": R.uniform(0.5, 3.0, size=(2, 3)),
    "pos2": R.uniform(0.3, 4.0, size=(2, 3)), "probs": R.uniform(0.1, 0.9, size=(2, 3)),
    "simplex": R.dirichlet([1.0, 2.0, 3.0, 1.5], size=2), "logits": R.normal(size=(2, 4)),
    "conc4": R.uniform(0.5, 3.0, size=(2, 4)), "df": R.uniform(2.5, 6.0, size=(2, 3)),
    "counts": np.array([[3.0, 10.0, 25.0], [1.0, 7.0, 40.0]]), "rate": R.uniform(0.5, 20.0, size=(2, 3)),
    "vec": R.normal(size=(2, 3)), "cov_tril": np.array([[1.0, 0.0, 0.0], [0.3, 0.8, 0.0], [-0.2, 0.4, 1.2]]),
    "small": R.uniform(0.05, 0.9, size=(2, 3)),
}


def cases():
    """(name, factory(L), value-in-support factory(L) or None)."""
    t = _t
    return [
        ("Normal", lambda L: L.distributions.Normal(t(L, P["loc"], True), t(L, P["scale"], True)),
         lambda L: t(L, P["vec"])),
        ("Uniform", lambda L: L.distributions.Uniform(t(L, P["loc"]) - 2, t(L, P["loc"], True) + 2),
         lambda L: t(L, P["loc"] + 0.3)),
        ("Exponential", lambda L: L.distributions.Exponential(t(L, P["pos"], True)), lambda L: t(L, P["pos2"])),
        ("Laplace", lambda L: L.distributions.Laplace(t(L, P["loc"], True), t(L, P["scale"], True)),
         lambda L: t(L, P["vec"])),
        ("Cauchy", lambda L: L.distributions.Cauchy(t(L, P["loc"], True), t(L, P["scale"], True)),
         lambda L: t(L, P["vec"])),
        ("Gamma", lambda L: L.distributions.Gamma(t(L, P["pos"], True), t(L, P["pos2"], True)),
         lambda L: t(L, P["pos2"])),
        ("Gamma small shape", lambda L: L.distributions.Gamma(t(L, P["small"], True), t(L, P["pos"])),
         lambda L: t(L, P["pos2"])),
        ("Chi2", lambda L: L.distributions.Chi2(t(L, P["df"], True)), lambda L: t(L, P["pos2"])),
        ("Beta", lambda L: L.distributions.Beta(t(L, P["pos"], True), t(L, P["pos2"], True)),
         lambda L: t(L, P["probs"])),
        ("Dirichlet", lambda L: L.distributions.Dirichlet(t(L, P["conc4"], True)), lambda L: t(L, P["simplex"])),
        ("StudentT", lambda L: L.distributions.StudentT(t(L, P["df"]), t(L, P["loc"], True), t(L, P["scale"])),
         lambda L: t(L, P["vec"])),
        ("Bernoulli", lambda L: L.distributions.Bernoulli(probs=t(L, P["probs"], True)),
         lambda L: t(L, (P["vec"] > 0).astype(float))),
        ("Bernoulli logits", lambda L: L.distributions.Bernoulli(logits=t(L, P["loc"], True)),
         lambda L: t(L, (P["vec"] > 0).astype(float))),
        ("Categorical", lambda L: L.distributions.Categorical(logits=t(L, P["logits"], True)),
         lambda L: L.tensor([1, 3])),
        ("Categorical probs", lambda L: L.distributions.Categorical(probs=t(L, P["simplex"], True)),
         lambda L: L.tensor([0, 2])),
        ("OneHotCategorical", lambda L: L.distributions.OneHotCategorical(probs=t(L, P["simplex"])),
         lambda L: t(L, np.eye(4)[[1, 3]])),
        ("Binomial", lambda L: L.distributions.Binomial(t(L, P["counts"]), probs=t(L, P["probs"], True)),
         lambda L: t(L, np.floor(P["counts"] * 0.4))),
        ("Multinomial", lambda L: L.distributions.Multinomial(10, probs=t(L, P["simplex"])),
         lambda L: t(L, [[2.0, 3.0, 4.0, 1.0], [0.0, 5.0, 5.0, 0.0]])),
        ("Poisson", lambda L: L.distributions.Poisson(t(L, P["rate"], True)), lambda L: t(L, np.floor(P["rate"]))),
        ("Geometric", lambda L: L.distributions.Geometric(probs=t(L, P["probs"], True)), lambda L: t(L, P["counts"])),
        ("NegativeBinomial", lambda L: L.distributions.NegativeBinomial(t(L, P["pos"] * 3), probs=t(L, P["probs"])),
         lambda L: t(L, P["counts"])),
        ("MultivariateNormal", lambda L: L.distributions.MultivariateNormal(
            t(L, P["loc"], True), scale_tril=t(L, P["cov_tril"], True)), lambda L: t(L, P["vec"])),
        ("MultivariateNormal cov", lambda L: L.distributions.MultivariateNormal(
            t(L, P["loc"]), covariance_matrix=t(L, P["cov_tril"] @ P["cov_tril"].T)), lambda L: t(L, P["vec"])),
        ("LowRankMultivariateNormal", lambda L: L.distributions.LowRankMultivariateNormal(
            t(L, P["loc"], True), t(L, P["loc"][:, :, None] * 0.5, True), t(L, P["pos"], True)),
         lambda L: t(L, P["vec"])),
        ("LogNormal", lambda L: L.distributions.LogNormal(t(L, P["loc"], True), t(L, P["scale"])),
         lambda L: t(L, P["pos2"])),
        ("HalfNormal", lambda L: L.distributions.HalfNormal(t(L, P["scale"], True)), lambda L: t(L, P["pos2"])),
        ("HalfCauchy", lambda L: L.distributions.HalfCauchy(t(L, P["scale"], True)), lambda L: t(L, P["pos2"])),
        ("Gumbel", lambda L: L.distributions.Gumbel(t(L, P["loc"], True), t(L, P["scale"])), lambda L: t(L, P["vec"])),
        ("Weibull", lambda L: L.distributions.Weibull(t(L, P["scale"], True), t(L, P["pos"])), lambda L: t(L, P["pos2"])),
        ("Pareto", lambda L: L.distributions.Pareto(t(L, P["small"]), t(L, P["pos"])), lambda L: t(L, P["pos2"] + 1)),
        ("FisherSnedecor", lambda L: L.distributions.FisherSnedecor(t(L, P["df"]), t(L, P["df"] + 1)),
         lambda L: t(L, P["pos2"])),
        ("VonMises", lambda L: L.distributions.VonMises(t(L, P["loc"]), t(L, P["pos"])), lambda L: t(L, P["vec"])),
        ("InverseGamma", lambda L: L.distributions.InverseGamma(t(L, P["pos"]), t(L, P["pos2"])),
         lambda L: t(L, P["pos2"])),
        ("Kumaraswamy", lambda L: L.distributions.Kumaraswamy(t(L, P["pos"]), t(L, P["pos2"])),
         lambda L: t(L, P["probs"])),
        ("ContinuousBernoulli", lambda L: L.distributions.ContinuousBernoulli(probs=t(L, P["probs"], True)),
         lambda L: t(L, P["probs"])),
        ("GeneralizedPareto", lambda L: L.distributions.GeneralizedPareto(t(L, P["loc"]), t(L, P["scale"]),
                                                                          t(L, P["small"] - 0.5)),
         lambda L: t(L, P["loc"] + 0.5)),
        ("RelaxedBernoulli", lambda L: L.distributions.RelaxedBernoulli(t(L, 0.5), probs=t(L, P["probs"], True)),
         lambda L: t(L, P["probs"])),
        ("RelaxedOneHotCategorical", lambda L: L.distributions.RelaxedOneHotCategorical(
            t(L, 0.7), logits=t(L, P["logits"], True)), lambda L: t(L, P["simplex"])),
        ("LogisticNormal", lambda L: L.distributions.LogisticNormal(t(L, P["loc"]), t(L, P["scale"])),
         lambda L: t(L, P["simplex"])),
        ("Independent Normal", lambda L: L.distributions.Independent(
            L.distributions.Normal(t(L, P["loc"], True), t(L, P["scale"])), 1), lambda L: t(L, P["vec"])),
        ("MixtureSameFamily", lambda L: L.distributions.MixtureSameFamily(
            L.distributions.Categorical(logits=t(L, P["logits"][:, :3], True)),
            L.distributions.Normal(t(L, P["loc"]), t(L, P["scale"]))), lambda L: t(L, P["vec"][:, 0])),
        ("LKJCholesky", lambda L: L.distributions.LKJCholesky(3, t(L, [1.5, 0.8])), None),
        ("Wishart", lambda L: L.distributions.Wishart(t(L, [4.0, 5.0]), scale_tril=t(L, P["cov_tril"])), None),
        ("TransformedDistribution", lambda L: L.distributions.TransformedDistribution(
            L.distributions.Normal(t(L, P["loc"], True), t(L, P["scale"])),
            [L.distributions.transforms.AffineTransform(1.0, 2.0), L.distributions.transforms.SigmoidTransform()]),
         lambda L: t(L, P["probs"])),
    ]


def _vals(x):
    if isinstance(x, (int, float)):
        return [float(x)]
    x = x.detach().double().reshape(-1).tolist()
    return [v if math.isfinite(v) else str(v) for v in x]


def _try(fn):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn()
    except (NotImplementedError, ValueError, RuntimeError) as e:
        return f"error: {type(e).__name__}"


def run(L, name, make, value):
    L.manual_seed(0)
    _CREATED.clear()
    d = make(L)
    params = list(_CREATED)
    out = {"batch_shape": list(d.batch_shape), "event_shape": list(d.event_shape)}
    out["sample"] = _try(lambda: _vals(d.sample((2,))))
    for attr in ("mean", "variance", "stddev", "mode"):
        out[attr] = _try(lambda: _vals(getattr(d, attr)))
    out["entropy"] = _try(lambda: _vals(d.entropy()))
    if value is not None:
        v = value(L)
        out["log_prob"] = _try(lambda: _vals(d.log_prob(v)))
        out["cdf"] = _try(lambda: _vals(d.cdf(v)))
    out["icdf"] = _try(lambda: _vals(d.icdf(L.tensor(np.full(tuple(d.batch_shape), 0.3)))))
    if d.has_rsample:
        L.manual_seed(1)
        s = d.rsample((3,))
        out["rsample"] = _vals(s)
        if params:
            grads = L.autograd.grad((s * s).sum(), params, allow_unused=True, retain_graph=True)
            out["rsample_grads"] = [_vals(g) if g is not None else None for g in grads]
    if value is not None:
        lp = _try(lambda: d.log_prob(value(L)))
        if params and not isinstance(lp, str):
            grads = L.autograd.grad(lp.sum(), params, allow_unused=True, retain_graph=True)
            out["log_prob_grads"] = [_vals(g) if g is not None else None for g in grads]
    return out


KL_PAIRS = [
    ("Normal", "Normal"), ("Bernoulli", "Bernoulli"), ("Beta", "Beta"), ("Categorical", "Categorical probs"),
    ("Dirichlet", "Dirichlet"), ("Exponential", "Exponential"), ("Gamma", "Gamma small shape"),
    ("Laplace", "Laplace"), ("Poisson", "Poisson"), ("Gumbel", "Gumbel"), ("Geometric", "Geometric"),
    ("MultivariateNormal", "MultivariateNormal cov"), ("HalfNormal", "HalfNormal"), ("Cauchy", "Cauchy"),
    ("Uniform", "Normal"), ("Exponential", "Gamma"), ("Beta", "Uniform"), ("LogNormal", "LogNormal"),
    ("Independent Normal", "Independent Normal"), ("ContinuousBernoulli", "ContinuousBernoulli"),
    ("Normal", "Laplace"), ("Gamma", "Normal"), ("LowRankMultivariateNormal", "MultivariateNormal cov"),
]


def run_kl(L, a, b):
    table = {name: (make, value) for name, make, value in cases()}
    L.manual_seed(0)
    p = table[a][0](L)
    q = table[b][0](L)
    return _try(lambda: _vals(L.distributions.kl_divergence(p, q)))

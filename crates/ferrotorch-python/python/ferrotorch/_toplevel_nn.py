"""torch's top-level names of ``nn.functional`` ops whose top-level
signature is ATen's rather than the functional one: losses take an int
``reduction`` (0 none, 1 mean, 2 sum), the alpha dropouts a required
``train``, ``adaptive_max_pool1d`` always returns its indices,
``instance_norm`` takes every argument, and the in-place activations
``selu_``, ``celu_``, ``threshold_`` and ``rrelu_``."""
import warnings

from .nn import functional as F

# ATen's int reductions -> the functional names
_REDUCTIONS = {v: k for k, v in F._REDUCTIONS.items()}


def _reduction(name, reduction):
    if isinstance(reduction, bool) or not isinstance(reduction, int) or not 0 <= reduction <= 2:
        raise TypeError(f"{name}(): argument 'reduction' must be int (0 none, 1 mean, 2 sum), "
                        f"not {reduction!r}")
    return _REDUCTIONS[reduction]


def kl_div(input, target, reduction=1, *, log_target=False):
    """``torch.kl_div``: ``reduction=1`` is the plain mean (no batchmean
    warning at this level)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return F.kl_div(input, target, reduction=_reduction("kl_div", reduction),
                        log_target=log_target)


def hinge_embedding_loss(input, target, margin=1.0, reduction=1):
    return F.hinge_embedding_loss(input, target, margin=margin,
                                  reduction=_reduction("hinge_embedding_loss", reduction))


def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    return F.poisson_nll_loss(input, target, log_input=log_input, full=full, eps=eps,
                              reduction=_reduction("poisson_nll_loss", reduction))


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=1):
    return F.margin_ranking_loss(input1, input2, target, margin=margin,
                                 reduction=_reduction("margin_ranking_loss", reduction))


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=1):
    return F.cosine_embedding_loss(input1, input2, target, margin=margin,
                                   reduction=_reduction("cosine_embedding_loss", reduction))


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-06, swap=False,
                        reduction=1):
    return F.triplet_margin_loss(anchor, positive, negative, margin=margin, p=p, eps=eps,
                                 swap=swap,
                                 reduction=_reduction("triplet_margin_loss", reduction))


def alpha_dropout(input, p, train):
    return F.alpha_dropout(input, p, train)


def feature_alpha_dropout(input, p, train):
    return F.feature_alpha_dropout(input, p, train)


def adaptive_max_pool1d(input, output_size):
    """``torch.adaptive_max_pool1d``: ``(values, indices)``."""
    return F.adaptive_max_pool1d(input, output_size, return_indices=True)


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum,
                  eps, cudnn_enabled):
    return F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats,
                           momentum, eps)


def selu_(input):
    return F.selu(input, inplace=True)


def celu_(input, alpha=1.0):
    return F.celu(input, alpha, inplace=True)


def threshold_(input, threshold, value):
    return F.threshold(input, threshold, value, inplace=True)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    if generator is not None:
        raise TypeError("rrelu_: generator= is not supported")
    return F.rrelu(input, lower, upper, training, inplace=True)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    if generator is not None:
        raise TypeError("rrelu: generator= is not supported")
    return F.rrelu(input, lower, upper, training)


NAMES = ("kl_div", "hinge_embedding_loss", "poisson_nll_loss", "margin_ranking_loss",
         "cosine_embedding_loss", "triplet_margin_loss", "alpha_dropout",
         "feature_alpha_dropout", "adaptive_max_pool1d", "instance_norm", "selu_", "celu_",
         "threshold_", "rrelu_", "rrelu")

"""F.ctc_loss against the definition: the probability of a target is the
sum over every frame-wise path that collapses to it (repeats merged, blanks
dropped), enumerated by brute force on small inputs."""

import itertools
import math

import numpy as np
import pytest

import ferrotorch as torch
import ferrotorch.nn.functional as F
from ferrotorch.autograd import gradcheck

rng = np.random.default_rng(6)


def collapse(path, blank=0):
    out, prev = [], None
    for p in path:
        if p != prev and p != blank:
            out.append(p)
        prev = p
    return out


def brute_force(logp, target):
    """-log Σ over paths of length T that collapse to target."""
    t, c = logp.shape
    total = 0.0
    for path in itertools.product(range(c), repeat=t):
        if collapse(path) == list(target):
            total += math.exp(sum(logp[i, k] for i, k in enumerate(path)))
    return -math.log(total) if total > 0 else math.inf


def test_ctc_loss_is_the_sum_over_alignments():
    t, n, c = 5, 3, 3
    x = rng.standard_normal((t, n, c))
    logp = x - np.log(np.exp(x).sum(2, keepdims=True))
    targets = torch.tensor([[1, 2], [2, 2], [1, 0]])
    in_len, tg_len = torch.tensor([5, 4, 5]), torch.tensor([2, 2, 1])
    got = F.ctc_loss(torch.tensor(logp), targets, in_len, tg_len, reduction="none")
    want = [brute_force(logp[:5, 0], [1, 2]), brute_force(logp[:4, 1], [2, 2]),
            brute_force(logp[:5, 2], [1])]
    np.testing.assert_allclose(np.asarray(got.numpy()), want, rtol=1e-10)
    mean = F.ctc_loss(torch.tensor(logp), targets, in_len, tg_len)
    assert mean.item() == pytest.approx(np.mean(np.array(want) / np.array([2, 2, 1])), rel=1e-10)
    # concatenated targets mean the same
    flat = torch.tensor([1, 2, 2, 2, 1])
    np.testing.assert_allclose(np.asarray(F.ctc_loss(torch.tensor(logp), flat, in_len, tg_len, reduction="none").numpy()),
                               want, rtol=1e-10)


def test_impossible_targets_and_gradients():
    logp = torch.tensor(rng.standard_normal((3, 1, 4))).log_softmax(2)
    # 3 frames cannot emit 1, 1, 1 (repeats need blanks between them)
    tg = torch.tensor([[1, 1, 1]])
    assert math.isinf(F.ctc_loss(logp, tg, torch.tensor([3]), torch.tensor([3]), reduction="sum").item())
    assert F.ctc_loss(logp, tg, torch.tensor([3]), torch.tensor([3]), reduction="sum",
                      zero_infinity=True).item() == 0.0
    x = torch.tensor(rng.standard_normal((6, 2, 4)), requires_grad=True)
    tg = torch.tensor([[1, 3], [2, 0]])
    assert gradcheck(lambda a: F.ctc_loss(a.log_softmax(2), tg, torch.tensor([6, 5]), torch.tensor([2, 1])), (x,))


def test_gradient_wrt_log_probs_is_torchs_convention():
    # torch's ctc backward returns exp(log_probs) - posteriors: the true
    # derivative with respect to log_probs (minus the posteriors) plus
    # exp(log_probs), i.e. the gradient for the logits behind a log_softmax
    t, c = 4, 3
    x = rng.standard_normal((t, 1, c))
    logp = x - np.log(np.exp(x).sum(2, keepdims=True))
    lp = torch.tensor(logp, requires_grad=True)
    F.ctc_loss(lp, torch.tensor([[1, 2]]), torch.tensor([t]), torch.tensor([2]), reduction="sum").backward()
    eps = 1e-6
    true = np.zeros((t, c))
    for i in range(t):
        for k in range(c):
            up, down = logp[:, 0].copy(), logp[:, 0].copy()
            up[i, k] += eps
            down[i, k] -= eps
            true[i, k] = (brute_force(up, [1, 2]) - brute_force(down, [1, 2])) / (2 * eps)
    np.testing.assert_allclose(np.asarray(lp.grad.numpy())[:, 0], np.exp(logp[:, 0]) + true, atol=1e-6)

"""torch.masked reductions against NumPy masked arrays and hand values."""

import math

import numpy as np
import pytest

import ferrotorch as torch
from ferrotorch import masked
from ferrotorch.autograd import gradcheck

rng = np.random.default_rng(4)
A = rng.standard_normal((3, 5))
M = rng.random((3, 5)) > 0.4
M[2] = False  # a fully masked-out row


def close(t, want, tol=1e-9):
    np.testing.assert_allclose(np.asarray(t.detach().numpy()), want, rtol=tol, atol=tol, equal_nan=True)


def test_reductions_skip_masked_out_elements():
    x, m = torch.tensor(A), torch.tensor(M)
    ma = np.ma.masked_array(A, ~M)
    close(masked.sum(x, 1, mask=m), ma.sum(1).filled(0))
    close(masked.prod(x, 1, mask=m), ma.prod(1).filled(1))
    close(masked.amax(x, 1, mask=m), ma.max(1).filled(-np.inf))
    close(masked.amin(x, 1, mask=m), ma.min(1).filled(np.inf))
    close(masked.mean(x, 1, mask=m), ma.mean(1).filled(np.nan))
    close(masked.var(x, 1, mask=m)[:2], ma.var(1, ddof=1)[:2])
    close(masked.std(x, 1, unbiased=False, mask=m)[:2], ma.std(1)[:2])
    close(masked.norm(x, 2.0, 1, mask=m), np.sqrt((np.where(M, A, 0) ** 2).sum(1)))
    close(masked.cumsum(x, 1, mask=m), np.cumsum(np.where(M, A, 0), 1))
    close(masked.logsumexp(x, 1, mask=m)[:2], np.log(np.where(M, np.exp(A), 0).sum(1))[:2])
    # no mask: the plain reduction
    close(masked.sum(x), A.sum())
    assert masked.median(x, 1, mask=m)[2].isnan().item()


def test_normalizations():
    x, m = torch.tensor(A), torch.tensor(M)
    s = masked.softmax(x, 1, mask=m)
    e = np.where(M, np.exp(A), 0)
    close(s[:2], (e / e.sum(1, keepdims=True))[:2])
    assert math.isnan(s[2, 0].item())  # nothing to normalize over
    close(masked.log_softmax(x, 1, mask=m)[:2], np.log((e / e.sum(1, keepdims=True))[:2]))
    n = masked.normalize(x, 2.0, 1, mask=m)
    w = np.where(M, A, 0)
    close(n, w / np.maximum(np.linalg.norm(w, axis=1, keepdims=True), 1e-12))


def test_gradients_reach_only_kept_elements():
    x = torch.tensor(A, requires_grad=True)
    m = torch.tensor(M)
    masked.sum(x, 1, mask=m).sum().backward()
    close(x.grad, M.astype(float))
    assert gradcheck(lambda t: masked.mean(t[:2], 1, mask=m[:2]), (x,))
    with pytest.raises(ValueError, match="floating point"):
        masked.mean(torch.tensor([1, 2]), mask=torch.tensor([True, False]))

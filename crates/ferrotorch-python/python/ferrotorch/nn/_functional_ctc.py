"""``F.ctc_loss``: the connectionist temporal classification loss, by the
forward (alpha) recursion over the blank-extended targets in log space,
written with tensor ops over the whole batch so that autograd gives its
gradient. Re-exported by ``functional``."""

import ferrotorch as _ft

# A stand-in for log(0) that keeps every step finite (so gradients through
# impossible alignments are 0, not NaN); anything below -_BIG / 2 is -inf.
_BIG = 1e30


def _logaddexp(a, b):
    m = _ft.maximum(a, b)
    return m + _ft.log(_ft.exp(a - m) + _ft.exp(b - m))


def _recursions(lp, ext_t, valid, skip_t, in_len, tg_len, blank):
    """Log alpha and log beta (T, N, S'), emissions included in both, and
    the negative log likelihood per sequence."""
    t_max, n, _ = lp.shape
    s_max = ext_t.shape[1]
    neg = _ft.full((), -_BIG, dtype=lp.dtype)
    pad1 = _ft.full((n, 1), -_BIG, dtype=lp.dtype)
    pad2 = _ft.full((n, 2), -_BIG, dtype=lp.dtype)
    start = _ft.tensor([[s < 2 and s < 2 * tg_len[b] + 1 for s in range(s_max)] for b in range(n)])
    alphas = [_ft.where(start, lp[0], neg)]
    for t in range(1, t_max):
        a = alphas[-1]
        prev1 = _ft.cat([pad1, a[:, :-1]], 1)
        prev2 = _ft.where(skip_t, _ft.cat([pad2, a[:, :-2]], 1), neg)
        new = _ft.where(valid, _logaddexp(_logaddexp(a, prev1), prev2) + lp[t], neg)
        running = _ft.tensor([t < in_len[b] for b in range(n)]).unsqueeze(1)
        alphas.append(_ft.where(running, new, neg))
    # beta runs backwards from each sequence's last frame; s may come from
    # s + 1, and from s + 2 where s + 2 may skip back to s
    skip_next = _ft.cat([skip_t[:, 2:], _ft.zeros(n, 2, dtype=_ft.bool)], 1)
    last = [[s in (2 * tg_len[b], 2 * tg_len[b] - 1) and s < 2 * tg_len[b] + 1 for s in range(s_max)]
            for b in range(n)]
    last = _ft.tensor(last)
    betas = [None] * t_max
    b_next = None
    for t in range(t_max - 1, -1, -1):
        at_end = _ft.tensor([t == in_len[b] - 1 for b in range(n)]).unsqueeze(1)
        inside = _ft.tensor([t < in_len[b] - 1 for b in range(n)]).unsqueeze(1)
        init = _ft.where(last, lp[t], neg)
        if b_next is None:
            rec = _ft.full((n, s_max), -_BIG, dtype=lp.dtype)
        else:
            nxt1 = _ft.cat([b_next[:, 1:], pad1], 1)
            nxt2 = _ft.where(skip_next, _ft.cat([b_next[:, 2:], pad2], 1), neg)
            rec = _ft.where(valid, _logaddexp(_logaddexp(b_next, nxt1), nxt2) + lp[t], neg)
        b_t = _ft.where(at_end, init, _ft.where(inside, rec, neg))
        betas[t] = b_t
        b_next = b_t
    alpha, beta = _ft.stack(alphas), _ft.stack(betas)
    ends = _ft.tensor([max(v - 1, 0) for v in in_len])
    a_last = alpha[ends, _ft.arange(n)]                                        # (N, S')
    idx = _ft.tensor([2 * tg_len[b] for b in range(n)]).unsqueeze(1)
    end1 = a_last.gather(1, idx).squeeze(1)
    end2 = a_last.gather(1, (idx - 1).clamp(min=0)).squeeze(1)
    end2 = _ft.where(_ft.tensor(tg_len) > 0, end2, _ft.full((), -_BIG, dtype=lp.dtype))
    return alpha, beta, -_logaddexp(end1, end2)


class _CTC(_ft.autograd.Function):
    """The per-sequence loss with torch's backward: ``exp(log_probs)``
    minus the alignment posteriors, the gradient with respect to the
    logits behind a ``log_softmax`` (what torch returns for ``log_probs``
    itself, whatever produced it)."""

    @staticmethod
    def forward(ctx, log_probs, ext_t, valid, skip_t, in_len, tg_len, blank):
        with _ft.no_grad():
            t_max, n, c = log_probs.shape
            lp = log_probs.gather(2, ext_t.unsqueeze(0).expand(t_max, n, ext_t.shape[1]))
            alpha, beta, nll = _recursions(lp, ext_t, valid, skip_t, in_len, tg_len, blank)
            # posterior of each (t, s), then summed per class
            w = _ft.exp(alpha + beta - lp + nll.view(1, n, 1))
            w = _ft.where(valid.unsqueeze(0), w, _ft.zeros((), dtype=w.dtype))
            post = _ft.zeros(t_max, n, c, dtype=log_probs.dtype).scatter_add(
                2, ext_t.unsqueeze(0).expand(t_max, n, ext_t.shape[1]), w)
            grad = _ft.exp(log_probs) - post
            frames = _ft.tensor([[t < in_len[b] for b in range(n)] for t in range(t_max)]).unsqueeze(2)
            grad = _ft.where(frames & (nll < _BIG / 2).view(1, n, 1), grad, _ft.zeros((), dtype=grad.dtype))
        ctx.save_for_backward(grad)
        return nll

    @staticmethod
    def backward(ctx, g):
        (grad,) = ctx.saved_tensors
        return grad * g.view(1, -1, 1), None, None, None, None, None, None


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",
             zero_infinity=False):
    """``F.ctc_loss(log_probs (T, N, C), targets (N, S) or concatenated,
    input_lengths, target_lengths, blank=0, reduction='mean',
    zero_infinity=False)``; ``mean`` divides each loss by its target
    length, then averages."""
    unbatched = log_probs.dim() == 2
    if unbatched:
        log_probs = log_probs.unsqueeze(1)
        targets = targets.unsqueeze(0) if targets.dim() == 1 else targets
    t_max, n, c = log_probs.shape
    in_len = [int(v) for v in (input_lengths.tolist() if isinstance(input_lengths, _ft.Tensor) else input_lengths)]
    tg_len = [int(v) for v in (target_lengths.tolist() if isinstance(target_lengths, _ft.Tensor) else target_lengths)]
    if isinstance(in_len, int) or len(in_len) != n or len(tg_len) != n:
        raise RuntimeError("ctc_loss: input_lengths and target_lengths must have one entry per batch element")
    if not 0 <= blank < c:
        raise RuntimeError("blank must be in label range")
    # per-sequence targets
    if targets.dim() == 2:
        seqs = [targets[b, :tg_len[b]].tolist() for b in range(n)]
    else:
        flat, seqs, at = targets.tolist(), [], 0
        for length in tg_len:
            seqs.append(flat[at:at + length])
            at += length
    for b in range(n):
        if in_len[b] > t_max or in_len[b] < 0:
            raise RuntimeError(f"Expected input_lengths to have value at most {t_max}, but got value {in_len[b]}")
    s_max = 2 * max(tg_len + [0]) + 1
    # extended labels (blank, l1, blank, l2, ..., blank), padded with blank
    ext = [[blank] * s_max for _ in range(n)]
    skip = [[False] * s_max for _ in range(n)]  # may come from s - 2
    for b, seq in enumerate(seqs):
        for i, lab in enumerate(seq):
            ext[b][2 * i + 1] = int(lab)
            if i > 0 and int(lab) != int(seq[i - 1]):
                skip[b][2 * i + 1] = True
    ext_t = _ft.tensor(ext, dtype=_ft.int64)                                   # (N, S')
    valid = _ft.tensor([[s < 2 * tg_len[b] + 1 for s in range(s_max)] for b in range(n)])
    skip_t = _ft.tensor(skip)
    loss = _CTC.apply(log_probs, ext_t, valid, skip_t, in_len, tg_len, blank)
    inf = _ft.full((), float("inf"), dtype=loss.dtype)
    impossible = loss > _BIG / 2
    if zero_infinity:
        # no gradient either: the where sends none to the impossible ones
        loss = _ft.where(impossible, _ft.zeros((), dtype=loss.dtype), loss)
    else:
        loss = _ft.where(impossible, inf, loss)
    if reduction == "none":
        return loss.squeeze(0) if unbatched else loss
    if reduction == "sum":
        return loss.sum()
    if reduction == "mean":
        return (loss / _ft.tensor(tg_len, dtype=loss.dtype).clamp(min=1)).mean()
    raise ValueError(f"{reduction} is not a valid value for reduction")

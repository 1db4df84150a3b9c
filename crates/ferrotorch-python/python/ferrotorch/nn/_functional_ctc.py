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
    neg = _ft.full((), -_BIG, dtype=log_probs.dtype)
    lp = log_probs.gather(2, ext_t.unsqueeze(0).expand(t_max, n, s_max))      # (T, N, S')
    start = _ft.tensor([[s < 2 and s < 2 * tg_len[b] + 1 for s in range(s_max)] for b in range(n)])
    alpha = _ft.where(start, lp[0], neg)
    pad1 = _ft.full((n, 1), -_BIG, dtype=log_probs.dtype)
    pad2 = _ft.full((n, 2), -_BIG, dtype=log_probs.dtype)
    for t in range(1, t_max):
        prev1 = _ft.cat([pad1, alpha[:, :-1]], 1)
        prev2 = _ft.where(skip_t, _ft.cat([pad2, alpha[:, :-2]], 1), neg)
        new = _logaddexp(_logaddexp(alpha, prev1), prev2) + lp[t]
        new = _ft.where(valid, new, neg)
        running = _ft.tensor([t < in_len[b] for b in range(n)]).unsqueeze(1)
        alpha = _ft.where(running, new, alpha)
    last = _ft.tensor([2 * tg_len[b] for b in range(n)]).unsqueeze(1)
    end1 = alpha.gather(1, last).squeeze(1)
    end2 = alpha.gather(1, (last - 1).clamp(min=0)).squeeze(1)
    end2 = _ft.where(_ft.tensor(tg_len) > 0, end2, _ft.full((), -_BIG, dtype=log_probs.dtype))
    loss = -_logaddexp(end1, end2)
    inf = _ft.full((), float("inf"), dtype=loss.dtype)
    impossible = loss > _BIG / 2
    if zero_infinity:
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

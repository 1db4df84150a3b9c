"""``F.multi_head_attention_forward``: the computation behind
``nn.MultiheadAttention`` (which calls it), on ``(L, N, E)`` or unbatched
``(L, E)`` inputs, with torch's arguments (separate or packed input
projections, learned ``bias_k``/``bias_v``, ``add_zero_attn``,
``static_k``/``static_v``, boolean or additive masks, ``is_causal``).
Re-exported by ``functional``."""

import math

from .. import _C


def _attn_mask_to_float(mask, dtype):
    if mask is None:
        return None
    if mask.dtype is _C.bool:
        zeros = _C._call_op("zeros", (tuple(mask.shape),), {"dtype": dtype})
        return zeros.masked_fill(mask, float("-inf"))
    return mask.to(dtype)


def _pad_last(mask, dtype):
    """``mask`` (as an additive float mask) with one more, unmasked, key
    position at the end."""
    from . import functional as F

    if mask is None:
        return None
    return F.pad(_attn_mask_to_float(mask, dtype), (0, 1))


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads,
                                 in_proj_weight, in_proj_bias, bias_k, bias_v, add_zero_attn,
                                 dropout_p, out_proj_weight, out_proj_bias, training=True,
                                 key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None,
                                 k_proj_weight=None, v_proj_weight=None, static_k=None,
                                 static_v=None, average_attn_weights=True, is_causal=False):
    """torch's ``F.multi_head_attention_forward``; returns ``(output,
    weights)`` (``weights`` is None unless ``need_weights``)."""
    from . import functional as F

    batched = query.dim() == 3
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    L, N, E = query.shape
    if E != embed_dim_to_check:
        raise AssertionError(
            f"was expecting embedding dimension of {embed_dim_to_check}, but got {E}")
    if E % num_heads:
        raise AssertionError(f"embed_dim {E} not divisible by num_heads {num_heads}")
    S = key.size(0)
    H, D = num_heads, E // num_heads
    if use_separate_proj_weight:
        w = (q_proj_weight, k_proj_weight, v_proj_weight)
    else:
        w = in_proj_weight.chunk(3, 0)
    b = in_proj_bias.chunk(3, 0) if in_proj_bias is not None else (None,) * 3
    q = F.linear(query, w[0], b[0])
    k = F.linear(key, w[1], b[1]) if static_k is None else None
    v = F.linear(value, w[2], b[2]) if static_v is None else None
    if is_causal and attn_mask is None:
        attn_mask = _C._call_op("ones", ((L, S),), {"dtype": _C.bool}).triu(1)
    if bias_k is not None and bias_v is not None:
        # one learned key/value appended to every sequence
        k = _C._call_op("cat", ([k, bias_k.expand(1, N, E)],), {})
        v = _C._call_op("cat", ([v, bias_v.expand(1, N, E)],), {})
        attn_mask = _pad_last(attn_mask, q.dtype)
        key_padding_mask = _pad_last(key_padding_mask, q.dtype)
    # (N·H, S, D)
    q = q.reshape(L, N * H, D).transpose(0, 1)
    k = static_k if static_k is not None else k.reshape(k.size(0), N * H, D).transpose(0, 1)
    v = static_v if static_v is not None else v.reshape(v.size(0), N * H, D).transpose(0, 1)
    if add_zero_attn:
        # one all-zero key/value appended after them
        zeros = _C._call_op("zeros", ((N * H, 1, D),), {"dtype": k.dtype})
        k = _C._call_op("cat", ([k, zeros], 1), {})
        v = _C._call_op("cat", ([v, zeros], 1), {})
        attn_mask = _pad_last(attn_mask, q.dtype)
        key_padding_mask = _pad_last(key_padding_mask, q.dtype)
    S = k.size(1)
    scores = q.matmul(k.transpose(1, 2)) * (1.0 / math.sqrt(D))
    mask = _attn_mask_to_float(attn_mask, scores.dtype)
    if mask is not None:
        scores = scores + (mask if mask.dim() == 2 else mask.reshape(N * H, L, S))
    if key_padding_mask is not None:
        kpm = _attn_mask_to_float(key_padding_mask, scores.dtype)  # (N, S)
        scores = (scores.reshape(N, H, L, S) + kpm.reshape(N, 1, 1, S)).reshape(N * H, L, S)
    attn = F.softmax(scores, -1)
    if dropout_p > 0.0 and training:
        attn = F.dropout(attn, dropout_p, True)
    out = attn.matmul(v).transpose(0, 1).reshape(L, N, E)
    out = F.linear(out, out_proj_weight, out_proj_bias)
    weights = None
    if need_weights:
        weights = attn.reshape(N, H, L, S)
        if average_attn_weights:
            weights = weights.mean(1)
        if not batched:
            weights = weights.squeeze(0)
    if not batched:
        out = out.squeeze(1)
    return out, weights

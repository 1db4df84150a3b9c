"""ATen's underscore ops that torch exposes at the top level and programs
reach for (``torch._softmax_backward_data``, ``torch._chunk_cat``, the
masked-index pair, the batch-norm variants, ``native_dropout_backward``,
``max_pool2d_with_indices_backward``, ``_upsample_bilinear2d_aa``,
``_safe_softmax``), and
``linalg.matrix_sqrth``/``linalg.polar``, as compositions of the native ops
(so they record graphs)."""

def _ft():
    import ferrotorch

    return ferrotorch


def _softmax_backward_data(grad_output, output, dim, input_dtype):
    """The gradient of ``softmax`` at its ``output``:
    ``y * (g - sum(g * y, dim))``, in ``input_dtype``."""
    g = grad_output * output
    return (g - output * g.sum(dim, keepdim=True)).to(input_dtype)


def _chunk_cat(tensors, dim, num_chunks):
    """Each tensor cut into ``num_chunks`` chunks along ``dim`` (the last
    ones zero-padded to an equal size), flattened past ``dim``, and the
    ``i``-th chunks of all tensors concatenated: shape
    ``(*lead, num_chunks, total)``."""
    ft = _ft()
    if not tensors:
        raise RuntimeError("_chunk_cat expects a non-empty input tensor list")
    ref = tensors[0]
    d = dim % ref.dim()
    parts = []
    for t in tensors:
        # the tensors may differ in rank past `dim`
        if t.dim() <= d or tuple(t.shape[:d]) != tuple(ref.shape[:d]):
            raise RuntimeError("_chunk_cat expects same sizes of 0,...,dim-1 dimensions for "
                               "all tensors")
        size = t.shape[d]
        per = -(-size // num_chunks)  # ceil
        pad = per * num_chunks - size
        if pad:
            shape = list(t.shape)
            shape[d] = pad
            t = ft.cat([t, ft.zeros(tuple(shape), dtype=t.dtype)], d)
        lead = list(t.shape[:d])
        parts.append(t.reshape(*lead, num_chunks, -1))
    return ft.cat(parts, d + 1)


def _unsafe_masked_index(x, mask, indices, fill):
    """``x[indices]`` where ``mask`` holds, ``fill`` elsewhere (indices
    outside ``x`` are clamped where masked out)."""
    ft = _ft()
    safe = []
    for k, i in enumerate(indices):
        if i is None:
            safe.append(None)
            continue
        n = x.shape[k]
        safe.append(ft.where(mask, i, ft.zeros((), dtype=i.dtype)).clamp(-n, n - 1))
    return ft.where(mask, x[tuple(safe)], ft.tensor(fill, dtype=x.dtype))


def _unsafe_masked_index_put_accumulate(x, mask, indices, values):
    """``x.index_put(indices, values, accumulate=True)`` with the values
    outside ``mask`` zeroed."""
    ft = _ft()
    safe = [None if i is None else ft.where(mask, i, ft.zeros((), dtype=i.dtype))
            for i in indices]
    vals = ft.where(mask, values, ft.zeros((), dtype=values.dtype))
    return x.index_put(tuple(safe), vals, accumulate=True)


def _native_batch_norm_legit(input, weight, bias, running_mean, running_var=None,
                             training=None, momentum=None, eps=None):
    """``native_batch_norm`` under torch's ``_legit`` name; the ``no_stats``
    overload ``(input, weight, bias, training, momentum, eps)`` has no
    running statistics."""
    if isinstance(running_mean, bool):  # no_stats: (input, weight, bias, training, momentum, eps)
        running_mean, running_var, training, momentum, eps = (
            None, None, running_mean, running_var, training)
    return _ft().native_batch_norm(input, weight, bias, running_mean, running_var, training,
                                   momentum, eps)


def _batch_norm_with_update(input, weight, bias, running_mean, running_var, momentum, eps):
    """Training-mode batch norm that updates the running statistics:
    ``(out, save_mean, save_rstd, reserve)`` (``reserve`` empty on the CPU)."""
    ft = _ft()
    out, mean, rstd = ft.native_batch_norm(input, weight, bias, running_mean, running_var,
                                           True, momentum, eps)
    return out, mean, rstd, ft.empty(0, dtype=ft.uint8)


def native_dropout_backward(grad_output, mask, scale):
    """``grad_output * mask * scale``."""
    return grad_output * mask.to(grad_output.dtype) * scale


def max_pool2d_with_indices_backward(grad_output, input, kernel_size, stride, padding, dilation,
                                     ceil_mode, indices):
    """The gradient of ``max_pool2d`` at ``input``: each output's gradient
    added at its recorded index."""
    ft = _ft()
    lead = list(input.shape[:-2])
    flat = ft.zeros(tuple(lead) + (input.shape[-2] * input.shape[-1],), dtype=grad_output.dtype)
    out = flat.scatter_add(-1, indices.reshape(*lead, -1), grad_output.reshape(*lead, -1))
    # torch's derivative for ``input`` is zero, but the result is in its
    # graph: add an exact 0 that depends on it (NaN-safe, unlike input * 0)
    zero = ft.where(ft.zeros_like(input, dtype=ft.bool), input, 0.0)
    return out.reshape(tuple(input.shape)) + zero


def _aa(mode, input, output_size, align_corners, scales_h, scales_w, scale_factors):
    from .nn._functional_resample import resample

    if scale_factors is not None:
        scales_h, scales_w = scale_factors
    if output_size is None:
        output_size = [int(input.shape[2] * scales_h), int(input.shape[3] * scales_w)]
    return resample(input, list(output_size), [scales_h, scales_w], mode, bool(align_corners),
                    True)


def _upsample_bilinear2d_aa(input, output_size, align_corners, scales_h=None, scales_w=None,
                            scale_factors=None):
    """Antialiased bilinear resampling (``interpolate(..., antialias=True)``);
    the ``.vec`` overload passes ``scale_factors``."""
    return _aa("bilinear", input, output_size, align_corners, scales_h, scales_w, scale_factors)


def _upsample_bicubic2d_aa(input, output_size, align_corners, scales_h=None, scales_w=None,
                           scale_factors=None):
    """Antialiased bicubic resampling."""
    return _aa("bicubic", input, output_size, align_corners, scales_h, scales_w, scale_factors)


def matrix_sqrth(A):
    """``torch.linalg.matrix_sqrth``: the symmetric (Hermitian) positive
    definite square root ``V diag(√λ) Vᴴ`` of a symmetric (Hermitian)
    positive-definite matrix, from its lower triangle."""
    ft = _ft()
    lam, v = ft.linalg.eigh(A)
    return (v * lam.sqrt().unsqueeze(-2).to(v.dtype)).matmul(v.mH)


def polar(A, *, out=None):
    """``torch.linalg.polar``: ``(U, H)`` with ``A = U H``, ``U`` with
    orthonormal columns and ``H`` positive semidefinite, from the SVD
    ``A = W S Vᴴ``: ``U = W Vᴴ``, ``H = V S Vᴴ``."""
    ft = _ft()
    if out is not None:
        raise TypeError("linalg.polar: out= is not supported")
    m, n = A.shape[-2], A.shape[-1]
    if m < n:
        raise RuntimeError(f"linalg.polar: input must have at least as many rows as columns, "
                           f"but got {m} by {n} matrices")
    w, s, vh = ft.linalg.svd(A, full_matrices=False)
    u = w.matmul(vh)
    h = (vh.mH * s.unsqueeze(-2).to(vh.dtype)).matmul(vh)
    return u, h


def _safe_softmax(input, dim, dtype=None):
    """``softmax`` with rows that are all ``-inf`` giving zeros, not NaN
    (what attention with a fully masked row needs)."""
    ft = _ft()
    dead = (input == float("-inf")).all(dim, keepdim=True)
    # dead rows softmax as zeros first, so neither value nor gradient is NaN
    out = ft.softmax(input.masked_fill(dead, 0), dim, dtype=dtype)
    return out.masked_fill(dead, 0)


#: The ATen op names this file provides (``torch.ops.aten.<name>`` finds them).
ATEN = ["_softmax_backward_data", "_chunk_cat", "_unsafe_masked_index",
        "_unsafe_masked_index_put_accumulate", "_native_batch_norm_legit",
        "_batch_norm_with_update", "native_dropout_backward",
        "max_pool2d_with_indices_backward", "_upsample_bilinear2d_aa",
        "_upsample_bicubic2d_aa", "segment_reduce", "_segment_reduce", "_safe_softmax"]


def install(namespace):
    for name in ATEN:
        namespace.setdefault(name, globals()[name])
    # dispatcher ops whose underscore names torch also has at the top level
    for name in ["_scaled_dot_product_flash_attention_for_cpu"]:
        namespace.setdefault(name, getattr(namespace["ops"].aten, name))
    linalg = namespace["linalg"]
    for name in ("matrix_sqrth", "polar"):
        if not hasattr(linalg, name):
            setattr(linalg, name, globals()[name])


_SEGMENT_EMPTY = {"sum": 0.0, "prod": 1.0, "max": float("-inf"), "min": float("inf"),
                  "mean": float("nan")}


def segment_reduce(data, reduce, *, lengths=None, indices=None, offsets=None, axis=0,
                   unsafe=False, initial=None):
    """``torch.segment_reduce``: reduce consecutive segments of ``data``
    along ``axis`` (``lengths``, or ``offsets`` of their starts and end);
    ``initial`` starts each segment's reduction (and is an empty segment's
    value). ``mean`` divides by the segment's length. By ``scatter_reduce``,
    so it records a graph."""
    import numpy as np

    ft = _ft()
    if reduce not in _SEGMENT_EMPTY:
        raise RuntimeError(f"segment_reduce: reduce must be one of sum, mean, max, min, prod; got {reduce}")
    if indices is not None:
        raise RuntimeError("segment_reduce(): indices based reduction is not supported yet.")
    if (lengths is None) == (offsets is None):
        raise RuntimeError("segment_reduce(): Either lengths or offsets must be defined")
    axis = axis % data.dim()
    lens = (np.diff(offsets.numpy(), axis=-1) if lengths is None else lengths.numpy()).astype(np.int64)
    lead = tuple(data.shape[:axis])
    lens2 = np.broadcast_to(lens, lead + lens.shape[-1:]).reshape(-1, lens.shape[-1])
    n = data.shape[axis]
    if not unsafe:
        if (lens2 < 0).any():
            raise RuntimeError("segment_reduce(): lengths contains negative value!")
        if (lens2.sum(-1) != n).any():
            raise RuntimeError(f"segment_reduce(): Expected all rows of lengths along axis to sum "
                               f"to data.size(lengths.dim()-1) but got {lens2.sum(-1).tolist()}")
    nseg = lens2.shape[-1]
    seg = np.stack([np.repeat(np.arange(nseg), row) for row in lens2]).reshape(lead + (n,))
    rest = tuple(data.shape[axis + 1:])
    idx = ft.tensor(seg.reshape(seg.shape + (1,) * len(rest))).expand(*lead, n, *rest)
    out_shape = lead + (nseg,) + rest
    fill = _SEGMENT_EMPTY[reduce] if initial is None else float(initial)
    base = ft.full(out_shape, 0.0 if reduce == "mean" else fill, dtype=data.dtype)
    if reduce == "mean":
        total = base.scatter_reduce(axis, idx, data, "sum", include_self=False)
        if initial is not None:
            total = total + float(initial)
        count = ft.tensor(lens2.reshape(lead + (nseg,) + (1,) * len(rest)), dtype=data.dtype)
        out = total / count.clamp(min=1)
        return ft.where(count == 0, ft.tensor(fill, dtype=data.dtype), out)
    mode = {"max": "amax", "min": "amin"}.get(reduce, reduce)
    return base.scatter_reduce(axis, idx, data, mode, include_self=initial is not None)


def _segment_reduce(data, reduce, *, lengths=None, indices=None, offsets=None, axis=0,
                    unsafe=False, initial=None):
    """``torch._segment_reduce``: :func:`segment_reduce`."""
    return segment_reduce(data, reduce, lengths=lengths, indices=indices, offsets=offsets,
                          axis=axis, unsafe=unsafe, initial=initial)

"""torch functions written as compositions of the native ops, as torch
writes several of them in Python: ``nonzero_static``,
``as_strided_scatter``, ``native_layer_norm``/``native_batch_norm``/
``native_group_norm`` (the forward results with their saved statistics),
``histogramdd``, and the randomized low-rank factorizations
``svd_lowrank``/``pca_lowrank`` (Halko, Martinsson and Tropp 2009,
Algorithms 4.4 and 5.1; the same draws from the same seed as torch)."""

import builtins as _b

from . import _C
from .return_types import named

_histogramdd_type = named("histogramdd", ("hist", "bin_edges"))


def _ft():
    import ferrotorch

    return ferrotorch


def nonzero_static(input, *, size, fill_value=-1):
    """The first ``size`` rows of ``nonzero(input)``, padded with
    ``fill_value`` rows."""
    ft = _ft()
    if size < 0:
        raise RuntimeError(f"nonzero_static: 'size' must be an non-negative integer, got {size}")
    nz = ft.nonzero(input)
    n, d = nz.shape
    if n >= size:
        return nz[:size].clone()
    pad = ft.full((size - n, d), fill_value, dtype=nz.dtype)
    return ft.cat([nz, pad], 0)


def as_strided_scatter(input, src, size, stride, storage_offset=None):
    """A copy of ``input`` with ``src`` written into its
    ``as_strided(size, stride, storage_offset)`` view."""
    ft = _ft()
    offset = input.storage_offset() if storage_offset is None else storage_offset
    # the positions the view covers, as flat indices of a contiguous copy
    idx = ft.arange(input.numel()).as_strided(tuple(size), tuple(stride), offset)
    if tuple(idx.shape) != tuple(src.shape):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = "
                           f"{list(src.shape)}, slice size = {list(idx.shape)}")
    flat = input.reshape(-1).scatter(0, idx.reshape(-1), src.reshape(-1).to(input.dtype))
    return flat.reshape(tuple(input.shape))


def native_layer_norm(input, normalized_shape, weight, bias, eps):
    """``(layer_norm(...), mean, rstd)``, the statistics shaped
    ``(*batch, 1, ..., 1)``."""
    ft = _ft()
    k = len(normalized_shape)
    dims = tuple(range(input.dim() - k, input.dim()))
    mean = input.detach().mean(dims, keepdim=True)
    var = input.detach().var(dims, unbiased=False, keepdim=True)
    rstd = (var + eps).rsqrt()
    out = ft.nn.functional.layer_norm(input, tuple(normalized_shape), weight, bias, eps)
    return out, mean.detach(), rstd.detach()


def native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps):
    """``(batch_norm(...), save_mean, save_invstd)``: the batch statistics
    when training (and the running ones updated in place), empty tensors
    otherwise, as torch."""
    ft = _ft()
    out = ft.nn.functional.batch_norm(input, running_mean, running_var, weight, bias, training,
                                      momentum, eps)
    if not training:
        empty = ft.empty(0, dtype=input.dtype)
        return out, empty, empty.clone()
    dims = [d for d in range(input.dim()) if d != 1]
    mean = input.detach().mean(dims)
    var = input.detach().var(dims, unbiased=False)
    return out, mean, (var + eps).rsqrt()


def native_group_norm(input, weight, bias, N, C, HxW, group, eps):
    """``(group_norm(...), mean, rstd)``, the statistics shaped ``(N, group)``."""
    ft = _ft()
    out = ft.nn.functional.group_norm(input, group, weight, bias, eps)
    g = input.reshape(N, group, -1)
    # (torch's group-norm statistics are differentiable outputs)
    mean = g.mean(-1)
    rstd = (g.var(-1, unbiased=False) + eps).rsqrt()
    return out, mean, rstd


def histogramdd(input, bins=10, *, range=None, weight=None, density=False):
    """``torch.histogramdd``: the ``D``-dimensional histogram of the rows of
    ``input`` (``(..., D)``), with ``bins`` an int, one int per dimension,
    or one tensor of edges per dimension; ``range`` is ``[lo0, hi0, lo1,
    ...]``. Returns ``(hist, bin_edges)``."""
    ft = _ft()
    d = input.shape[-1]
    x = input.reshape(-1, d)
    if isinstance(bins, int):
        bins = [bins] * d
    bins = list(bins)
    if len(bins) != d:
        raise RuntimeError(f"histogramdd: expected {d} sequences of bin edges for each of the {d} "
                           f"dimensions of input but got {len(bins)}")
    if range is not None and len(range) != 2 * d:
        raise RuntimeError(f"histogramdd: for a {d}-dimensional histogram range should have "
                           f"{2 * d} elements, but got {len(range)}")
    edges, index, keep = [], None, None
    for k in _b.range(d):
        col = x[:, k].contiguous()
        b = bins[k]
        if isinstance(b, _C.Tensor):
            e = b.to(input.dtype)
            lo, hi = e[0], e[-1]
        else:
            rng = None if range is None else (range[2 * k], range[2 * k + 1])
            e = ft.histogram(col, b, range=rng).bin_edges
            lo, hi = (col.min(), col.max()) if rng is None else rng
        edges.append(e)
        nb = e.shape[0] - 1
        # bin i holds [e_i, e_{i+1}); the last bin also its right edge (and
        # what rounding of the computed edges leaves just beyond it)
        i = ft.searchsorted(e, col, right=True) - 1
        i = ft.where(col >= e[-1], nb - 1, i).clamp(0, nb - 1)
        inside = (col >= lo) & (col <= hi)
        keep = inside if keep is None else keep & inside
        index = i if index is None else index * nb + i
    counts = [e.shape[0] - 1 for e in edges]
    total = 1
    for c in counts:
        total *= c
    w = ft.ones(x.shape[0], dtype=input.dtype) if weight is None else weight.reshape(-1).to(input.dtype)
    w = w * keep.to(input.dtype)
    flat = ft.zeros(total, dtype=input.dtype).index_add(0, ft.where(keep, index, 0), w)
    hist = flat.reshape(counts)
    if density:
        vol = None
        for k, e in enumerate(edges):
            shape = [1] * d
            shape[k] = counts[k]
            widths = (e[1:] - e[:-1]).reshape(shape)
            vol = widths if vol is None else vol * widths
        hist = hist / (hist.sum() * vol)
    return _histogramdd_type(hist, tuple(edges))


def _approximate_basis(A, q, niter, M):
    ft = _ft()
    dtype = A.dtype if A.is_floating_point() or A.is_complex() else ft.get_default_dtype()
    R = ft.randn(A.shape[-1], q, dtype=dtype)
    X = A.matmul(R)
    if M is not None:
        X = X - M.matmul(R)
    Q = ft.linalg.qr(X).Q
    for _ in _b.range(niter):
        X = A.mH.matmul(Q)
        if M is not None:
            X = X - M.mH.matmul(Q)
        Q = ft.linalg.qr(X).Q
        X = A.matmul(Q)
        if M is not None:
            X = X - M.matmul(Q)
        Q = ft.linalg.qr(X).Q
    return Q


def _svd_lowrank(A, q, niter, M):
    ft = _ft()
    m, n = A.shape[-2:]
    if M is not None:
        M = M.broadcast_to(tuple(A.shape))
    if m < n:  # work on the tall one
        A = A.mH
        M = None if M is None else M.mH
    Q = _approximate_basis(A, q, niter, M)
    B = Q.mH.matmul(A)
    if M is not None:
        B = B - Q.mH.matmul(M)
    U, S, Vh = ft.linalg.svd(B, full_matrices=False)
    V = Vh.mH
    U = Q.matmul(U)
    if m < n:
        U, V = V, U
    return U, S, V


def svd_lowrank(A, q=6, niter=2, M=None):
    """``(U, S, V)`` of a rank-``q`` approximation of ``A - M`` by
    randomized subspace iteration (``niter`` rounds)."""
    return _svd_lowrank(A, 6 if q is None else q, 2 if niter is None else niter, M)


def pca_lowrank(A, q=None, center=True, niter=2):
    """``(U, S, V)``: the principal components of ``A``'s rows (centred by
    their mean when ``center``), by :func:`svd_lowrank`."""
    m, n = A.shape[-2:]
    if q is None:
        q = min(6, m, n)
    elif not 0 <= q <= min(m, n):
        raise ValueError(
            f"q(={q}) must be non-negative integer and not greater than min(m, n)={min(m, n)}")
    if not niter >= 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if not center:
        return _svd_lowrank(A, q, niter, None)
    return _svd_lowrank(A - A.mean(-2, keepdim=True), q, niter, None)


_native_einsum = None


def einsum(*args):
    """``torch.einsum(equation, *operands)``, ``einsum(equation, [operands])``
    or the sublist form ``einsum(op1, sub1, op2, sub2, ..., [out])``."""
    global _native_einsum
    if _native_einsum is None:
        _native_einsum = lambda eq, ops: _C._call_op("einsum", (eq, list(ops)), {})  # noqa: E731
    if not args:
        raise TypeError("einsum(): must specify the equation string and at least one operand, or at least one "
                        "operand and its subscripts list")
    if isinstance(args[0], str):
        eq, ops = args[0], args[1:]
        if len(ops) == 1 and isinstance(ops[0], (list, tuple)):
            ops = ops[0]
        return _native_einsum(eq, ops)
    # sublist format: operands interleaved with lists of dim indices
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

    def sub(lst):
        out = ""
        for s in lst:
            if s is Ellipsis:
                out += "..."
            elif isinstance(s, int) and 0 <= s < len(letters):
                out += letters[s]
            else:
                raise ValueError(f"einsum(): subscript in subscript list is not within the valid range [0, 52), "
                                 f"got {s}")
        return out

    ops, subs = list(args[0::2]), list(args[1::2])
    out = None
    if len(ops) > len(subs):
        out = ops.pop()
        if not isinstance(out, (list, tuple)):
            raise TypeError("einsum(): the sublist format needs a subscript list after each operand")
    eq = ",".join(sub(s) for s in subs) + ("->" + sub(out) if out is not None else "")
    return _native_einsum(eq, ops)

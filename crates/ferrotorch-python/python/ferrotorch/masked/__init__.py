"""``torch.masked`` on strided tensors: reductions and normalizations that
skip the elements a boolean ``mask`` marks False. Each fills the masked-out
elements with the identity of its reduction (0 for sums, 1 for products,
-inf for maxima, ...) and runs the ordinary op, so gradients come from those
ops; ``mean``, ``var`` and ``std`` divide by the count of kept elements (NaN
where a slice keeps none)."""

import math

import ferrotorch as _ft

__all__ = ["sum", "prod", "cumsum", "cumprod", "amax", "amin", "argmax", "argmin", "mean",
           "median", "logsumexp", "logaddexp", "norm", "var", "std", "softmax", "log_softmax",
           "softmin", "normalize"]

_WIDEN = {_ft.uint8, _ft.bool, _ft.int8, _ft.int16, _ft.int32}


def _widened(dtype):
    """Small integer and bool dtypes sum in int64, as torch."""
    return _ft.int64 if dtype in _WIDEN else dtype


def _dims(dim, ndim):
    """``dim`` as a sorted tuple of wrapped dims (None or () = all)."""
    if dim is None or dim == ():
        return tuple(range(ndim))
    n = max(ndim, 1)
    ds = (dim,) if isinstance(dim, int) else tuple(dim)
    out = []
    for d in ds:
        if d in out:
            raise RuntimeError(f"dim={d} appears multiple times in the list of dims")
        if d >= n or d < -n:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {d})")
        out.append(d % n)
    return tuple(sorted(out))


def _mask(input, mask):
    """The mask broadcast to ``input``'s shape, as bool."""
    if mask.dim() > input.dim():
        raise IndexError("_input_mask expected broadcastable mask (got mask dimensionality higher than of the input)")
    return _ft.broadcast_to(mask, input.shape).to(_ft.bool)


def _identity(op, input, ord=2.0):
    dt = input.dtype
    if op in ("sum", "cumsum", "norm"):
        if op == "norm" and ord == float("-inf"):
            return math.inf
        return 0
    if op in ("prod", "cumprod"):
        return 1
    if op in ("amax", "argmax", "logsumexp", "logaddexp"):
        return -math.inf if dt.is_floating_point else _ft.iinfo(dt).min if dt is not _ft.bool else False
    if op in ("amin", "argmin"):
        return math.inf if dt.is_floating_point else _ft.iinfo(dt).max if dt is not _ft.bool else True
    if op == "median":
        return math.nan
    raise NotImplementedError(f"identity of {op} on {dt} input")


def _fill(op, input, mask, *args):
    """``input`` with masked-out elements replaced by ``op``'s identity."""
    if mask is None:
        return input
    fill = _ft.full((), _identity(op, input, *args), dtype=input.dtype)
    return _ft.where(_mask(input, mask), input, fill)


def sum(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    dtype = dtype or _widened(input.dtype)
    return _ft.sum(_fill("sum", input, mask), _dims(dim, input.dim()), bool(keepdim), dtype=dtype)


def prod(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    dtype = dtype or _widened(input.dtype)
    out = _fill("prod", input, mask).to(dtype)
    for d in reversed(_dims(dim, input.dim())):
        out = out.prod(d, keepdim=bool(keepdim))
    return out


def cumsum(input, dim, *, dtype=None, mask=None):
    dtype = dtype or input.dtype
    return _ft.cumsum(_fill("sum", input, mask), _dims(dim, input.dim())[0], dtype=dtype).to(dtype)


def cumprod(input, dim, *, dtype=None, mask=None):
    dtype = dtype or input.dtype
    return _ft.cumprod(_fill("prod", input, mask), _dims(dim, input.dim())[0], dtype=dtype).to(dtype)


def amax(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    dtype = dtype or input.dtype
    return _ft.amax(_fill("amax", input, mask), _dims(dim, input.dim()), bool(keepdim)).to(dtype)


def amin(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    dtype = dtype or input.dtype
    return _ft.amin(_fill("amin", input, mask), _dims(dim, input.dim()), bool(keepdim)).to(dtype)


def argmax(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    dtype = dtype or input.dtype
    return _ft.argmax(_fill("argmax", input, mask), dim, bool(keepdim)).to(dtype)


def argmin(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    dtype = dtype or input.dtype
    return _ft.argmin(_fill("argmin", input, mask), dim, bool(keepdim)).to(dtype)


def _count(input, dim, keepdim, mask):
    if mask is None:
        return sum(_ft.ones(input.shape, dtype=_ft.int64), dim, keepdim=keepdim)
    return _mask(input, mask).sum(dim=_dims(dim, input.dim()), keepdim=bool(keepdim))


def mean(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    source = "Optional" if dtype is not None else "Input"
    dtype = dtype or input.dtype
    if not (dtype.is_floating_point or dtype.is_complex):
        raise ValueError(f"mean(): Could not infer output dtype. {source} dtype must be either "
                         f"a floating point or complex dtype. Got: {dtype}")
    total = sum(input, dim, keepdim=keepdim, dtype=dtype, mask=mask)
    return total / _count(input, dim, keepdim, mask)


def median(input, dim=-1, *, keepdim=False, dtype=None, mask=None):
    dtype = dtype or input.dtype
    is_float = input.is_floating_point()
    if not is_float:
        input = input.to(_ft.float32)
    out = _ft.nanmedian(_fill("median", input, mask), _dims(dim, input.dim())[0], keepdim).values
    if is_float:
        return out
    if _ft.isnan(out).any():
        raise ValueError("masked median expects no fully masked out rows if dtype is not floating point")
    return out.to(dtype)


def logsumexp(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    dtype = dtype or input.dtype
    return _ft.logsumexp(_fill("logsumexp", input, mask), _dims(dim, input.dim()), keepdim=keepdim).to(dtype)


def logaddexp(input, other, *, dtype=None, input_mask=None, other_mask=None):
    dtype = dtype or input.dtype
    return _ft.logaddexp(_fill("logaddexp", input, input_mask),
                         _fill("logaddexp", other, other_mask)).to(dtype)


def norm(input, ord=2.0, dim=None, *, keepdim=False, dtype=None, mask=None):
    dtype = dtype or input.dtype
    filled = _fill("norm", input, mask, ord)
    return _ft.linalg.vector_norm(filled, ord, _dims(dim, input.dim()), bool(keepdim), dtype=dtype)


def _std_var(input, dim, unbiased, correction, keepdim, dtype, mask, take_sqrt):
    if unbiased is not None and correction is not None:
        raise AssertionError("Only one of unbiased and correction may be given")
    c = 1.0
    if unbiased is not None:
        c = 1.0 if unbiased else 0.0
    if correction is not None:
        c = float(correction)
    if dtype is None:
        dtype = input.dtype
        if not (dtype.is_floating_point or dtype.is_complex):
            dtype = _ft.float32
    count = _count(input, dim, True, mask)
    sample_mean = sum(input, dim, keepdim=True, dtype=dtype, mask=mask) / count
    x = input - sample_mean
    total = sum(x * x.conj(), dim, keepdim=keepdim, dtype=dtype, mask=mask)
    if not keepdim:
        count = count.reshape(total.shape)
    if c != 0:
        count = _ft.clamp(count.to(dtype.to_real() if dtype.is_complex else dtype) - c, min=0)
    out = (total / count).to(dtype)
    return _ft.sqrt(out) if take_sqrt else out


def var(input, dim=None, unbiased=None, *, correction=None, keepdim=False, dtype=None, mask=None):
    return _std_var(input, dim, unbiased, correction, keepdim, dtype, mask, False)


def std(input, dim=None, unbiased=None, *, correction=None, keepdim=False, dtype=None, mask=None):
    return _std_var(input, dim, unbiased, correction, keepdim, dtype, mask, True)


def softmax(input, dim, *, dtype=None, mask=None):
    dtype = dtype or input.dtype
    return _ft.nn.functional.softmax(_fill("amax", input, mask), _dims(dim, input.dim())[0], dtype=dtype)


def log_softmax(input, dim, *, dtype=None, mask=None):
    dtype = dtype or input.dtype
    return _ft.nn.functional.log_softmax(_fill("amax", input, mask), _dims(dim, input.dim())[0], dtype=dtype)


def softmin(input, dim, *, dtype=None, mask=None):
    dtype = dtype or input.dtype
    return _ft.nn.functional.softmin(_fill("amin", input, mask), _dims(dim, input.dim())[0], dtype=dtype)


def normalize(input, ord, dim, *, eps=1e-12, dtype=None, mask=None):
    dtype = dtype or input.dtype
    filled = _fill("sum", input, mask)
    nrm = norm(input, ord, dim, keepdim=True, dtype=dtype, mask=mask)
    denom = _ft.maximum(nrm, _ft.full((), eps, dtype=nrm.dtype))
    return filled / denom

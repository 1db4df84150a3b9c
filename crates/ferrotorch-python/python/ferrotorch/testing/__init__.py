"""``torch.testing``: ``assert_close`` with torch's default tolerances and
messages, and ``make_tensor`` drawing the values torch draws for the same
seed."""

import collections.abc
import math
import warnings

from .. import _C

__all__ = ["assert_close", "make_tensor", "assert_allclose"]


def _precisions():
    import ferrotorch as ft

    p = {ft.float16: (0.001, 1e-5), ft.bfloat16: (0.016, 1e-5), ft.float32: (1.3e-6, 1e-5),
         ft.float64: (1e-7, 1e-7), ft.complex32: (0.001, 1e-5), ft.complex64: (1.3e-6, 1e-5),
         ft.complex128: (1e-7, 1e-7)}
    return p


class _Mismatch(AssertionError):
    pass


def _fail(msg, default, trail):
    text = default if msg is None else (msg(default) if callable(msg) else msg)
    if msg is None and trail:
        text += f"\n\nThe failure occurred for item {trail}"
    raise AssertionError(text)


def _tolerances(dtype, rtol, atol):
    if (rtol is None) != (atol is None):
        raise ValueError(f"Both 'rtol' and 'atol' must be either specified or omitted, "
                         f"but got no {'rtol' if rtol is None else 'atol'}.")
    if rtol is not None:
        return rtol, atol
    return _precisions().get(dtype, (0.0, 0.0))


def _fmt(v):
    return repr(v) if not isinstance(v, float) else str(v)


def _compare_scalars(actual, expected, rtol, atol, equal_nan, msg, trail):
    kinds = (bool, int, float, complex)
    if type(actual) is bool or type(expected) is bool:
        if actual != expected:
            _fail(msg, f"Booleans mismatch: {actual} is not {expected}", trail)
        return
    if rtol is None and atol is None:
        rtol, atol = (1e-7, 1e-7) if isinstance(actual, (float, complex)) or isinstance(expected, (float, complex)) \
            else (0.0, 0.0)
    elif (rtol is None) != (atol is None):
        _tolerances(None, rtol, atol)
    if not isinstance(actual, kinds) or not isinstance(expected, kinds):
        raise TypeError(f"No comparison pair was able to handle inputs of type {type(actual)} and {type(expected)}.")
    if type(actual) is not type(expected):
        _fail(msg, f"The values for attribute 'type' do not match: {type(actual)} != {type(expected)}.", trail)
    a, e = complex(actual), complex(expected)
    nan = (math.isnan(a.real) or math.isnan(a.imag)) and (math.isnan(e.real) or math.isnan(e.imag))
    if a == e or (equal_nan and nan):
        return
    diff = abs(a - e)
    if math.isfinite(diff) and diff <= atol + rtol * abs(e):
        return
    rel = diff / abs(e) if e != 0 else (math.inf if diff else 0.0)
    close = "close" if isinstance(expected, (float, complex)) else "equal"
    _fail(msg, f"Scalars are not {close}!\n\nExpected {expected} but got {actual}.\n"
               f"Absolute difference: {diff} (up to {atol} allowed)\n"
               f"Relative difference: {rel} (up to {rtol} allowed)", trail)


def _as_tensor_like(x):
    if isinstance(x, _C.Tensor):
        return x
    if type(x).__module__ == "numpy" and type(x).__name__ == "ndarray":
        import ferrotorch as ft

        return ft.from_numpy(x)
    return None


def _compare_tensors(actual, expected, rtol, atol, equal_nan, check_dtype, check_stride, msg, trail):
    if actual.shape != expected.shape:
        _fail(msg, f"The values for attribute 'shape' do not match: {actual.shape} != {expected.shape}.", trail)
    if check_dtype and actual.dtype != expected.dtype:
        _fail(msg, f"The values for attribute 'dtype' do not match: {actual.dtype} != {expected.dtype}.", trail)
    if check_stride and actual.stride() != expected.stride():
        _fail(msg, f"The values for attribute 'stride()' do not match: {actual.stride()} != {expected.stride()}.",
              trail)
    if actual.dtype != expected.dtype:
        import ferrotorch as ft

        common = ft.promote_types(actual.dtype, expected.dtype)
        actual, expected = actual.to(common), expected.to(common)
    rtol, atol = _tolerances(actual.dtype, rtol, atol)
    # torch measures the differences in the compared dtype (integers:
    # absolute in int64, relative in the default float32); computed with
    # tensor ops, so the package needs no NumPy here
    import ferrotorch as ft

    a = actual.detach().resolve_conj()
    e = expected.detach().resolve_conj()
    if a.dtype == ft.bfloat16:
        a, e = a.float(), e.float()
    if a.dtype == ft.bool:
        a, e = a.long(), e.long()
    floating = a.is_floating_point() or a.is_complex()
    if floating:
        diff = (a - e).abs()
        ok = (a == e) | (diff <= atol + rtol * e.abs())
        if equal_nan:
            ok |= a.isnan() & e.isnan()
        rel_all = diff / e.abs()
    else:
        diff = (a.long() - e.long()).abs()
        ok = diff <= atol + rtol * e.double().abs()
        rel_all = diff.float() / e.float().abs()
    if bool(ok.all()):
        return
    n, bad = ok.numel(), int((~ok).sum())
    i_abs = _argmax_index(diff.masked_fill(ok, 0))
    rel = rel_all.masked_fill(ok, 0)
    i_rel = _argmax_index(rel)
    idx = lambda i: "(" + ", ".join(str(int(j)) for j in i) + ("," if len(i) == 1 else "") + ")"  # noqa: E731
    if actual.dim() == 0:  # torch reports a 0-dim tensor as a scalar, in double
        av, ev = a.item(), e.item()
        d = abs(av - ev)
        r = d / abs(ev) if ev != 0 else (math.inf if d else 0.0)
        _fail(msg, f"Scalars are not {'close' if floating else 'equal'}!\n\nExpected {ev} but got {av}.\n"
                   f"Absolute difference: {d} (up to {atol} allowed)\n"
                   f"Relative difference: {r} (up to {rtol} allowed)", trail)
    if floating:
        text = (f"Tensor-likes are not close!\n\nMismatched elements: {bad} / {n} ({100 * bad / n:.1f}%)\n"
                f"Greatest absolute difference: {_num(diff[i_abs])} at index {idx(i_abs)} (up to {atol} allowed)\n"
                f"Greatest relative difference: {_num(rel[i_rel])} at index {idx(i_rel)} (up to {rtol} allowed)")
    else:
        text = (f"Tensor-likes are not equal!\n\nMismatched elements: {bad} / {n} ({100 * bad / n:.1f}%)\n"
                f"Greatest absolute difference: {int(diff[i_abs])} at index {idx(i_abs)}\n"
                f"Greatest relative difference: {_num(rel[i_rel])} at index {idx(i_rel)}")
    _fail(msg, text, trail)


def _argmax_index(t):
    """The index (a tuple) of ``t``'s largest element, NaN counting as
    the largest, as ``np.unravel_index(np.argmax(...))`` gives it."""
    flat = t.reshape(-1).double()
    flat = flat.masked_fill(flat.isnan(), math.inf)
    k = int(flat.argmax()) if flat.numel() else 0
    index = []
    for size in reversed(t.shape):
        index.append(k % size)
        k //= size
    return tuple(reversed(index))


def _num(v):
    v = float(v)
    return "nan" if math.isnan(v) else repr(v)


def _bf16():
    import ferrotorch as ft

    return ft.bfloat16


def _compare(actual, expected, trail, opts):
    ta, te = _as_tensor_like(actual), _as_tensor_like(expected)
    if ta is not None and te is not None:
        return _compare_tensors(ta, te, opts["rtol"], opts["atol"], opts["equal_nan"], opts["check_dtype"],
                                opts["check_stride"], opts["msg"], _trail(trail))
    if ta is not None or te is not None:
        raise TypeError(f"No comparison pair was able to handle inputs of type {type(actual)} and {type(expected)}.")
    if isinstance(actual, collections.abc.Mapping) and isinstance(expected, collections.abc.Mapping):
        if set(actual) != set(expected):
            raise AssertionError(f"The keys of the mappings do not match:\nMissing keys in the actual mapping: "
                                 f"{sorted(set(expected) - set(actual), key=str)}\nAdditional keys in the actual "
                                 f"mapping: {sorted(set(actual) - set(expected), key=str)}")
        for k in expected:
            _compare(actual[k], expected[k], trail + [k], opts)
        return
    seqs = (collections.abc.Sequence,)
    if isinstance(actual, seqs) and isinstance(expected, seqs) and not isinstance(actual, str) \
            and not isinstance(expected, str):
        if len(actual) != len(expected):
            raise AssertionError(f"The length of the sequences mismatch: {len(actual)} != {len(expected)}"
                                 + (f"\n\nThe failure occurred for item {_trail(trail)}" if trail else ""))
        for i, (a, e) in enumerate(zip(actual, expected)):
            _compare(a, e, trail + [i], opts)
        return
    return _compare_scalars(actual, expected, opts["rtol"], opts["atol"], opts["equal_nan"], opts["msg"],
                            _trail(trail))


def _trail(trail):
    return "".join(f"[{k!r}]" for k in trail) if trail else ""


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None, equal_nan=False,
                 check_device=True, check_dtype=True, check_layout=True, check_stride=False, msg=None):
    """Assert that ``actual`` and ``expected`` are close: tensors (with
    torch's per-dtype tolerances, shape/dtype/stride checks), scalars,
    and sequences or mappings of them, with torch's messages."""
    opts = dict(rtol=rtol, atol=atol, equal_nan=equal_nan, check_dtype=check_dtype, check_stride=check_stride,
                msg=msg)
    if (rtol is None) != (atol is None):
        _tolerances(None, rtol, atol)
    _compare(actual, expected, [], opts)


def assert_allclose(actual, expected, rtol=None, atol=None, equal_nan=True, msg=""):
    """Deprecated in torch (it warns): ``assert_close`` with dtype checks off."""
    warnings.warn("`torch.testing.assert_allclose()` is deprecated since 1.12 and will be removed in a future "
                  "release. Please use `torch.testing.assert_close()` instead.", FutureWarning, stacklevel=2)
    import ferrotorch as ft

    if not isinstance(actual, _C.Tensor):
        actual = ft.tensor(actual)
    if not isinstance(expected, _C.Tensor):
        expected = ft.tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        rtol, atol = _precisions().get(ft.promote_types(actual.dtype, expected.dtype), (0.0, 0.0))
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=True,
                 check_dtype=False, check_stride=False, msg=msg or None)


def make_tensor(*shape, dtype, device, low=None, high=None, requires_grad=False, noncontiguous=False,
                exclude_zero=False, memory_format=None):
    """A tensor of ``shape`` with values drawn uniformly from [low, high)
    (defaults: [-9, 9) for floats, [-9, 10) for integers, both values for
    bool), the same values torch draws after the same seed."""
    import ferrotorch as ft

    ints = (ft.uint8, ft.int8, ft.int16, ft.int32, ft.int64)
    floats = (ft.float16, ft.bfloat16, ft.float32, ft.float64, ft.complex32, ft.complex64, ft.complex128)

    def low_high(low, high, lo_incl, hi_excl, d_low, d_high):
        low = d_low if low is None else low
        high = d_high if high is None else high
        if any(isinstance(v, float) and math.isnan(v) for v in (low, high)):
            raise ValueError(f"`low` and `high` cannot be NaN, but got low={low} and high={high}")
        if low == high and dtype in floats:
            warnings.warn("Passing `low==high` to `torch.testing.make_tensor` for floating or complex types is "
                          "deprecated since 2.1 and will be removed in 2.3. Use `torch.full(...)` instead.",
                          FutureWarning, stacklevel=3)
        elif low >= high:
            raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
        elif high < lo_incl or low >= hi_excl:
            raise ValueError(f"The value interval specified by `low` and `high` is [{low}, {high}), "
                             f"but {dtype} only supports [{lo_incl}, {hi_excl})")
        low, high = min(max(low, lo_incl), hi_excl), min(max(high, lo_incl), hi_excl)
        if dtype in ints or dtype == ft.bool:
            return math.ceil(low), math.ceil(high)
        return low, high

    if len(shape) == 1 and isinstance(shape[0], collections.abc.Sequence):
        shape = shape[0]
    shape = tuple(shape)
    if noncontiguous and memory_format is not None:
        raise ValueError(f"The parameters `noncontiguous` and `memory_format` are mutually exclusive, but got "
                         f"noncontiguous={noncontiguous} and memory_format={memory_format}")
    if requires_grad and (dtype in ints or dtype == ft.bool):
        raise ValueError(f"`requires_grad=True` is not supported for boolean and integral dtypes, "
                         f"but got dtype={dtype}")
    noncontiguous = noncontiguous and math.prod(shape) > 1
    if noncontiguous:
        shape = (*shape[:-1], 2 * shape[-1])
    if dtype == ft.bool:
        lo, hi = low_high(low, high, 0, 2, 0, 2)
        result = ft.randint(lo, hi, shape, dtype=dtype)
    elif dtype in ints:
        info = ft.iinfo(dtype)
        lo, hi = low_high(low, high, info.min, info.max + (1 if dtype != ft.int64 else 0), -9, 10)
        result = ft.randint(lo, hi, shape, dtype=dtype)
    elif dtype in floats:
        fi = ft.finfo(dtype)
        lo, hi = low_high(low, high, fi.min, fi.max, -9, 9)
        result = ft.empty(shape, dtype=dtype)
        target = ft.view_as_real(result) if result.is_complex() else result
        if hi - lo >= ft.finfo(target.dtype).max:
            target.uniform_(lo / 2, hi / 2).mul_(2)
        else:
            target.uniform_(lo, hi)
    else:
        raise TypeError(f"The requested dtype '{dtype}' is not supported by torch.testing.make_tensor(). "
                        "To request support, file an issue at: https://github.com/pytorch/pytorch/issues")
    if noncontiguous:
        result = result[..., 1::2]
    elif memory_format is not None:
        result = result.clone(memory_format=memory_format)
    if exclude_zero:
        fill = 1 if (dtype in ints or dtype == ft.bool) else ft.finfo(dtype).tiny
        result = result.masked_fill(result == 0, fill)
    if dtype in floats:
        result.requires_grad_(requires_grad)
    return result

"""Batching rules (Note [Batching rules] in ``_batched.py``): for a
function's name, how to compute every example at once on the physical
tensors (mapped dim first). A rule returns ``NotImplemented`` for a form
it does not cover, and the call falls back to one call per example."""

from .. import _C
from ._batched import BatchedTensor, dispatch, is_batched, level_size

_REQ = object()  # a dim argument with no default


def _ft():
    import ferrotorch

    return ferrotorch


def _tensor_like(x):
    return isinstance(x, (_C.Tensor, BatchedTensor))


def _rank(x, level):
    """``x``'s rank as the function sees it at ``level``."""
    return x._value.dim() - 1 if is_batched(x, level) else x.dim()


def _pad(phys, r, target):
    """A physical tensor of logical rank ``r`` with ``target - r`` size-1
    dims after the mapped dim (aligns it for broadcasting)."""
    for _ in range(target - r):
        phys = phys.unsqueeze(1)
    return phys


def _expand(x, level):
    """An unbatched ``x`` as a physical tensor of ``level`` (a view)."""
    n = level_size(level)
    return x.unsqueeze(0).expand((n,) + tuple(x.shape))


def _phys(x, level):
    """``x``'s physical tensor at ``level`` (expanded when unbatched)."""
    return x._value if is_batched(x, level) else _expand(x, level)


def _wrap(out, level):
    if isinstance(out, (_C.Tensor, BatchedTensor)):
        return BatchedTensor(out, level)
    if isinstance(out, tuple):
        parts = [_wrap(o, level) for o in out]
        return type(out)(*parts) if hasattr(out, "_fields") else tuple(parts)
    if isinstance(out, list):
        return [_wrap(o, level) for o in out]
    return out


def _all_values(args, kwargs):
    return list(args) + list(kwargs.values())


# ---- pointwise ----

def _pointwise(level, func, args, kwargs):
    """Elementwise ops: the batched operands aligned to the largest logical
    rank, so broadcasting pairs their dims as it pairs the examples'."""
    tensors = [x for x in _all_values(args, kwargs) if _tensor_like(x)]
    top = max(_rank(x, level) for x in tensors)

    def fix(x):
        if is_batched(x, level):
            return _pad(x._value, x._value.dim() - 1, top)
        return x

    out = func(*[fix(a) for a in args], **{k: fix(v) for k, v in kwargs.items()})
    return _wrap(out, level)


def _pointwise_inplace(level, func, args, kwargs):
    """``self.op_(...)``: self must be batched (torch's error otherwise);
    the other operands are aligned to its rank."""
    self = args[0]
    name = getattr(func, "__name__", "")
    if not is_batched(self, level):
        raise RuntimeError(f"vmap: {name}(self, *extra_args) is not possible because there exists a Tensor `other` "
                           "in extra_args that has more elements than `self`. This happened due to `other` being "
                           f"vmapped over but `self` not being vmapped over in a vmap. Please try to use "
                           f"out-of-place operators instead of {name}. If said operator is being called inside the "
                           "PyTorch framework, please file a bug report instead.")
    r = _rank(self, level)

    def fix(x):
        if is_batched(x, level):
            return _pad(x._value, x._value.dim() - 1, r)
        return x

    func(self._value, *[fix(a) for a in args[1:]], **{k: fix(v) for k, v in kwargs.items()})
    return self


_POINTWISE = """abs absolute neg negative exp exp2 expm1 log log2 log10 log1p sigmoid tanh relu gelu silu mish
sin cos tan asin acos atan sinh cosh asinh acosh atanh sqrt rsqrt square reciprocal floor ceil round trunc frac
sign sgn erf erfc erfinv clamp clip clamp_min clamp_max elu selu celu leaky_relu softplus hardtanh relu6 hardswish
hardsigmoid logsigmoid softsign tanhshrink threshold hardshrink softshrink logit nan_to_num detach clone contiguous
float double half bfloat16 int long bool short byte char to type type_as conj resolve_conj resolve_neg positive
dropout alpha_dropout feature_alpha_dropout isnan isinf isfinite isposinf isneginf signbit logical_not
bitwise_not zeros_like ones_like empty_like full_like rand_like randn_like digamma lgamma i0 sinc deg2rad rad2deg
angle real imag
add sub subtract mul multiply div divide true_divide floor_divide remainder fmod pow float_power atan2 arctan2
maximum minimum fmax fmin eq ne lt le gt ge greater less greater_equal less_equal not_equal logical_and
logical_or logical_xor bitwise_and bitwise_or bitwise_xor where lerp addcmul addcdiv hypot copysign xlogy
masked_fill rsub heaviside nextafter ldexp igamma igammac
__add__ __radd__ __sub__ __mul__ __rmul__ __truediv__ __rdiv__ __pow__ __eq__ __ne__ __lt__
__le__ __gt__ __ge__ __and__ __or__ __xor__ __neg__ __abs__ __invert__ __mod__ __floordiv__ __pos__
__lshift__ __rshift__ __rsub__ __rtruediv__ __rpow__ __rfloordiv__ __rmod__ __rand__ __ror__
__rxor__""".split()

_INPLACE = """add_ sub_ mul_ div_ pow_ clamp_ clamp_min_ clamp_max_ masked_fill_ copy_ fill_ zero_ relu_ tanh_
sigmoid_ exp_ log_ neg_ abs_ sqrt_ floor_ ceil_ round_ sign_ lerp_ addcmul_ addcdiv_ remainder_ fmod_ maximum_
minimum_ requires_grad_ detach_ nan_to_num_ leaky_relu_ elu_ hardtanh_ threshold_ mul__ __iadd__ __isub__
__imul__ __itruediv__ __ipow__ __imod__ __iand__ __ior__ __ixor__ uniform_ normal_ bernoulli_ exponential_
random_ fill_diagonal_ squeeze_ unsqueeze_ t_ transpose_""".split()


# ---- dims ----

def _norm(d, rank):
    n = max(rank, 1)
    if not isinstance(d, int) or isinstance(d, bool):
        raise TypeError(f"vmap: expected an int dim, got {type(d).__name__}")
    if not -n <= d < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {d})")
    return d % n + 1


def _shift(d, rank):
    if isinstance(d, (tuple, list)):
        return type(d)(_norm(x, rank) for x in d)
    return _norm(d, rank)


def _get(args, kwargs, pos, kw):
    if pos is not None and len(args) > pos:
        return args[pos], "pos"
    if kw in kwargs:
        return kwargs[kw], "kw"
    return None, None


def _put(args, kwargs, pos, kw, where, value):
    if where == "pos":
        args[pos] = value
    else:
        kwargs[kw] = value


def _dims_rule(specs, extra=0, reduce_all=False, all_name=None):
    """A rule for an op whose ``specs`` (``(position, keyword, default)``)
    name dims of its first operand: shifted past the mapped dim. With
    ``reduce_all``, an absent (or None) dim reduces every logical dim (the
    examples flattened, reduced along dim 1; ``all_name``: the op that
    does that when ``func`` without a dim means something else)."""

    def rule(level, func, args, kwargs):
        self = args[0]
        if not is_batched(self, level):
            return NotImplemented
        if any(_tensor_like(x) for x in _all_values(args[1:], kwargs)):
            return NotImplemented
        r = _rank(self, level) + extra
        args, kwargs = list(args), dict(kwargs)
        args[0] = self._value
        for pos, kw, default in specs:
            d, where = _get(args, kwargs, pos, kw)
            if isinstance(d, bool):  # std(unbiased) and friends: not a dim
                return NotImplemented
            if d is None and reduce_all:
                if kwargs.get("keepdim") or (where is None and len(args) > 1):
                    return NotImplemented
                flat = args[0].reshape(args[0].shape[0], -1)
                rest = args[pos + 1:] if where == "pos" else []
                kw_rest = {k: v for k, v in kwargs.items() if k != kw}
                f = getattr(_C.Tensor, all_name) if all_name else func
                return _wrap(f(flat, 1, *rest, **kw_rest), level)
            if d is None:
                if default is _REQ or default is None:
                    return NotImplemented
                d, where = default, "kw"
            _put(args, kwargs, pos, kw, where, _shift(d, r))
        return _wrap(func(*args, **kwargs), level)

    return rule


def _or_pointwise(rule):
    """``max(x, dim)`` reduces; ``max(x, other)`` is elementwise."""

    def either(level, func, args, kwargs):
        if any(_tensor_like(x) for x in _all_values(args[1:], kwargs)):
            return _pointwise(level, func, args, kwargs)
        return rule(level, func, args, kwargs)

    return either


_D = (1, "dim", _REQ)
_D_LAST = (1, "dim", -1)
_D_ZERO = (1, "dim", 0)


def _squeeze(level, func, args, kwargs):
    self = args[0]
    if not is_batched(self, level) or len(args) > 2:
        return NotImplemented
    d = args[1] if len(args) > 1 else kwargs.get("dim")
    shape = self.shape
    if d is None:
        dims = [i for i, s in enumerate(shape) if s == 1]
    else:
        dims = [d] if isinstance(d, int) else list(d)
        dims = [x % max(len(shape), 1) for x in dims]
    phys = self._value
    for x in sorted(dims, reverse=True):
        if len(shape) and shape[x] == 1:
            phys = phys.squeeze(x + 1)
    return BatchedTensor(phys, level)


def _flatten(level, func, args, kwargs):
    self = args[0]
    if not is_batched(self, level):
        return NotImplemented
    r = _rank(self, level)
    start = args[1] if len(args) > 1 else kwargs.get("start_dim", 0)
    end = args[2] if len(args) > 2 else kwargs.get("end_dim", -1)
    phys = self._value
    if r == 0:
        return BatchedTensor(phys.reshape(phys.shape[0], 1), level)
    return BatchedTensor(phys.flatten(_norm(start, r), _norm(end, r)), level)


def _sizes(args):
    sizes = args[1:]
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list, _C.Size if hasattr(_C, "Size") else tuple)):
        sizes = tuple(sizes[0])
    return tuple(sizes)


def _reshape(level, func, args, kwargs):
    self = args[0]
    if not is_batched(self, level) or kwargs:
        return NotImplemented
    if len(args) == 2 and _tensor_like(args[1]):  # view_as / reshape_as
        sizes = tuple(args[1].shape)
    elif len(args) == 2 and not isinstance(args[1], (tuple, list, int)) and hasattr(args[1], "is_floating_point"):
        return NotImplemented  # view(dtype)
    else:
        sizes = _sizes(args)
    phys = self._value
    shape = (phys.shape[0],) + tuple(sizes)
    try:
        return BatchedTensor(phys.view(shape), level)
    except RuntimeError:
        return BatchedTensor(phys.reshape(shape), level)


def _expand_rule(level, func, args, kwargs):
    self = args[0]
    if not is_batched(self, level):
        return NotImplemented
    if len(args) == 2 and _tensor_like(args[1]):
        sizes = tuple(args[1].shape)
    else:
        sizes = tuple(kwargs.get("size", ())) or _sizes(args)
    r = _rank(self, level)
    phys = _pad(self._value, r, len(sizes))
    return BatchedTensor(phys.expand((phys.shape[0],) + tuple(sizes)), level)


def _repeat(level, func, args, kwargs):
    self = args[0]
    if not is_batched(self, level) or kwargs:
        return NotImplemented
    sizes = _sizes(args)
    r = _rank(self, level)
    phys = _pad(self._value, r, len(sizes))
    return BatchedTensor(phys.repeat((1,) + tuple(sizes)), level)


def _permute(level, func, args, kwargs):
    self = args[0]
    if not is_batched(self, level):
        return NotImplemented
    dims = _sizes(args) if len(args) > 1 else tuple(kwargs.get("dims", ()))
    r = _rank(self, level)
    return BatchedTensor(self._value.permute((0,) + tuple(_norm(d, r) for d in dims)), level)


def _t(level, func, args, kwargs):
    self = args[0]
    if not is_batched(self, level):
        return NotImplemented
    if _rank(self, level) < 2:
        return self
    return BatchedTensor(self._value.transpose(1, 2), level)


def _cat(level, func, args, kwargs):
    tensors = args[0] if args else kwargs.get("tensors")
    if not isinstance(tensors, (list, tuple)) or len(args) > 2 or set(kwargs) - {"tensors", "dim", "axis"}:
        return NotImplemented
    d = args[1] if len(args) > 1 else kwargs.get("dim", kwargs.get("axis", 0))
    ref = next(t for t in tensors if is_batched(t, level))
    r = _rank(ref, level) + (1 if getattr(func, "__name__", "") == "stack" else 0)
    phys = [_phys(t, level) for t in tensors]
    return BatchedTensor(func(phys, _norm(d, r)), level)


# ---- indexing ----

def _basic(i):
    return i is None or i is Ellipsis or isinstance(i, (int, slice)) and not isinstance(i, bool)


def _index_ok(idx, level):
    """Whether indexing with a leading full slice gives the examples'
    results: basic indices, or unbatched advanced ones side by side."""
    adv = [k for k, i in enumerate(idx) if not _basic(i)]
    for k in adv:
        i = idx[k]
        if isinstance(i, BatchedTensor) or isinstance(i, bool):
            return False
        if isinstance(i, _C.Tensor) and i.dtype == _ft().bool:
            return False
        if isinstance(i, (list, tuple)) and any(isinstance(v, (BatchedTensor, bool)) for v in i):
            return False
    if adv:
        ints = [k for k, i in enumerate(idx) if isinstance(i, int) and not isinstance(i, bool)]
        span = sorted(set(adv) | set(ints))
        if span != list(range(span[0], span[-1] + 1)):
            return False
    return True


def _getitem(level, func, args, kwargs):
    self, idx = args[0], args[1]
    if not is_batched(self, level):
        return NotImplemented
    idx = idx if isinstance(idx, tuple) else (idx,)
    if not _index_ok(idx, level):
        return NotImplemented
    return BatchedTensor(self._value[(slice(None),) + idx], level)


def _setitem(level, func, args, kwargs):
    self, idx, value = args
    if not is_batched(self, level):
        return NotImplemented
    idx = idx if isinstance(idx, tuple) else (idx,)
    if not _index_ok(idx, level):
        return NotImplemented
    full = (slice(None),) + idx
    if is_batched(value, level):
        region = self._value[full]
        value = _pad(value._value, value._value.dim() - 1, region.dim() - 1)
    self._value[full] = value
    return None


# ---- matrix products ----

def _matmul_phys(a, b, ra, rb, ba, bb, n):
    """The physical product of two operands of logical ranks ``ra``/``rb``
    (``ba``/``bb``: whether each is batched)."""
    if ba and bb:
        if ra == 1 and rb == 1:
            return (a * b).sum(-1)
        if ra == 1:
            return _pad(a, 1, max(rb - 1, 1)).unsqueeze(-2).matmul(b).squeeze(-2)
        if rb == 1:
            return _pad(a, ra, ra).matmul(_pad(b, 1, max(ra - 1, 1)).unsqueeze(-1)).squeeze(-1)
        top = max(ra, rb)
        return _pad(a, ra, top).matmul(_pad(b, rb, top))
    if ba:
        if ra == 1:
            if rb == 1:
                return a.matmul(b)
            return _pad(a, 1, rb - 1).unsqueeze(-2).matmul(b).squeeze(-2)
        if rb == 1:
            return a.matmul(b)
        return _pad(a, ra, max(ra, rb)).matmul(b)
    # b batched, a not
    if ra == 1:
        return b.matmul(a) if rb == 1 else a.matmul(b)
    if rb == 1:
        return a.matmul(_pad(b, 1, ra - 1).unsqueeze(-1)).squeeze(-1)
    return a.matmul(_pad(b, rb, max(ra, rb)))


def _matmul(level, func, args, kwargs):
    if len(args) != 2 or kwargs:
        return NotImplemented
    a, b = args
    ba, bb = is_batched(a, level), is_batched(b, level)
    ra, rb = _rank(a, level), _rank(b, level)
    if ra == 0 or rb == 0:
        return NotImplemented
    pa = a._value if ba else a
    pb = b._value if bb else b
    return BatchedTensor(_matmul_phys(pa, pb, ra, rb, ba, bb, level_size(level)), level)


def _linear(level, func, args, kwargs):
    x = args[0]
    w = args[1] if len(args) > 1 else kwargs.get("weight")
    bias = args[2] if len(args) > 2 else kwargs.get("bias")
    if not (is_batched(w, level) or is_batched(bias, level)) and is_batched(x, level):
        return BatchedTensor(func(x._value, w, bias), level)
    ft = _ft()
    # composed of batched ops; dispatched here, not by the argument parser
    # (the rules' ops skip that check: Note [Batching rules])
    out = dispatch(ft.matmul, (x, w.t() if _rank(w, level) == 2 else w), {})
    return out + bias if bias is not None else out


def _addmm(level, func, args, kwargs):
    if len(args) != 3 or set(kwargs) - {"beta", "alpha"}:
        return NotImplemented
    ft = _ft()
    inp, a, b = args
    beta, alpha = kwargs.get("beta", 1), kwargs.get("alpha", 1)
    prod = dispatch(ft.matmul, (a, b), {})
    prod = prod * alpha if alpha != 1 else prod
    if beta == 0:
        return prod
    return prod + (inp * beta if beta != 1 else inp)


def _outer(level, func, args, kwargs):
    if len(args) != 2 or kwargs:
        return NotImplemented
    a, b = args
    return a.unsqueeze(-1) * b


# ---- losses ----

_LEGACY = ("size_average", "reduce")


def _reduce_per_example(loss, reduction, level, logical_first=None):
    if reduction == "none":
        return BatchedTensor(loss, level)
    flat = loss.reshape(loss.shape[0], -1)
    if reduction == "sum":
        return BatchedTensor(flat.sum(1), level)
    if reduction == "mean":
        return BatchedTensor(flat.mean(1), level)
    if reduction == "batchmean":
        return BatchedTensor(flat.sum(1) / (logical_first or 1), level)
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _elementwise_loss(level, func, args, kwargs):
    """Losses that are an elementwise function reduced: computed with
    ``reduction='none'`` on the aligned physical operands, then reduced
    per example."""
    if len(args) != 2 or any(k in kwargs for k in _LEGACY):
        return NotImplemented
    reduction = kwargs.get("reduction", "mean")
    a, b = args
    top = max(_rank(a, level), _rank(b, level))
    pa = _pad(_phys(a, level), _rank(a, level), top)
    pb = _pad(_phys(b, level), _rank(b, level), top)
    shape = tuple(max(x, y) for x, y in zip(pa.shape, pb.shape))
    pa, pb = pa.expand(shape), pb.expand(shape)
    kw = dict(kwargs)
    for k in ("weight", "pos_weight"):
        if k in kw and kw[k] is not None:
            if is_batched(kw[k], level):
                kw[k] = _pad(kw[k]._value, _rank(kw[k], level), top)
    kw["reduction"] = "none"
    loss = func(pa, pb, **kw)
    first = shape[1] if top >= 1 else 1
    return _reduce_per_example(loss, reduction, level, first)


def _class_loss(level, func, args, kwargs):
    """``cross_entropy`` and ``nll_loss``: the examples' items merged into
    one batch, the loss taken with ``reduction='none'`` and reduced per
    example (the mean divides by each example's own weight sum)."""
    if len(args) > 3 or any(kwargs.get(k) is not None for k in _LEGACY):
        return NotImplemented
    ft = _ft()
    inp, target = args[0], args[1]
    weight = args[2] if len(args) > 2 else kwargs.get("weight")
    if is_batched(weight, level):
        return NotImplemented
    reduction = kwargs.get("reduction", "mean")
    ignore = kwargs.get("ignore_index", -100)
    r = _rank(inp, level)
    pi, pt = _phys(inp, level), _phys(target, level)
    n = pi.shape[0]
    soft = pt.is_floating_point()
    if r == 1:
        mi, mt = pi, pt
    else:
        mi = pi.reshape((-1,) + tuple(pi.shape[2:]))
        mt = pt.reshape((-1,) + tuple(pt.shape[2:]))
    kw = {k: v for k, v in kwargs.items() if k not in _LEGACY and k != "weight"}
    kw["reduction"] = "none"
    loss = func(mi, mt, weight, **kw)
    if reduction == "none":
        return BatchedTensor(loss if r == 1 else loss.reshape((n, pi.shape[1]) + tuple(pi.shape[3:])), level)
    per = loss.reshape(n, -1)
    if reduction == "sum":
        return BatchedTensor(per.sum(1), level)
    if reduction != "mean":
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if soft:
        return BatchedTensor(per.mean(1), level)
    keep = mt != ignore
    w = weight[mt.clamp(min=0)] if weight is not None else ft.ones_like(mt, dtype=loss.dtype)
    denom = (w * keep).reshape(n, -1).sum(1)
    # an example whose every target is ignored: NaN, and a zero gradient
    # (torch's total_weight == 0)
    empty = denom == 0
    out = (per.sum(1) / denom.masked_fill(empty, 1)).masked_fill(empty, float("nan"))
    return BatchedTensor(out, level)


# ---- convolution, pooling, padding ----

def _spatial_dims(name):
    for k in (1, 2, 3):
        if f"{k}d" in name:
            return k
    return None


def _merged(level, phys, r, k, fn):
    """``fn`` on a physical input whose examples are ``(C, *spatial)``
    (``r == k + 1``: the mapped dim is the batch) or ``(N, C, *spatial)``
    (mapped dim and N merged, then split)."""
    if r == k + 1:
        return fn(phys)
    if r != k + 2:
        return NotImplemented
    n, m = phys.shape[0], phys.shape[1]
    out = fn(phys.reshape((n * m,) + tuple(phys.shape[2:])))
    if isinstance(out, tuple):
        return tuple(o.reshape((n, m) + tuple(o.shape[1:])) for o in out)
    return out.reshape((n, m) + tuple(out.shape[1:]))


def _conv(level, func, args, kwargs):
    name = getattr(func, "__name__", "")
    k = _spatial_dims(name)
    if k is None or "transpose" in name:
        return NotImplemented
    params = ("input", "weight", "bias", "stride", "padding", "dilation", "groups")
    call = dict(zip(params, args))
    for p, v in kwargs.items():
        call[p] = v
    x, w, b = call["input"], call["weight"], call.get("bias")
    groups = call.get("groups", 1)
    rest = {p: call[p] for p in ("stride", "padding", "dilation") if p in call}
    r = _rank(x, level)
    if not is_batched(w, level) and not is_batched(b, level):
        out = _merged(level, x._value, r, k, lambda p: func(p, w, b, groups=groups, **rest))
        return NotImplemented if out is NotImplemented else BatchedTensor(out, level)
    if isinstance(rest.get("padding"), str) and rest["padding"] == "same" and groups != 1:
        return NotImplemented
    n = level_size(level)
    px = _phys(x, level)
    if r == k + 1:
        px = px.unsqueeze(1)
    # the examples' weights as groups of one grouped convolution
    pw = _phys(w, level)
    out_c = pw.shape[1]
    pw = pw.reshape((n * out_c,) + tuple(pw.shape[2:]))
    pb = None
    if b is not None:
        pb = _phys(b, level).reshape(n * out_c)
    batch = px.shape[1]
    xin = px.transpose(0, 1).reshape((batch, n * px.shape[2]) + tuple(px.shape[3:]))
    out = func(xin, pw, pb, groups=n * groups, **rest)
    out = out.reshape((batch, n, out_c) + tuple(out.shape[2:])).transpose(0, 1)
    if r == k + 1:
        out = out.squeeze(1)
    return BatchedTensor(out, level)


def _pool(level, func, args, kwargs):
    name = getattr(func, "__name__", "")
    k = _spatial_dims(name)
    x = args[0]
    if k is None or not is_batched(x, level) or any(_tensor_like(v) for v in _all_values(args[1:], kwargs)):
        return NotImplemented
    out = _merged(level, x._value, _rank(x, level), k, lambda p: func(p, *args[1:], **kwargs))
    return NotImplemented if out is NotImplemented else _wrap(out, level)


def _pad_rule(level, func, args, kwargs):
    x = args[0]
    pad = args[1] if len(args) > 1 else kwargs.get("pad")
    mode = args[2] if len(args) > 2 else kwargs.get("mode", "constant")
    if not is_batched(x, level) or any(_tensor_like(v) for v in _all_values(args[1:], kwargs)):
        return NotImplemented
    if mode == "constant":
        return BatchedTensor(func(x._value, *args[1:], **kwargs), level)
    out = _merged(level, x._value, _rank(x, level), len(pad) // 2, lambda p: func(p, *args[1:], **kwargs))
    return NotImplemented if out is NotImplemented else BatchedTensor(out, level)


def _layer_norm(level, func, args, kwargs):
    params = ("input", "normalized_shape", "weight", "bias", "eps")
    call = dict(zip(params, args))
    call.update(kwargs)
    x, w, b = call["input"], call.get("weight"), call.get("bias")
    eps = call.get("eps", 1e-5)
    shape = call["normalized_shape"]
    if not is_batched(x, level):
        return NotImplemented
    if not is_batched(w, level) and not is_batched(b, level):
        return BatchedTensor(func(x._value, shape, w, b, eps), level)
    out = BatchedTensor(func(x._value, shape, None, None, eps), level)
    if w is not None:
        out = out * w
    return out + b if b is not None else out


def _embedding(level, func, args, kwargs):
    idx, w = args[0], args[1] if len(args) > 1 else kwargs.get("weight")
    if not is_batched(idx, level) or is_batched(w, level):
        return NotImplemented
    return BatchedTensor(func(idx._value, w, *args[2:], **{k: v for k, v in kwargs.items() if k != "weight"}),
                         level)


def _new_factory(level, func, args, kwargs):
    """``x.new_zeros(size)`` and friends: an unbatched tensor of ``x``'s
    dtype and device (torch's rule)."""
    self = args[0]
    return func(self._value if is_batched(self, level) else self, *args[1:], **kwargs)


def _gather(level, func, args, kwargs):
    self = args[0]
    if len(args) < 3 or not (is_batched(self, level) or is_batched(args[2], level)):
        return NotImplemented
    r = _rank(self, level)
    rest = [_phys(a, level) if _tensor_like(a) else a for a in args[3:]]
    kw = {k: _phys(v, level) if _tensor_like(v) else v for k, v in kwargs.items()}
    out = func(_phys(self, level), _norm(args[1], r), _phys(args[2], level), *rest, **kw)
    return BatchedTensor(out, level)


def _index_select(level, func, args, kwargs):
    self = args[0]
    if len(args) != 3 or kwargs or not is_batched(self, level) or is_batched(args[2], level):
        return NotImplemented
    return BatchedTensor(func(self._value, _norm(args[1], _rank(self, level)), args[2]), level)


def _normalize(level, func, args, kwargs):
    x = args[0]
    if not is_batched(x, level) or len(args) > 3:
        return NotImplemented
    p = args[1] if len(args) > 1 else kwargs.get("p", 2.0)
    d = args[2] if len(args) > 2 else kwargs.get("dim", 1)
    return BatchedTensor(func(x._value, p, _shift(d, _rank(x, level)), kwargs.get("eps", 1e-12)), level)


def _norm_rule(level, func, args, kwargs):
    """``x.norm(p, dim, keepdim)``: dim is the third argument."""
    x = args[0]
    if not is_batched(x, level) or len(args) > 4 or set(kwargs) - {"p", "dim", "keepdim"}:
        return NotImplemented
    p = args[1] if len(args) > 1 else kwargs.get("p", "fro")
    d = args[2] if len(args) > 2 else kwargs.get("dim")
    keep = args[3] if len(args) > 3 else kwargs.get("keepdim", False)
    phys = x._value
    if d is None:
        if keep:
            return NotImplemented
        return BatchedTensor(func(phys.reshape(phys.shape[0], -1), 2 if p == "fro" else p, 1), level)
    return BatchedTensor(func(phys, p, _shift(d, _rank(x, level)), keep), level)


def _unbind(level, func, args, kwargs):
    self = args[0]
    if not is_batched(self, level):
        return NotImplemented
    d = args[1] if len(args) > 1 else kwargs.get("dim", 0)
    return tuple(BatchedTensor(v, level) for v in self._value.unbind(_norm(d, _rank(self, level))))


def _split_like(level, func, args, kwargs):
    self = args[0]
    if not is_batched(self, level) or len(args) > 3 or set(kwargs) - {"dim"}:
        return NotImplemented
    d = args[2] if len(args) > 2 else kwargs.get("dim", 0)
    outs = func(self._value, args[1], _norm(d, _rank(self, level)))
    return tuple(BatchedTensor(v, level) for v in outs)


def _size_of(level, func, args, kwargs):
    self = args[0]
    return self.size(*args[1:]) if is_batched(self, level) else func(*args, **kwargs)


RULES = {}
for _n in _POINTWISE:
    RULES[_n] = lambda level, func, args, kwargs: (
        _pointwise(level, func, args, kwargs) if args and _tensor_like(args[0]) else NotImplemented)
for _n in _INPLACE:
    RULES[_n] = _pointwise_inplace
for _n, _spec in {
    "softmax": [_D], "log_softmax": [_D], "cumsum": [_D], "cumprod": [_D], "logcumsumexp": [_D],
    "cummax": [_D], "cummin": [_D], "narrow": [_D], "select": [_D], "unflatten": [_D],
    "transpose": [(1, "dim0", _REQ), (2, "dim1", _REQ)], "swapaxes": [(1, "axis0", _REQ), (2, "axis1", _REQ)],
    "swapdims": [(1, "dim0", _REQ), (2, "dim1", _REQ)], "movedim": [(1, "source", _REQ), (2, "destination", _REQ)],
    "moveaxis": [(1, "source", _REQ), (2, "destination", _REQ)], "flip": [(1, "dims", _REQ)],
    "roll": [(2, "dims", _REQ)], "topk": [(2, "dim", -1)], "sort": [_D_LAST], "argsort": [_D_LAST],
    "kthvalue": [(2, "dim", -1)], "diff": [(2, "dim", -1)], "glu": [_D_LAST], "chunk": [(2, "dim", 0)],
    "diagonal": [(2, "dim1", 0), (3, "dim2", 1)], "tril": [], "triu": [],
}.items():
    RULES[_n] = _dims_rule(_spec)
RULES["unsqueeze"] = _dims_rule([_D], extra=1)
for _n in ("sum", "mean", "prod", "amax", "amin", "any", "all", "nansum", "nanmean", "count_nonzero",
           "logsumexp", "var", "std", "argmax", "argmin"):
    RULES[_n] = _dims_rule([(1, "dim", None)], reduce_all=True)
RULES["max"] = _or_pointwise(_dims_rule([(1, "dim", None)], reduce_all=True, all_name="amax"))
RULES["min"] = _or_pointwise(_dims_rule([(1, "dim", None)], reduce_all=True, all_name="amin"))
RULES.update({
    "squeeze": _squeeze, "flatten": _flatten, "view": _reshape, "reshape": _reshape, "view_as": _reshape,
    "reshape_as": _reshape, "expand": _expand_rule, "expand_as": _expand_rule, "broadcast_to": _expand_rule,
    "repeat": _repeat, "permute": _permute, "t": _t, "cat": _cat, "concat": _cat, "concatenate": _cat,
    "stack": _cat, "__getitem__": _getitem, "__setitem__": _setitem, "matmul": _matmul, "mm": _matmul,
    "bmm": _matmul, "mv": _matmul, "dot": _matmul, "inner": _matmul, "__matmul__": _matmul, "linear": _linear,
    "addmm": _addmm, "outer": _outer, "ger": _outer,
    "cross_entropy": _class_loss, "nll_loss": _class_loss,
    "conv1d": _conv, "conv2d": _conv, "conv3d": _conv, "pad": _pad_rule, "layer_norm": _layer_norm,
    "embedding": _embedding, "gather": _gather, "index_select": _index_select,
    "normalize": _normalize, "norm": _norm_rule, "unbind": _unbind, "split": _split_like,
    "size": _size_of, "__rmatmul__": lambda level, func, args, kwargs: _matmul(level, func, args[::-1], kwargs),
})
for _n in ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
           "binary_cross_entropy_with_logits", "kl_div", "soft_margin_loss"):
    RULES[_n] = _elementwise_loss
for _n in ("max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d",
           "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d",
           "adaptive_max_pool2d", "adaptive_max_pool3d", "lp_pool1d", "lp_pool2d", "max_pool1d_with_indices",
           "max_pool2d_with_indices"):
    RULES[_n] = _pool
for _n in ("new_zeros", "new_ones", "new_empty", "new_full", "new_tensor"):
    RULES[_n] = _new_factory

"""Binary pointwise ops at every pair of edge values (NaN, ±inf, ±0,
±0.5, ±1, ±2, 1e-30), shared by ``fixtures/gen_binary_edges.py``
(PyTorch) and ``test_binary_edges.py`` (ferrotorch): values and both
operands' gradients. ``M`` is the torch module in use."""
NAN, INF = float("nan"), float("inf")
V = [NAN, -INF, -2.0, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 2.0, INF, 1e-30]
XS = [a for a in V for b in V]
YS = [b for a in V for b in V]

def cases(M):
    return [
        ("add", lambda x, y: x + y), ("sub", lambda x, y: x - y), ("mul", lambda x, y: x * y),
        ("div", lambda x, y: x / y), ("div_floor", lambda x, y: M.div(x, y, rounding_mode="floor")),
        ("div_trunc", lambda x, y: M.div(x, y, rounding_mode="trunc")),
        ("pow", lambda x, y: x ** y), ("atan2", lambda x, y: M.atan2(x, y)),
        ("hypot", lambda x, y: M.hypot(x, y)), ("fmod", lambda x, y: M.fmod(x, y)),
        ("remainder", lambda x, y: M.remainder(x, y)), ("maximum", lambda x, y: M.maximum(x, y)),
        ("minimum", lambda x, y: M.minimum(x, y)), ("fmax", lambda x, y: M.fmax(x, y)),
        ("fmin", lambda x, y: M.fmin(x, y)), ("copysign", lambda x, y: M.copysign(x, y)),
        ("xlogy", lambda x, y: M.xlogy(x, y)), ("logaddexp", lambda x, y: M.logaddexp(x, y)),
        ("logaddexp2", lambda x, y: M.logaddexp2(x, y)), ("lerp", lambda x, y: M.lerp(x, y, 0.3)),
        ("lerp_t", lambda x, y: M.lerp(x, M.zeros_like(x) + 1.0, y)),
        ("float_power", lambda x, y: M.float_power(x, y)),
        ("nextafter", lambda x, y: M.nextafter(x, y)), ("ldexp", lambda x, y: M.ldexp(x, y)),
        ("xlog1py", lambda x, y: M.special.xlog1py(x, y)),
        ("binary_ce_logits", lambda x, y: M.nn.functional.binary_cross_entropy_with_logits(x, M.sigmoid(y).detach(), reduction="none")),
        ("where", lambda x, y: M.where(x > y, x, y)),
        ("clamp_t", lambda x, y: M.clamp(x, min=y)),
        ("dist_pair", lambda x, y: M.pairwise_distance(x[:, None], y[:, None])),
        ("cosine", lambda x, y: M.nn.functional.cosine_similarity(x[:, None], y[:, None])),
    ]

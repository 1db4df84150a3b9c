"""The edge-value gradient cases shared by ``fixtures/gen_edge_grads.py``
(which runs them under PyTorch) and ``test_edge_grads.py`` (which replays
them under ferrotorch): pointwise ops and activations at NaN, ±inf, ±0 and
at the points where their formulas switch branches, backward with finite
and with infinite output gradients. ``M`` is the ``torch`` module in use."""

NAN, INF = float("nan"), float("inf")
# every op sees these; the branch points of the ops below are among them
VALUES = [NAN, -INF, -6.0, -3.0, -2.0, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 2.0, 3.0, 6.0, 30.0, INF,
          # underflow and overflow of squares and exponentials, subnormals
          # in float32 (24 values: 192 elements, a multiple of every vector)
          1e-30, -1e-30, 1e-40, -1e-40, 100.0, -100.0, 1e30, -1e30]
# the input is VALUES eight times over: PyTorch's CPU kernels run a scalar
# loop over the last few elements of a tensor, and for some ops (elu's,
# hardtanh's and softshrink's backward at NaN) it disagrees with their
# vector loop; 128 elements keep every value in the vector loop, which is
# what tensors of real size see
REPEAT = 8


def cases(M):
    """(name, fn(x) -> tensor) pairs; ``fn`` uses only public names."""
    F = M.nn.functional
    z = lambda x: M.zeros_like(x)  # noqa: E731
    return [
        ("relu", lambda x: F.relu(x)),
        ("relu6", lambda x: F.relu6(x)),
        ("leaky_relu", lambda x: F.leaky_relu(x, 0.1)),
        ("hardtanh", lambda x: F.hardtanh(x)),
        ("hardtanh(-1,2)", lambda x: F.hardtanh(x, -1.0, 2.0)),
        ("threshold", lambda x: F.threshold(x, 1.0, 5.0)),
        ("elu", lambda x: F.elu(x)),
        ("celu", lambda x: F.celu(x, 0.5)),
        ("selu", lambda x: F.selu(x)),
        ("gelu", lambda x: F.gelu(x)),
        ("gelu(tanh)", lambda x: F.gelu(x, approximate="tanh")),
        ("silu", lambda x: F.silu(x)),
        ("mish", lambda x: F.mish(x)),
        ("softplus", lambda x: F.softplus(x)),
        ("softplus(2,3)", lambda x: F.softplus(x, 2.0, 3.0)),
        ("softsign", lambda x: F.softsign(x)),
        ("tanhshrink", lambda x: F.tanhshrink(x)),
        ("hardshrink", lambda x: F.hardshrink(x, 0.5)),
        ("softshrink", lambda x: F.softshrink(x, 0.5)),
        ("hardsigmoid", lambda x: F.hardsigmoid(x)),
        ("hardswish", lambda x: F.hardswish(x)),
        ("logsigmoid", lambda x: F.logsigmoid(x)),
        ("sigmoid", lambda x: M.sigmoid(x)),
        ("tanh", lambda x: M.tanh(x)),
        ("sinc", lambda x: M.sinc(x)),
        ("prelu", lambda x: F.prelu(x, M.tensor([0.25], dtype=x.dtype))),
        ("clamp(-1,2)", lambda x: M.clamp(x, -1.0, 2.0)),
        ("clamp(min=0)", lambda x: M.clamp(x, min=0.0)),
        ("clamp(max=0)", lambda x: M.clamp(x, max=0.0)),
        ("clamp_min", lambda x: M.clamp_min(x, 0.5)),
        ("clamp_max", lambda x: M.clamp_max(x, 0.5)),
        ("clamp(tensors)", lambda x: M.clamp(x, z(x) - 1.0, z(x) + 2.0)),
        ("clamp(min=x)", lambda x: M.clamp(z(x), x, z(x) + 2.0)),
        ("clamp(max=x)", lambda x: M.clamp(z(x), z(x) - 1.0, x)),
        ("clamp(x, min=x)", lambda x: M.clamp(x, x * 0.5, z(x) + 2.0)),
        ("abs", lambda x: M.abs(x)),
        ("maximum", lambda x: M.maximum(x, z(x))),
        ("minimum", lambda x: M.minimum(x, z(x))),
        ("fmax", lambda x: M.fmax(x, z(x))),
        ("fmin", lambda x: M.fmin(x, z(x))),
        ("sqrt", lambda x: M.sqrt(x)),
        ("rsqrt", lambda x: M.rsqrt(x)),
        ("exp", lambda x: M.exp(x)),
        ("expm1", lambda x: M.expm1(x)),
        ("log", lambda x: M.log(x)),
        ("log1p", lambda x: M.log1p(x)),
        ("reciprocal", lambda x: M.reciprocal(x)),
        ("square", lambda x: M.square(x)),
        ("pow2", lambda x: M.pow(x, 2.0)),
        ("pow0.5", lambda x: M.pow(x, 0.5)),
        ("pow0", lambda x: M.pow(x, 0.0)),
        ("sin", lambda x: M.sin(x)),
        ("atan", lambda x: M.atan(x)),
        ("asinh", lambda x: M.asinh(x)),
        ("erf", lambda x: M.erf(x)),
        ("erfc", lambda x: M.erfc(x)),
        ("erfinv", lambda x: M.erfinv(x / 8.0)),
        ("logit", lambda x: M.logit(M.sigmoid(x))),
        ("lgamma", lambda x: M.lgamma(x)),
        ("sign", lambda x: M.sign(x)),
        ("sgn", lambda x: M.sgn(x)),
        ("frac", lambda x: M.frac(x)),
        ("nan_to_num", lambda x: M.nan_to_num(x)),
        ("mul self", lambda x: x * x),
        ("div by 2", lambda x: x / 2.0),
        ("2 div", lambda x: 2.0 / x),
        ("atan2", lambda x: M.atan2(x, z(x) + 1.0)),
        ("hypot", lambda x: M.hypot(x, z(x) + 1.0)),
        ("xlogy", lambda x: M.xlogy(x, z(x) + 2.0)),
        ("where", lambda x: M.where(x > 0, x, 2.0 * x)),
        ("masked_fill", lambda x: x.masked_fill(x < 0, 0.0)),
        ("softmax", lambda x: M.softmax(x, 0)),
        ("log_softmax", lambda x: M.log_softmax(x, 0)),
        ("max", lambda x: M.max(x)),
        ("amax", lambda x: M.amax(x, 0)),
        ("sum", lambda x: M.sum(x)),
        ("mean", lambda x: M.mean(x)),
        ("logsumexp", lambda x: M.logsumexp(x, 0)),
        ("norm", lambda x: M.linalg.vector_norm(x)),
    ]

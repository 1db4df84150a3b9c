"""The rest of torch.nn — init functions, 3-D padding, lazy modules,
parameter containers, adaptive softmax, LP pooling, cross-map LRN, the
fused linear cross-entropy and SyncBatchNorm — run the same way under
torch (fixtures/gen_nn_more.py) and ferrotorch (test_nn_more.py); each
case returns plain values."""

import warnings


def _vals(t):
    return [round(v, 6) for v in t.detach().reshape(-1).tolist()]


def _run(L, body):
    L.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return body(L)


def init_draws(L):
    init = L.nn.init
    out = {}
    w = L.empty(4, 6)
    init.trunc_normal_(w, mean=0.5, std=2.0, a=-1.0, b=3.0)
    out["trunc_normal"] = _vals(w)
    out["trunc_in_range"] = bool(((w >= -1.0) & (w <= 3.0)).all())
    w = L.empty(3, 5)
    init.orthogonal_(w, gain=2.0)
    out["orthogonal"] = _vals(w)
    out["orthogonal_gram"] = _vals(w @ w.t())
    w = L.empty(6, 2, 3)
    init.orthogonal_(w)
    out["orthogonal_3d"] = _vals(w)
    w = L.empty(4, 2, 3, 3)
    init.dirac_(w, groups=2)
    out["dirac"] = _vals(w)
    w = L.empty(3, 5)
    init.eye_(w)
    out["eye"] = _vals(w)
    w = L.empty(5, 4)
    init.sparse_(w, sparsity=0.4, std=0.1)
    out["sparse"] = _vals(w)
    out["sparse_zeros_per_col"] = [int(c) for c in (w == 0).sum(0).tolist()]
    w = L.empty(2, 3)
    init.normal(w)
    out["normal_alias"] = _vals(w)
    w = L.empty(3, 4)
    init.xavier_uniform(w, gain=init.calculate_gain("tanh"))
    out["xavier_alias"] = _vals(w)
    return out


def pads(L):
    x = L.arange(2 * 2 * 3 * 3, dtype=L.float32).reshape(1, 2, 2, 3, 3)
    mods = {"zero": L.nn.ZeroPad3d((1, 0, 0, 1, 1, 0)), "reflect": L.nn.ReflectionPad3d(1),
            "replicate": L.nn.ReplicationPad3d((0, 1, 1, 0, 0, 1)), "circular": L.nn.CircularPad3d(1),
            "constant": L.nn.ConstantPad3d((1, 1, 0, 0, 1, 0), 2.5),
            "constant1d": L.nn.ConstantPad1d(2, -1.0), "zero2d": L.nn.ZeroPad2d((1, 2, 0, 1))}
    out = {}
    for k, m in mods.items():
        inp = x if k not in ("constant1d", "zero2d") else x[0, 0]
        y = m(inp)
        out[k] = {"shape": list(y.shape), "y": _vals(y), "repr": repr(m)}
    try:
        L.nn.ConstantPad2d(1)
        out["constant_needs_value"] = None
    except TypeError:
        out["constant_needs_value"] = "TypeError"
    return out


def lazy_modules(L):
    out = {}
    lin = L.nn.LazyLinear(3)
    out["uninit"] = L.nn.parameter.is_lazy(lin.weight)
    out["uninit_repr"] = type(lin.weight).__name__
    x = L.randn(2, 5)
    y = lin(x)
    out["linear"] = {"cls": type(lin).__name__, "w_shape": list(lin.weight.shape), "y": _vals(y),
                     "is_param": isinstance(lin.weight, L.nn.Parameter), "lazy_after": L.nn.parameter.is_lazy(lin.weight)}
    conv = L.nn.LazyConv2d(4, 3, padding=1)
    y = conv(L.randn(1, 2, 4, 4))
    out["conv"] = {"cls": type(conv).__name__, "w_shape": list(conv.weight.shape), "y": _vals(y)}
    convt = L.nn.LazyConvTranspose1d(2, 3, stride=2)
    y = convt(L.randn(1, 3, 4))
    out["convt"] = {"cls": type(convt).__name__, "w_shape": list(convt.weight.shape), "y": _vals(y)}
    bn = L.nn.LazyBatchNorm1d()
    y = bn(L.randn(4, 3) * 2 + 1)
    out["bn"] = {"cls": type(bn).__name__, "mean": _vals(bn.running_mean), "y": _vals(y),
                 "keys": sorted(bn.state_dict().keys())}
    inorm = L.nn.LazyInstanceNorm2d(affine=True)
    y = inorm(L.randn(1, 2, 3, 3))
    out["in"] = {"cls": type(inorm).__name__, "w_shape": list(inorm.weight.shape), "y": _vals(y)}
    try:
        L.nn.LazyLinear(2).weight.shape
        out["shape_err"] = None
    except RuntimeError as e:
        out["shape_err"] = "RuntimeError"
    return out


def param_containers(L):
    pl = L.nn.ParameterList([L.nn.Parameter(L.ones(2)), L.nn.Parameter(L.zeros(3))])
    pl.append(L.nn.Parameter(L.full((1,), 5.0)))
    pl.extend([L.nn.Parameter(L.ones(2, 2))])
    pd = L.nn.ParameterDict({"a": L.nn.Parameter(L.ones(2)), "b": L.nn.Parameter(L.zeros(1))})
    pd["c"] = L.nn.Parameter(L.full((2,), 3.0))
    pd.update({"d": L.nn.Parameter(L.ones(1))})
    popped = pd.pop("b")

    class M(L.nn.Module):
        def __init__(self):
            super().__init__()
            self.pl = pl
            self.pd = pd

    m = M()
    return {"pl_len": len(pl), "pl_shapes": [list(p.shape) for p in pl], "pl_item": _vals(pl[2]),
            "pd_keys": list(pd.keys()), "popped": _vals(popped), "sd": sorted(m.state_dict().keys()),
            "n_params": len(list(m.parameters())), "pl_repr": repr(pl).replace("torch.", ""),
            "in": "c" in pd, "get": pd.get("zz") is None}


def adaptive_softmax(L):
    asm = L.nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs=[3, 6], div_value=2.0)
    x = L.randn(6, 8)
    t = L.tensor([0, 2, 4, 5, 7, 9])
    out, loss = asm(x, t)
    loss.backward()
    lp = asm.log_prob(x)
    out1, loss1 = asm(x[0], t[0])
    return {"out": _vals(out), "loss": round(float(loss), 5), "log_prob": _vals(lp),
            "lp_sums": _vals(lp.exp().sum(1)), "predict": asm.predict(x).tolist(),
            "head_grad": _vals(asm.head.weight.grad), "unbatched": round(float(out1), 5),
            "keys": sorted(asm.state_dict().keys())}


def lp_pool_lrn(L):
    x = L.rand(1, 2, 6, 6) + 0.1
    out = {"lp1": _vals(L.nn.LPPool1d(2, 3, stride=2)(x[0])), "lp2": _vals(L.nn.LPPool2d(1.5, 2)(x)),
           "lp3": _vals(L.nn.LPPool3d(2, (1, 2, 2))(x.unsqueeze(0)))}
    lrn = L.nn.CrossMapLRN2d(3, alpha=0.01, beta=0.5, k=2)
    y = lrn(L.randn(1, 5, 2, 2))
    out["lrn"] = _vals(y)
    out["lrn_repr"] = repr(lrn)
    return out


def linear_ce(L):
    m = L.nn.LinearCrossEntropyLoss(6, 5, reduction="sum", label_smoothing=0.1, bias=True)
    x = L.randn(4, 6, requires_grad=True)
    t = L.randint(0, 5, (4,))
    loss = m(x, t)
    loss.backward()
    k = L.nn.LinearCrossEntropyLoss(3, 4, out_features=(2,), options=L.nn.LinearCrossEntropyOptions())
    tk = L.randint(0, 4, (5, 2))
    lk = k(L.randn(5, 3), tk)
    try:
        m(L.randn(2, 3, 6), t)
        err = None
    except RuntimeError as e:
        err = str(e)
    return {"loss": round(float(loss), 4), "x_grad": _vals(x.grad), "keys": sorted(m.state_dict().keys()),
            "k_loss": round(float(lk), 5), "k_w": list(k.linear.weight.shape), "err": err, "repr": repr(m)}


def sync_batchnorm(L):
    net = L.nn.Sequential(L.nn.Conv2d(2, 3, 1), L.nn.BatchNorm2d(3), L.nn.Sequential(L.nn.BatchNorm1d(4)))
    net[1].running_mean.fill_(0.5)
    conv = L.nn.SyncBatchNorm.convert_sync_batchnorm(net)
    conv.eval()
    x = L.randn(2, 2, 3, 3)
    y = conv[1](conv[0](x))
    return {"types": [type(m).__name__ for m in conv.modules()], "y": _vals(y),
            "shared": conv[1].weight is net[1].weight, "mean": _vals(conv[1].running_mean)}


def instance_norm_reset(L):
    m = L.nn.InstanceNorm1d(3, affine=True, track_running_stats=True)
    m(L.randn(2, 3, 5))
    before = _vals(m.running_mean)
    with L.no_grad():
        m.weight.mul_(3)
    m.reset_parameters()
    return {"before": before, "mean": _vals(m.running_mean), "var": _vals(m.running_var), "w": _vals(m.weight)}


def nll2d(L):
    m = L.nn.NLLLoss2d()
    x = L.log_softmax(L.randn(2, 3, 2, 2), 1)
    t = L.randint(0, 3, (2, 2, 2))
    return {"loss": round(float(m(x, t)), 5), "base": type(m).__mro__[1].__name__}


CASES = {f.__name__: f for f in [init_draws, pads, lazy_modules, param_containers, adaptive_softmax, lp_pool_lrn,
                                 linear_ce, sync_batchnorm, instance_norm_reset, nll2d]}


def run(L, name):
    return _run(L, CASES[name])

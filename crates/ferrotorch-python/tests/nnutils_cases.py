"""nn.utils cases run the same way under torch (fixtures/gen_nnutils.py)
and ferrotorch (test_nnutils.py); each returns plain values."""

import warnings


def _vals(t):
    return [round(v, 6) for v in t.detach().reshape(-1).tolist()]


def _run(L, body):
    L.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return body(L)


def weight_norm_param(L):
    m = L.nn.utils.parametrizations.weight_norm(L.nn.Linear(4, 3), dim=0)
    x = L.randn(2, 4)
    y = m(x)
    y.sum().backward()
    g = m.parametrizations.weight.original0
    return {"keys": sorted(m.state_dict().keys()), "y": _vals(y), "g": _vals(g), "g_grad": _vals(g.grad),
            "cls": type(m).__name__, "is_p": L.nn.utils.parametrize.is_parametrized(m, "weight")}


def weight_norm_hook(L):
    m = L.nn.utils.weight_norm(L.nn.Conv2d(2, 3, 3), dim=0)
    x = L.randn(1, 2, 5, 5)
    y = m(x)
    keys = sorted(m.state_dict().keys())
    L.nn.utils.remove_weight_norm(m)
    return {"keys": keys, "y": _vals(y), "after": sorted(m.state_dict().keys()), "w": _vals(m.weight)}


def spectral_norm_param(L):
    m = L.nn.utils.parametrizations.spectral_norm(L.nn.Linear(5, 4))
    x = L.randn(3, 5)
    ys = [m(x) for _ in range(3)]
    m.eval()
    ye = m(x)
    sigma = L.linalg.matrix_norm(m.weight.detach(), 2)
    return {"keys": sorted(m.state_dict().keys()), "y": _vals(ys[-1]), "y_eval": _vals(ye),
            "u": _vals(m.parametrizations.weight[0]._u), "sigma": round(float(sigma), 4)}


def spectral_norm_hook(L):
    m = L.nn.utils.spectral_norm(L.nn.Linear(5, 4))
    x = L.randn(3, 5)
    for _ in range(2):
        y = m(x)
    sd = m.state_dict()
    meta = dict(sd._metadata[""])
    m2 = L.nn.utils.spectral_norm(L.nn.Linear(5, 4))
    m2.load_state_dict(sd)
    m2.eval()
    m.eval()
    return {"keys": sorted(sd.keys()), "y": _vals(y), "meta": sorted(str(meta).replace("torch.", "")),
            "reload": _vals(m2(x) - m(x))}


def orthogonal_maps(L):
    out = {}
    for shape, kind in [((4, 4), None), ((5, 3), None), ((3, 5), "cayley"), ((4, 4), "householder"),
                        ((6, 4), "matrix_exp")]:
        lin = L.nn.Linear(shape[1], shape[0], bias=False)
        L.nn.utils.parametrizations.orthogonal(lin, orthogonal_map=kind)
        W = lin.weight
        small = W @ W.T if shape[0] < shape[1] else W.T @ W
        out[f"{shape}-{kind}"] = {"eye": round(float((small - L.eye(small.shape[0])).abs().max()), 5) < 1e-4,
                                  "keys": sorted(lin.state_dict().keys())}
    return out


def parametrize_custom(L):
    class Symmetric(L.nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).transpose(-1, -2)

        def right_inverse(self, A):
            return A.triu()

    class Scale(L.nn.Module):
        def forward(self, X):
            return 2 * X

        def right_inverse(self, X):
            return X / 2

    lin = L.nn.Linear(3, 3)
    P = L.nn.utils.parametrize
    P.register_parametrization(lin, "weight", Symmetric())
    P.register_parametrization(lin, "weight", Scale())
    w1 = lin.weight
    sym = bool((w1 == w1.T).all())
    with P.cached():
        same = lin.weight is lin.weight
    lin.weight = L.eye(3) * 4
    after_set = _vals(lin.parametrizations.weight.original)
    keys = sorted(lin.state_dict().keys())
    P.remove_parametrizations(lin, "weight")
    return {"sym": sym, "cached": same, "after_set": after_set, "keys": keys, "removed": _vals(lin.weight),
            "type": type(lin).__name__, "param": isinstance(lin.weight, L.nn.Parameter)}


def fusion(L):
    conv, bn = L.nn.Conv2d(2, 3, 3), L.nn.BatchNorm2d(3)
    with L.no_grad():
        bn.running_mean.copy_(L.randn(3))
        bn.running_var.copy_(L.rand(3) + 0.5)
        bn.weight.copy_(L.randn(3))
        bn.bias.copy_(L.randn(3))
    conv.eval()
    bn.eval()
    x = L.randn(1, 2, 6, 6)
    fused = L.nn.utils.fuse_conv_bn_eval(conv, bn)
    lin, bn1 = L.nn.Linear(4, 3), L.nn.BatchNorm1d(3)
    with L.no_grad():
        bn1.running_mean.copy_(L.randn(3))
        bn1.running_var.copy_(L.rand(3) + 0.5)
    lin.eval()
    bn1.eval()
    z = L.randn(5, 4)
    return {"conv": round(float((fused(x) - bn(conv(x))).abs().max()), 5) < 1e-5, "conv_w": _vals(fused.weight),
            "lin": round(float((L.nn.utils.fuse_linear_bn_eval(lin, bn1)(z) - bn1(lin(z))).abs().max()), 5) < 1e-5}


def functional_call(L):
    lin = L.nn.Linear(3, 2)
    x = L.randn(4, 3)
    w = L.ones(2, 3)
    y = L.nn.utils.stateless.functional_call(lin, {"weight": w}, (x,))
    same = bool((lin.weight != w).any())
    try:
        L.nn.utils.stateless.functional_call(lin, {"weight": w, "nope": w}, (x,), strict=True)
        err = None
    except RuntimeError as e:
        err = str(e)
    return {"y": _vals(y), "restored": same, "err": err}


def grad_utils(L):
    lin = L.nn.Linear(3, 3)
    (lin(L.randn(4, 3)) ** 2).sum().backward()
    grads = [p.grad for p in lin.parameters()]
    total = L.nn.utils.get_total_norm(grads)
    L.nn.utils.clip_grads_with_norm_(lin.parameters(), 0.5, total)
    vec = L.nn.utils.parameters_to_vector(lin.parameters())
    return {"total": round(float(total), 5), "clipped": round(float(L.nn.utils.get_total_norm(
        [p.grad for p in lin.parameters()])), 5), "vec": _vals(vec)}


CASES = {f.__name__: f for f in [weight_norm_param, weight_norm_hook, spectral_norm_param, spectral_norm_hook,
                                 orthogonal_maps, parametrize_custom, fusion, functional_call, grad_utils]}


def run(L, name):
    return _run(L, CASES[name])

"""torch.func cases run the same way under torch (fixtures/gen_func.py)
and ferrotorch (test_func.py); each returns lists of floats."""

import numpy as np

R = np.random.default_rng(4)
X = R.normal(size=(5, 3))
Y = R.normal(size=(5,))
V = R.normal(size=(3,))


def _v(t):
    return [round(v, 10) for v in t.detach().double().reshape(-1).tolist()]


def _model(L):
    L.manual_seed(0)
    return L.nn.Sequential(L.nn.Linear(3, 4), L.nn.Tanh(), L.nn.Linear(4, 1)).double()


def per_sample_grads(L):
    F = L.func
    model = _model(L)
    params = {k: v.detach() for k, v in model.named_parameters()}
    x, y = L.tensor(X), L.tensor(Y)

    def loss(p, xi, yi):
        out = F.functional_call(model, p, (xi.unsqueeze(0),))
        return ((out.squeeze() - yi) ** 2)

    g = F.vmap(F.grad(loss), in_dims=(None, 0, 0))(params, x, y)
    return {k: _v(v) for k, v in g.items()}


def ensemble(L):
    F = L.func
    models = []
    for s in range(3):
        L.manual_seed(s)
        models.append(L.nn.Linear(3, 2).double())
    params, buffers = F.stack_module_state(models)
    base = models[0]
    x = L.tensor(X)

    def call(p, b, xi):
        return F.functional_call(base, (p, b), (xi,))

    out = F.vmap(call, in_dims=(0, 0, None))(params, buffers, x)
    return {"out": _v(out), "shape": list(out.shape)}


def jacobians(L):
    F = L.func
    x = L.tensor(V)
    A = L.tensor(X[:3])

    def f(x):
        return L.tanh(A @ x) * x.sum()

    def g(x):
        return (x.sin() * x.cos().exp()).sum()

    return {"jacrev": _v(F.jacrev(f)(x)), "jacfwd": _v(F.jacfwd(f)(x)), "hessian": _v(F.hessian(g)(x)),
            "jacrev2": _v(F.jacrev(F.jacrev(g))(x)), "grad2": _v(F.grad(F.grad(lambda t: (t ** 3).sin()))(x[0])),
            "vmap_jacrev": _v(F.vmap(F.jacrev(g))(L.tensor(X)))}


def products(L):
    F = L.func
    x = L.tensor(V)
    t = L.tensor(Y[:3])

    def f(x):
        return L.exp(x) * x.prod()

    out, jv = F.jvp(f, (x,), (t,))
    out2, vjp_fn = F.vjp(f, x)
    (vj,) = vjp_fn(t)
    _, lin = F.linearize(f, x)
    gv = F.grad_and_value(lambda x: f(x).sum())(x)
    ga = F.grad(lambda x: (f(x).sum(), x.mean()), has_aux=True)(x)
    return {"out": _v(out), "jvp": _v(jv), "vjp": _v(vj), "lin": _v(lin(t)), "gv_g": _v(gv[0]), "gv_v": _v(gv[1]),
            "aux": _v(ga[1]), "argnums": [_v(g) for g in F.grad(lambda a, b: (a * b.sin()).sum(), argnums=(0, 1))(x, t)]}


def rearrange(L):
    x = L.arange(24.0).reshape(2, 3, 4)
    return {"a": _v(L.func.rearrange(x, "b c w -> w (b c)")), "b": _v(L.func.rearrange(x, "b c (h w) -> b h c w", h=2))}


CASES = {f.__name__: f for f in [per_sample_grads, ensemble, jacobians, products, rearrange]}

"""vmap cases run the same way under torch (fixtures/gen_vmap.py) and
ferrotorch (test_vmap.py): per-example gradients of a CNN and an MLP,
ensembles, a wide set of ops under their batching rules, in/out dims,
nesting, chunks, the transforms composed with vmap, per-example losses.
Each returns a dict of lists of floats."""

import numpy as np

R = np.random.default_rng(11)
X = R.normal(size=(4, 3, 5))
Y = R.normal(size=(4, 5))
W = R.normal(size=(5, 2))
V = R.normal(size=(5,))
IMG = R.normal(size=(3, 1, 6, 6))
LAB = [2, 0, 1]
T2 = R.normal(size=(4, 2))
EMB = R.normal(size=(7, 3))


def _v(t):
    return [round(v, 10) for v in t.detach().double().reshape(-1).tolist()]


def _d(out):
    if isinstance(out, dict):
        return {k: _d(v) for k, v in out.items()}
    if isinstance(out, (list, tuple)):
        return [_d(v) for v in out]
    return _v(out)


def cnn_per_sample(L):
    nn, F, fn = L.nn, L.nn.functional, L.func
    L.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 3, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(12, 3),
                          nn.LogSoftmax(dim=1)).double()
    params = {k: v.detach() for k, v in model.named_parameters()}
    x, y = L.tensor(IMG), L.tensor(LAB)

    def loss(p, xi, yi):
        return F.nll_loss(fn.functional_call(model, p, (xi.unsqueeze(0),)), yi.unsqueeze(0))

    return _d(fn.vmap(fn.grad(loss), in_dims=(None, 0, 0))(params, x, y))


def mlp_losses(L):
    F, fn = L.nn.functional, L.func
    x, w = L.tensor(Y), L.tensor(W)
    t = L.tensor(T2)
    cls = L.tensor([1, 0, 1, 1])

    def losses(xi, ti, ci):
        h = L.tanh(xi @ w)
        return L.stack([F.mse_loss(h, ti), F.l1_loss(h, ti, reduction="sum"),
                        F.binary_cross_entropy_with_logits(h, ti.sigmoid()),
                        F.kl_div(h.log_softmax(-1), ti.softmax(-1), reduction="batchmean"),
                        F.cross_entropy(h, ci), F.cross_entropy(h.unsqueeze(0), ci.unsqueeze(0), label_smoothing=0.1),
                        F.cross_entropy(h.unsqueeze(0), ci.unsqueeze(0), weight=L.tensor([0.3, 2.0]).double()),
                        F.cross_entropy(h, ti.softmax(-1)), F.smooth_l1_loss(h, ti), F.huber_loss(h, ti, delta=0.5)])

    out = fn.vmap(losses)(x, t, cls)
    g = fn.vmap(fn.grad(lambda w2, xi, ci: F.cross_entropy(L.tanh(xi @ w2).unsqueeze(0), ci.unsqueeze(0),
                                                            ignore_index=0)), in_dims=(None, 0, 0))(w, x, cls)
    return {"losses": _v(out), "grad_ignore": _v(g)}


def ensemble(L):
    fn = L.func
    models = []
    for s in range(3):
        L.manual_seed(s)
        models.append(L.nn.Sequential(L.nn.Linear(5, 4), L.nn.GELU(), L.nn.LayerNorm(4), L.nn.Linear(4, 2)).double())
    params, buffers = fn.stack_module_state(models)
    x = L.tensor(Y)

    def call(p, b, xi):
        return fn.functional_call(models[0], (p, b), (xi,))

    same = fn.vmap(call, in_dims=(0, 0, None))(params, buffers, x)
    own = fn.vmap(call, in_dims=(0, 0, 0))(params, buffers, L.tensor(X[:3]))
    return {"same": _v(same), "own": _v(own), "shape": [list(same.shape), list(own.shape)]}


def ops(L):
    fn, F = L.func, L.nn.functional
    x, y, w, v = L.tensor(X), L.tensor(Y), L.tensor(W), L.tensor(V)
    emb = L.tensor(EMB)

    def f(a, b):  # a: (3, 5), b: (5,)
        out = {}
        out["mm"] = a @ w
        out["mv"] = a @ b
        out["vv"] = b @ v
        out["vm"] = b @ w
        out["uv"] = v @ a.t()
        out["mat_unb"] = L.matmul(w.t(), b)
        out["bmm"] = L.matmul(a.unsqueeze(0).expand(2, 3, 5), a.t().unsqueeze(0))
        out["lin"] = F.linear(a, w.t(), v[:2])
        out["shape"] = a.unsqueeze(1).transpose(0, 2).reshape(5, -1).reshape(15).view(3, 5).flatten() * 1.0
        out["perm"] = a.unsqueeze(0).permute(2, 0, 1).contiguous()
        out["red"] = L.stack([a.sum(), a.mean(), a.sum(dim=1).sum(), a.amax(), a.max(), a.min(dim=0).values.sum(),
                              a.norm(), a.std(), a.var(dim=1).sum(), a.logsumexp(0).sum(), a.prod(1).sum(),
                              a.argmax().double(), a.max(dim=1)[1].double().sum()])
        out["soft"] = a.softmax(-1) + F.log_softmax(a, dim=0)
        out["index"] = a[0] + a[:, 1:3].sum(1).sum() + a[..., None][1, 2] + a[[0, 2]].sum(0) + a[1, [0, 4]].sum()
        c = a.clone()
        c[1] = b
        c[:, 0] = 7.0
        c.add_(1.0).mul_(b)
        c += 2 * b
        out["inplace"] = c
        out["catstack"] = L.cat([a, y[:1]], 0).sum(0) + L.stack([b, v], dim=1).sum(1)
        out["where"] = L.where(a > 0, a, b) + a.masked_fill(a < 0, 0.5) + L.maximum(a, v) + a.clamp(-0.5, 0.5)
        out["reflect"] = (2 - a) + (2 / (a.abs() + 1)) + (1.5 ** a) + (-a) + abs(a)
        out["norms"] = F.normalize(a, dim=1) + F.layer_norm(a, (5,)) + F.pad(a, (1, 1))[:, 1:-1]
        out["gather"] = a.gather(1, L.tensor([[0, 1], [2, 3], [4, 4]])).sum() + a.index_select(1, L.tensor([4, 0])).sum()
        out["emb"] = F.embedding((b.abs() * 3).long().clamp(max=6), emb)
        out["expand"] = b.expand(2, 5).repeat(2, 1) + b.unsqueeze(0)
        out["parts"] = L.stack([p.sum() for p in a.chunk(3, dim=1)] + [p.sum() for p in a.split(2, dim=1)]
                               + [p.sum() for p in a.unbind(1)])
        out["sort"] = a.sort(dim=1).values + a.topk(2, dim=1).values.sum() + a.cumsum(1)
        out["fallback"] = L.trace(a[:, :3]).reshape(1) + L.linalg.det(a[:, :3]).reshape(1)
        out["const"] = v * 2  # depends on no mapped input: expanded
        return out

    return _d(fn.vmap(f)(x, y))


def dims(L):
    fn = L.func
    x, y = L.tensor(X), L.tensor(Y)

    def f(a, b):
        return (a * b).sum(-1), a.t()

    out = {}
    out["in1"] = fn.vmap(f, in_dims=(1, None))(x.transpose(0, 1), y[0])
    out["out1"] = fn.vmap(f, out_dims=(0, 2))(x, y)
    out["nested"] = fn.vmap(fn.vmap(lambda a, b: a @ b + a.sum(), in_dims=(0, None)))(x, y)
    out["nested_inner"] = fn.vmap(fn.vmap(lambda a, b: (a * b).softmax(0), in_dims=(0, 0)), in_dims=(0, None))(x, y[0:3])
    out["chunks"] = fn.vmap(lambda a: a.sum(0) * a.max(), chunk_size=3)(x)
    out["kwargs"] = fn.vmap(lambda a, scale=1.0: a * scale)(y, scale=3.0)
    out["dict_in"] = fn.vmap(lambda d: d["p"] + d["q"].sum())({"p": y, "q": x})
    return _d(out)


def transforms(L):
    fn = L.func
    x, v = L.tensor(Y), L.tensor(V)

    def g(t):
        return (t.sin() * t.cos().exp()).sum()

    def h(t):
        return L.tanh(t * v) * t.sum()

    out = {}
    out["vmap_jacrev"] = fn.vmap(fn.jacrev(h))(x)
    out["vmap_jacfwd"] = fn.vmap(fn.jacfwd(h))(x)
    out["vmap_hessian"] = fn.vmap(fn.hessian(g))(x)
    out["vmap_grad_grad"] = fn.vmap(fn.grad(fn.grad(lambda s: (s ** 3).sin())))(x[:, 0])
    out["vmap_jvp"] = fn.vmap(lambda p, t: fn.jvp(h, (p,), (t,))[1])(x, x.cos())
    out["vmap_vjp"] = fn.vmap(lambda p, c: fn.vjp(h, p)[1](c)[0])(x, x.sin())
    _, vjp_fn = fn.vjp(h, v)
    out["vjp_over_cotangents"] = fn.vmap(vjp_fn)(x)[0]
    out["grad_of_vmap"] = fn.grad(lambda p: fn.vmap(lambda r: (r * p).tanh().sum())(x).sum())(v)
    out["vmap_grad_argnums"] = fn.vmap(fn.grad(lambda a, b: (a * b.exp()).sum(), argnums=(0, 1)))(x, x * 0.5)
    return _d(out)


CASES = {f.__name__: f for f in [cnn_per_sample, mlp_losses, ensemble, ops, dims, transforms]}

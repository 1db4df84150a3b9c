"""``torch.autograd.functional``: jacobian, hessian, vjp, jvp, hvp, vhp,
built on ``autograd.grad`` as torch's are."""

from .. import _C
from . import grad as _grad


def _tuple(x):
    return (x, False) if isinstance(x, tuple) else ((x,), True)


def _prep(inputs, create_graph):
    return tuple(i.detach().requires_grad_(True) for i in inputs)


def _grads(outputs, inputs, grad_outputs, create_graph):
    got = _grad(outputs, inputs, grad_outputs, retain_graph=True,
                create_graph=create_graph, allow_unused=True)
    return tuple(g if g is not None else i.new_zeros(i.shape) for g, i in zip(got, inputs))


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), vᵀ J)``."""
    inputs, single = _tuple(inputs)
    with _enable():
        xs = _prep(inputs, create_graph)
        out = func(*xs)
        outs, out_single = _tuple(out)
        vs = _tuple(v)[0] if v is not None else tuple(o.new_ones(o.shape) for o in outs)
        g = _grads(outs, xs, vs, create_graph)
    out = tuple(o if create_graph else o.detach() for o in outs)
    g = tuple(x if create_graph else x.detach() for x in g)
    return (out[0] if out_single else out), (g[0] if single else g)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), J v)`` by the double-vjp trick."""
    inputs, single = _tuple(inputs)
    with _enable():
        xs = _prep(inputs, True)
        out = func(*xs)
        outs, out_single = _tuple(out)
        us = tuple(o.new_zeros(o.shape).requires_grad_(True) for o in outs)
        g = _grad(outs, xs, us, retain_graph=True, create_graph=True, allow_unused=True)
        vs = _tuple(v)[0] if v is not None else tuple(x.new_ones(x.shape) for x in xs)
        pairs = [(gi, vi) for gi, vi in zip(g, vs) if gi is not None]
        jv = _grad([p[0] for p in pairs], list(us), [p[1] for p in pairs],
                   retain_graph=True, create_graph=create_graph, allow_unused=True)
        jv = tuple(j if j is not None else o.new_zeros(o.shape) for j, o in zip(jv, outs))
    out = tuple(o if create_graph else o.detach() for o in outs)
    jv = tuple(x if create_graph else x.detach() for x in jv)
    return (out[0] if out_single else out), (jv[0] if out_single else jv)


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """The Jacobian of ``func`` at ``inputs``: shape ``out.shape + in.shape``."""
    import ferrotorch

    inputs, single = _tuple(inputs)
    with _enable():
        xs = _prep(inputs, create_graph)
        out = func(*xs)
        outs, out_single = _tuple(out)
        rows = []
        for o in outs:
            flat = o.reshape(-1)
            per_input = [[] for _ in xs]
            for k in range(flat.numel()):
                g = _grads([flat[k]], xs, None, create_graph)
                for j, gj in enumerate(g):
                    per_input[j].append(gj)
            jac = []
            for j, x in enumerate(xs):
                if per_input[j]:
                    jac.append(ferrotorch.stack(per_input[j]).reshape(tuple(o.shape) + tuple(x.shape)))
                else:
                    jac.append(x.new_zeros(tuple(o.shape) + tuple(x.shape)))
            if not create_graph:
                jac = [t.detach() for t in jac]
            rows.append(jac[0] if single else tuple(jac))
    return rows[0] if out_single else tuple(rows)


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False, outer_jacobian_strategy="reverse-mode"):
    """The Hessian of scalar ``func`` at ``inputs``."""
    inputs_t, single = _tuple(inputs)

    def grad_fn(*xs):
        with _enable():
            out = func(*xs)
            return _grads([out], xs, None, True) if not single else _grads([out], xs, None, True)[0]

    return jacobian(grad_fn, inputs_t[0] if single else inputs_t, create_graph=create_graph)


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), vᵀ H)``."""
    inputs, single = _tuple(inputs)
    with _enable():
        xs = _prep(inputs, True)
        out = func(*xs)
        g = _grads([out], xs, None, True)
        vs = _tuple(v)[0]
        h = _grads(list(g), xs, list(vs), create_graph)
    h = tuple(x if create_graph else x.detach() for x in h)
    return out.detach(), (h[0] if single else h)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), H v)``; H is symmetric, so this equals ``vhp``."""
    return vhp(func, inputs, v, create_graph, strict)


def _enable():
    from .grad_mode import enable_grad

    return enable_grad()

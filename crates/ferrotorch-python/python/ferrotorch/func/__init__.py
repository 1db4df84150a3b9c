"""``torch.func``: function transforms — ``grad``, ``vjp``, ``jvp``,
``jacrev``, ``jacfwd``, ``hessian``, ``vmap``, ``functional_call``,
``stack_module_state`` — that compose (``vmap(grad(f))``,
``jacrev(jacrev(f))``).

Note [Function transforms over the tape]: the gradient transforms run the
function on its inputs made differentiable at this level and ask the
autograd engine (``autograd.grad``) for the derivative, keeping the graph
when an enclosing level (another transform, or ordinary autograd through
inputs that require grad) needs to differentiate the result; forward-mode
products (``jvp``, ``jacfwd``) are two reverse passes (the transpose of a
vector-Jacobian product). ``vmap`` runs the function once on
BatchedTensors through batching rules, with a per-example loop for ops
that have none (Note [Batching rules] in ``_batched.py``); inside it the
gradient transforms differentiate physical leaves with one dim per vmap
level, so ``vmap(grad(f))`` is one forward and one backward pass.
``chunk_size`` splits the batch; randomness 'different' and 'same' run
one call per example, 'error' raises when the function draws random
numbers.
"""

import contextlib
import functools

from .. import _C
from . import _batched
from ._pytree import tree_flatten, tree_map, tree_unflatten

__all__ = ["grad", "grad_and_value", "vmap", "replace_all_batch_norm_modules_", "functionalize", "hessian",
           "jacfwd", "jacrev", "jvp", "linearize", "rearrange", "vjp", "functional_call", "stack_module_state",
           "debug_unwrap"]

_level = 0


def _ft():
    import ferrotorch

    return ferrotorch


@contextlib.contextmanager
def _transform_level():
    global _level
    _level += 1
    try:
        yield _level
    finally:
        _level -= 1


def _differentiable(x):
    """``x`` as a variable of this level: ``(what the function sees, the
    physical leaf to differentiate)``. The leaf is ``x`` itself viewed
    when it already carries a graph (an outer level differentiates
    through it), else a fresh leaf; inside a batched vmap it has a dim
    for every vmap level (Note [Batching rules] in ``_batched.py``)."""
    if not isinstance(x, (_C.Tensor, _batched.BatchedTensor)):
        raise RuntimeError(f"Expected a Tensor as input to a function transform, got {type(x).__name__}")
    if not (x.is_floating_point() or x.is_complex()):
        raise RuntimeError("grad/vjp: only floating point and complex tensors can be differentiated, "
                           f"got {x.dtype}")
    return _batched.physical_leaf(x)


def _physical(x):
    """A function's output as the autograd engine sees it, and its vmap
    levels."""
    return _batched.physical(x)


def _argnums(args, argnums):
    single = isinstance(argnums, int)
    nums = (argnums,) if single else tuple(argnums)
    for n in nums:
        if not isinstance(n, int):
            raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
        if not -len(args) <= n < len(args):
            raise RuntimeError(f"Got argnums={argnums}, but only {len(args)} positional inputs")
    return single, tuple(n % len(args) for n in nums)


def _keep_graph(leaves):
    return _level > 1 or any(isinstance(x, _C.Tensor) and x.requires_grad for x in leaves)


def _zeros_for(grads, inputs):
    return [g if g is not None else _ft().zeros_like(x) for g, x in zip(grads, inputs)]


def grad_and_value(func, argnums=0, has_aux=False):
    """``func``'s gradient with respect to the ``argnums`` inputs, and its
    value (and aux, ``(grad, (value, aux))``)."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        ft = _ft()
        single, nums = _argnums(args, argnums)
        outer = [x for n in nums for x in tree_flatten(args[n])[0]]
        keep = _level > 0 or _keep_graph(outer)
        with _transform_level(), ft.enable_grad():
            args = list(args)
            specs = {}
            for n in nums:
                leaves, spec = tree_flatten(args[n])
                pairs = [_differentiable(x) for x in leaves]
                specs[n] = ([p for _, p in pairs], spec)
                args[n] = tree_unflatten([lg for lg, _ in pairs], spec)
            out = func(*args, **kwargs)
            aux = None
            if has_aux:
                if not (isinstance(out, tuple) and len(out) == 2):
                    raise RuntimeError("grad_and_value(f)(*args): output of function f should be a tuple: "
                                       "(output, aux) if has_aux is True")
                out, aux = out
            tensor_out = isinstance(out, (_C.Tensor, _batched.BatchedTensor))
            if not tensor_out or out.numel() != 1:
                raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got "
                                   f"tensor with {out.dim() if tensor_out else '?'} dims. Maybe you "
                                   "wanted to use the vjp or jacrev APIs instead?")
            flat = [x for n in nums for x in specs[n][0]]
            phys_out, _ = _physical(out)
            ones = ft.ones_like(phys_out) if phys_out.dim() else None
            if phys_out.requires_grad:
                grads = ft.autograd.grad(phys_out, flat, ones, create_graph=keep, allow_unused=True)
            else:
                grads = [None] * len(flat)
            levels = _batched.active_levels()
            grads = [_batched.wrap_levels(g, levels) for g in _zeros_for(grads, flat)]
        it = iter(grads)
        per_arg = [tree_unflatten([next(it) for _ in specs[n][0]], specs[n][1]) for n in nums]
        g = per_arg[0] if single else tuple(per_arg)
        value = out if keep else out.detach()
        if has_aux:
            return g, (value, aux)
        return g, value

    return wrapper


def grad(func, argnums=0, has_aux=False):
    """``func``'s gradient with respect to the ``argnums`` inputs (``func``
    returns a one-element tensor; with ``has_aux``, ``(output, aux)``)."""
    gv = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        g, rest = gv(*args, **kwargs)
        return (g, rest[1]) if has_aux else g

    return wrapper


def vjp(func, *primals, has_aux=False):
    """``(func(*primals), vjp_fn)``: ``vjp_fn(cotangents)`` is the
    vector-Jacobian product for each primal."""
    ft = _ft()
    leaves, spec = tree_flatten(primals)
    keep = _level > 0 or _keep_graph(leaves)
    with _transform_level(), ft.enable_grad():
        pairs = [_differentiable(x) for x in leaves]
        xs = [p for _, p in pairs]
        out = func(*tree_unflatten([lg for lg, _ in pairs], spec))
    aux = None
    levels = _batched.active_levels()
    if has_aux:
        out, aux = out
    out_leaves, out_spec = tree_flatten(out)

    def vjp_fn(*cotangents):
        cts = tree_flatten(cotangents[0] if len(cotangents) == 1 else cotangents)[0]
        if len(cts) != len(out_leaves):
            raise RuntimeError(f"Expected pytree structure of cotangents to be the same as pytree structure of "
                               f"outputs to the function; got {len(cts)} cotangents for {len(out_leaves)} outputs")
        top = _batched.top_level(cts, {})
        if top is not None and top not in levels:
            # cotangents mapped by a vmap the primals were not: one
            # product per cotangent (torch's is_grads_batched loop)
            n = _batched.level_size(top)
            rows = [tree_flatten(vjp_fn(tree_unflatten([c._value[i] if _batched.is_batched(c, top) else c
                                                        for c in cts], tree_flatten(cotangents)[1])))[0]
                    for i in range(n)]
            stacked = [_batched.BatchedTensor(ft.stack([r[k] for r in rows]), top) for k in range(len(xs))]
            return tree_unflatten(stacked, spec)
        pairs = []
        for o, c in zip(out_leaves, cts):
            po, o_levels = _physical(o)
            if po.requires_grad:
                pairs.append((po, _batched.expand_to_levels(c, o_levels).expand(po.shape)))
        with ft.enable_grad():
            gs = ft.autograd.grad([o for o, _ in pairs], xs, [c for _, c in pairs], retain_graph=True,
                                  create_graph=keep, allow_unused=True) if pairs else [None] * len(xs)
        return tree_unflatten([_batched.wrap_levels(g, levels) for g in _zeros_for(gs, xs)], spec)

    out = out if keep else tree_map(lambda t: t.detach() if isinstance(t, _C.Tensor) else t, out)
    return (out, vjp_fn, aux) if has_aux else (out, vjp_fn)


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """``(func(*primals), J·tangents)``: the Jacobian-vector product, as the
    transpose of a vector-Jacobian product (Note [Function transforms over
    the tape])."""
    ft = _ft()
    if not isinstance(primals, (tuple, list)):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals to be a tuple.")
    p_leaves, p_spec = tree_flatten(tuple(primals))
    t_leaves, _ = tree_flatten(tuple(tangents))
    if len(p_leaves) != len(t_leaves):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have the same python "
                           "structure.")
    for p, t in zip(p_leaves, t_leaves):
        if tuple(p.shape) != tuple(t.shape):
            raise RuntimeError(f"jvp(f, primals, tangents): Expected primals and tangents to have the same shape; "
                               f"got {tuple(p.shape)} and {tuple(t.shape)}")
    keep = _level > 0 or _keep_graph(p_leaves + t_leaves)
    levels = _batched.active_levels()
    with _transform_level(), ft.enable_grad():
        pairs = [_differentiable(x) for x in p_leaves]
        xs = [p for _, p in pairs]
        t_phys = [_batched.expand_to_levels(t, levels) for t in t_leaves]
        out = func(*tree_unflatten([lg for lg, _ in pairs], p_spec))
        aux = None
        if has_aux:
            out, aux = out
        o_leaves, o_spec = tree_flatten(out)
        o_phys = [_physical(o) for o in o_leaves]
        vs = [ft.zeros_like(po).requires_grad_(True) for po, _ in o_phys]
        gs = ft.autograd.grad([po for po, _ in o_phys], xs, vs, create_graph=True, allow_unused=True)
        used = [(g, t) for g, t in zip(gs, t_phys) if g is not None]
        if used:
            js = ft.autograd.grad([g for g, _ in used], vs, [t for _, t in used], create_graph=keep,
                                  allow_unused=True)
        else:
            js = [None] * len(vs)
        js = [_batched.wrap_levels(j, lv) for j, (_, lv) in zip(_zeros_for(js, [po for po, _ in o_phys]), o_phys)]
    if not keep:
        o_leaves = [o.detach() for o in o_leaves]
        js = [j.detach() for j in js]
    res = (tree_unflatten(o_leaves, o_spec), tree_unflatten(js, o_spec))
    return res + (aux,) if has_aux else res


def linearize(func, *primals):
    """``(func(*primals), jvp_fn)`` with ``jvp_fn(*tangents)`` the
    Jacobian-vector product at ``primals``."""
    out = func(*primals)
    return out, lambda *tangents: jvp(func, primals, tangents)[1]


def _basis(x):
    ft = _ft()
    n = x.numel()
    return ft.eye(n, dtype=x.dtype).reshape((n,) + tuple(x.shape))


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """The Jacobian of ``func`` with respect to the ``argnums`` inputs by
    reverse mode: shape ``output.shape + input.shape``."""
    if chunk_size is not None and chunk_size <= 0:
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        ft = _ft()
        single, nums = _argnums(args, argnums)
        fixed = list(args)

        def f(*xs):
            a = list(fixed)
            for n, x in zip(nums, xs):
                a[n] = x
            return func(*a, **kwargs)

        res = vjp(f, *[args[n] for n in nums], has_aux=has_aux)
        out, vjp_fn = res[0], res[1]
        o_leaves, o_spec = tree_flatten(out)
        in_leaves, in_spec = tree_flatten(tuple(args[n] for n in nums))
        per_out = []
        for i, o in enumerate(o_leaves):
            rows = []
            for e in _basis(o):
                cts = [e if j == i else ft.zeros_like(oj) for j, oj in enumerate(o_leaves)]
                rows.append(tree_flatten(vjp_fn(tree_unflatten(cts, o_spec)))[0])
            jac = [ft.stack([r[k] for r in rows]).reshape(tuple(o.shape) + tuple(x.shape))
                   for k, x in enumerate(in_leaves)]
            jac = tree_unflatten(jac, in_spec)
            per_out.append(jac[0] if single else jac)
        result = tree_unflatten(per_out, o_spec)
        return (result, res[2]) if has_aux else result

    return wrapper


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """The Jacobian of ``func`` with respect to the ``argnums`` inputs by
    forward mode (Jacobian-vector products): ``output.shape + input.shape``."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        ft = _ft()
        single, nums = _argnums(args, argnums)
        prim = tuple(args[n] for n in nums)
        fixed = list(args)

        def f(*xs):
            a = list(fixed)
            for n, x in zip(nums, xs):
                a[n] = x
            return func(*a, **kwargs)

        in_leaves, in_spec = tree_flatten(prim)
        cols_per_input, out, aux = [], None, None
        for k, x in enumerate(in_leaves):
            cols = []
            for e in _basis(x):
                tans = tree_unflatten([e if j == k else ft.zeros_like(xj) for j, xj in enumerate(in_leaves)], in_spec)
                r = jvp(f, prim, tans, has_aux=has_aux)
                out = r[0]
                if has_aux:
                    aux = r[2]
                cols.append(tree_flatten(r[1])[0])
            cols_per_input.append(cols)
        o_leaves, o_spec = tree_flatten(out)
        per_out = []
        for i, o in enumerate(o_leaves):
            jac = []
            for k, x in enumerate(in_leaves):
                stacked = ft.stack([c[i] for c in cols_per_input[k]], dim=-1)
                jac.append(stacked.reshape(tuple(o.shape) + tuple(x.shape)))
            jac = tree_unflatten(jac, in_spec)
            per_out.append(jac[0] if single else jac)
        result = tree_unflatten(per_out, o_spec)
        return (result, aux) if has_aux else result

    return wrapper


def hessian(func, argnums=0):
    """The Hessian of a scalar ``func``: ``jacfwd(jacrev(func))``."""
    return jacfwd(jacrev(func, argnums), argnums)


from ._vmap import vmap  # noqa: E402
from ._modules import (debug_unwrap, functional_call, functionalize, rearrange,  # noqa: E402
                       replace_all_batch_norm_modules_, stack_module_state)

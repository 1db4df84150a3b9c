"""Dynamic shapes for ``torch.export`` (``dynamic_shapes`` with ``Dim``):
which input sizes are symbols, and what every traced size is in terms of
them.

# Note [Symbolic sizes by retracing]
The tracer records a size the module reads (``x.size(0)``, ``B, T, C =
x.shape``) as a traced value (Note [Traced sizes] in ferrotorch-jit), so
the graph already follows its inputs' sizes; what it does not know is
which sizes of its values are symbolic. Export finds out by tracing
again: once per symbol with that symbol's dims one larger (the input
grown by repeating its first slice along them, so indices stay valid),
once per pair of symbols with both larger, and once more with every
symbol two larger to check. A size that is the same in every trace is
static; one that moves is ``b + Σ a·s + Σ c·s·t`` in the symbols (``B*T``
of a flattening view), read off the differences, and checked against
the last trace — a size of any other form, a constant that moved (a
Python int computed from a size), or a graph whose structure changed
(control flow on a size) is an error naming it.
"""

import math

from .. import _C


class Dim:
    """``torch.export.Dim``: a named size for ``dynamic_shapes``, with an
    optional range (``min``, ``max``)."""

    AUTO = None
    STATIC = None
    DYNAMIC = None

    def __init__(self, name, *, min=None, max=None):  # noqa: A002 (torch's names)
        if max is not None and min is not None and max < min:
            raise ValueError(f"Dim {name!r}: max {max} is below min {min}")
        self.__name__ = name
        self.min = 0 if min is None else min
        self.max = max

    def __repr__(self):
        return f"Dim({self.__name__!r}, min={self.min}, max={self.max})"


class _Marker:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"Dim.{self.name}"


Dim.AUTO = _Marker("AUTO")
Dim.DYNAMIC = _Marker("DYNAMIC")
Dim.STATIC = _Marker("STATIC")


class ValueRange:
    """A symbol's range (``range_constraints``): ``lower``, ``upper``
    (``None``: unbounded)."""

    def __init__(self, lower, upper):
        self.lower, self.upper = lower, upper

    def __eq__(self, other):
        return isinstance(other, ValueRange) and (self.lower, self.upper) == (other.lower, other.upper)

    def __repr__(self):
        return f"VR[{self.lower}, {'int_oo' if self.upper is None else self.upper}]"


class SymSize(int):
    """A symbolic size: an int (its value while tracing, the hint) that
    also says what it is in the symbols (``expr``, ``"2*batch"``)."""

    def __new__(cls, hint, expr):
        o = super().__new__(cls, hint)
        o.expr = expr
        return o

    def __repr__(self):
        return self.expr

    __str__ = __repr__


def leaf_dims(dynamic_shapes, mod, args, kwargs, flat):
    """``{flat index: {axis: Dim}}`` from ``dynamic_shapes`` (a dict by
    argument name, or a tuple by position, of ``{axis: Dim}`` or a list
    per axis), or ``{}`` when nothing is dynamic."""
    import inspect

    if dynamic_shapes is None:
        return {}
    try:
        names = [p.name for p in inspect.signature(mod.forward).parameters.values()]
    except (TypeError, ValueError):
        names = []
    if isinstance(dynamic_shapes, dict):
        by_pos = []
        for i in range(len(args)):
            by_pos.append(dynamic_shapes.get(names[i]) if i < len(names) else None)
        unknown = set(dynamic_shapes) - set(names[:len(args)]) - set(kwargs)
        if unknown:
            raise ValueError(f"export: dynamic_shapes names {sorted(unknown)}, which are not inputs")
        by_kw = {k: dynamic_shapes.get(k) for k in kwargs}
    else:
        by_pos = list(dynamic_shapes) + [None] * (len(args) - len(dynamic_shapes))
        by_kw = {}
    out, autos = {}, [0]
    leaf = iter(range(len(flat)))

    def spec_of(x, spec):
        i = next(leaf) if not isinstance(x, (tuple, list, dict)) else None
        if isinstance(x, (tuple, list)):
            for j, v in enumerate(x):
                spec_of(v, spec[j] if isinstance(spec, (tuple, list)) and j < len(spec) else None)
            return
        if isinstance(x, dict):
            for k, v in x.items():
                spec_of(v, spec.get(k) if isinstance(spec, dict) else None)
            return
        if spec is None:
            return
        if not isinstance(x, _C.Tensor):
            raise ValueError("export: dynamic_shapes gives dims for an input that is not a tensor")
        axes = spec.items() if isinstance(spec, dict) else enumerate(spec)
        dims = {}
        for a, d in axes:
            if d is None or d is Dim.STATIC:
                continue
            if isinstance(d, _Marker):
                d = Dim(f"s{autos[0]}")
                autos[0] += 1
            if not isinstance(d, Dim):
                raise ValueError(f"export: dynamic_shapes: axis {a} is {d!r}, not a Dim")
            if not 0 <= a < x.dim():
                raise ValueError(f"export: dynamic_shapes: axis {a} of an input with {x.dim()} dims")
            dims[a] = d
        if dims:
            out[i] = dims

    for x, s in zip(args, by_pos):
        spec_of(x, s)
    for k, x in kwargs.items():
        spec_of(x, by_kw.get(k))
    return out


def symbols(dims, flat):
    """``{Dim: its size in the example}``, checking dims that share a
    ``Dim`` agree and lie in its range."""
    seen = {}
    for i, axes in dims.items():
        for a, d in axes.items():
            n = flat[i].shape[a]
            if d in seen and seen[d] != n:
                raise ValueError(f"export: dims sharing Dim {d.__name__!r} have sizes {seen[d]} and {n}")
            if n < max(d.min, 2) or (d.max is not None and n > d.max):
                lo = max(d.min, 2)
                raise ValueError(
                    f"export: the example's size {n} for Dim {d.__name__!r} is outside "
                    f"[{lo}, {d.max if d.max is not None else 'inf'}] (sizes 0 and 1 are specialised, as in torch)")
            seen[d] = n
    return seen


def grown(run_on, traced_at, dims, grow):
    """The traced inputs with each dim of a symbol in ``grow`` (Dim →
    amount) larger, by repeating the first slice."""
    from .. import cat

    at = {i: k for k, i in enumerate(traced_at)}
    out = list(run_on)
    for i, axes in dims.items():
        x = out[at[i]]
        for a, d in axes.items():
            for _ in range(grow.get(d, 0)):
                x = cat([x, x.narrow(a, 0, 1)], a)
        out[at[i]] = x.detach()
    return out


def _structure(rows):
    values, inputs, nodes, outputs = rows
    return [(k, ov, tuple(ins), tuple(outs)) for k, ov, _, ins, outs, _ in nodes], inputs, outputs


def _constants(rows):
    out = {}
    for k, _, _, _, outs, attr in rows[2]:
        if k == "prim::Constant" and not isinstance(attr, (_C.Tensor, _C.ScriptObject)):
            out[outs[0]] = attr
    return out


def infer(base, traces, pairs, check, syms):
    """``{value id: [None or (terms, b) per dim]}``, a size being ``b +
    Σ terms[key]·Π key`` over keys of one symbol or a pair (``B*T``),
    from the base trace, one trace per symbol (+1), one per pair of
    symbols (both +1) and the check trace (every symbol +2)."""
    others = list(traces.values()) + list(pairs.values()) + [check]
    want = _structure(base)
    for rows in others:
        if _structure(rows) != want:
            raise RuntimeError("export: the module's graph changes with the dynamic sizes "
                               "(control flow on a size?); export it with static shapes")
    consts = _constants(base)
    for rows in others:
        for vid, v in _constants(rows).items():
            if consts.get(vid) != v:
                raise RuntimeError(
                    f"export: a constant of the graph ({consts.get(vid)!r}, then {v!r}) follows a "
                    "dynamic size: the module computes a Python number from a size; "
                    "keep it a tensor size (x.size(d)) or make the dim static")
    out = {}
    for vid, (_, tag, _, sizes, _, _, _) in enumerate(base[0]):
        if tag != "Tensor":
            continue
        dims = [_fit(vid, axis, n0, traces, pairs, check, syms) for axis, n0 in enumerate(sizes)]
        if any(d is not None for d in dims):
            out[vid] = dims
    return out


def _fit(vid, axis, n0, traces, pairs, check, syms):
    size = lambda rows: rows[0][vid][3][axis]  # noqa: E731
    step = {d: size(traces[d]) - n0 for d in syms}
    cross = {(a, b): size(r) - size(traces[a]) - size(traces[b]) + n0 for (a, b), r in pairs.items()}
    terms = {}
    for (a, b), c in cross.items():
        if c:
            terms[(a, b)] = c
    for d in syms:
        lin = step[d] - sum(c * syms[b if a is d else a] for (a, b), c in cross.items() if d in (a, b))
        if lin:
            terms[(d,)] = lin
    b = n0 - sum(c * math.prod(syms[d] for d in key) for key, c in terms.items())
    predicted = b + sum(c * math.prod(syms[d] + 2 for d in key) for key, c in terms.items())
    if size(check) != predicted:
        raise RuntimeError(f"export: a size of value %{vid} is not a product of at most two "
                           "dynamic sizes; not supported")
    return (terms, b) if terms else None



def expr(coeffs, b):
    """``2*batch + 1`` (sympy's spelling)."""
    terms = []
    for key, a in coeffs.items():
        name = "*".join(d.__name__ for d in key)
        terms.append(name if a == 1 else f"{a}*{name}")
    s = " + ".join(terms)
    if b > 0:
        s += f" + {b}"
    elif b < 0:
        s += f" - {-b}"
    return s

"""``ExportedProgram.run_decompositions``: the program in core ATen and
functional, as torch's does it — composite ops replaced by the ops torch's
core decompositions give (``linear`` → ``permute`` + ``addmm``,
``batch_norm`` → ``_native_batch_norm_legit_functional``, ``conv2d`` →
``convolution``, ...), in-place writes replaced by their out-of-place op
(a write to a buffer or an input becomes an output of the program, its
mutation in the signature), and calls on custom class objects threaded
by an effect token through ``with_effects`` (seeds/004's graph). A write
through a view is refused by name: it would need a scatter back into the
viewed tensor, which is not implemented."""

import math
import operator

from .. import _C
from ..fx.graph import Graph
from . import _hop
from .graph_signature import (ExportGraphSignature, InputKind, InputSpec, OutputKind, OutputSpec,
                              TensorArgument, TokenArgument)

# ops whose result shares its input's storage
_VIEWS = {"view", "_unsafe_view", "permute", "t", "transpose", "select", "slice", "expand",
          "unsqueeze", "squeeze", "as_strided", "narrow", "diagonal", "alias", "split",
          "chunk", "unbind", "unfold", "view_as", "reshape", "flatten", "detach"}


def _aten(name, overload="default"):
    from .. import ops

    return getattr(getattr(ops.aten, name), overload)


def _meta(n, i):
    a = n.args[i]
    return a.meta.get("val") if hasattr(a, "meta") else None


class _Emitter:
    """Builds the new graph; ``call`` adds one op node."""

    def __init__(self, g):
        self.g = g

    def call(self, op, *args, **kwargs):
        return self.g.create_node("call_function", op, args, kwargs, name=op._opname)

    def item(self, n, i):
        return self.g.create_node("call_function", operator.getitem, (n, i), {}, name="getitem")


def _dims(em, x, m):
    """``m``'s sizes for a new shape: ints, and for a symbolic size an
    ``aten.sym_size.int`` of ``x``."""
    from ._dynamic import SymSize

    out = []
    for i, n in enumerate(m.shape):
        if isinstance(n, SymSize):
            node = em.g.create_node("call_function", _aten("sym_size", "int"), (x, i), {},
                                    name="sym_size_int")
            node.meta["val"] = n
            out.append(node)
        else:
            out.append(int(n))
    return out


def _linear(em, old, x, w, b=None):
    wt = em.call(_aten("permute"), w, [1, 0])
    m = _meta(old, 0)
    if m is not None and m.dim() != 2:
        lead = _dims(em, x, m)[:-1]
        flat = em.call(_aten("view"), x, [-1, int(m.shape[-1])])
        out_features = int(_meta(old, 1).shape[0])
        y = em.call(_aten("addmm"), b, flat, wt) if b is not None else em.call(_aten("mm"), flat, wt)
        return em.call(_aten("view"), y, [*lead, out_features])
    return em.call(_aten("addmm"), b, x, wt) if b is not None else em.call(_aten("mm"), x, wt)


def _batch_norm(em, old, x, w, b, rm, rv, training, momentum, eps, cudnn_enabled=True):
    if not training and rm is not None:
        r = em.call(_aten("_native_batch_norm_legit_no_training"), x, w, b, rm, rv, momentum, eps)
        return em.item(r, 0)
    if rm is None:
        r = em.call(_aten("_native_batch_norm_legit", "no_stats"), x, w, b, True, momentum, eps)
        return em.item(r, 0)
    r = em.call(_aten("_native_batch_norm_legit_functional"), x, w, b, rm, rv, True, momentum, eps)
    em.writes.append((old.args[3], em.item(r, 3)))
    em.writes.append((old.args[4], em.item(r, 4)))
    return em.item(r, 0)


def _conv(n):
    def conv(em, old, x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
        if isinstance(padding, str):
            return None  # "same"/"valid": kept as it is
        rep = lambda v: list(v) if isinstance(v, (list, tuple)) else [v] * n  # noqa: E731
        return em.call(_aten("convolution"), x, w, b, rep(stride), rep(padding), rep(dilation),
                       False, [0] * n, groups)
    return conv


def _conv_transpose(n):
    def conv(em, old, x, w, b=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
        rep = lambda v: list(v) if isinstance(v, (list, tuple)) else [v] * n  # noqa: E731
        return em.call(_aten("convolution"), x, w, b, rep(stride), rep(padding), rep(dilation),
                       True, rep(output_padding), groups)
    return conv


def _dropout(em, old, x, p, train):
    if not train:
        return x
    return em.item(em.call(_aten("native_dropout"), x, p, True), 0)


def _layer_norm(em, old, x, shape, w=None, b=None, eps=1e-5, cudnn_enable=True):
    return em.item(em.call(_aten("native_layer_norm"), x, shape, w, b, eps), 0)


def _contiguous(em, old, x, memory_format=None):
    m = _meta(old, 0)
    if m is not None and _is_contiguous(m):
        return x
    return em.call(_aten("clone"), x, memory_format=_C_contiguous())


def _C_contiguous():  # noqa: N802
    import ferrotorch

    return ferrotorch.contiguous_format


def _is_contiguous(m):
    expected = 1
    for size, stride in reversed(list(zip(m.shape, m.stride()))):
        if size != 1 and stride != expected:
            return False
        expected *= size
    return True


def _reshape(em, old, x, shape):
    m = _meta(old, 0)
    if m is not None and not _is_contiguous(m):
        x = em.call(_aten("clone"), x, memory_format=_C_contiguous())
    return em.call(_aten("view"), x, list(shape))


def _flatten(em, old, x, start_dim=0, end_dim=-1):
    m = _meta(old, 0)
    if m is None:
        return None
    d = m.dim()
    s, e = start_dim % max(d, 1), end_dim % max(d, 1)
    dims = _dims(em, x, m)
    merged = dims[s:e + 1]
    n = -1 if any(hasattr(v, "op") for v in merged) else math.prod(merged)
    return _reshape(em, old, x, [*dims[:s], n, *dims[e + 1:]])



def _t(em, old, x):
    m = _meta(old, 0)
    return x if m is not None and m.dim() < 2 else em.call(_aten("permute"), x, [1, 0])


def _transpose(em, old, x, a, b):
    m = _meta(old, 0)
    if m is None:
        return None
    perm = list(range(m.dim()))
    perm[a], perm[b] = perm[b], perm[a]
    return em.call(_aten("permute"), x, perm)


def _matmul(em, old, a, b):
    ma, mb = _meta(old, 0), _meta(old, 1)
    if ma is None or mb is None:
        return None
    if ma.dim() == 2 and mb.dim() == 2:
        return em.call(_aten("mm"), a, b)
    if ma.dim() == 3 and mb.dim() == 3 and str(ma.shape[0]) == str(mb.shape[0]):
        return em.call(_aten("bmm"), a, b)
    if ma.dim() > 2 and mb.dim() == 2 and not _symbolic(mb):
        lead = _dims(em, a, ma)[:-1]
        flat = em.call(_aten("view"), _reshape_input(em, a, ma), [-1, int(ma.shape[-1])])
        return em.call(_aten("view"), em.call(_aten("mm"), flat, b), [*lead, int(mb.shape[1])])
    return None


def _symbolic(m):
    from ._dynamic import SymSize

    return any(isinstance(n, SymSize) for n in m.shape)


def _reshape_input(em, x, m):
    return x if _is_contiguous(m) else em.call(_aten("clone"), x, memory_format=_C_contiguous())


def _softmax(em, old, x, dim, dtype=None):
    return None if dtype is not None else em.call(_aten("_softmax"), x, dim, False)


def _log_softmax(em, old, x, dim, dtype=None):
    return None if dtype is not None else em.call(_aten("_log_softmax"), x, dim, False)


def _max_pool2d(em, old, x, k, stride=(), padding=0, dilation=1, ceil_mode=False):
    args = [x, k]
    rest = [list(stride) if stride else [], padding, dilation, ceil_mode]
    defaults = [[], [0, 0], [1, 1], False]
    rep = lambda v: list(v) if isinstance(v, (list, tuple)) else [v, v]  # noqa: E731
    rest = [rest[0], rep(rest[1]), rep(rest[2]), rest[3]]
    while rest and rest[-1] == defaults[len(rest) - 1]:
        rest.pop()
    return em.item(em.call(_aten("max_pool2d_with_indices"), *args, *rest), 0)


def _adaptive_avg_pool2d(em, old, x, size):
    return em.call(_aten("_adaptive_avg_pool2d"), x, list(size))


def default_table():
    """op (an ``OpOverload``) → its decomposition."""
    table = {}

    def add(name, overload, fn):
        try:
            table[_aten(name, overload)] = fn
        except AttributeError:
            pass  # an op this build does not have

    add("linear", "default", _linear)
    add("batch_norm", "default", _batch_norm)
    for n in (1, 2, 3):
        add(f"conv{n}d", "default", _conv(n))
        add(f"conv_transpose{n}d", "input", _conv_transpose(n))
    add("dropout", "default", _dropout)
    add("layer_norm", "default", _layer_norm)
    add("contiguous", "default", _contiguous)
    add("reshape", "default", _reshape)
    add("flatten", "using_ints", _flatten)
    add("t", "default", _t)
    add("transpose", "int", _transpose)
    add("matmul", "default", _matmul)
    add("softmax", "int", _softmax)
    add("log_softmax", "int", _log_softmax)
    add("max_pool2d", "default", _max_pool2d)
    add("adaptive_avg_pool2d", "default", _adaptive_avg_pool2d)
    return table


def _functional(op):
    """The out-of-place op of an in-place one (``add_.Tensor`` →
    ``add.Tensor``), or ``None``."""
    name = op._opname
    if not name.endswith("_") or name.startswith("_") and name.endswith("__"):
        return None
    try:
        return getattr(getattr(_aten_ns(op), name[:-1]), op._overloadname)
    except AttributeError:
        return None


def _aten_ns(op):
    from .. import ops

    return getattr(ops, op.namespace)


def _is_inplace(op):
    return hasattr(op, "overloadpacket") and op._opname.endswith("_") and not op._opname.startswith("__")


def run(ep, decomp_table=None):
    """The decomposed, functional program of ``ep``."""
    from .exported_program import ExportedProgram

    table = default_table() if decomp_table is None else decomp_table
    old_sig = ep.graph_signature
    g = Graph()
    em = _Emitter(g)
    em.writes = []
    env, latest, view_of = {}, {}, {}
    placeholders = [n for n in ep.graph.nodes if n.op == "placeholder"]
    uses_objects = any(n.target in (_hop.call_torchbind,) or _takes_object(n) for n in ep.graph.nodes)
    input_specs = []
    token = None
    if uses_objects:
        token = g.placeholder("token")
        input_specs.append(InputSpec(InputKind.TOKEN, TokenArgument(token.name), None))
    for n, spec in zip(placeholders, old_sig.input_specs):
        env[n] = g.placeholder(n.name)
        env[n].meta = dict(n.meta)
        input_specs.append(spec)

    def cur(a):
        return latest.get(a, env[a]) if hasattr(a, "op") else a

    def mapped(a):
        from ..fx.node import map_arg

        return map_arg(a, cur)

    out_node = None
    for n in ep.graph.nodes:
        if n.op == "placeholder":
            continue
        if n.op == "output":
            out_node = n
            break
        args, kwargs = mapped(n.args), mapped(n.kwargs)
        target = n.target
        if target is _hop.call_torchbind or _takes_object(n):
            r = g.create_node("call_function", _hop.with_effects, (token, target, *args), kwargs,
                              name="with_effects")
            token = em.item(r, 0)
            env[n] = em.item(r, 1) if n.users else r
            continue
        if _is_inplace(target):
            functional = _functional(target)
            if functional is None:
                raise RuntimeError(f"run_decompositions: in-place {target.name()} has no "
                                   "out-of-place op to functionalise it with")
            base = n.args[0]
            if base in view_of:
                raise RuntimeError(
                    f"run_decompositions: in-place {target.name()} writes a view "
                    f"({view_of[base]}) of another tensor; writes through views are not "
                    "functionalised")
            new = em.call(functional, *args, **kwargs)
            latest[base] = new
            env[n] = new
            continue
        fn = table.get(target) if n.op == "call_function" else None
        em.writes = []
        out = fn(em, n, *args, **kwargs) if fn is not None else None
        if out is None:
            out = g.node_copy(n, cur)
        for base, v in em.writes:
            latest[base] = v
        env[n] = out
        if hasattr(target, "_opname") and target._opname in _VIEWS:
            view_of[n] = target.name()
    # the writes to inputs become outputs, before the user's
    outputs, output_specs = [], []
    if token is not None:
        outputs.append(token)
        output_specs.append(OutputSpec(OutputKind.TOKEN, TokenArgument(token.name), None))
    for n, spec in zip(placeholders, old_sig.input_specs):
        if n not in latest:
            continue
        v = latest[n]
        kind = {InputKind.BUFFER: OutputKind.BUFFER_MUTATION,
                InputKind.PARAMETER: OutputKind.PARAMETER_MUTATION,
                InputKind.USER_INPUT: OutputKind.USER_INPUT_MUTATION}.get(spec.kind)
        if kind is None:
            raise RuntimeError(f"run_decompositions: the program writes {spec.kind.name} {n.name}")
        outputs.append(v)
        target = spec.target if spec.kind != InputKind.USER_INPUT else n.name
        output_specs.append(OutputSpec(kind, TensorArgument(v.name), target))
    for spec, v in zip(old_sig.output_specs, out_node.args[0]):
        v = cur(v)
        outputs.append(v)
        if hasattr(v, "name") and isinstance(spec.arg, TensorArgument):
            spec = OutputSpec(spec.kind, TensorArgument(v.name), spec.target)
        output_specs.append(spec)
    g.output(tuple(outputs))
    g.eliminate_dead_code()
    sig = ExportGraphSignature(input_specs, output_specs)
    new = ExportedProgram(g, sig, ep.state_dict, ep.constants, ep._in_spec, ep._out_spec,
                          example_inputs=ep.example_inputs, range_constraints=ep.range_constraints,
                          verifiers=(), forward_arg_names=ep._forward_arg_names)
    propagate_meta(new)
    return new


def _takes_object(n):
    from ._trace import ScriptObjectMeta

    return n.op == "call_function" and any(
        hasattr(a, "meta") and isinstance(a.meta.get("val"), ScriptObjectMeta) for a in n.args)


def propagate_meta(ep):
    """``node.meta["val"]`` of every node, by running the graph once on
    copies of the weights and zeros of the inputs' shapes (so nothing the
    program holds changes)."""
    import copy

    from .. import zeros
    from ..fx.node import map_arg

    values = {}
    sig = ep.graph_signature
    placeholders = [n for n in ep.graph.nodes if n.op == "placeholder"]
    ex_leaves = None
    if ep.example_inputs is not None:
        from ..utils import _pytree as pytree

        ex_leaves = iter(pytree.tree_leaves((tuple(ep.example_inputs[0]), dict(ep.example_inputs[1]))))
    for n, spec in zip(placeholders, sig.input_specs):
        if spec.kind == InputKind.TOKEN:
            values[n] = _hop._make_token()
        elif spec.kind == InputKind.USER_INPUT:
            leaf = next(ex_leaves) if ex_leaves is not None else None
            m = n.meta.get("val")
            if isinstance(leaf, _C.ScriptObject):
                values[n] = copy.deepcopy(leaf)
            elif m is not None:
                values[n] = zeros(list(m.shape), dtype=m.dtype)
            else:
                values[n] = leaf
        else:
            src = ep.state_dict if spec.target in ep.state_dict else ep.constants
            t = src[spec.target]
            values[n] = copy.deepcopy(t) if isinstance(t, _C.ScriptObject) else t.detach().clone()
    from ._trace import TensorMeta

    for n in ep.graph.nodes:
        if n.op != "call_function":
            continue
        out = n.target(*map_arg(n.args, values.__getitem__), **map_arg(n.kwargs, values.__getitem__))
        values[n] = out
        if "val" in n.meta:
            continue  # kept from the program (symbolic sizes stay symbolic)
        if isinstance(out, _C.Tensor):
            n.meta["val"] = TensorMeta.of(out)
        elif isinstance(out, (tuple, list)):
            n.meta["val"] = tuple(TensorMeta.of(o) if isinstance(o, _C.Tensor) else None for o in out)

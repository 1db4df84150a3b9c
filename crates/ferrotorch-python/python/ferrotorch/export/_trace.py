"""From a module and example inputs to the graph ``torch.export`` gives:
one run traced by the JIT's tracer (every op reaches it through the
dispatcher, so the graph names ATen ops with their overloads), then each
node rewritten as an fx node (Note [Exported programs] in ``__init__``)."""

import copy
import inspect
import operator

from .. import _C
from ..fx.graph import Graph
from ..utils import _pytree as pytree
from . import _hop
from .graph_signature import (ConstantArgument, CustomObjArgument, InputKind, InputSpec, OutputKind,
                              OutputSpec, TensorArgument)

# ops whose results are sizes: with static shapes their value is known
_SIZE_OPS = {"aten::size", "prim::NumToTensor", "aten::Int", "aten::ScalarImplicit",
             "aten::Float", "aten::Bool"}


class TensorMeta:
    """What ``node.meta["val"]`` tells of a tensor without holding its
    data: ``shape``, ``dtype``, ``stride()``, ``requires_grad``."""

    def __init__(self, shape, dtype, stride, requires_grad, storage_offset=0):
        from .._size import Size

        self.shape = Size(shape)
        self.dtype = dtype
        self._stride = tuple(stride)
        self.requires_grad = requires_grad
        self._storage_offset = storage_offset
        from .. import device

        self.device = device("cpu")

    def size(self, dim=None):
        return self.shape if dim is None else self.shape[dim]

    def stride(self, dim=None):
        return self._stride if dim is None else self._stride[dim]

    def storage_offset(self):
        return self._storage_offset

    def dim(self):
        return len(self.shape)

    def numel(self):
        n = 1
        for s in self.shape:
            n *= s
        return n

    def __repr__(self):
        return f"TensorMeta(shape={list(self.shape)}, dtype={self.dtype})"

    @staticmethod
    def of(t):
        return TensorMeta(t.shape, t.dtype, t.stride(), t.requires_grad, t.storage_offset())


class ScriptObjectMeta:
    """``node.meta["val"]`` of a custom class object: its class."""

    def __init__(self, class_fqn):
        self.class_fqn = class_fqn

    def __repr__(self):
        return f"ScriptObjectMeta({self.class_fqn})"


def _dtype(name):
    import ferrotorch

    return getattr(ferrotorch, name.rpartition(".")[2])


def _leaf_names(mod, args, kwargs):
    """A placeholder name per leaf of ``(args, kwargs)``, as torch names
    them: the argument's name, then each level's index or key
    (``x_0``, ``d_a``)."""
    try:
        params = list(inspect.signature(mod.forward).parameters.values())
    except (TypeError, ValueError):
        params = []
    positional = [p.name for p in params
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    star = next((p.name for p in params if p.kind == p.VAR_POSITIONAL), "args")
    names = []

    def walk(x, path):
        if type(x) in (tuple, list):
            for i, v in enumerate(x):
                walk(v, f"{path}_{i}")
        elif isinstance(x, dict):
            for k, v in x.items():
                walk(v, f"{path}_{k}")
        else:
            names.append(path)

    for i, a in enumerate(args):
        walk(a, positional[i] if i < len(positional) else f"{star}_{i - len(positional)}")
    for k, v in kwargs.items():
        walk(v, k)
    return names


def _private_copies(leaves):
    """Copies of the tensors and objects tracing will run on: export
    leaves the caller's inputs as they were (torch runs on fake values)."""
    copies = {}
    out = []
    for x in leaves:
        if id(x) not in copies:
            if isinstance(x, _C.Tensor):
                c = x.detach().clone()
                if x.requires_grad:
                    c.requires_grad_(True)
            else:
                c = copy.deepcopy(x)
            copies[id(x)] = c
        out.append(copies[id(x)])
    return out


def _run(mod, flat, in_spec, traced_at, run_on, params, buffers):
    """One traced run on ``run_on``: the graph's rows and the outputs."""
    from .. import no_grad
    from ..nn.modules import module as _module

    box = {}

    def flat_fn(*xs):
        leaves = list(flat)
        for i, x in zip(traced_at, xs):
            leaves[i] = x
        a, k = pytree.tree_unflatten(leaves, in_spec)
        out = mod(*a, **k)
        out_leaves, box["spec"] = pytree.tree_flatten(out)
        box["leaves"] = out_leaves
        traced = tuple(x for x in out_leaves if isinstance(x, (_C.Tensor, _C.ScriptObject)))
        if not traced:
            raise RuntimeError("export: the module returned no tensors")
        return traced

    # tracing runs the module: its buffers (running statistics) are put
    # back as they were
    saved = [(b, b.detach().clone()) for _, b in buffers]
    _module._trace_names = None
    try:
        native = _C._jit_trace(flat_fn, tuple(run_on), params + buffers, type(mod).__name__)
    finally:
        with no_grad():
            for b, v in saved:
                b.copy_(v)
    return native.inlined_graph._export_rows(), box


def trace(mod, args, kwargs, dynamic_shapes=None):
    """``(graph, signature, state_dict, constants, in_spec, out_spec,
    range_constraints)`` of ``mod(*args, **kwargs)``; sizes named by
    ``dynamic_shapes`` are symbolic (Note [Symbolic sizes by retracing])."""
    from . import _dynamic

    flat, in_spec = pytree.tree_flatten((tuple(args), dict(kwargs)))
    names = _leaf_names(mod, args, kwargs)
    traced_at = [i for i, x in enumerate(flat) if isinstance(x, (_C.Tensor, _C.ScriptObject))]
    run_on = _private_copies([flat[i] for i in traced_at])
    params = list(mod.named_parameters())
    buffers = list(mod.named_buffers())
    rows, box = _run(mod, flat, in_spec, traced_at, run_on, params, buffers)
    dims = _dynamic.leaf_dims(dynamic_shapes, mod, args, kwargs, flat)
    sym, ranges = None, {}
    if dims:
        syms = _dynamic.symbols(dims, flat)
        again = lambda grow: _run(mod, flat, in_spec, traced_at,  # noqa: E731
                                  _dynamic.grown(run_on, traced_at, dims, grow), params, buffers)[0]
        traces = {d: again({d: 1}) for d in syms}
        order = list(syms)
        pairs = {(a, b): again({a: 1, b: 1}) for i, a in enumerate(order) for b in order[i + 1:]}
        check = again({d: 2 for d in syms})
        sym = _dynamic.infer(rows, traces, pairs, check, syms)
        ranges = {d.__name__: _dynamic.ValueRange(max(d.min, 2), d.max) for d in syms}
    persistent = set(mod.state_dict(keep_vars=True))
    g, sig, state_dict, constants, out_spec = _Converter(
        rows, params, buffers, persistent, names, flat, traced_at, box, sym).run()
    return g, sig, state_dict, constants, in_spec, out_spec, ranges


class _Converter:
    """One traced graph's rows (``Graph._export_rows``) as an fx graph and
    its signature."""

    def __init__(self, rows, params, buffers, persistent, names, flat, traced_at, box, sym=None):
        self.values, self.inputs, self.nodes, self.outputs = rows
        self.sym = sym or {}
        self.params, self.buffers, self.persistent = params, buffers, persistent
        self.names, self.flat, self.traced_at, self.box = names, flat, traced_at, box
        self.g = Graph()
        self.env = {}
        # values standing for sizes (static): folded, never graph nodes
        self.size_ids = set()
        self.input_specs = []
        self.constants = {}
        self.state_dict = {}

    def meta(self, vid):
        name, tag, dtype, sizes, strides, rg, cls = self.values[vid]
        if tag == "Tensor":
            return TensorMeta(self.symbolic(vid, sizes), _dtype(dtype), strides, rg)
        return None

    def symbolic(self, vid, sizes):
        """``sizes`` with each symbolic one a ``SymSize``."""
        from ._dynamic import SymSize, expr

        dims = self.sym.get(vid)
        if dims is None:
            return sizes
        return [n if d is None else SymSize(n, expr(*d)) for n, d in zip(sizes, dims)]

    def placeholder(self, name, spec_fn, val=None):
        n = self.g.placeholder(name)
        if val is not None:
            n.meta["val"] = val
        self.input_specs.append(spec_fn(n.name))
        return n

    def run(self):
        attr_node = {}
        for fqn, t in self.params:
            attr_node[fqn] = self.placeholder(
                "p_" + fqn.replace(".", "_"),
                lambda n, fqn=fqn: InputSpec(InputKind.PARAMETER, TensorArgument(n), fqn),
                TensorMeta.of(t))
            self.state_dict[fqn] = t
        for fqn, t in self.buffers:
            keep = fqn in self.persistent
            attr_node[fqn] = self.placeholder(
                "b_" + fqn.replace(".", "_"),
                lambda n, fqn=fqn, keep=keep: InputSpec(InputKind.BUFFER, TensorArgument(n), fqn, keep),
                TensorMeta.of(t))
            if keep:
                self.state_dict[fqn] = t
            else:
                self.constants[fqn] = t
        self.attr_node = attr_node
        # tensor and object constants become inputs too (lifted)
        lifted = {}
        for kind, _, _, ins, outs, attr in self.nodes:
            if kind != "prim::Constant":
                continue
            if isinstance(attr, _C.Tensor):
                k = f"lifted_tensor_{sum(isinstance(v, _C.Tensor) for v in self.constants.values())}"
                lifted[outs[0]] = self.placeholder(
                    "c_" + k, lambda n, k=k: InputSpec(InputKind.CONSTANT_TENSOR, TensorArgument(n), k),
                    TensorMeta.of(attr))
                self.constants[k] = attr
            elif isinstance(attr, _C.ScriptObject):
                k = f"lifted_custom_{sum(isinstance(v, _C.ScriptObject) for v in self.constants.values())}"
                cls = attr._qualified_name
                lifted[outs[0]] = self.placeholder(
                    "obj_" + k,
                    lambda n, k=k, cls=cls: InputSpec(InputKind.CUSTOM_OBJ, CustomObjArgument(n, cls), k),
                    ScriptObjectMeta(cls))
                self.constants[k] = attr
        # the user's inputs, one placeholder per leaf
        graph_in = self.inputs[len(self.inputs) - len(self.traced_at):]
        traced = dict(zip(self.traced_at, graph_in))
        for i, (leaf, name) in enumerate(zip(self.flat, self.names)):
            if i in traced:
                vid = traced[i]
                if isinstance(leaf, _C.ScriptObject):
                    cls = leaf._qualified_name
                    node = self.placeholder(
                        name, lambda n, cls=cls: InputSpec(InputKind.USER_INPUT, CustomObjArgument(n, cls), None),
                        ScriptObjectMeta(cls))
                else:
                    node = self.placeholder(
                        name, lambda n: InputSpec(InputKind.USER_INPUT, TensorArgument(n), None),
                        self.meta(vid))
                self.env[vid] = node
            else:
                self.placeholder(
                    name, lambda n, v=leaf: InputSpec(InputKind.USER_INPUT, ConstantArgument(n, v), None))
        self.env.update(lifted)
        used = {i for n in self.nodes for i in n[3]} | set(self.outputs)
        for row in self.nodes:
            self.node(row, used)
        return self.finish()

    def value(self, vid):
        if vid not in self.env:
            raise RuntimeError(f"export: value %{vid} is used before it is defined")
        return self.env[vid]

    def node(self, row, used):
        kind, overload, schema_args, ins, outs, attr = row
        env = self.env
        if kind == "prim::Constant":
            if outs[0] not in env:
                env[outs[0]] = attr
        elif kind == "prim::GetAttr":
            if attr in self.attr_node:
                env[outs[0]] = self.attr_node[attr]
        elif kind == "prim::ListConstruct":
            env[outs[0]] = [self.value(i) for i in ins]
        elif kind == "prim::ListUnpack":
            src = self.value(ins[0])
            if not isinstance(src, list):
                src.meta["val"] = [self.meta(o) for o in outs]
            for i, o in enumerate(outs):
                if isinstance(src, list):
                    env[o] = src[i]
                elif o in used:
                    env[o] = self.getitem(src, i, o)
        elif kind in _SIZE_OPS:
            env[outs[0]] = self.size_value(kind, ins)
            self.size_ids.add(outs[0])
        elif kind == "prim::with_effects":
            self.effect(attr, overload, ins[1:], outs[1:], used)
        elif kind.startswith("prim::") and kind not in ("prim::NumToTensor",):
            raise RuntimeError(f"export: {kind} cannot be exported")
        else:
            self.op(attr, overload, schema_args, ins, outs, used)

    def size_value(self, kind, ins):
        """A size read while tracing: shapes being static, its value."""
        if kind == "aten::size":
            meta = self.meta(ins[0])
            if meta is None:
                raise RuntimeError("export: aten::size of a value that is not a tensor")
            dims = [self.value(i) for i in ins[1:]]
            picked = range(meta.dim()) if not dims else [dims[0] % max(meta.dim(), 1)]
            out = [self.sym_size(ins[0], d, meta.shape[d]) for d in picked]
            return out if not dims else out[0]
        v = self.value(ins[0])
        if _is_sym(v):
            return v
        if not isinstance(v, (int, float, bool)):
            raise RuntimeError(
                f"export: {kind} of a tensor the graph computes is data-dependent; "
                "export needs a value known from the shapes")
        return {"aten::Float": float, "aten::Bool": bool}.get(kind, lambda x: x)(v)

    def sym_size(self, vid, dim, n):
        """A size read from a tensor: its value, or for a symbolic one an
        ``aten.sym_size.int`` node of the graph (torch's spelling)."""
        from ._dynamic import SymSize

        if not isinstance(n, SymSize):
            return n
        node = self.g.create_node("call_function", self.resolve("sym_size", "int"),
                                  (self.env[vid], dim), {}, name="sym_size_int")
        node.meta["val"] = n
        return node

    def getitem(self, src, i, vid):
        n = self.g.create_node("call_function", operator.getitem, (src, i), {}, name="getitem")
        m = self.meta(vid)
        if m is not None:
            n.meta["val"] = m
        return n

    def resolve(self, name, overload):
        from .. import ops

        ns, _, op = name.rpartition("::")
        packet = getattr(getattr(ops, ns or "aten"), op)
        return getattr(packet, overload or "default")

    def arguments(self, schema_args, ins):
        return self.arguments_of(schema_args, [self.value(i) for i in ins])

    def arguments_of(self, schema_args, values):
        args, kwargs = [], {}
        for (name, kwarg_only, default), v in zip(schema_args, values):
            if kwarg_only:
                if not (default != () and type(v) is type(default) and v == default):
                    kwargs[name] = v
            else:
                args.append(v)
        return tuple(args), kwargs

    def op(self, name, overload, schema_args, ins, outs, used):
        target = self.resolve(name, overload)
        args, kwargs = self.arguments(schema_args, ins)
        tensor_ins = [i for i in ins if self.values[i][1] == "Tensor"]
        if tensor_ins and all(i in self.size_ids for i in tensor_ins) and len(outs) == 1:
            if any(_is_sym(self.value(i)) for i in ins):
                self.env[outs[0]] = self.sym_arith(name, [self.value(i) for i in ins])
                self.size_ids.add(outs[0])
                return
            # arithmetic on sizes (static shapes): its value
            from .. import tensor

            vals = [tensor(self.value(i)) if i in self.size_ids else self.value(i) for i in ins]
            a2, k2 = self.arguments_of(schema_args, vals)
            out = target(*a2, **k2)
            self.env[outs[0]] = out.item() if isinstance(out, _C.Tensor) and out.dim() == 0 else out
            self.size_ids.add(outs[0])
            return
        n = self.g.create_node("call_function", target, args, kwargs, name=name.rpartition("::")[2])
        if len(outs) == 1:
            m = self.meta(outs[0])
            if m is not None:
                n.meta["val"] = m
            self.env[outs[0]] = n
        else:
            n.meta["val"] = tuple(self.meta(o) for o in outs)
            for i, o in enumerate(outs):
                if o in used:
                    self.env[o] = self.getitem(n, i, o)

    def sym_arith(self, name, values):
        """Arithmetic on symbolic sizes: Python's operators on them, as in
        torch's graphs (``operator.mul(sym_size_int, 4)``)."""
        from ._dynamic import SymSize

        ops = {"add": (operator.add, "+"), "sub": (operator.sub, "-"), "mul": (operator.mul, "*"),
               "floor_divide": (operator.floordiv, "//"), "remainder": (operator.mod, "%"),
               "div": (operator.truediv, "/")}
        if name not in ops or len(values) < 2:
            raise RuntimeError(f"export: {name} of a dynamic size is not supported")
        fn, sym = ops[name]
        a, b = values[0], values[1]
        hint = lambda v: int(v.meta["val"]) if hasattr(v, "meta") else v  # noqa: E731
        text = lambda v: str(v.meta["val"]) if hasattr(v, "meta") else str(v)  # noqa: E731
        node = self.g.create_node("call_function", fn, (a, b), {}, name=fn.__name__)
        node.meta["val"] = SymSize(fn(hint(a), hint(b)), f"({text(a)}){sym}({text(b)})")
        return node

    def effect(self, name, overload, ins, outs, used):
        """A call on a custom class's object: kept in order, as torch's
        training IR keeps it (``call_torchbind`` for a method)."""
        args = tuple(self.value(i) for i in ins)
        parts = name.split("::")
        if len(parts) == 3:
            target, args, base = _hop.call_torchbind, (args[0], parts[2], *args[1:]), "call_torchbind"
        else:
            target, base = self.resolve(name, overload), parts[-1]
        n = self.g.create_node("call_function", target, args, {}, name=base)
        if len(outs) == 1:
            self.env[outs[0]] = n
            m = self.meta(outs[0])
            if m is not None:
                n.meta["val"] = m
        else:
            for i, o in enumerate(outs):
                if o in used:
                    self.env[o] = self.getitem(n, i, o)

    def finish(self):
        out_leaves = self.box["leaves"]
        traced_out = iter(self.outputs)
        results, output_specs = [], []
        for leaf in out_leaves:
            if isinstance(leaf, (_C.Tensor, _C.ScriptObject)):
                v = self.value(next(traced_out))
                results.append(v)
                if isinstance(leaf, _C.ScriptObject):
                    arg = CustomObjArgument(v.name, leaf._qualified_name)
                else:
                    arg = TensorArgument(v.name) if _has_node(v) else ConstantArgument("", v)
            else:
                results.append(leaf)
                arg = ConstantArgument("", leaf)
            output_specs.append(OutputSpec(OutputKind.USER_OUTPUT, arg, None))
        self.g.output(tuple(results))
        from .graph_signature import ExportGraphSignature

        sig = ExportGraphSignature(self.input_specs, output_specs)
        return self.g, sig, self.state_dict, self.constants, self.box["spec"]


def _is_sym(v):
    from ..fx.node import Node

    return isinstance(v, Node)


def _has_node(v):
    from ..fx.node import Node

    if isinstance(v, Node):
        return True
    if isinstance(v, (list, tuple)):
        return any(_has_node(x) for x in v)
    return False


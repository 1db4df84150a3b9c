"""``torch.export.ExportedProgram``: an fx graph of ATen ops whose
placeholders are the module's parameters, buffers and constants (lifted)
and then the user's inputs, with the signature that says which is which,
the weights, and ``module()`` — the graph as a runnable ``nn.Module``
again."""

import collections

from ..fx.graph import CodeGen, Graph
from ..fx.graph_module import GraphModule
from ..utils import _pytree as pytree
from . import _hop
from .graph_signature import ConstantArgument, InputKind, OutputKind

ModuleCallSignature = collections.namedtuple(
    "ModuleCallSignature", ["inputs", "outputs", "in_spec", "out_spec", "forward_arg_names"])
ModuleCallEntry = collections.namedtuple("ModuleCallEntry", ["fqn", "signature"])
CallSpec = collections.namedtuple("CallSpec", ["in_spec", "out_spec"])


def _flatten_spec(args, kwargs, spec, guards=None):
    """The leaves of ``(args, kwargs)``, checked against the structure the
    program was exported with, and each tensor's shape against the one it
    was exported for (``guards``: name, sizes with ``SymSize`` for dynamic
    dims, and the symbols' ranges)."""
    leaves, got = pytree.tree_flatten((tuple(args), dict(kwargs)))
    if got != spec:
        raise ValueError(
            "Trying to flatten user inputs with exported input tree spec: \n"
            f"{spec}\nbut actually got inputs with tree spec of: \n{got}")
    if guards is not None:
        _check_shapes(leaves, *guards)
    return leaves


def _check_shapes(leaves, shapes, ranges):
    from ._dynamic import SymSize

    seen = {}
    for x, (name, want) in zip(leaves, shapes):
        if want is None or not hasattr(x, "shape"):
            continue
        if len(x.shape) != len(want):
            raise RuntimeError(f"Expected input {name} to have {len(want)} dims, but got {len(x.shape)}")
        for i, (n, w) in enumerate(zip(x.shape, want)):
            if isinstance(w, SymSize):
                sym = w.expr
                r = ranges.get(sym)
                if r is not None and (n < r.lower or (r.upper is not None and n > r.upper)):
                    raise RuntimeError(f"Expected input {name}.shape[{i}] = {n} to be in {r} ({sym})")
                if seen.setdefault(sym, n) != n:
                    raise RuntimeError(f"Expected input {name}.shape[{i}] = {n} to equal {sym} = {seen[sym]}")
            elif n != w:
                raise RuntimeError(f"Expected input {name}.shape[{i}] to be equal to {w}, but got {n}")


class _PyTreeCodeGen(CodeGen):
    """``module()``'s calling convention: the original arguments in,
    flattened by the export's input spec; the outputs rebuilt by its
    output spec."""

    def __init__(self, arg_names, kwarg_names):
        super().__init__()
        self.arg_names, self.kwarg_names = arg_names, kwarg_names

    def gen_fn_def(self, free_vars, maybe_return_annotation):
        params = ["self", *self.arg_names]
        if self.kwarg_names:
            params += ["*", *[f"{k}=None" for k in self.kwarg_names]]
        leaves = [v for v in free_vars if v != "self"]
        args = "(" + "".join(f"{a}, " for a in self.arg_names) + ")"
        kwargs = "{" + ", ".join(f"{k!r}: {k}" for k in self.kwarg_names) + "}"
        head = f"def {self._func_name}({', '.join(params)}):"
        target = "".join(f"{v}, " for v in leaves) or "_"
        return f"{head}\n    {target} = _flatten_spec({args}, {kwargs}, self._in_spec, self._guards)"

    def generate_output(self, output_args):
        return f"return _tree_unflatten({output_args!r}, self._out_spec)"

    def additional_globals(self):
        return [("_flatten_spec", _flatten_spec), ("_tree_unflatten", pytree.tree_unflatten)]


def _parent(root, fqn):
    from ..nn import Module

    *path, last = fqn.split(".")
    m = root
    for p in path:
        if p not in m._modules:
            m.add_module(p, Module())
        m = m._modules[p]
    return m, last


class ExportedProgram:
    """A program ``torch.export.export`` traced: ``graph_module`` (its
    ``.code`` reads ``torch.ops.aten.*`` calls), ``graph_signature``,
    ``state_dict`` (parameters and persistent buffers), ``constants``
    (lifted tensors, non-persistent buffers, custom class objects)."""

    def __init__(self, graph, graph_signature, state_dict, constants, in_spec, out_spec,
                 example_inputs=None, range_constraints=None, verifiers=("TRAINING",),
                 forward_arg_names=None):
        self._graph_module = GraphModule({}, graph)
        self._graph_signature = graph_signature
        self._state_dict = state_dict
        self._constants = constants
        self._in_spec, self._out_spec = in_spec, out_spec
        self._example_inputs = example_inputs
        self.range_constraints = dict(range_constraints or {})
        self.verifiers = list(verifiers)
        self._forward_arg_names = forward_arg_names
        sig = ModuleCallSignature([], [], in_spec, out_spec, forward_arg_names)
        self.module_call_graph = [ModuleCallEntry("", sig)]

    graph_module = property(lambda self: self._graph_module)
    graph = property(lambda self: self._graph_module.graph)
    graph_signature = property(lambda self: self._graph_signature)
    state_dict = property(lambda self: self._state_dict)
    constants = property(lambda self: self._constants)
    example_inputs = property(lambda self: self._example_inputs)
    call_spec = property(lambda self: CallSpec(self._in_spec, self._out_spec))

    @property
    def dialect(self):
        return self.verifiers[0] if self.verifiers else "ATEN"

    def named_parameters(self):
        for name in self.graph_signature.parameters:
            yield name, self.state_dict[name]

    def parameters(self):
        for _, p in self.named_parameters():
            yield p

    def named_buffers(self):
        non_persistent = set(self.graph_signature.non_persistent_buffers)
        for name in self.graph_signature.buffers:
            yield name, (self.constants if name in non_persistent else self.state_dict)[name]

    def buffers(self):
        for _, b in self.named_buffers():
            yield b

    def __call__(self, *args, **kwargs):
        raise RuntimeError("Unable to call ExportedProgram directly. "
                           "You should use `exported_program.module()` instead.")

    def __str__(self):
        code = self.graph_module.print_readable(print_output=False).replace("\n", "\n    ")
        return (f"ExportedProgram:\n    {code}\nGraph signature: {self.graph_signature}\n"
                f"Range constraints: {self.range_constraints}\n")

    def run_decompositions(self, decomp_table=None, decompose_custom_triton_ops=False):
        """The program in core ATen, functional: composite ops replaced by
        their decompositions (``decomp_table``, by default
        ``torch.export.default_decompositions()``), in-place writes
        replaced by out-of-place ops whose results the program returns as
        buffer or input mutations, and calls on custom class objects
        ordered by effect tokens."""
        from . import _decomp

        return _decomp.run(self, decomp_table)

    def module(self, check_guards=True):
        """The program as an ``nn.Module``: parameters and buffers under
        their original names, called with the original arguments."""
        sig = self.graph_signature
        g = Graph()
        env = {}
        placeholders = [n for n in self.graph.nodes if n.op == "placeholder"]
        attr_nodes = []
        for n, spec in zip(placeholders, sig.input_specs):
            if spec.kind == InputKind.USER_INPUT:
                env[n] = g.placeholder(n.name)
            else:
                attr_nodes.append((n, spec))
        for n, spec in attr_nodes:
            if spec.kind == InputKind.TOKEN:
                env[n] = g.call_function(_hop._make_token, ())
            else:
                env[n] = g.get_attr(spec.target)
            env[n].meta = dict(n.meta)
        out = None
        for n in self.graph.nodes:
            if n.op == "placeholder":
                continue
            if n.op == "output":
                out = n
                break
            env[n] = g.node_copy(n, lambda a: env[a])
        results = []
        from .. import ops

        for spec, v in zip(sig.output_specs, out.args[0]):
            v = env[v] if hasattr(v, "op") else v
            if spec.kind == OutputKind.USER_OUTPUT:
                results.append(v)
            elif spec.kind in (OutputKind.BUFFER_MUTATION, OutputKind.PARAMETER_MUTATION):
                g.create_node("call_function", ops.aten.copy_.default, (g.get_attr(spec.target), v), name="copy_")
            elif spec.kind == OutputKind.USER_INPUT_MUTATION:
                target = next(env[p] for p, s in zip(placeholders, sig.input_specs)
                              if s.kind == InputKind.USER_INPUT and s.arg.name == spec.target)
                g.create_node("call_function", ops.aten.copy_.default, (target, v), name="copy_")
        g.output(tuple(results))
        args_spec = self._in_spec.children_specs
        n_args = args_spec[0].num_children
        names = self._forward_arg_names or [f"arg{i}" for i in range(n_args)]
        g.set_codegen(_PyTreeCodeGen(names[:n_args], list(args_spec[1].context or [])))
        root = {}
        for spec in sig.input_specs:
            if spec.kind in (InputKind.PARAMETER, InputKind.BUFFER):
                src = self.state_dict if spec.target in self.state_dict else self.constants
                root[spec.target] = src[spec.target]
            elif spec.kind in (InputKind.CONSTANT_TENSOR, InputKind.CUSTOM_OBJ):
                root[spec.target] = self.constants[spec.target]
        gm = GraphModule(root, g)
        gm.__dict__["_in_spec"], gm.__dict__["_out_spec"] = self._in_spec, self._out_spec
        shapes = []
        for n, spec in zip(placeholders, sig.input_specs):
            if spec.kind == InputKind.USER_INPUT:
                m = n.meta.get("val")
                shapes.append((n.name, list(m.shape) if hasattr(m, "shape") else None))
        gm.__dict__["_guards"] = (shapes, dict(self.range_constraints)) if check_guards else None
        for spec in sig.input_specs:
            if spec.kind == InputKind.BUFFER:
                owner, last = _parent(gm, spec.target)
                t = owner.__dict__.pop(last, None)
                if t is None:
                    t = getattr(owner, last)
                    delattr(owner, last)
                owner.register_buffer(last, t, persistent=bool(spec.persistent))
        return gm

    def validate(self):
        """Check the signature against the graph's placeholders."""
        placeholders = [n for n in self.graph.nodes if n.op == "placeholder"]
        if len(placeholders) != len(self.graph_signature.input_specs):
            raise ValueError(
                f"ExportedProgram: {len(placeholders)} placeholders but "
                f"{len(self.graph_signature.input_specs)} input specs")
        for n, spec in zip(placeholders, self.graph_signature.input_specs):
            if not isinstance(spec.arg, ConstantArgument) and spec.arg.name != n.name:
                raise ValueError(f"ExportedProgram: placeholder {n.name} has the spec of {spec.arg.name}")


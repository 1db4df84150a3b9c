"""``torch.fx.Graph``: nodes in execution order, with editing, printing
and Python code generation."""

import builtins
import contextlib
import inspect
import keyword
import math
import operator
import re

from .node import Node, _is_op, _qualified_name, map_arg

# operators written as Python syntax in generated code
_BINARY = {
    operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/",
    operator.floordiv: "//", operator.mod: "%", operator.pow: "**", operator.matmul: "@",
    operator.lt: "<", operator.le: "<=", operator.gt: ">", operator.ge: ">=",
    operator.eq: "==", operator.ne: "!=", operator.and_: "&", operator.or_: "|",
    operator.xor: "^", operator.lshift: "<<", operator.rshift: ">>",
}
_UNARY = {operator.neg: "-", operator.pos: "+", operator.invert: "~"}


def _snake(name):
    name = re.sub(r"[^0-9a-zA-Z_]", "_", name)
    name = re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()
    if not name or name[0].isdigit():
        name = "_" + name
    return name


class _Namespace:
    """Unique Python identifiers for nodes (``add``, ``add_1``, ...)."""

    def __init__(self):
        self.used = set()
        self.counts = {}

    def create(self, candidate):
        base = _snake(candidate)
        if keyword.iskeyword(base) or base in dir(builtins) or base == "self":
            base = base + "_1" if not base.endswith("_") else base
        m = re.match(r"(.*)_(\d+)$", base)
        stem = m.group(1) if m else base
        name = base
        while name in self.used:
            self.counts[stem] = self.counts.get(stem, 0) + 1
            name = f"{stem}_{self.counts[stem]}"
        self.used.add(name)
        return name


class CodeGen:
    """How a graph becomes Python source: the ``def`` line and the
    ``return`` (override to change the calling convention), and what the
    inputs and outputs pass through (``process_inputs``/``process_outputs``)."""

    def __init__(self):
        self._body_transformer = None
        self._func_name = "forward"

    def gen_fn_def(self, free_vars, maybe_return_annotation):
        """The ``def`` line over ``free_vars`` (``self`` first)."""
        if len(free_vars) == 0 or free_vars[0] != "self":
            free_vars.insert(0, "self")
        return f"def {self._func_name}({', '.join(free_vars)}){maybe_return_annotation}:"

    def generate_output(self, output_args):
        """The ``return`` line (nodes print as their names)."""
        return f"return {output_args!r}"

    def process_inputs(self, *args):
        return args

    def process_outputs(self, outputs):
        return outputs

    def additional_globals(self):
        """``[(name, value)]`` the generated code needs besides torch's."""
        return []


class Graph:
    """A graph of ``Node``s: ``placeholder`` inputs, operations, one
    ``output``. Build it with ``placeholder``/``call_function``/... at the
    insertion point (the end unless ``inserting_before``/``after``)."""

    def __init__(self, owning_module=None):
        self._root = Node(self, "", "root", "", (), {})
        self._insert = self._root.prepend
        self._ns = _Namespace()
        self.owning_module = owning_module
        self._codegen = CodeGen()

    def set_codegen(self, codegen):
        """Generate code with ``codegen`` (a ``CodeGen``)."""
        self._codegen = codegen

    def process_inputs(self, *args):
        return self._codegen.process_inputs(*args)

    def process_outputs(self, out):
        return self._codegen.process_outputs(out)

    def find_nodes(self, *, op, target=None, sort=True):
        """The nodes of ``op`` (with ``target``, when given), in order."""
        return [n for n in self.nodes if n.op == op and (target is None or n.target == target)]

    @property
    def nodes(self):
        """The nodes in order (a list copy: safe to edit while iterating)."""
        out, n = [], self._root._next
        while n is not self._root:
            out.append(n)
            n = n._next
        return out

    # ---- building ----

    def create_node(self, op, target, args=None, kwargs=None, name=None, type_expr=None):
        """A new node at the insertion point."""
        if op not in ("placeholder", "get_attr", "call_function", "call_method",
                      "call_module", "output"):
            raise ValueError(f"unknown fx op {op!r}")
        if name is None:
            if op == "output":
                name = "output"
            elif isinstance(target, str):
                name = target.replace(".", "_")
            else:
                name = getattr(target, "__name__", "fn")
        n = Node(self, self._ns.create(name), op, target, args or (), kwargs or {}, type_expr)
        self._insert(n)
        return n

    def placeholder(self, name, type_expr=None, default_value=inspect.Signature.empty):
        """An input named ``name`` (``default_value`` is its default)."""
        args = () if default_value is inspect.Signature.empty else (default_value,)
        return self.create_node("placeholder", name, args, name=name, type_expr=type_expr)

    def get_attr(self, qualified_name, type_expr=None):
        """Read a parameter, buffer or attribute of the owning module."""
        return self.create_node("get_attr", qualified_name, type_expr=type_expr)

    def call_function(self, the_function, args=None, kwargs=None, type_expr=None):
        """Call a free function (``torch.relu``, ``operator.add``)."""
        return self.create_node("call_function", the_function, args, kwargs, type_expr=type_expr)

    def call_method(self, method_name, args=None, kwargs=None, type_expr=None):
        """Call a method of ``args[0]`` (``x.relu()``)."""
        return self.create_node("call_method", method_name, args, kwargs, type_expr=type_expr)

    def call_module(self, module_name, args=None, kwargs=None, type_expr=None):
        """Call the submodule at ``module_name``."""
        return self.create_node("call_module", module_name, args, kwargs, type_expr=type_expr)

    def output(self, result, type_expr=None):
        """The value the graph returns."""
        return self.create_node("output", "output", (result,), type_expr=type_expr)

    def node_copy(self, node, arg_transform=lambda n: n):
        """A copy of ``node`` (from any graph) here, its arguments mapped."""
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        out = self.create_node(node.op, node.target, args, kwargs, node.name, node.type)
        out.meta = dict(node.meta)
        return out

    def graph_copy(self, g, val_map, return_output_node=False):
        """Copy ``g``'s nodes (but its output) here, at the insertion point;
        ``val_map`` maps ``g``'s nodes to those here (pre-fill it to bind
        ``g``'s placeholders) and is filled with the copies. Returns what
        ``g``'s output refers to, mapped."""
        for node in g.nodes:
            if node in val_map:
                continue
            if node.op == "output":
                out = map_arg(node.args[0], lambda n: val_map[n])
                return (out, node) if return_output_node else out
            val_map[node] = self.node_copy(node, lambda n: val_map[n])
        return None

    @contextlib.contextmanager
    def inserting_before(self, n=None):
        """Create nodes before ``n`` (the start of the graph if None)."""
        saved = self._insert
        self._insert = (n or self._root._next).prepend
        try:
            yield
        finally:
            self._insert = saved

    @contextlib.contextmanager
    def inserting_after(self, n=None):
        """Create nodes after ``n`` (the start of the graph if None)."""
        saved = self._insert
        anchor = [n or self._root]

        def insert(x):
            anchor[0].append(x)
            anchor[0] = x

        self._insert = insert
        try:
            yield
        finally:
            self._insert = saved

    def erase_node(self, to_erase):
        """Remove a node nothing uses any more."""
        if to_erase.users:
            raise RuntimeError(f"Tried to erase Node {to_erase} but it still had "
                               f"{len(to_erase.users)} users in the graph: {to_erase.users}!")
        to_erase._update_args((), {})
        to_erase._remove_from_list()
        to_erase._erased = True

    def eliminate_dead_code(self, is_impure_node=None):
        """Remove nodes whose results nothing uses (but impure ones:
        ``fx.has_side_effect`` functions, in-place methods); returns
        whether any went."""
        changed = False
        for n in reversed(self.nodes):
            impure = is_impure_node(n) if is_impure_node is not None else n.is_impure()
            if not impure and not n.users:
                self.erase_node(n)
                changed = True
        return changed

    def lint(self):
        """Check that every node's inputs come before it and belong here."""
        seen = set()
        outputs = 0
        for n in self.nodes:
            if n.graph is not self:
                raise RuntimeError(f"Node {n} does not belong to this Graph")
            for i in n.all_input_nodes:
                if i not in seen:
                    raise RuntimeError(f"Argument '{i}' of Node '{n}' was used before it "
                                       "has been defined!")
            seen.add(n)
            outputs += n.op == "output"
        if outputs != 1:
            raise RuntimeError(f"Graph should have exactly one output node, found {outputs}")

    # ---- printing ----

    def __str__(self):
        lines = [f"graph():"]
        for n in self.nodes:
            lines.append("    " + n.format_node())
        return "\n".join(lines)

    def print_tabular(self):
        """Print the nodes as a table (opcode, name, target, args, kwargs)."""
        rows = [["opcode", "name", "target", "args", "kwargs"]]
        for n in self.nodes:
            rows.append([n.op, n.name, _qualified_name(n.target), repr(n.args), repr(n.kwargs)])
        widths = [max(len(r[i]) for r in rows) for i in range(5)]
        line = lambda r: "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()  # noqa: E731
        print(line(rows[0]))
        print("  ".join("-" * w for w in widths))
        for r in rows[1:]:
            print(line(r))

    # ---- code ----

    def python_code(self, root_module="self"):
        """``(source, globals)`` of ``def forward(self, ...)``."""
        import ferrotorch

        globs = {"torch": ferrotorch, "math": math, "operator": operator,
                 "inf": math.inf, "nan": math.nan}
        counter = [0]

        def fn_ref(target):
            q = _qualified_name(target)
            try:
                if eval(q, dict(globs)) is target:  # noqa: S307 (our own names)
                    return q
            except Exception:
                pass
            counter[0] += 1
            key = f"_fx_fn_{counter[0]}"
            globs[key] = target
            return key

        def lit(a):
            if isinstance(a, Node):
                return a.name
            if isinstance(a, tuple):
                inner = ", ".join(lit(x) for x in a)
                return f"({inner},)" if len(a) == 1 else f"({inner})"
            if isinstance(a, list):
                return "[" + ", ".join(lit(x) for x in a) + "]"
            if isinstance(a, dict):
                return "{" + ", ".join(f"{k!r}: {lit(v)}" for k, v in a.items()) + "}"
            if isinstance(a, slice):
                return f"slice({lit(a.start)}, {lit(a.stop)}, {lit(a.step)})"
            if isinstance(a, float) and (math.isinf(a) or math.isnan(a)):
                return repr(a)
            if type(a).__name__ == "SymSize":
                raise RuntimeError(f"fx: the symbolic size {a} is not a value of the graph "
                                   "(read it with aten.sym_size.int)")
            if isinstance(a, (int, float, bool, str, type(None))):
                return repr(a)
            if _is_op(a):
                return fn_ref(a)
            if isinstance(a, ferrotorch.dtype):
                return f"torch.{str(a).rpartition('.')[2]}"
            if isinstance(a, ferrotorch.device):
                return f"torch.device({str(a)!r})"
            key = f"_fx_const_{id(a)}"
            globs[key] = a
            return key

        def call_args(args, kwargs):
            parts = [lit(a) for a in args] + [f"{k} = {lit(v)}" for k, v in kwargs.items()]
            return ", ".join(parts)

        def attr_path(base, target):
            out = base
            for part in target.split("."):
                out = f"{out}.{part}" if part.isidentifier() else f"getattr({out}, {part!r})"
            return out

        params, body = [], []
        for n in self.nodes:
            if n.op == "placeholder":
                params.append(n.name if not n.args else f"{n.name} = {lit(n.args[0])}")
                continue
            if n.op == "output":
                if type(self._codegen) is CodeGen:
                    body.append(f"return {lit(n.args[0])}")
                else:
                    body.append(self._codegen.generate_output(n.args[0]))
                continue
            if n.op == "get_attr":
                rhs = attr_path(root_module, n.target)
            elif n.op == "call_module":
                rhs = f"{attr_path(root_module, n.target)}({call_args(n.args, n.kwargs)})"
            elif n.op == "call_method":
                rhs = f"{lit(n.args[0])}.{n.target}({call_args(n.args[1:], n.kwargs)})"
            elif n.target in _BINARY and len(n.args) == 2 and not n.kwargs:
                rhs = f"{lit(n.args[0])} {_BINARY[n.target]} {lit(n.args[1])}"
            elif n.target in _UNARY and len(n.args) == 1 and not n.kwargs:
                rhs = f"{_UNARY[n.target]}{lit(n.args[0])}"
            elif n.target is operator.getitem and len(n.args) == 2:
                rhs = f"{lit(n.args[0])}[{lit(n.args[1])}]"
            elif n.target is builtins.getattr and len(n.args) == 2:
                rhs = f"{lit(n.args[0])}.{n.args[1]}"
            else:
                rhs = f"{fn_ref(n.target)}({call_args(n.args, n.kwargs)})"
            body.append(f"{n.name} = {rhs}")
        globs.update(dict(self._codegen.additional_globals()))
        free = list(params)  # the codegen puts ``self`` first
        fn_def = self._codegen.gen_fn_def(free, "")
        if root_module != "self":
            fn_def = fn_def.replace("(self", f"({root_module}", 1)
        src = f"\n\n\n{fn_def}\n" + "".join(f"    {b}\n" for b in body)
        return src, globs

"""``torch.fx.Interpreter`` runs a graph node by node (override
``run_node`` or one of ``placeholder``/``get_attr``/``call_function``/
``call_method``/``call_module``/``output`` to observe or change what each
does); ``Transformer`` runs it on Proxies instead, so its overrides build
a new graph, returned by ``transform()`` as a ``GraphModule``."""

import inspect

from .graph import Graph
from .node import map_arg
from .proxy import Proxy, Tracer


class Interpreter:
    """Execute ``module``'s graph (or ``graph``) on concrete values.
    ``garbage_collect_values`` drops each value after its last use."""

    def __init__(self, module, garbage_collect_values=True, graph=None):
        self.module = module
        self.submodules = dict(self.module.named_modules())
        self.graph = graph if graph is not None else self.module.graph
        self.env = {}
        self.name = "Interpreter"
        self.garbage_collect_values = garbage_collect_values
        self.extra_traceback = True
        if garbage_collect_values:
            last_use, self.user_to_last_uses = {}, {}
            for node in reversed(self.graph.nodes):
                for n in node.all_input_nodes:
                    if n not in last_use:
                        last_use[n] = node
                        self.user_to_last_uses.setdefault(node, []).append(n)

    def run(self, *args, initial_env=None, enable_io_processing=True):
        """Run the graph on ``args``; ``initial_env`` pre-fills values of
        nodes (partial evaluation)."""
        self.env = initial_env if initial_env is not None else {}
        if enable_io_processing:
            args = self.graph.process_inputs(*args)
        self.args_iter = iter(args)
        for node in self.graph.nodes:
            if node in self.env:
                continue
            try:
                self.env[node] = self.run_node(node)
            except Exception as e:
                if self.extra_traceback:
                    msg = f"While executing {node.format_node()}"
                    msg = f"{e.args[0]}\n\n{msg}" if e.args else msg
                    e.args = (msg,) + e.args[1:]
                    if isinstance(e, KeyError):
                        raise RuntimeError(*e.args) from e
                raise
            if self.garbage_collect_values:
                for dead in self.user_to_last_uses.get(node, []):
                    del self.env[dead]
            if node.op == "output":
                out = self.env[node]
                return self.graph.process_outputs(out) if enable_io_processing else out
        return None

    def boxed_run(self, args_list):
        """``run`` with the arguments in a list that is cleared, so the
        inputs can be freed as soon as they are used."""
        placeholders = [n for n in self.graph.nodes if n.op == "placeholder"]
        if len(args_list) != len(placeholders):
            detail = "extra arguments" if len(args_list) > len(placeholders) else "missing arguments"
            raise RuntimeError(f"Interpreter.boxed_run expected {len(placeholders)} arguments for placeholders "
                               f"but received {len(args_list)} ({detail})")
        env = dict(zip(placeholders, args_list))
        args_list.clear()
        return self.run(initial_env=env)

    def run_node(self, n):
        """Run one node: its arguments from the environment, then the method
        named by its op."""
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        return getattr(self, n.op)(n.target, args, kwargs)

    def placeholder(self, target, args, kwargs):
        """The next argument given to ``run`` (its default when none is left)."""
        if target.startswith("*"):
            return list(self.args_iter)
        try:
            return next(self.args_iter)
        except StopIteration as si:
            if len(args) > 0:
                return args[0]
            raise RuntimeError(f"Expected positional argument for parameter {target}, but one was not "
                               "passed in!") from si

    def get_attr(self, target, args, kwargs):
        return self.fetch_attr(target)

    def call_function(self, target, args, kwargs):
        return target(*args, **kwargs)

    def call_method(self, target, args, kwargs):
        self_obj, *rest = args
        return getattr(self_obj, target)(*rest, **kwargs)

    def call_module(self, target, args, kwargs):
        return self.fetch_attr(target)(*args, **kwargs)

    def output(self, target, args, kwargs):
        return args[0]

    def fetch_attr(self, target):
        """The attribute at the dotted path ``target`` of the module."""
        atoms = target.split(".")
        obj = self.module
        for i, atom in enumerate(atoms):
            if not hasattr(obj, atom):
                raise RuntimeError(f"Node referenced nonexistent target {'.'.join(atoms[:i + 1])}")
            obj = getattr(obj, atom)
        return obj

    def fetch_args_kwargs_from_env(self, n):
        """``n``'s args and kwargs with each node replaced by its value."""
        return self.map_nodes_to_values(n.args, n), self.map_nodes_to_values(n.kwargs, n)

    def map_nodes_to_values(self, args, n):
        def load(a):
            if a not in self.env:
                raise RuntimeError(f"Node {n} referenced nonexistent value {a}! Run Graph.lint() to diagnose "
                                   "such issues")
            return self.env[a]

        return map_arg(args, load)


class _TransformerTracer(Tracer):
    """Records into the new graph; every module call stays a call."""

    def __init__(self, graph, root):
        super().__init__()
        self.graph = graph
        self.root = root

    def is_leaf_module(self, m, module_qualified_name):
        return True


class Transformer(Interpreter):
    """Run the graph symbolically: each override returns what the new
    graph computes in place of that node (``torch.neg(*args)`` in a
    ``call_function`` override records ``neg``)."""

    def __init__(self, module):
        super().__init__(module)
        self.new_graph = Graph()
        self.new_graph.set_codegen(module.graph._codegen)
        self.tracer = _TransformerTracer(self.new_graph, module)

    def placeholder(self, target, args, kwargs):
        default = next(iter(args)) if args else inspect.Signature.empty
        return Proxy(self.new_graph.placeholder(target, default_value=default), self.tracer)

    def get_attr(self, target, args, kwargs):
        return self.tracer.create_proxy("get_attr", target, args, kwargs)

    def call_module(self, target, args, kwargs):
        return self.tracer.create_proxy("call_module", target, args, kwargs)

    def call_function(self, target, args, kwargs):
        return self.tracer.create_proxy("call_function", target, args, kwargs)

    def transform(self):
        """The new ``GraphModule``."""
        from .graph_module import GraphModule

        result = self.run(enable_io_processing=False)
        if result is not None:
            out = self.new_graph.output(self.tracer.create_arg(result))
            out.meta.update(self.graph.nodes[-1].meta)
        return GraphModule(self.module, self.new_graph)

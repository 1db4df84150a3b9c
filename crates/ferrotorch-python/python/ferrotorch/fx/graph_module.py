"""``torch.fx.GraphModule``: a module whose ``forward`` is generated
from its ``Graph``."""

import types

from ..nn import Module
from .graph import Graph


def _get(obj, path):
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def _put(root, path, value):
    *parents, last = path.split(".")
    m = root
    for p in parents:
        if not hasattr(m, p):
            setattr(m, p, Module())
        m = getattr(m, p)
    setattr(m, last, value)


class GraphModule(Module):
    """``graph`` as a module: the submodules, parameters and attributes
    the graph reads are taken from ``root``; ``forward`` is the code
    ``recompile()`` generates (``.code``)."""

    def __init__(self, root, graph, class_name="GraphModule"):
        super().__init__()
        self.__class__ = type(class_name, (GraphModule,), {})
        for n in graph.nodes:
            if n.op in ("get_attr", "call_module"):
                if isinstance(root, dict):
                    _put(self, n.target, root[n.target])
                else:
                    _put(self, n.target, _get(root, n.target))
        self.graph = graph

    @property
    def graph(self):
        return self.__dict__["_graph"]

    @graph.setter
    def graph(self, g):
        if not isinstance(g, Graph):
            raise TypeError("GraphModule.graph must be a Graph")
        g.owning_module = self
        self.__dict__["_graph"] = g
        self.recompile()

    def recompile(self):
        """Regenerate ``forward`` (and ``.code``) from the graph."""
        src, globs = self.graph.python_code("self")
        exec(compile(src, "<eval_with_key>", "exec"), globs)  # noqa: S102 (our own code)
        self.__dict__["_code"] = src
        self.__dict__["forward"] = types.MethodType(globs["forward"], self)

    @property
    def code(self):
        """The generated Python source of ``forward``."""
        return self.__dict__["_code"]

    def print_readable(self, print_output=True):
        """The code, printed (and returned)."""
        text = f"class {type(self).__name__}(torch.nn.Module):{self.code}"
        if print_output:
            print(text)
        return text

    def __str__(self):
        return super().__str__() + "\n\n\n" + self.code.strip() + "\n"

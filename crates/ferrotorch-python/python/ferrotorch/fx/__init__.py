"""``torch.fx``: symbolic tracing to a graph of Python-level operations,
graph editing, interpretation and transformation, pattern rewriting, and
code generation back to a module.

>>> import ferrotorch as torch, math
>>> def f(x, y):
...     return x * math.sin(y) + 2.0
>>> gm = torch.fx.symbolic_trace(f)
>>> [n.op for n in gm.graph.nodes]
['placeholder', 'placeholder', 'call_function', 'call_function', 'call_function', 'output']
>>> native = torch.jit.compile_fx(gm)   # machine code for floats
>>> round(native(2.0, 0.5), 6) == round(2.0 * math.sin(0.5) + 2.0, 6)
True
"""

from ._wrap import ProxyableClassMeta, wrap
from .graph import CodeGen, Graph
from .graph_module import GraphModule
from .interpreter import Interpreter, Transformer
from .node import Node, has_side_effect, map_arg
from .proxy import Proxy, TraceError, Tracer, symbolic_trace
from .subgraph_rewriter import replace_pattern
from . import passes  # noqa: F401

__all__ = ["symbolic_trace", "Tracer", "wrap", "Graph", "GraphModule", "Interpreter", "Transformer", "Node",
           "Proxy", "replace_pattern", "has_side_effect", "map_arg"]

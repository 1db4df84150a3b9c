"""``torch.fx``: symbolic tracing to a graph of Python-level operations,
graph editing, and code generation back to a module.

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

from .graph import Graph
from .graph_module import GraphModule
from .node import Node, map_arg
from .proxy import Proxy, TraceError, Tracer, symbolic_trace

__all__ = ["symbolic_trace", "GraphModule", "Graph", "Node", "Proxy", "Tracer", "TraceError",
           "map_arg"]

"""``torch.fx.subgraph_rewriter``: find every occurrence of a pattern
graph in a module's graph and put a replacement graph in its place.

A pattern node matches a graph node with the same op and target whose
arguments match in turn; a pattern placeholder matches any node or
literal (the same one wherever it appears). Nodes inside an occurrence,
but what it returns, must not be used outside it; occurrences do not
overlap (the earlier one wins). The replacement's placeholders take the
values the pattern's placeholders matched, in order; its nodes are
inserted before the first user of what the occurrence returned."""

from dataclasses import dataclass, field
from typing import NamedTuple

from .graph import Graph
from .node import Node


class Match(NamedTuple):
    """An occurrence: the graph node matched by the pattern's (first)
    output, and pattern node -> graph node."""

    anchor: Node
    nodes_map: dict


@dataclass
class ReplacedPatterns:
    """An occurrence, and the nodes its replacement added."""

    anchor: Node
    nodes_map: dict
    replacements: list = field(default_factory=list)


def _graph_of(x):
    from .graph_module import GraphModule
    from .proxy import symbolic_trace

    if isinstance(x, Graph):
        return x, None
    if isinstance(x, GraphModule):
        return x.graph, x
    gm = symbolic_trace(x)
    return gm.graph, gm


def _outputs(pattern):
    out = [n for n in pattern.nodes if n.op == "output"][0].args[0]
    return list(out) if isinstance(out, (tuple, list)) else [out]


class _Matcher:
    def __init__(self, pattern, ignore_literals):
        self.pattern = pattern
        self.ignore_literals = ignore_literals
        self.anchors = _outputs(pattern)
        self.placeholders = [n for n in pattern.nodes if n.op == "placeholder"]

    def _same(self, pn, gn):
        if pn.op != gn.op:
            return False
        if pn.op == "call_module":
            return type(self._module(pn)) is type(self._module(gn))
        return pn.target == gn.target

    def _module(self, n):
        root = n.graph.owning_module
        obj = root
        for part in n.target.split("."):
            obj = getattr(obj, part, None)
        return obj

    def _args(self, pa, ga, m):
        if isinstance(pa, Node):
            if isinstance(ga, Node):
                return self._node(pa, ga, m)
            if pa.op == "placeholder":
                if pa in m:
                    return m[pa] == ga and type(m[pa]) is type(ga)
                m[pa] = ga
                return True
            return False
        if isinstance(pa, (list, tuple)) and isinstance(ga, (list, tuple)):
            return len(pa) == len(ga) and all(self._args(x, y, m) for x, y in zip(pa, ga))
        if isinstance(pa, dict) and isinstance(ga, dict):
            return pa.keys() == ga.keys() and all(self._args(pa[k], ga[k], m) for k in pa)
        if isinstance(ga, Node):
            return False
        return self.ignore_literals or (type(pa) is type(ga) and pa == ga)

    def _node(self, pn, gn, m):
        if pn in m:
            return m[pn] is gn
        if pn.op == "placeholder":
            m[pn] = gn
            return True
        if not self._same(pn, gn) or gn.op in ("placeholder", "output"):
            return False
        m[pn] = gn
        ok = (len(pn.args) == len(gn.args) and pn.kwargs.keys() == gn.kwargs.keys()
              and all(self._args(a, b, m) for a, b in zip(pn.args, gn.args))
              and all(self._args(pn.kwargs[k], gn.kwargs[k], m) for k in pn.kwargs))
        if not ok:
            del m[pn]
        return ok

    def _contained(self, m):
        returned = {m[a] for a in self.anchors if isinstance(a, Node)}
        inside = {g for p, g in m.items() if isinstance(g, Node) and p.op != "placeholder"}
        for g in inside - returned:
            if any(u not in inside for u in g.users):
                return False
        return True

    def match(self, graph):
        found = []

        def extend(i, m):
            if i == len(self.anchors):
                if self._contained(m):
                    found.append(dict(m))
                return
            for gn in graph.nodes:
                trial = dict(m)
                if self._node(self.anchors[i], gn, trial):
                    extend(i + 1, trial)

        extend(0, {})
        kept, used = [], set()
        for m in found:
            nodes = {g for p, g in m.items() if isinstance(g, Node) and p.op != "placeholder"}
            if nodes & used:
                continue
            kept.append(m)
            used |= nodes
        return kept


def replace_pattern(gm, pattern, replacement):
    """Replace each occurrence of ``pattern`` (a function, a module or a
    graph) in ``gm`` with ``replacement``; returns the ``Match``es."""
    return [Match(anchor=r.anchor, nodes_map=r.nodes_map) for r in _replace(gm, pattern, replacement, None, False)]


def replace_pattern_with_filters(gm, pattern, replacement=None, match_filters=None, ignore_literals=False,
                                 replacement_callback=None, node_name_match=""):
    """``replace_pattern`` keeping only the occurrences every
    ``match_filters(match, original_graph, pattern_graph)`` accepts; with
    ``ignore_literals`` any literal matches any literal; the replacement
    may be computed per occurrence by ``replacement_callback(match,
    original_graph, pattern_graph)``. Returns ``ReplacedPatterns``."""
    return _replace(gm, pattern, replacement, match_filters, ignore_literals, replacement_callback,
                    node_name_match)


class _InternalMatch:
    """What a match filter receives (torch's ``InternalMatch``)."""

    def __init__(self, anchors, nodes_map, placeholder_nodes, returning_nodes):
        self.anchors, self.nodes_map = anchors, nodes_map
        self.placeholder_nodes, self.returning_nodes = placeholder_nodes, returning_nodes
        self.name_node_map = {}


def _replace(gm, pattern, replacement, match_filters, ignore_literals, replacement_callback=None,
             node_name_match=""):
    original = gm.graph
    pattern_graph, _ = _graph_of(pattern)
    matcher = _Matcher(pattern_graph, ignore_literals)
    matches = []
    for m in matcher.match(original):
        internal = _InternalMatch([m[a] for a in matcher.anchors], m, [m[p] for p in matcher.placeholders if p in m],
                                  [m[a] for a in matcher.anchors])
        if node_name_match and not any(n.name.startswith(node_name_match) for n in m.values()
                                       if isinstance(n, Node)):
            continue
        if all(f(internal, original, pattern_graph) for f in (match_filters or [])):
            matches.append(internal)
    out = []
    for match in matches:
        rep = replacement_callback(match, original, pattern_graph) if replacement_callback else replacement
        rep_graph, rep_module = _graph_of(rep)
        rep_placeholders = [n for n in rep_graph.nodes if n.op == "placeholder"]
        if len(rep_placeholders) != len(match.placeholder_nodes):
            raise RuntimeError(f"replace_pattern: the replacement takes {len(rep_placeholders)} inputs, the pattern "
                               f"{len(match.placeholder_nodes)}")
        val_map = dict(zip(rep_placeholders, match.placeholder_nodes))
        returning = match.returning_nodes
        inside = {g for g in match.nodes_map.values() if isinstance(g, Node)}
        users = [u for r in returning for u in r.users if u not in inside]
        if users:
            insert_at = next(n for n in original.nodes if n in users)
        else:
            order = original.nodes
            insert_at = order[max(order.index(r) for r in returning) + 1]
        renamed = _copy_attributes(gm, rep_graph, rep_module)
        with original.inserting_before(insert_at):
            copied = original.graph_copy(rep_graph, val_map)
        for n, target in renamed.items():
            val_map[n].target = target
        copied = list(copied) if isinstance(copied, (list, tuple)) else [copied]
        for old, new in zip(returning, copied):
            old.replace_all_uses_with(new)
        for p in reversed(pattern_graph.nodes):
            if p.op not in ("placeholder", "output") and p in match.nodes_map:
                g = match.nodes_map[p]
                if not g.users:
                    original.erase_node(g)
        added = [v for k, v in val_map.items() if k.op != "placeholder" and isinstance(v, Node)]
        out.append(ReplacedPatterns(anchor=match.anchors[0], nodes_map=match.nodes_map, replacements=added))
    gm.recompile()
    return out


def _copy_attributes(gm, rep_graph, rep_module):
    """What the replacement's ``get_attr``/``call_module`` nodes read,
    copied into ``gm``: under the same name where ``gm`` has none (or the
    same object), else under a fresh one; returns ``{replacement node: new
    target}`` for the renamed."""
    renamed = {}
    if rep_module is None:
        return renamed
    from .graph_module import _get, _put

    for n in rep_graph.nodes:
        if n.op not in ("get_attr", "call_module"):
            continue
        value = _get(rep_module, n.target)
        target, i = n.target, 0
        while True:
            try:
                existing = _get(gm, target)
            except AttributeError:
                _put(gm, target, value)
                break
            if existing is value:
                break
            i += 1
            target = f"{n.target.replace('.', '_')}_{i}"
        if target != n.target:
            renamed[n] = target
    return renamed

"""``torch.utils._pytree``: nested tuples, lists and dicts flattened to
their leaves and rebuilt from them, and ``TreeSpec``'s JSON form as
``torch.export`` writes it (``treespec_dumps`` / ``treespec_loads``).

``treespec_loads`` reads a spec from a file: it knows a fixed set of
container types by name (tuple, list, dict, OrderedDict) and refuses any
other, so a spec never names code to run."""

import collections
import json

__all__ = ["TreeSpec", "LeafSpec", "tree_flatten", "tree_unflatten", "tree_leaves",
           "tree_structure", "tree_map", "treespec_dumps", "treespec_loads"]

_TREESPEC_VERSION = 1

# container type → (name in a spec, children, context, rebuild)
_NODES = {
    tuple: ("builtins.tuple", lambda t: list(t), lambda t: None, lambda c, ch: tuple(ch)),
    list: ("builtins.list", lambda t: list(t), lambda t: None, lambda c, ch: list(ch)),
    dict: ("builtins.dict", lambda d: list(d.values()), lambda d: list(d.keys()),
           lambda c, ch: dict(zip(c, ch))),
    collections.OrderedDict: ("collections.OrderedDict", lambda d: list(d.values()),
                              lambda d: list(d.keys()),
                              lambda c, ch: collections.OrderedDict(zip(c, ch))),
}
_BY_NAME = {v[0]: k for k, v in _NODES.items()}


class TreeSpec:
    """The structure of a tree: its container type, the context that
    rebuilds it (a dict's keys) and its children's specs; ``type`` is
    ``None`` for a leaf."""

    def __init__(self, type, context, children_specs):  # noqa: A002 (torch's name)
        self.type = type
        self.context = context
        self.children_specs = list(children_specs)
        self.num_leaves = 1 if type is None else sum(c.num_leaves for c in self.children_specs)
        self.num_children = len(self.children_specs)

    def is_leaf(self):
        return self.type is None

    def unflatten(self, leaves):
        return tree_unflatten(leaves, self)

    def __eq__(self, other):
        return (isinstance(other, TreeSpec) and self.type is other.type
                and self.context == other.context and self.children_specs == other.children_specs)

    def __repr__(self):
        if self.type is None:
            return "*"
        name = getattr(self.type, "__name__", None) or _NODES[self.type][0]
        inner = ", ".join(repr(c) for c in self.children_specs)
        return f"TreeSpec({name}, {self.context!r}, [{inner}])"


def LeafSpec():  # noqa: N802 (torch's name)
    """The spec of a single leaf."""
    return TreeSpec(None, None, [])


def _node_type(x):
    t = type(x)
    if t in _NODES:
        return t
    if isinstance(x, tuple) and hasattr(t, "_fields"):
        _register_namedtuple(t)
        return t
    return None


def _register_namedtuple(cls):
    _NODES[cls] = (_NAMEDTUPLE, lambda v: list(v), lambda v: type(v), lambda c, ch: c(*ch))


_NAMEDTUPLE = "collections.namedtuple"


def _namedtuple_class(name):
    """A named tuple class a spec names: only ``torch.return_types``."""
    from .. import return_types

    prefix = "torch.return_types."
    cls = getattr(return_types, name[len(prefix):], None) if name.startswith(prefix) else None
    if cls is None:
        raise ValueError(f"treespec_loads: unsupported named tuple {name!r} "
                         "(only torch.return_types.* are known)")
    return cls


def tree_flatten(tree):
    """``(leaves, spec)``: the leaves of ``tree`` in order, and its shape."""
    leaves = []

    def go(x):
        t = _node_type(x)
        if t is None:
            leaves.append(x)
            return LeafSpec()
        _, children, context, _ = _NODES[t]
        return TreeSpec(t, context(x), [go(c) for c in children(x)])

    spec = go(tree)
    return leaves, spec


def tree_unflatten(leaves, treespec):
    """The tree of ``treespec``'s shape holding ``leaves``."""
    leaves = list(leaves)
    if len(leaves) != treespec.num_leaves:
        raise ValueError(f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} "
                         f"but the spec refers to a pytree that holds {treespec.num_leaves} items "
                         f"({treespec}).")
    it = iter(leaves)

    def go(spec):
        if spec.type is None:
            return next(it)
        return _NODES[spec.type][3](spec.context, [go(c) for c in spec.children_specs])

    return go(treespec)


def tree_leaves(tree):
    return tree_flatten(tree)[0]


def tree_structure(tree):
    return tree_flatten(tree)[1]


def tree_map(func, tree):
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([func(x) for x in leaves], spec)


def _to_json(spec):
    if spec.type is None:
        return {"type": None, "context": None, "children_spec": []}
    name = _NODES[spec.type][0]
    if name == _NAMEDTUPLE:
        cls = spec.type
        mod = cls.__module__.replace("ferrotorch", "torch")
        return {"type": name, "context": json.dumps(f"{mod}.{cls.__name__}"),
                "children_spec": [_to_json(c) for c in spec.children_specs]}
    return {"type": name, "context": json.dumps(spec.context),
            "children_spec": [_to_json(c) for c in spec.children_specs]}


def treespec_dumps(treespec, protocol=None):
    """``treespec`` as torch's JSON text: ``[version, spec]``."""
    return json.dumps([_TREESPEC_VERSION, _to_json(treespec)])


def _from_json(d, depth=0):
    if depth > 1000:
        raise ValueError("treespec_loads: the spec nests more than 1000 levels")
    if not isinstance(d, dict) or not isinstance(d.get("children_spec", []), list):
        raise ValueError(f"treespec_loads: malformed node {str(d)[:80]!r}")
    name = d.get("type")
    children = [_from_json(c, depth + 1) for c in d.get("children_spec", [])]
    if name is None:
        if children:
            raise ValueError("treespec_loads: a leaf with children")
        return LeafSpec()
    if name == _NAMEDTUPLE:
        cls = _namedtuple_class(json.loads(d.get("context") or "null") or "")
        _register_namedtuple(cls)
        return TreeSpec(cls, cls, children)
    t = _BY_NAME.get(name)
    if t is None:
        raise ValueError(f"treespec_loads: unsupported container type {name!r} "
                         f"(supported: {', '.join(sorted(_BY_NAME))})")
    context = json.loads(d["context"]) if isinstance(d.get("context"), str) else None
    if t in (dict, collections.OrderedDict):
        if not isinstance(context, list) or len(context) != len(children):
            raise ValueError(f"treespec_loads: a {name} spec's context must list one key per child")
    elif context is not None:
        raise ValueError(f"treespec_loads: a {name} spec has context {context!r}")
    return TreeSpec(t, context, children)


def treespec_loads(serialized):
    """The ``TreeSpec`` that ``treespec_dumps`` wrote."""
    data = json.loads(serialized)
    if not (isinstance(data, list) and len(data) == 2):
        raise ValueError("treespec_loads: expected [protocol, spec]")
    if data[0] != _TREESPEC_VERSION:
        raise ValueError(f"treespec_loads: unknown protocol {data[0]!r} (known: {_TREESPEC_VERSION})")
    return _from_json(data[1])

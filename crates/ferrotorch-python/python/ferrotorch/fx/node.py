"""``torch.fx.Node``: one operation of a ``Graph``."""

import builtins
import math
import operator


# functions fx.has_side_effect registered: never dead code
_side_effectful_functions = set()


def map_aggregate(a, fn):
    """Apply ``fn`` to every leaf of ``a`` (nested tuples, lists, dicts,
    slices), keeping the structure."""
    if isinstance(a, tuple):
        t = tuple(map_aggregate(x, fn) for x in a)
        return type(a)(*t) if hasattr(a, "_fields") else t
    if isinstance(a, list):
        return [map_aggregate(x, fn) for x in a]
    if isinstance(a, dict):
        return {k: map_aggregate(v, fn) for k, v in a.items()}
    if isinstance(a, slice):
        return slice(map_aggregate(a.start, fn), map_aggregate(a.stop, fn), map_aggregate(a.step, fn))
    return fn(a)


def has_side_effect(fn):
    """Mark ``fn`` as having side effects: its calls stay in the graph when
    nothing uses their results."""
    _side_effectful_functions.add(fn)
    return fn


def map_arg(a, fn):
    """Apply ``fn`` to every ``Node`` inside ``a`` (nested tuples, lists,
    dicts), keeping the structure."""
    if isinstance(a, Node):
        return fn(a)
    if isinstance(a, tuple):
        return tuple(map_arg(x, fn) for x in a)
    if isinstance(a, list):
        return [map_arg(x, fn) for x in a]
    if isinstance(a, dict):
        return {k: map_arg(v, fn) for k, v in a.items()}
    if isinstance(a, slice):
        return slice(map_arg(a.start, fn), map_arg(a.stop, fn), map_arg(a.step, fn))
    return a


def _nodes_in(a):
    out = []
    map_arg(a, lambda n: out.append(n) or n)
    return out


def _is_op(target):
    """An ``OpOverload`` or a higher-order operator: it prints as its
    ``torch.ops.`` path."""
    return hasattr(target, "overloadpacket") or type(target).__name__ == "HigherOrderOperator"


# how targets print (``operator.add``, ``torch.relu``)
def _qualified_name(target):
    if isinstance(target, str):
        return target
    if _is_op(target):
        return f"torch.ops.{target}"
    mod = getattr(target, "__module__", None) or ""
    name = getattr(target, "__name__", repr(target))
    if target is getattr(operator, name, None):
        return f"operator.{name}"
    if target is getattr(math, name, None):
        return f"math.{name}"
    if target is getattr(builtins, name, None):
        return name
    if mod.startswith("ferrotorch"):
        mod = "torch" + mod[len("ferrotorch"):]
        mod = mod.replace("torch._ops", "torch").replace("torch._C", "torch")
    return f"{mod}.{name}" if mod else name


class Node:
    """An operation: ``op`` is one of ``placeholder``, ``get_attr``,
    ``call_function``, ``call_method``, ``call_module``, ``output``;
    ``target`` what it calls or reads; ``args``/``kwargs`` its arguments
    (other nodes or constants)."""

    def __init__(self, graph, name, op, target, args, kwargs, type_expr=None):
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self.type = type_expr
        self.users = {}
        self.meta = {}
        self._args = ()
        self._kwargs = {}
        self._prev = self
        self._next = self
        self._erased = False
        self._update_args(tuple(args), dict(kwargs))

    def _update_args(self, args, kwargs):
        for n in self.all_input_nodes:
            n.users.pop(self, None)
        self._args, self._kwargs = args, kwargs
        for n in self.all_input_nodes:
            n.users.setdefault(self, None)

    @property
    def args(self):
        return self._args

    @args.setter
    def args(self, value):
        self._update_args(tuple(value), self._kwargs)

    @property
    def kwargs(self):
        return self._kwargs

    @kwargs.setter
    def kwargs(self, value):
        self._update_args(self._args, dict(value))

    @property
    def all_input_nodes(self):
        seen = []
        for n in _nodes_in((self._args, self._kwargs)):
            if n not in seen:
                seen.append(n)
        return seen

    @property
    def next(self):
        return self._next

    @property
    def prev(self):
        return self._prev

    def prepend(self, x):
        """Move ``x`` to just before this node."""
        if x is self:
            return
        x._remove_from_list()
        p = self._prev
        p._next, x._prev, x._next, self._prev = x, p, self, x

    def append(self, x):
        """Move ``x`` to just after this node."""
        self._next.prepend(x)

    def _remove_from_list(self):
        p, n = self._prev, self._next
        p._next, n._prev = n, p
        self._prev = self._next = self

    def replace_all_uses_with(self, replace_with):
        """Point every user of this node at ``replace_with``; returns the
        users changed."""
        users = list(self.users)
        for u in users:
            u._update_args(map_arg(u._args, lambda n: replace_with if n is self else n),
                           map_arg(u._kwargs, lambda n: replace_with if n is self else n))
        return users

    def replace_input_with(self, old, new):
        """Replace ``old`` with ``new`` among this node's arguments."""
        self._update_args(map_arg(self._args, lambda n: new if n is old else n),
                          map_arg(self._kwargs, lambda n: new if n is old else n))

    def is_impure(self):
        """Whether dead-code elimination must keep this node: inputs and
        output, ``fx.has_side_effect`` functions, in-place methods."""
        if self.op in ("placeholder", "output"):
            return True
        if self.op == "call_function":
            return self.target in _side_effectful_functions
        if self.op == "call_method":
            return isinstance(self.target, str) and self.target.endswith("_") and not self.target.endswith("__")
        return False

    def format_node(self):
        """The node as ``Graph`` prints it."""
        fmt = lambda a: map_arg(a, lambda n: _Ref(n))  # noqa: E731
        users = f"[num_users={len(self.users)}]"
        if self.op == "placeholder":
            return f"%{self.name} : {users} = placeholder[target={self.target}]"
        if self.op == "get_attr":
            return f"%{self.name} : {users} = get_attr[target={self.target}]"
        if self.op == "output":
            return f"return {fmt(self._args[0])!r}"
        return (f"%{self.name} : {users} = {self.op}[target={_qualified_name(self.target)}]"
                f"(args = {fmt(self._args)!r}, kwargs = {fmt(self._kwargs)!r})")

    def __repr__(self):
        return self.name


class _Ref:
    def __init__(self, node):
        self.node = node

    def __repr__(self):
        return f"%{self.node.name}"

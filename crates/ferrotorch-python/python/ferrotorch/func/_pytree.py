"""Flattening nested tuples, lists, dicts (and namedtuples) of tensors,
for the function transforms."""


def tree_flatten(tree):
    """The leaves in order and a spec that rebuilds the structure."""
    if isinstance(tree, dict):
        keys = list(tree)
        leaves, specs = [], []
        for k in keys:
            lv, sp = tree_flatten(tree[k])
            leaves += lv
            specs.append(sp)
        return leaves, ("dict", type(tree), keys, specs)
    if isinstance(tree, (tuple, list)):
        leaves, specs = [], []
        for v in tree:
            lv, sp = tree_flatten(v)
            leaves += lv
            specs.append(sp)
        kind = "namedtuple" if hasattr(tree, "_fields") else type(tree).__name__
        return leaves, (kind, type(tree), None, specs)
    return [tree], ("leaf", None, None, None)


def tree_unflatten(leaves, spec):
    """Rebuild the structure of ``spec`` from ``leaves``."""
    it = iter(leaves)

    def build(sp):
        kind, typ, keys, specs = sp
        if kind == "leaf":
            return next(it)
        vals = [build(s) for s in specs]
        if kind == "dict":
            return typ(zip(keys, vals))
        if kind == "namedtuple":
            return typ(*vals)
        return typ(vals)

    return build(spec)


def tree_map(fn, tree):
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([fn(x) for x in leaves], spec)

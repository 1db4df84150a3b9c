"""The function transforms' pytrees: ``torch.utils._pytree``'s (one
flattening for vmap, grad, jacrev and torch.export)."""

from ..utils._pytree import tree_flatten, tree_map, tree_unflatten

__all__ = ["tree_flatten", "tree_map", "tree_unflatten"]

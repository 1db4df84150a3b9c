"""``torch.func.vmap``: the function runs once on BatchedTensors, each op
through its batching rule (Note [Batching rules] in ``_batched.py``); with
``randomness="same"``/``"different"``, one call per slice of the mapped
dimension, the outputs stacked at ``out_dims``."""

import functools

from .. import _C
from . import _batched
from ._pytree import tree_flatten, tree_unflatten


def _ft():
    import ferrotorch

    return ferrotorch


def _broadcast_dims(dims, spec_leaves, name):
    if isinstance(dims, (int, type(None))):
        return [dims] * spec_leaves
    flat, _ = tree_flatten(dims)
    if len(flat) != spec_leaves:
        raise ValueError(f"vmap: {name} is not compatible with the structure of the inputs: expected "
                         f"{spec_leaves} entries, got {len(flat)}")
    return flat


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """``func`` mapped over dimension ``in_dims`` of its inputs (None: not
    mapped), the results stacked at ``out_dims``."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")
    if chunk_size is not None and chunk_size < 1:
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        ft = _ft()
        if not args:
            raise ValueError(f"vmap({getattr(func, '__name__', func)})(<inputs>): got no inputs. Maybe you forgot to "
                             "add inputs, or you are trying to vmap over a function with no inputs. The latter is "
                             "unsupported.")
        if isinstance(in_dims, tuple) and len(in_dims) != len(args):
            raise ValueError(f"vmap({getattr(func, '__name__', func)}, in_dims={in_dims}, ...)(<inputs>): in_dims "
                             f"is not compatible with the structure of `inputs`. in_dims has structure {len(in_dims)} "
                             f"but inputs has structure {len(args)}.")
        per_arg = in_dims if isinstance(in_dims, tuple) else (in_dims,) * len(args)
        flat_args, specs, dims = [], [], []
        for a, d in zip(args, per_arg):
            leaves, spec = tree_flatten(a)
            flat_args.append(leaves)
            specs.append(spec)
            dims.append(_broadcast_dims(d, len(leaves), "in_dims"))
        size = None
        for leaves, ds in zip(flat_args, dims):
            for x, d in zip(leaves, ds):
                if d is None:
                    continue
                if not isinstance(x, (_C.Tensor, _batched.BatchedTensor)):
                    raise ValueError(f"vmap: Got in_dim={d} for an input but the input is of type {type(x)}. We "
                                     "cannot vmap over non-Tensor arguments, please use None as the respective "
                                     "in_dim")
                if not -x.dim() <= d < x.dim():
                    raise ValueError(f"vmap: Got in_dim={d} for some input, but that input is a Tensor of "
                                     f"dimensionality {x.dim()} so expected in_dim to satisfy "
                                     f"-{x.dim()} <= in_dim < {x.dim()}.")
                n = x.shape[d]
                if size is not None and n != size:
                    raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped dimension, "
                                     f"got sizes {size} and {n} for the mapped dimension")
                size = n
        if size is None:
            raise ValueError("vmap: at least one input must be a Tensor mapped over (in_dims not all None)")
        if randomness == "error":
            if chunk_size is not None and chunk_size < size:
                parts = []
                for lo in range(0, size, chunk_size):
                    n = min(chunk_size, size - lo)
                    chunk = [[x.narrow(d, lo, n) if d is not None else x for x, d in zip(leaves, ds)]
                             for leaves, ds in zip(flat_args, dims)]
                    parts.append(_run_batched(func, chunk, dims, specs, n, kwargs, out_dims))
                leaves0, out_spec = tree_flatten(parts[0])
                odims = _broadcast_dims(out_dims, len(leaves0), "out_dims")
                cols = [[tree_flatten(p)[0][k] for p in parts] for k in range(len(leaves0))]
                return tree_unflatten([c[0] if od is None else ft.cat(c, dim=od) for c, od in zip(cols, odims)],
                                      out_spec)
            return _run_batched(func, flat_args, dims, specs, size, kwargs, out_dims)
        state = ft.get_rng_state() if randomness == "same" else None
        outs = []
        for i in range(size):
            if state is not None:
                ft.set_rng_state(state)
            sliced = []
            for leaves, ds, spec in zip(flat_args, dims, specs):
                sliced.append(tree_unflatten([x.select(d, i) if d is not None else x for x, d in zip(leaves, ds)],
                                             spec))
            if randomness == "error":
                before = ft.get_rng_state()
                out = func(*sliced, **kwargs)
                if not ft.equal(ft.get_rng_state(), before):
                    raise RuntimeError("vmap: called random operation while in randomness error mode. Please either "
                                       "use the 'same' or 'different' randomness flags on vmap or perform the "
                                       "randomness operation out of vmap")
            else:
                out = func(*sliced, **kwargs)
            outs.append(out)
        leaves0, out_spec = tree_flatten(outs[0])
        odims = _broadcast_dims(out_dims, len(leaves0), "out_dims")
        stacked = []
        for k, (leaf, od) in enumerate(zip(leaves0, odims)):
            column = [tree_flatten(o)[0][k] for o in outs]
            if od is None:
                stacked.append(leaf)
                continue
            if not isinstance(leaf, _C.Tensor):
                column = [ft.tensor(v) for v in column]
            stacked.append(ft.stack(column, dim=od if od >= 0 else od + column[0].dim() + 1))
        return tree_unflatten(stacked, out_spec)

    return wrapper


def _run_batched(func, flat_args, dims, specs, size, kwargs, out_dims):
    """One call of ``func`` on BatchedTensors of a new level; the outputs'
    mapped dims moved to ``out_dims`` (outputs that do not depend on the
    mapped inputs expanded, as torch's)."""
    ft = _ft()
    level = _batched._next_level[0] = _batched._next_level[0] + 1
    _batched._active.append((level, size))
    from .. import overrides

    overrides._batched_scope(1)
    try:
        args = [tree_unflatten([_batched.BatchedTensor(x.movedim(d, 0), level) if d is not None else x
                                for x, d in zip(leaves, ds)], spec)
                for leaves, ds, spec in zip(flat_args, dims, specs)]
        before = ft.get_rng_state()
        out = func(*args, **kwargs)
        if not ft.equal(ft.get_rng_state(), before):
            raise RuntimeError("vmap: called random operation while in randomness error mode. Please either use "
                               "the 'same' or 'different' randomness flags on vmap or perform the randomness "
                               "operation out of vmap")
    finally:
        _batched._active.pop()
        overrides._batched_scope(-1)
    leaves0, out_spec = tree_flatten(out)
    odims = _broadcast_dims(out_dims, len(leaves0), "out_dims")
    name = getattr(func, "__name__", func)
    result = []
    for k, (leaf, od) in enumerate(zip(leaves0, odims)):
        if _batched.is_batched(leaf, level):
            if od is None:
                raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor when out_dim is "
                                 "None")
            phys = leaf._value
            result.append(phys.movedim(0, od if od >= 0 else od + phys.dim()))
        elif od is None:
            result.append(leaf)
        elif isinstance(leaf, (_C.Tensor, _batched.BatchedTensor)):
            d = od if od >= 0 else od + leaf.dim() + 1
            shape = list(leaf.shape)
            shape.insert(d, size)
            result.append(leaf.unsqueeze(d).expand(shape))
        else:
            raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type {type(leaf)}. Did "
                             f"you mean to set out_dims= to None for output {k}?")
    return tree_unflatten(result, out_spec)

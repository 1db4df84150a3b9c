"""The module side of ``torch.func``: ``functional_call``,
``stack_module_state``, ``replace_all_batch_norm_modules_``, and
``functionalize``/``debug_unwrap``/``rearrange``."""

import re

from .. import _C


def _ft():
    import ferrotorch

    return ferrotorch


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights=True, strict=False):
    """``module(*args, **kwargs)`` with its parameters and buffers replaced
    by the dicts' tensors for the call."""
    from ..nn.utils.stateless import _functional_call

    if isinstance(parameter_and_buffer_dicts, dict):
        merged = parameter_and_buffer_dicts
    elif isinstance(parameter_and_buffer_dicts, (list, tuple)):
        if not all(isinstance(d, dict) for d in parameter_and_buffer_dicts):
            raise ValueError("Expected all elements of parameter_and_buffer_dicts to be dictionaries")
        keys = [k for d in parameter_and_buffer_dicts for k in d]
        seen, dup = set(), set()
        for k in keys:
            (dup if k in seen else seen).add(k)
        if dup:
            raise ValueError(f"{sorted(dup)} appeared in multiple dictionaries; behavior of functional call is "
                             "ambiguous")
        merged = {k: v for d in parameter_and_buffer_dicts for k, v in d.items()}
    else:
        raise ValueError(f"Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, but got "
                         f"{type(parameter_and_buffer_dicts)}")
    return _functional_call(module, merged, args, kwargs, tie_weights=tie_weights, strict=strict)


def stack_module_state(models):
    """The models' parameters and buffers stacked along a new leading dim,
    by name: ``(params, buffers)`` for ``vmap(functional_call)``."""
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    t0 = type(models[0])
    if not all(type(m) is t0 for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    ft = _ft()

    def stacked(items, name):
        tensors = [t for t in items]
        all_rg = all(t.requires_grad for t in tensors)
        if any(t.requires_grad for t in tensors) and not all_rg:
            raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
        out = ft.stack([t.detach() for t in tensors])
        return out.requires_grad_(True) if all_rg else out

    names = [n for n, _ in models[0].named_parameters()]
    params = {n: stacked([dict(m.named_parameters())[n] for m in models], n) for n in names}
    bnames = [n for n, _ in models[0].named_buffers()]
    buffers = {n: stacked([dict(m.named_buffers())[n] for m in models], n) for n in bnames}
    return params, buffers


def replace_all_batch_norm_modules_(root):
    """Make every batch norm of ``root`` stop tracking running statistics
    (in place), as vmapped batch norms need."""
    from ..nn.modules.batchnorm import _BatchNorm

    for m in root.modules():
        if isinstance(m, _BatchNorm):
            m.running_mean = None
            m.running_var = None
            m.num_batches_tracked = None
            m.track_running_stats = False
    return root


def functionalize(func, *, remove="mutations"):
    """``func`` with its in-place ops removed; ferrotorch runs eagerly on
    real storage, so the function itself computes the same values."""
    if remove not in ("mutations", "mutations_and_views"):
        raise RuntimeError(f"functionalize(f, remove='mutations'): received invalid argument for remove={remove}. "
                           "Valid options are:\n     remove='mutations': all inplace and out= operators will be "
                           "removed from the program, and replaced with their out-of-place equivalents.\n     "
                           "remove='mutations_and_views': In addition to the above, all aliasing operators "
                           "{view} will be replaced with their non-aliasing counterparts, {view}_copy.\n")
    return func


def debug_unwrap(tensor, *, recurse=True):
    """The plain tensor under a transform's wrapper (ferrotorch's
    transforms do not wrap: the tensor itself)."""
    return tensor


def _parse_side(side):
    groups, cur, depth = [], None, 0
    for tok in re.findall(r"\(|\)|\.\.\.|[A-Za-z_][A-Za-z0-9_]*|1", side):
        if tok == "(":
            if depth:
                raise ValueError("rearrange: nested parentheses are not supported")
            depth, cur = 1, []
        elif tok == ")":
            if not depth:
                raise ValueError("rearrange: unbalanced parentheses")
            depth = 0
            groups.append(cur)
        elif depth:
            cur.append(tok)
        else:
            groups.append([tok])
    if depth:
        raise ValueError("rearrange: unbalanced parentheses")
    return groups


def rearrange(tensor, pattern, **axes_lengths):
    """einops' ``rearrange``: ``"b c (h w) -> b (c h) w"`` style patterns
    of permutes, splits and merges (``axes_lengths`` sizes split axes)."""
    ft = _ft()
    if isinstance(tensor, (list, tuple)):
        tensor = ft.stack(list(tensor))
    if "->" not in pattern:
        raise ValueError(f"rearrange: pattern must contain '->', got {pattern!r}")
    lhs, rhs = (s.strip() for s in pattern.split("->"))
    left, right = _parse_side(lhs), _parse_side(rhs)
    if len(left) != tensor.dim():
        raise ValueError(f"rearrange: the left side of {pattern!r} has {len(left)} dims but the tensor has "
                         f"{tensor.dim()}")
    sizes = dict(axes_lengths)
    names = []
    for group, n in zip(left, tensor.shape):
        unknown = [a for a in group if a not in sizes and a != "1"]
        known = 1
        for a in group:
            if a in sizes:
                known *= sizes[a]
        if len(unknown) > 1:
            raise ValueError(f"rearrange: could not infer sizes for {unknown}")
        if unknown:
            if n % known:
                raise ValueError(f"rearrange: shape {n} is not divisible by {known}")
            sizes[unknown[0]] = n // known
        elif known != n:
            raise ValueError(f"rearrange: shape mismatch, {known} != {n}")
        names += [a for a in group if a != "1"]
    x = tensor.reshape([sizes[a] for a in names])
    flat_right = [a for g in right for a in g if a != "1"]
    if sorted(flat_right) != sorted(names):
        raise ValueError(f"rearrange: the two sides of {pattern!r} name different axes")
    x = x.permute([names.index(a) for a in flat_right])
    out_shape = []
    for g in right:
        n = 1
        for a in g:
            if a != "1":
                n *= sizes[a]
        out_shape.append(n)
    return x.reshape(out_shape)

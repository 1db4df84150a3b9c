"""``nn.utils.stateless.functional_call``: call a module with some of its
parameters and buffers replaced for the call (deprecated in torch in
favour of ``torch.func.functional_call``, which is this)."""

import contextlib
import warnings

from ... import _C

__all__ = ["functional_call"]


def _named_tensors(module, prefix, out):
    """Every parameter and buffer by dotted name, duplicates kept (shared
    submodules under each of their names), as named_parameters with
    remove_duplicate=False gives them; a plain walk of the module dicts,
    since functional_call runs once per sample under vmap."""
    for table in (module._parameters, module._buffers):
        for k, v in table.items():
            if v is not None:
                out.append((prefix + k, v))
    for k, child in module._modules.items():
        if child is not None:
            _named_tensors(child, prefix + k + ".", out)


def _tied_names(module):
    groups = {}
    named = []
    _named_tensors(module, "", named)
    for name, t in named:
        groups.setdefault(id(t), set()).add(name)
    return {n: names for names in groups.values() if len(names) > 1 for n in names}


def _untie(module, values):
    tied = _tied_names(module)
    given = [n for n in values if n in tied]
    for n in given:
        names = tied[n]
        if len(names & set(given)) > 1 and len({id(values[m]) for m in names if m in values}) != 1:
            raise ValueError(f"functional_call got multiple values for keys {sorted(names)}, which are tied. "
                             "Consider using tie_weights=False")
    out = dict(values)
    for n in given:
        for m in tied[n]:
            out[m] = values[n]
    return out


def _slot(module, name):
    """The module holding dotted ``name``, the dict holding it, and its key."""
    path, _, leaf = name.rpartition(".")
    mod = module.get_submodule(path) if path else module
    if leaf in mod._parameters:
        return mod._parameters, leaf
    if leaf in mod._buffers:
        return mod._buffers, leaf
    return None, leaf


@contextlib.contextmanager
def _reparametrize_module(module, parameters_and_buffers, tie_weights=False, strict=False, stack_weights=False):
    values = _untie(module, parameters_and_buffers) if tie_weights else dict(parameters_and_buffers)
    if strict:
        own = {n for n, _ in module.named_parameters(remove_duplicate=False)} | \
            {n for n, _ in module.named_buffers(remove_duplicate=False)}
        unexpected = sorted(set(values) - own)
        missing = sorted(own - set(values))
        errors = []
        if unexpected:
            errors.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
        if missing:
            errors.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
        if errors:
            raise RuntimeError("Error(s) in reparametrizing for {}:\n\t{}".format(module._get_name(),
                                                                                   "\n\t".join(errors)))
    saved = []
    try:
        for name, t in values.items():
            table, key = _slot(module, name)
            if table is None:
                path, _, leaf = name.rpartition(".")
                mod = module.get_submodule(path) if path else module
                saved.append((mod.__dict__, leaf, mod.__dict__.get(leaf, _MISSING)))
                mod.__dict__[leaf] = t
            else:
                saved.append((table, key, table[key]))
                table[key] = t
        yield
    finally:
        for table, key, old in reversed(saved):
            if old is _MISSING:
                table.pop(key, None)
            else:
                table[key] = old


_MISSING = object()


def _functional_call(module, parameters_and_buffers, args=None, kwargs=None, *, tie_weights=True, strict=False):
    from ..parallel import DataParallel

    if isinstance(module, DataParallel):
        raise RuntimeError("The stateless API can't be used with nn.DataParallel module")
    kwargs = kwargs or {}
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    for v in parameters_and_buffers.values():
        if not isinstance(v, _C.Tensor) and not hasattr(v, "__torch_function__"):  # vmap's BatchedTensor too
            raise TypeError(f"functional_call expects tensors for the parameters and buffers, got {type(v).__name__}")
    with _reparametrize_module(module, parameters_and_buffers, tie_weights=tie_weights, strict=strict):
        return module(*args, **kwargs)


def functional_call(module, parameters_and_buffers, args=None, kwargs=None, *, tie_weights=True, strict=False):
    """``module(*args, **kwargs)`` with ``parameters_and_buffers`` (by
    dotted name) in place of the module's own for the call."""
    warnings.warn("`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 and will be removed "
                  "in a future version of PyTorch. Please use `torch.func.functional_call` instead which is a "
                  "drop-in replacement.", FutureWarning, stacklevel=2)
    return _functional_call(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights, strict=strict)

"""``torch.utils.hooks``: the handle hook registrations return, and the
helpers torch keeps beside it."""

import itertools
import warnings
import weakref

__all__ = ["RemovableHandle", "unserializable_hook", "warn_if_has_hooks", "BackwardHook"]


class RemovableHandle:
    """What a hook registration returns: ``remove()`` (or leaving a
    ``with`` block) unregisters the hook from ``hooks_dict`` (and from each
    dict of ``extra_dict``). It holds the dicts weakly, as torch's does."""

    next_id = 0
    _ids = itertools.count()

    def __init__(self, hooks_dict, *, extra_dict=None):
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = next(RemovableHandle._ids)
        RemovableHandle.next_id = self.id + 1
        if extra_dict is None:
            extra = ()
        elif isinstance(extra_dict, dict):
            extra = (extra_dict,)
        else:
            extra = tuple(extra_dict)
        self.extra_dict_ref = tuple(weakref.ref(d) for d in extra)

    @property
    def hooks(self):
        return self.hooks_dict_ref()

    def remove(self):
        """Unregister the hook (a second call does nothing)."""
        for ref in (self.hooks_dict_ref, *self.extra_dict_ref):
            d = ref()
            if d is not None and self.id in d:
                del d[self.id]

    def __getstate__(self):
        return (self.hooks_dict_ref(), self.id) if not self.extra_dict_ref else (
            self.hooks_dict_ref(), self.id, tuple(r() for r in self.extra_dict_ref))

    def __setstate__(self, state):
        self.hooks_dict_ref = weakref.ref(state[0]) if state[0] is not None else (lambda: None)
        self.id = state[1]
        RemovableHandle.next_id = max(RemovableHandle.next_id, self.id + 1)
        self.extra_dict_ref = tuple(weakref.ref(d) for d in state[2]) if len(state) > 2 else ()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def unserializable_hook(f):
    """Mark a tensor hook as one that need not be serialized."""
    f.__torch_unserializable__ = True
    return f


def warn_if_has_hooks(tensor):
    """Warn when ``tensor`` has backward hooks that are not marked
    ``unserializable_hook`` (torch calls this when pickling a tensor)."""
    hooks = getattr(tensor, "_backward_hooks", None) or {}
    for h in hooks.values():
        if not getattr(h, "__torch_unserializable__", False):
            warnings.warn(f"backward hook {repr(h)} on tensor will not be serialized.  If this is "
                          "expected, you can decorate the function with @torch.utils.hooks."
                          "unserializable_hook to suppress this warning")


class BackwardHook:
    """Runs a module's full backward hooks around its forward: ``setup_input_hook``
    and ``setup_output_hook`` wrap the tensors with identity autograd
    functions whose backward calls the hooks with ``grad_input`` and
    ``grad_output`` (``nn.Module.register_full_backward_hook`` uses it)."""

    def __init__(self, module, user_hooks, user_pre_hooks):
        self.module = module
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.grad_outputs = None
        self.n_outputs = -1
        self.n_inputs = -1

    def _apply(self, args, fn):
        from .. import Tensor

        tensors = [i for i, a in enumerate(args) if isinstance(a, Tensor) and a.requires_grad]
        if not tensors:
            return args
        from ..autograd.function import Function

        hook = self

        class _Identity(Function):
            @staticmethod
            def forward(ctx, *xs):
                return tuple(x.view_as(x) for x in xs)

            @staticmethod
            def backward(ctx, *grads):
                out = fn(hook, grads)
                if out is None:
                    return grads
                if not isinstance(out, (tuple, list)) or len(out) != len(grads):
                    raise RuntimeError(f"a backward hook of {type(hook.module).__name__} must return None or a "
                                       f"tuple of {len(grads)} gradients, got {type(out).__name__}")
                return tuple(out)

        outs = _Identity.apply(*[args[i] for i in tensors])
        outs = outs if isinstance(outs, tuple) else (outs,)
        args = list(args)
        for i, o in zip(tensors, outs):
            args[i] = o
        return tuple(args)

    def setup_output_hook(self, args):
        is_tuple = isinstance(args, tuple)
        seq = args if is_tuple else (args,)
        self.n_outputs = len(seq)

        def on_grad_output(hook, grads):
            for pre in hook.user_pre_hooks:
                res = pre(hook.module, grads)
                if res is not None:
                    grads = res
            hook.grad_outputs = grads
            return grads

        out = self._apply(seq, on_grad_output)
        return out if is_tuple else out[0]

    def setup_input_hook(self, args):
        self.n_inputs = len(args)

        def on_grad_input(hook, grads):
            for h in hook.user_hooks:
                res = h(hook.module, grads, hook.grad_outputs)
                if res is not None:
                    grads = res
            return grads

        return self._apply(args, on_grad_input)

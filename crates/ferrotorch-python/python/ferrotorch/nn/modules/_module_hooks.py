"""``nn.Module``'s hooks and its call: forward pre-hooks and hooks (with
keyword arguments when asked), full backward hooks and pre-hooks (through
``torch.utils.hooks.BackwardHook``), a compiled forward, as torch's
``Module._call_impl`` runs them."""

from ...utils.hooks import BackwardHook, RemovableHandle


class _ModuleHooks:
    """The hook half of ``nn.Module`` (mixed into it)."""

    def _add_hook(self, table, hook, prepend, flags=()):
        handle = RemovableHandle(getattr(self, table), extra_dict=[getattr(self, f) for f in flags])
        getattr(self, table)[handle.id] = hook
        for f in flags:
            getattr(self, f)[handle.id] = True
        if prepend:
            getattr(self, table).move_to_end(handle.id, last=False)
        return handle

    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """``hook(module, args)`` (``hook(module, args, kwargs)`` with
        ``with_kwargs``) before forward; it may return new args (and kwargs)."""
        return self._add_hook("_forward_pre_hooks", hook, prepend,
                              ("_forward_pre_hooks_with_kwargs",) if with_kwargs else ())

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False, always_call=False):
        """``hook(module, args, output)`` (``hook(module, args, kwargs,
        output)`` with ``with_kwargs``) after forward; it may return a new
        output. ``always_call`` runs it even when forward raised."""
        flags = (("_forward_hooks_with_kwargs",) if with_kwargs else ()) + \
            (("_forward_hooks_always_called",) if always_call else ())
        return self._add_hook("_forward_hooks", hook, prepend, flags)

    def register_full_backward_hook(self, hook, prepend=False):
        """``hook(module, grad_input, grad_output)`` when the gradients of
        the module's inputs are computed; it may return new grad_input."""
        if self._is_full_backward_hook is False:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks on a single "
                               "Module. Please use only one of them.")
        self.__dict__["_is_full_backward_hook"] = True
        return self._add_hook("_backward_hooks", hook, prepend)

    def register_full_backward_pre_hook(self, hook, prepend=False):
        """``hook(module, grad_output)`` when the gradients of the module's
        outputs are known; it may return new grad_output."""
        return self._add_hook("_backward_pre_hooks", hook, prepend)

    def register_backward_hook(self, hook):
        """Deprecated in torch in favour of ``register_full_backward_hook``;
        here it is the full hook."""
        if self._is_full_backward_hook is True:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks on a single "
                               "Module. Please use only one of them.")
        self.__dict__["_is_full_backward_hook"] = False
        return self._add_hook("_backward_hooks", hook, False)

    def _call_impl(self, *args, **kwargs):
        forward = self.forward
        if not (self._forward_pre_hooks or self._forward_hooks or self._backward_hooks
                or self._backward_pre_hooks):
            return forward(*args, **kwargs)
        for hid, hook in list(self._forward_pre_hooks.items()):
            if hid in self._forward_pre_hooks_with_kwargs:
                r = hook(self, args, kwargs)
                if r is not None:
                    if not (isinstance(r, tuple) and len(r) == 2):
                        raise RuntimeError("forward pre-hook must return None or a tuple of (new_args, "
                                           f"new_kwargs), but got {r}.")
                    args, kwargs = r
            else:
                r = hook(self, args)
                if r is not None:
                    args = r if isinstance(r, tuple) else (r,)
        bw = None
        if self._backward_hooks or self._backward_pre_hooks:
            bw = BackwardHook(self, list(self._backward_hooks.values()), list(self._backward_pre_hooks.values()))
            args = bw.setup_input_hook(args)
        called = set()
        try:
            out = forward(*args, **kwargs)
            for hid, hook in list(self._forward_hooks.items()):
                called.add(hid)
                r = hook(self, args, kwargs, out) if hid in self._forward_hooks_with_kwargs \
                    else hook(self, args, out)
                if r is not None:
                    out = r
        except BaseException:
            for hid, hook in list(self._forward_hooks.items()):
                if hid in self._forward_hooks_always_called and hid not in called:
                    try:
                        if hid in self._forward_hooks_with_kwargs:
                            hook(self, args, kwargs, None)
                        else:
                            hook(self, args, None)
                    except Exception:  # noqa: BLE001  torch ignores a failing always-called hook here
                        pass
            raise
        if bw is not None:
            out = bw.setup_output_hook(out)
        return out

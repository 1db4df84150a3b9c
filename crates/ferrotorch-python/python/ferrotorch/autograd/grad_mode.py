"""``no_grad``, ``enable_grad``, ``set_grad_enabled``, ``inference_mode``:
context managers and decorators over the core's thread-local switches."""

import functools

from .. import _C


class _Mode:
    """Base: save the switches on enter, restore them on exit; usable as a
    decorator (each call runs inside the mode)."""

    def _switch(self):
        raise NotImplementedError

    def __enter__(self):
        self._prev = _C._modes()
        self._switch()
        return self

    def __exit__(self, *exc):
        _C._set_modes(*self._prev)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__(*self._args()):
                return fn(*args, **kwargs)
        return wrapper

    def _args(self):
        return ()

    def clone(self):
        return self.__class__(*self._args())


class no_grad(_Mode):
    """Ops inside do not record the graph (``with torch.no_grad():``)."""

    def __init__(self, orig_func=None):
        # torch allows @no_grad without parentheses
        self._orig = orig_func

    def _switch(self):
        _C._set_modes(False, self._prev[1])

    def __new__(cls, orig_func=None):
        self = super().__new__(cls)
        if orig_func is not None and callable(orig_func):
            self.__init__()
            return self(orig_func)
        return self


class enable_grad(_Mode):
    """Recording on inside, even within ``no_grad``."""

    def _switch(self):
        _C._set_modes(True, self._prev[1])


class set_grad_enabled(_Mode):
    """``set_grad_enabled(mode)``: sets grad mode at once (as a function)
    and restores it on exit (as a context manager)."""

    def __init__(self, mode):
        self.mode = bool(mode)
        self._prev = _C._modes()
        _C._set_modes(self.mode, self._prev[1])

    def __enter__(self):
        return self

    def _switch(self):
        _C._set_modes(self.mode, self._prev[1])

    def _args(self):
        return (self.mode,)


class inference_mode(_Mode):
    """No recording, and the tensors made inside are inference tensors."""

    def __init__(self, mode=True):
        self.mode = bool(mode)

    def _switch(self):
        if self.mode:
            _C._set_modes(False, True)

    def _args(self):
        return (self.mode,)


is_grad_enabled = _C.is_grad_enabled
is_inference_mode_enabled = _C.is_inference_mode_enabled

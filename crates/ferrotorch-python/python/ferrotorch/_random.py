"""The random functions that accept ``generator=`` (torch's signatures),
routed to the native generator-taking kernels when one is given."""

from . import _C


def install(ns):
    base = {name: ns[name] for name in ("randperm", "randint", "rand", "randn")}

    def randperm(n, *, generator=None, dtype=None, layout=None, device=None,
                 requires_grad=False, pin_memory=False):
        """A random permutation of ``0..n``."""
        if generator is None:
            out = base["randperm"](n, dtype=dtype)
        else:
            out = _C._randperm_gen(n, generator)
            if dtype is not None and dtype is not _C.int64:
                out = out.to(dtype)
        return out.requires_grad_(True) if requires_grad else out

    def randint(*args, generator=None, dtype=None, layout=None, device=None,
                requires_grad=False, **kwargs):
        """``randint(high, size)`` or ``randint(low, high, size)``: ints in ``[low, high)``."""
        if generator is None:
            return base["randint"](*args, dtype=dtype, **kwargs)
        if "high" in kwargs:
            low = kwargs.pop("low", args[0] if args else 0)
            high, size = kwargs.pop("high"), kwargs.pop("size", args[-1] if args else None)
        elif len(args) == 2:
            (high, size), low = args, kwargs.pop("low", 0)
        else:
            low, high, size = args
        out = _C._randint_gen(int(low), int(high), list(size), generator)
        if dtype is not None and dtype is not _C.int64:
            out = out.to(dtype)
        return out

    def _float(name, normal):
        def f(*size, generator=None, dtype=None, layout=None, device=None, requires_grad=False,
              pin_memory=False, out=None):
            if len(size) == 1 and isinstance(size[0], (tuple, list)):
                size = tuple(size[0])
            if generator is None:
                t = base[name](size, dtype=dtype)
            else:
                t = _C._rand_gen(normal, list(size), dtype, generator)
            return t.requires_grad_(True) if requires_grad else t
        f.__name__ = f.__qualname__ = name
        f.__doc__ = ("Standard normal samples." if normal else "Uniform samples in [0, 1).")
        return f

    ns["randperm"] = randperm
    ns["randint"] = randint
    ns["rand"] = _float("rand", False)
    ns["randn"] = _float("randn", True)

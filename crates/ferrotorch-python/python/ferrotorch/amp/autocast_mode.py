"""``torch.autocast``: mixed-precision regions. On the CPU the core's
autocast key casts listed ops' inputs (Note [Autocast at the dispatcher]);
CUDA, XPU and other device types are not here, so their regions warn and
run unchanged, as torch's do without the device."""

import functools
import warnings

from .. import _C

__all__ = ["autocast", "custom_fwd", "custom_bwd", "is_autocast_available"]


def is_autocast_available(device_type):
    """Whether autocast works for ``device_type`` here: only the CPU."""
    return device_type == "cpu"


class autocast:
    """``with torch.autocast("cpu", dtype=torch.bfloat16):`` runs matmuls,
    linear layers and convolutions in bfloat16 (or float16) and the
    precision-sensitive ops in float32; also a decorator."""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.device = device_type
        self.fast_dtype = dtype if dtype is not None else _C._autocast_get_dtype() if device_type == "cpu" else None
        self._cache_enabled = True if cache_enabled is None else cache_enabled
        self._enabled = enabled
        if device_type != "cpu":
            if enabled:
                warnings.warn(f"User provided device_type of '{device_type}', but {device_type.upper()} is not "
                              "available. Disabling")
            self._enabled = False
        elif enabled and dtype is not None and repr(dtype) not in ("torch.bfloat16", "torch.float16"):
            warnings.warn(f"In CPU autocast, but the target dtype is not supported. Disabling autocast.\nCPU "
                          f"Autocast only supports dtype of torch.bfloat16, torch.float16 currently.")
            self._enabled = False
        self._entered = []

    def __enter__(self):
        if self.device == "cpu":
            _C._autocast_enter(self.fast_dtype if self._enabled else None, self._enabled)
            self._entered.append(True)
        else:
            self._entered.append(False)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        if self._entered.pop():
            _C._autocast_exit()
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def decorate_autocast(*args, **kwargs):
            with self:
                return func(*args, **kwargs)

        decorate_autocast.__script_unsupported = "@autocast() decorator is not supported in script mode"
        return decorate_autocast


def _cast(value, dtype):
    if isinstance(value, _C.Tensor):
        return value.to(dtype) if value.is_floating_point() and repr(value.dtype) != "torch.float64" else value
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, dtype) for v in value)
    if isinstance(value, dict):
        return {k: _cast(v, dtype) for k, v in value.items()}
    return value


def custom_fwd(fwd=None, *, device_type, cast_inputs=None):
    """Decorate a custom ``autograd.Function``'s forward: with
    ``cast_inputs``, inside an autocast region its float inputs are cast
    and the body runs with autocast off; the backward (``custom_bwd``)
    then runs in the forward's autocast state."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        enabled = device_type == "cpu" and _C._autocast_is_enabled()
        args[0]._fwd_used_autocast = enabled
        args[0]._dtype = _C._autocast_get_dtype() if device_type == "cpu" else None
        if cast_inputs is None or not enabled:
            return fwd(*args, **kwargs)
        with autocast(device_type=device_type, enabled=False):
            return fwd(*_cast(args, cast_inputs), **_cast(kwargs, cast_inputs))

    return decorate_fwd


def custom_bwd(bwd=None, *, device_type):
    """Decorate a custom ``autograd.Function``'s backward to run in the
    autocast state its forward ran in."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        ctx = args[0]
        with autocast(device_type=device_type, enabled=getattr(ctx, "_fwd_used_autocast", False),
                      dtype=getattr(ctx, "_dtype", None)):
            return bwd(*args, **kwargs)

    return decorate_bwd


# ---- torch's process-wide autocast switches (torch.get_autocast_dtype, ...) ----

_toggled = []  # regions opened by set_autocast_enabled, innermost last
_cache_enabled = [True]
_nesting = [0]


def _device(device_type):
    return "cuda" if device_type is None else device_type


def is_autocast_enabled(device_type=None):
    """Whether autocast is on for ``device_type`` (torch's default 'cuda')."""
    return _device(device_type) == "cpu" and _C._autocast_is_enabled()


def set_autocast_enabled(device_type, enabled=None):
    """Turn autocast on or off for ``device_type`` on this thread (the old
    form ``set_autocast_enabled(enabled)`` is CUDA's)."""
    if enabled is None:
        device_type, enabled = "cuda", device_type
    if device_type != "cpu":
        return
    if enabled == _C._autocast_is_enabled():
        return
    if _toggled and _toggled[-1] != enabled:
        _toggled.pop()
        _C._autocast_exit()
    else:
        _C._autocast_enter(None, enabled)
        _toggled.append(enabled)


def get_autocast_dtype(device_type):
    """The dtype autocast runs lower-precision ops in for ``device_type``."""
    import ferrotorch as ft

    if device_type == "cpu":
        return _C._autocast_get_dtype()
    return ft.float16 if device_type in ("cuda", "xpu", "mps") else ft.bfloat16


def set_autocast_dtype(device_type, dtype):
    """Set that dtype (the CPU accepts bfloat16 and float16)."""
    if device_type == "cpu":
        _C._autocast_set_dtype(dtype)


def is_autocast_cpu_enabled():
    return is_autocast_enabled("cpu")


def set_autocast_cpu_enabled(enabled):
    set_autocast_enabled("cpu", enabled)


def get_autocast_cpu_dtype():
    return get_autocast_dtype("cpu")


def set_autocast_cpu_dtype(dtype):
    set_autocast_dtype("cpu", dtype)


def get_autocast_gpu_dtype():
    return get_autocast_dtype("cuda")


def set_autocast_gpu_dtype(dtype):
    """CUDA's autocast dtype: there is no CUDA here; accepted."""


def is_autocast_xla_enabled():
    return False


def set_autocast_xla_enabled(enabled):
    """XLA's autocast switch: there is no XLA here; accepted."""


def get_autocast_xla_dtype():
    return get_autocast_dtype("xla")


def set_autocast_xla_dtype(dtype):
    """XLA's autocast dtype: there is no XLA here; accepted."""


def is_autocast_cache_enabled():
    """Whether autocast caches weight casts (accepted; casts are redone)."""
    return _cache_enabled[0]


def set_autocast_cache_enabled(enabled):
    _cache_enabled[0] = bool(enabled)


def clear_autocast_cache():
    """Drop cached weight casts: none are cached here."""


def autocast_increment_nesting():
    _nesting[0] += 1
    return _nesting[0]


def autocast_decrement_nesting():
    _nesting[0] -= 1
    return _nesting[0]

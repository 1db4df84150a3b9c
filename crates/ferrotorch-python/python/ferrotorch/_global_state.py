"""torch's process-wide settings: deterministic algorithms, float32 matmul
precision, warn-always, inter-op threads, the default device and tensor
type, print options, anomaly mode, and small type queries."""

import warnings

from . import _C

_deterministic = {"mode": False, "warn_only": False}
_matmul_precision = ["highest"]
_warn_always = [False]
_interop_threads = [1]
_PROFILES = {"default": (4, 1000, 3, 80), "short": (2, 1000, 2, 80), "full": (4, 2 ** 62, 3, 80)}


def use_deterministic_algorithms(mode, *, warn_only=False):
    """Ask for deterministic algorithms. ferrotorch's CPU kernels are all
    deterministic (a fixed reduction order for every thread count), so
    there is nothing to refuse; the setting is kept and reported."""
    if not isinstance(mode, bool):
        raise RuntimeError(f"use_deterministic_algorithms expects a bool, but got {type(mode).__name__}")
    _deterministic.update(mode=mode, warn_only=bool(warn_only))


def are_deterministic_algorithms_enabled():
    return _deterministic["mode"]


def is_deterministic_algorithms_warn_only_enabled():
    return _deterministic["warn_only"]


def set_deterministic_debug_mode(debug_mode):
    """0/'default', 1/'warn', 2/'error': ``use_deterministic_algorithms``."""
    names = {"default": 0, "warn": 1, "error": 2}
    if isinstance(debug_mode, str):
        if debug_mode not in names:
            raise RuntimeError(f"invalid value of debug_mode, expected one of `default`, `warn`, `error`, but got "
                               f"{debug_mode}")
        debug_mode = names[debug_mode]
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")
    use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode():
    if not _deterministic["mode"]:
        return 0
    return 1 if _deterministic["warn_only"] else 2


def set_float32_matmul_precision(precision):
    """'highest', 'high' or 'medium'. The CPU GEMM is full float32 in all
    three (torch's CPU kernels ignore it too); kept and reported."""
    if precision not in ("highest", "high", "medium"):
        raise RuntimeError(f"Invalid precision {precision}: expected one of 'highest', 'high', 'medium'")
    _matmul_precision[0] = precision


def get_float32_matmul_precision():
    return _matmul_precision[0]


def set_warn_always(b, /):
    """Whether warnings torch gives once are given every time."""
    _warn_always[0] = bool(b)


def is_warn_always_enabled():
    return _warn_always[0]


def set_num_interop_threads(num, /):
    """Threads for inter-op parallelism (ferrotorch runs ops one at a time
    per thread; the number is kept). Like torch, it can be set once."""
    if num < 1:
        raise RuntimeError("Expected positive number of threads")
    _interop_threads[0] = int(num)


def get_num_interop_threads():
    return _interop_threads[0]


def set_default_device(device):
    """The device factories use by default: only the CPU here (another
    device raises, as creating a tensor on it would)."""
    from ._device import device as _dev

    if device is None:
        return
    d = _dev(device)
    _C._check_device(str(d))


def get_default_device():
    from ._device import device as _dev

    return _dev("cpu")


def set_default_tensor_type(t, /):
    """The deprecated form of ``set_default_dtype`` (it warns, as torch's)."""
    import ferrotorch as ft

    warnings.warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                  "torch.set_default_dtype() and torch.set_default_device() as alternatives.", UserWarning, stacklevel=2)
    name = t if isinstance(t, str) else getattr(t, "__name__", str(t))
    table = {"FloatTensor": ft.float32, "DoubleTensor": ft.float64, "HalfTensor": ft.float16,
             "BFloat16Tensor": ft.bfloat16}
    key = name.rsplit(".", 1)[-1]
    if key not in table:
        raise TypeError(f"invalid type: '{name}'")
    ft.set_default_dtype(table[key])


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None):
    """How tensors print: digits, summarising threshold, edge items, line
    width, or a profile ('default', 'short', 'full'); ``sci_mode`` forces
    scientific notation on or off (None: choose)."""
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"profile must be one of {sorted(_PROFILES)}, got {profile}")
        p, t, e, w = _PROFILES[profile]
        _C._set_printoptions(p, t, e, w, None, True)
    if threshold is not None and threshold == float("inf"):
        threshold = 2 ** 62
    _C._set_printoptions(precision, None if threshold is None else int(threshold), edgeitems, linewidth, sci_mode,
                         sci_mode is not None or profile is not None)


def get_printoptions():
    """The current print options as a dict (torch's ``torch._tensor_str.get_printoptions``)."""
    p, t, e, w, sci = _C._get_printoptions()
    return {"precision": p, "threshold": float("inf") if t >= 2 ** 62 else t, "edgeitems": e, "linewidth": w,
            "sci_mode": sci}


def is_anomaly_enabled():
    """Whether autograd anomaly mode is on."""
    return _C._is_anomaly_enabled()


def is_anomaly_check_nan_enabled():
    return _C._is_anomaly_enabled()


def set_anomaly_enabled(enabled, check_nan=True):
    _C._set_detect_anomaly(bool(enabled))


def typename(obj, /):
    """torch's type name of ``obj`` ('torch.FloatTensor' for a float32 tensor)."""
    if isinstance(obj, _C.Tensor):
        names = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16", "int64": "Long",
                 "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool",
                 "complex64": "ComplexFloat", "complex128": "ComplexDouble", "complex32": "ComplexHalf"}
        return f"torch.{names.get(str(obj.dtype).rsplit('.', 1)[-1], 'Float')}Tensor"
    module = getattr(type(obj), "__module__", "") or ""
    qual = getattr(type(obj), "__qualname__", type(obj).__name__)
    return qual if module in ("", "builtins", "__builtin__") else f"{module}.{qual}"


def is_storage(obj, /):
    """Whether ``obj`` is a storage."""
    return isinstance(obj, _C.UntypedStorage)


def get_device_module(device=None):
    """The module of a device type: ``torch.cpu`` for the CPU (the only one
    here; an accelerator name raises)."""
    import ferrotorch as ft

    name = "cpu" if device is None else str(getattr(device, "type", device)).split(":")[0]
    if name == "cpu":
        return ft.cpu
    raise RuntimeError(f"Device '{name}' does not have a corresponding module registered as 'torch.{name}'.")


def is_distributed(input, /):
    """Whether ``input`` is a distributed tensor: never here."""
    return False


def thread_safe_generator():
    """The generator a worker thread draws from (None: the default one)."""
    return None

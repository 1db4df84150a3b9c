"""``torch.accelerator``: the device-agnostic accelerator API. ferrotorch
runs on the CPU, which torch does not count as an accelerator: there is
none, so ``is_available()`` is False, ``current_accelerator()`` None and
``device_count()`` 0, and what needs one raises a RuntimeError saying so
(the usual device selection, ``current_accelerator() if is_available()
else torch.device("cpu")``, picks the CPU)."""

__all__ = ["current_accelerator", "current_device_idx", "current_device_index", "current_stream",
           "device_count", "device_index", "empty_cache", "empty_host_cache", "get_device_capability",
           "get_memory_info", "is_available", "max_memory_allocated", "max_memory_reserved",
           "memory_allocated", "memory_reserved", "memory_stats", "reset_accumulated_memory_stats",
           "reset_peak_memory_stats", "set_device_idx", "set_device_index", "set_stream", "synchronize",
           "Graph"]


def _none(what):
    return RuntimeError(f"torch.accelerator.{what}: no accelerator is available "
                        "(ferrotorch runs on the CPU; torch.accelerator.is_available() is False)")


def is_available():
    """Whether an accelerator is available: never here."""
    return False


def device_count():
    """The number of accelerator devices: 0."""
    return 0


def current_accelerator(check_available=False):
    """The accelerator's device type, or None: None here."""
    return None


def current_device_index():
    """The current accelerator device's index (raises: there is none)."""
    raise _none("current_device_index")


current_device_idx = current_device_index


def set_device_index(device, /):
    """Select an accelerator device (raises: there is none)."""
    raise _none("set_device_index")


set_device_idx = set_device_index


class device_index:
    """Context manager selecting an accelerator device for a block; with
    ``None`` it does nothing (any other index raises: there is none)."""

    def __init__(self, device, /):
        self.idx = device

    def __enter__(self):
        if self.idx is not None:
            raise _none("device_index")

    def __exit__(self, *exc):
        return False


def current_stream(device=None, /):
    """The accelerator's current stream (raises: there is none)."""
    raise _none("current_stream")


def set_stream(stream):
    """Make ``stream`` current (raises: there is none)."""
    raise _none("set_stream")


def synchronize(device=None, /):
    """Wait for the accelerator's work (raises: there is none)."""
    raise _none("synchronize")


def get_device_capability(device=None, /):
    """The accelerator's capabilities (raises: there is none)."""
    raise _none("get_device_capability")


def empty_cache():
    """Release the accelerator allocator's cached memory: none to release."""


def empty_host_cache():
    """Release cached pinned host memory: none to release."""


def _memory(name):
    def f(device_index=None, /):
        raise _none(name)
    f.__name__ = name
    f.__doc__ = f"``torch.accelerator.{name}`` (raises: there is no accelerator)."
    return f


memory_allocated = _memory("memory_allocated")
max_memory_allocated = _memory("max_memory_allocated")
memory_reserved = _memory("memory_reserved")
max_memory_reserved = _memory("max_memory_reserved")
memory_stats = _memory("memory_stats")
reset_accumulated_memory_stats = _memory("reset_accumulated_memory_stats")
reset_peak_memory_stats = _memory("reset_peak_memory_stats")
get_memory_info = _memory("get_memory_info")


class Graph:
    """An accelerator graph capture (raises: there is no accelerator)."""

    def __init__(self, keep_graph=False, *, pool=None, capture_error_mode="default"):
        raise _none("Graph")

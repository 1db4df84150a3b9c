"""``torch.cpu``: the CPU as a device module (``torch.get_device_module``),
with its ``amp`` and the stream/synchronize API a device module has."""


from . import amp  # noqa: F401

__all__ = ["device_count", "is_available", "synchronize", "current_device", "current_stream", "set_device",
           "stream", "Stream", "StreamContext", "Event"]


def is_available():
    """The CPU is always there."""
    return True


def device_count():
    """One CPU device."""
    return 1


def current_device():
    return "cpu"


def set_device(device):
    """Only "cpu" exists."""
    if str(device) not in ("cpu", "cpu:0", "0"):
        raise ValueError(f"Unsupported device: {device}")


def synchronize(device=None):
    """CPU work is synchronous: returns at once."""


class Stream:
    """The CPU's (only, synchronous) stream."""

    def __init__(self, priority=-1):
        self.priority = priority

    def wait_stream(self, stream):
        pass

    def synchronize(self):
        pass

    def query(self):
        return True

    def record_event(self, event=None):
        return event if event is not None else Event()


class Event:
    """A CPU event: already complete when recorded."""

    def query(self):
        return True

    def record(self, stream=None):
        pass

    def wait(self, stream=None):
        pass

    def synchronize(self):
        pass


_default_stream = Stream()


def current_stream(device=None):
    return _default_stream


class StreamContext:
    def __init__(self, stream):
        self.stream = stream

    def __enter__(self):
        return self.stream

    def __exit__(self, *exc):
        return False


def stream(stream):
    return StreamContext(stream)



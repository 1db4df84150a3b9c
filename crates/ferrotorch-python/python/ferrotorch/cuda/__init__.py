"""``ferrotorch.cuda``: what a CPU-only PyTorch build answers, so scripts
written for GPUs run unchanged on the CPU. Queries say there is no device
(``is_available()`` is False, ``device_count()`` 0, memory counters 0);
seeding and cache calls do nothing; calls that need a device raise torch's
``AssertionError("Torch not compiled with CUDA enabled")``, as do
``tensor.cuda()``, ``.to("cuda")`` and ``device="cuda"`` arguments."""

from . import amp  # noqa: F401

_NOT_COMPILED = "Torch not compiled with CUDA enabled"


def _lazy_init():
    raise AssertionError(_NOT_COMPILED)


def is_available():
    """False: this build has no CUDA."""
    return False


def device_count():
    """0: no CUDA devices."""
    return 0


def is_initialized():
    """False: CUDA is never initialised in this build."""
    return False


def is_bf16_supported(including_emulation=True):
    """False: no CUDA device."""
    return False


def manual_seed(seed):
    """Seed the current CUDA device's generator: nothing to seed here."""


def manual_seed_all(seed):
    """Seed every CUDA device's generator: nothing to seed here."""


def seed():
    """Seed the CUDA generator randomly: nothing to seed here."""


def seed_all():
    """Seed every CUDA generator randomly: nothing to seed here."""


def empty_cache():
    """Release cached CUDA memory: there is none."""


def memory_allocated(device=None):
    """Bytes of CUDA memory held by tensors: 0."""
    return 0


def max_memory_allocated(device=None):
    """Peak bytes of CUDA memory held by tensors: 0."""
    return 0


def memory_reserved(device=None):
    """Bytes of CUDA memory held by the caching allocator: 0."""
    return 0


def max_memory_reserved(device=None):
    """Peak bytes of CUDA memory held by the caching allocator: 0."""
    return 0


def synchronize(device=None):
    """Wait for CUDA kernels: raises, as in a CPU-only torch."""
    _lazy_init()


def current_device():
    """The current CUDA device: raises, as in a CPU-only torch."""
    _lazy_init()


def set_device(device):
    """Select a CUDA device: raises, as in a CPU-only torch."""
    _lazy_init()


def get_device_name(device=None):
    """A CUDA device's name: raises, as in a CPU-only torch."""
    _lazy_init()


def get_device_properties(device=None):
    """A CUDA device's properties: raises, as in a CPU-only torch."""
    _lazy_init()


def get_device_capability(device=None):
    """A CUDA device's compute capability: raises, as in a CPU-only torch."""
    _lazy_init()


def get_rng_state(device="cuda"):
    """A CUDA generator's state: raises, as in a CPU-only torch."""
    _lazy_init()


def set_rng_state(new_state, device="cuda"):
    """Set a CUDA generator's state: raises, as in a CPU-only torch."""
    _lazy_init()


def reset_peak_memory_stats(device=None):
    """Reset peak memory counters: raises, as in a CPU-only torch."""
    _lazy_init()

"""``torch.nn.attention``: which kernels ``scaled_dot_product_attention``
may use (``sdpa_kernel``), and the registry of flash-attention
implementations.

On a CPU, torch has two of its five backends: MATH and FLASH_ATTENTION
(its CPU flash kernel); EFFICIENT_ATTENTION and CUDNN_ATTENTION are CUDA
kernels. ferrotorch's one kernel gives the values of both CPU backends, so
attention runs while MATH or FLASH_ATTENTION is enabled and fails with
torch's error when neither is."""

import contextlib
import enum

from ._registry import (activate_flash_attention_impl, current_flash_attention_impl, list_flash_attention_impls,
                        register_flash_attention_impl, restore_flash_attention_impl)

__all__ = ["SDPBackend", "sdpa_kernel", "WARN_FOR_UNFUSED_KERNELS", "register_flash_attention_impl",
           "activate_flash_attention_impl", "list_flash_attention_impls", "current_flash_attention_impl",
           "restore_flash_attention_impl"]

WARN_FOR_UNFUSED_KERNELS = False


class SDPBackend(enum.Enum):
    """The backends of scaled dot product attention (torch's values)."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4

    def __int__(self):
        return self.value

    def __index__(self):
        return self.value


# which backends are enabled (torch.backends.cuda.*_sdp_enabled), and the
# order tried when a block asks for priority
_ENABLED = {SDPBackend.MATH: True, SDPBackend.FLASH_ATTENTION: True, SDPBackend.EFFICIENT_ATTENTION: True,
            SDPBackend.CUDNN_ATTENTION: True, SDPBackend.OVERRIDEABLE: True}
_PRIORITY = [1, 2, 0, 3, 4]
_CPU_BACKENDS = (SDPBackend.MATH, SDPBackend.FLASH_ATTENTION)


def _check_backends():
    """What scaled_dot_product_attention asks before it runs."""
    if not any(_ENABLED[b] for b in _CPU_BACKENDS):
        raise RuntimeError("No viable backend for scaled_dot_product_attention was found. This is likely due to "
                           "turning off both the math kernel and the fused kernels.")


def _cur_sdpa_kernel_backends(with_priority=False):
    backends = [b for b, on in _ENABLED.items() if on]
    if with_priority:
        backends.sort(key=lambda b: _PRIORITY.index(int(b)))
    return backends


def _sdpa_kernel(backends, set_priority=False):
    for b in _ENABLED:
        _ENABLED[b] = b in backends
    if set_priority:
        order = [int(b) for b in backends]
        order += [p for p in _PRIORITY if p not in order]
        _PRIORITY[:] = order


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority=False):
    """Within the block, only ``backends`` (one or a list) may run
    scaled dot product attention; ``set_priority`` makes the list's order
    the order they are tried in. The previous choice comes back after."""
    if not isinstance(backends, (list, SDPBackend)):
        raise AssertionError("Backend must be an instance of SDPBackend or a list of SDPBackend instances, "
                             f"got {type(backends).__name__}")
    if isinstance(backends, SDPBackend):
        backends = [backends]
    backends = list(dict.fromkeys(backends))
    previous = _cur_sdpa_kernel_backends(with_priority=set_priority)
    previous_priority = list(_PRIORITY)
    try:
        _sdpa_kernel(backends, set_priority)
        yield {}
    finally:
        _sdpa_kernel(previous, False)
        _PRIORITY[:] = previous_priority
